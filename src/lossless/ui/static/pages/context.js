// A conversation's context window: the bar (summaries by depth, older
// messages, fresh tail, free budget) and the assembled context below it,
// exactly as `lcm context` builds it, a page of messages at a time.
import { api } from "../api.js";
import { h, put, num, when, badge } from "../dom.js";

const PAGE = 40;
const SUMMARY_RE = /^<summary id="(sum_[0-9a-f]+)"/;

export function bar(data) {
  const b = data.breakdown;
  const scale = Math.max(b.budget, b.total, 1);
  const segments = data.segments.filter((s) => s.tokens > 0 || s.kind === "free");
  const strip = h(
    "div",
    { class: "bar", id: "context-bar", role: "img", "aria-label": "context window" },
    segments.map((s) =>
      h("div", {
        class: `seg ${s.kind} d${s.depth ?? ""}`,
        style: { flexGrow: String(s.tokens / scale) },
        title: `${s.label}: ${num(s.tokens)} tokens${s.count ? ` in ${num(s.count)}` : ""}`,
        dataset: { kind: s.kind, tokens: s.tokens },
      }),
    ),
  );
  if (b.total > b.budget) {
    // Over budget: the bar spans what was sent; a line marks where the budget ends.
    strip.append(h("div", { class: "budget-mark", title: `budget: ${num(b.budget)} tokens`, style: { left: `${(100 * b.budget) / scale}%` } }));
  }
  const legend = h(
    "ul",
    { class: "legend" },
    segments.map((s) =>
      h("li", {}, h("span", { class: `swatch ${s.kind} d${s.depth ?? ""}` }), `${s.label}: ${num(s.tokens)} tokens`, s.count ? h("span", { class: "muted" }, ` (${num(s.count)})`) : null),
    ),
  );
  const notes = [];
  notes.push(`${num(b.total)} of ${num(b.budget)} tokens used: ${num(b.summaries)} in ${num(b.summary_count)} summaries, ${num(b.messages)} in ${num(b.message_count)} messages (${num(b.fresh_tail)} in the fresh tail of ${num(b.fresh_tail_messages)}).`);
  if (b.dropped_items) notes.push(`${num(b.dropped_items)} older item(s) left out (${num(b.dropped_tokens)} tokens): still stored, reachable by search and the DAG.`);
  if (b.over_budget) notes.push("The protected fresh tail alone is over this budget.");
  return h("section", { class: "window" }, strip, legend, notes.map((n) => h("p", { class: n.startsWith("The protected") ? "warn" : "muted" }, n)));
}

function blockView(block, conversationId) {
  if (block.type === "text") {
    const match = SUMMARY_RE.exec(block.text);
    return h(
      "div",
      { class: match ? "block summary" : "block text" },
      match ? h("div", { class: "block-head" }, badge("summary"), " ", h("a", { href: `#/c/${conversationId}/dag?focus=${match[1]}` }, `${match[1]} in the DAG`)) : null,
      h("pre", {}, block.text),
    );
  }
  if (block.type === "tool_use") {
    return h("div", { class: "block tool" }, h("div", { class: "block-head" }, badge("tool_use"), ` ${block.name} ${block.id}`), h("pre", {}, JSON.stringify(block.input, null, 2)));
  }
  if (block.type === "tool_result") {
    const body = typeof block.content === "string" ? block.content : JSON.stringify(block.content, null, 2);
    return h("div", { class: `block result${block.is_error ? " failed" : ""}` }, h("div", { class: "block-head" }, badge("tool_result"), ` ${block.tool_use_id}`), h("pre", {}, body));
  }
  if (block.type === "image" || block.type === "image_url") return h("div", { class: "block" }, badge("image"));
  return h("div", { class: "block" }, h("pre", {}, JSON.stringify(block, null, 2)));
}

