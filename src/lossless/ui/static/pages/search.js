// Search: memories and history ranked together (as `lcm search`), or grep
// by words or regex (as `lcm grep`); hits link into the conversation and DAG.
import { api } from "../api.js";
import { h, put, num, when, marked, badge } from "../dom.js";

const MODES = [
  ["search", "memories + history (lcm search)"],
  ["full_text", "words (lcm grep --mode full_text)"],
  ["regex", "regex (lcm grep)"],
];

function links(hit) {
  const out = [];
  if (hit.kind === "message") {
    out.push(h("a", { href: `#/m/${hit.id}`, class: "hit-link" }, `message ${hit.id}`));
    if (hit.covering_summary_id) out.push(" · ", h("a", { href: `#/c/${hit.conversation_id}/dag?focus=${hit.covering_summary_id}`, class: "dag-link" }, `in the DAG (${hit.covering_summary_id})`));
  } else if (hit.kind === "summary") {
    out.push(h("a", { href: `#/c/${hit.conversation_id}/dag?focus=${hit.id}`, class: "hit-link" }, `${hit.id} in the DAG`));
  } else {
    out.push(h("a", { href: `#/memories?q=${encodeURIComponent(hit.text.slice(0, 40))}`, class: "hit-link" }, hit.id));
  }
  if (hit.conversation_id !== null && hit.conversation_id !== undefined) out.push(" · ", h("a", { href: `#/c/${hit.conversation_id}` }, hit.session_id || `conversation ${hit.conversation_id}`));
  return out;
}

export async function render(root, { params, go, isCurrent }) {
  const q = params.get("q") || "";
  const mode = params.get("mode") || "search";
  const scope = params.get("scope") || "both";
  const project = params.get("project") || "";
  const conversation = params.get("conversation") || "";
  const input = h("input", { type: "search", name: "q", value: q, placeholder: "what are you looking for?", "aria-label": "query", autofocus: true });
  const modeSelect = h("select", { name: "mode", "aria-label": "mode" }, MODES.map(([v, l]) => h("option", { value: v, selected: v === mode }, l)));
  const scopeSelect = h("select", { name: "scope", "aria-label": "scope" }, ["both", "messages", "summaries"].map((v) => h("option", { value: v, selected: v === scope }, v)));
  put(root, 
    h("h1", {}, "Search"),
    h(
      "form",
      { class: "filters", id: "search-form", onsubmit: (e) => { e.preventDefault(); go("/search", { q: input.value, mode: modeSelect.value, scope: scopeSelect.value, project, conversation }); } },
      input, modeSelect, scopeSelect, h("button", { type: "submit" }, "Search"),
      conversation ? h("span", { class: "muted" }, ` in conversation ${conversation}`) : null,
    ),
  );
  if (!q.trim()) return;
  const data = await api("search", { q, mode, scope, project, conversation, limit: 50 });
  if (!isCurrent()) return;
  if (!data.complete) put(root, h("p", { class: "warn" }, `The regex scan stopped at its time budget: messages older than ${when(data.scanned_until)} were not searched.`));
  put(root, 
    h("p", { class: "muted" }, `${num(data.hits.length)} hit(s)`),
    data.hits.length
      ? h(
          "ol",
          { class: "hits", id: "hits" },
          data.hits.map((hit) =>
            h(
              "li",
              { class: `hit ${hit.kind}` },
              h("div", { class: "hit-head" }, badge(hit.kind), ` ${hit.role || ""} ${when(hit.created_at)} `, links(hit)),
              h("div", { class: "hit-text" }, marked(hit.text, hit.highlights)),
            ),
          ),
        )
      : h("p", { class: "empty" }, "No hits."),
  );
}