function messageView(message, conversationId) {
  const blocks = [];
  if (typeof message.content === "string") blocks.push(blockView({ type: "text", text: message.content }, conversationId));
  else if (Array.isArray(message.content)) for (const b of message.content) blocks.push(blockView(b, conversationId));
  for (const call of message.tool_calls || []) {
    blocks.push(h("div", { class: "block tool" }, h("div", { class: "block-head" }, badge("tool_call"), ` ${call.function?.name} ${call.id}`), h("pre", {}, call.function?.arguments || "")));
  }
  const extra = message.tool_call_id ? ` ${message.tool_call_id}` : "";
  return h("article", { class: `msg ${message.role}` }, h("div", { class: "msg-head" }, `${message.role}${extra}`), blocks);
}

export async function render(root, { match, params, go, isCurrent }) {
  const ref = decodeURIComponent(match[1]);
  const budget = params.get("budget") || "";
  const format = params.get("format") || "anthropic";
  // The header first: assembling a long uncompacted context takes the
  // engine seconds (it reads every message to keep tool pairs whole).
  // (Asked first: the server answers store requests one at a time, in order.)
  const headerRequest = api(`conversations/${encodeURIComponent(ref)}`);
  const contextRequest = api(`conversations/${encodeURIComponent(ref)}/context`, { budget, format, offset: 0, limit: PAGE });
  contextRequest.catch(() => {}); // reported where it is awaited
  const conv = await headerRequest;
  if (!isCurrent()) return;
  const waiting = h("p", { class: "muted", id: "assembling" }, `Assembling the context of ${num(conv.context_items)} items, as lcm context does…`);
  put(
    root,
    h("h1", {}, conv.title || conv.session_id),
    h(
      "p",
      { class: "muted" },
      `#${conv.id} · ${conv.client} · ${conv.project} · ${num(conv.messages)} messages · ${num(conv.summaries)} summaries · last activity ${when(conv.last_activity)}`,
      conv.parent_id ? h("span", {}, " · sub-agent of ", h("a", { href: `#/c/${conv.parent_id}` }, conv.parent_session_id || `#${conv.parent_id}`)) : null,
    ),
    h("p", {}, h("a", { href: `#/c/${conv.id}/dag`, id: "open-dag" }, "Summary DAG"), " · ", h("a", { href: `#/search?conversation=${conv.id}&mode=full_text` }, "Search this conversation")),
    waiting,
  );
  const first = await contextRequest;
  if (!isCurrent()) return;
  waiting.remove();
  const budgetInput = h("input", { type: "number", min: 0, step: 1000, name: "budget", value: first.budget, "aria-label": "budget" });
  const formatSelect = h("select", { name: "format", "aria-label": "format" }, ["anthropic", "openai"].map((f) => h("option", { value: f, selected: f === format }, f)));
  const controls = h(
    "form",
    { class: "filters", onsubmit: (e) => { e.preventDefault(); go(`/c/${conv.id}`, { budget: budgetInput.value, format: formatSelect.value }); } },
    h("label", {}, "budget ", budgetInput, " tokens"),
    h("label", {}, "format ", formatSelect),
    h("button", { type: "submit" }, "Assemble"),
    h("span", { class: "muted" }, ` default budget ${num(first.default_budget)}`),
  );
  const list = h("div", { class: "messages", id: "assembled" });
  const more = h("button", { type: "button", id: "more-context" }, "Show more");
  let offset = 0;
  const add = (page) => {
    for (const m of page.messages) list.append(messageView(m, conv.id));
    offset = page.offset + page.messages.length;
    more.hidden = offset >= page.total_messages;
    more.textContent = `Show more (${num(page.total_messages - offset)} left)`;
  };
  more.addEventListener("click", async () => {
    more.disabled = true;
    try {
      add(await api(`conversations/${conv.id}/context`, { budget: first.budget, format, offset, limit: PAGE }));
    } finally {
      more.disabled = false;
    }
  });
  put(
    root,
    controls,
    bar(first),
    h("h2", {}, `Assembled context (${num(first.total_messages)} messages${first.system ? " + system" : ""})`),
    first.system ? h("article", { class: "msg system" }, h("div", { class: "msg-head" }, "system"), h("pre", {}, first.system)) : null,
    list,
    more,
  );
  add(first);
  // First meaningful paint: the bar and the first page of the context are on screen.
  window.__lcmPaint = performance.now();
  document.body.dataset.painted = "context";
}
