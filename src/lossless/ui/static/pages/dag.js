// The summary DAG as a graph (plain SVG), loaded one level at a time.
// Top row: the summaries in the context now, oldest first. Opening a
// condensed summary draws the summaries it was built from below it (a page
// at a time); a leaf's source messages are listed, paged, in the side panel.
import { api } from "../api.js";
import { h, append, put, svg, num, span, when, badge } from "../dom.js";

const W = 176, H = 92, GAP_X = 14, GAP_Y = 58, CHILD_PAGE = 25;

export async function render(root, { match, params, go, isCurrent }) {
  const ref = decodeURIComponent(match[1]);
  const data = await api(`conversations/${encodeURIComponent(ref)}/dag`);
  if (!isCurrent()) return;
  const cid = data.conversation_id;
  const nodes = new Map(data.roots.map((n) => [n.id, n]));
  const children = new Map(); // id -> {total, items: [id]}
  const expanded = new Set();
  let selected = null;

  const graphBox = h("div", { class: "graph", id: "dag-graph" });
  const panel = h("aside", { class: "panel", id: "dag-panel" }, h("p", { class: "muted" }, "Click a summary to read it."));

  async function loadChildren(id) {
    const known = children.get(id) || { total: null, items: [] };
    const page = await api(`summaries/${id}/children`, { offset: known.items.length, limit: CHILD_PAGE });
    for (const item of page.items) nodes.set(item.id, item);
    known.total = page.total;
    known.items.push(...page.items.map((i) => i.id));
    children.set(id, known);
    return known;
  }

  async function toggle(id) {
    if (expanded.has(id)) expanded.delete(id);
    else {
      if (!children.has(id)) await loadChildren(id);
      expanded.add(id);
    }
    draw();
  }

  function layout() {
    const pos = new Map();
    const extras = [];
    let maxLevel = 0;
    function place(id, level, x) {
      maxLevel = Math.max(maxLevel, level);
      const node = nodes.get(id);
      const kids = node.kind === "condensed" && expanded.has(id) ? children.get(id) : null;
      let width = 0;
      if (kids) {
        for (const kid of kids.items) width += place(kid, level + 1, x + width);
        if (kids.items.length < kids.total) {
          extras.push({ parent: id, x: x + width, level: level + 1, left: kids.total - kids.items.length });
          width += 1;
        }
      }
      width = Math.max(1, width);
      pos.set(id, { x: x + (width - 1) / 2, level });
      return width;
    }
    let x = 0;
    for (const n of data.roots) x += place(n.id, 0, x);
    return { pos, extras, width: Math.max(1, x), levels: maxLevel + 1 };
  }

  function draw() {
    const { pos, extras, width, levels } = layout();
    const px = (x) => 10 + x * (W + GAP_X);
    const py = (level) => 10 + level * (H + GAP_Y);
    const edges = [];
    for (const [id, p] of pos) {
      const kids = expanded.has(id) ? children.get(id) : null;
      if (!kids) continue;
      for (const kid of kids.items) {
        const q = pos.get(kid);
        edges.push(svg("path", { class: "edge", d: `M${px(p.x) + W / 2},${py(p.level) + H} C${px(p.x) + W / 2},${py(p.level) + H + GAP_Y / 2} ${px(q.x) + W / 2},${py(q.level) - GAP_Y / 2} ${px(q.x) + W / 2},${py(q.level)}` }));
      }
    }
    const boxes = [];
    for (const [id, p] of pos) {
      const n = nodes.get(id);
      const covers = n.kind === "leaf" ? `${num(n.child_count)} messages` : `${num(n.child_count)} summaries, ${num(n.descendant_count)} below`;
      boxes.push(
        svg(
          "g",
          {
            class: `node ${n.kind} d${Math.min(n.depth, 5)}${id === selected ? " selected" : ""}${expanded.has(id) ? " open" : ""}`,
            transform: `translate(${px(p.x)},${py(p.level)})`,
            "data-id": id,
            tabindex: 0,
            role: "button",
            onclick: () => select(id),
            onkeydown: (e) => { if (e.key === "Enter") select(id); },
          },
          svg("title", {}, n.preview || id),
          svg("rect", { width: W, height: H, rx: 6 }),
          svg("text", { x: 8, y: 17, class: "t1" }, `${n.kind} · depth ${n.depth}`),
          svg("text", { x: 8, y: 33, class: "t2" }, id),
          svg("text", { x: 8, y: 49, class: "t3" }, span(n.earliest_at, n.latest_at).slice(0, 28)),
          svg("text", { x: 8, y: 65, class: "t3" }, `${num(n.token_count)} tok from ${num(n.source_token_count)}`),
          svg("text", { x: 8, y: 81, class: "t3" }, covers),
        ),
      );
      if (n.kind === "condensed") {
        boxes.push(
          svg(
            "g",
            { class: "toggle", transform: `translate(${px(p.x) + W / 2},${py(p.level) + H})`, "data-toggle": id, onclick: (e) => { e.stopPropagation(); toggle(id); } },
            svg("circle", { r: 9 }),
            svg("text", { y: 4, "text-anchor": "middle" }, expanded.has(id) ? "−" : "+"),
          ),
        );
      }
    }
    for (const extra of extras) {
      boxes.push(
        svg(
          "g",
          { class: "node more", transform: `translate(${px(extra.x)},${py(extra.level)})`, "data-more": extra.parent, onclick: async () => { await loadChildren(extra.parent); draw(); } },
          svg("rect", { width: W, height: H, rx: 6 }),
          svg("text", { x: 8, y: 50 }, `+ ${num(extra.left)} more…`),
        ),
      );
    }
    const picture = svg("svg", { width: px(width) + 10, height: py(levels) + 10, class: "dag" }, edges, boxes);
    graphBox.replaceChildren(data.roots.length ? picture : h("p", { class: "empty" }, "Nothing has been compacted yet: the context is all raw messages."));
    const chosen = graphBox.querySelector(`[data-id="${selected}"]`);
    if (chosen && chosen.scrollIntoView) chosen.scrollIntoView({ block: "nearest", inline: "center" });
  }

  // A leaf's source messages, a page at a time exactly as `lcm expand` pages
  // them (token-capped pages, a cursor forward and one back).
  // `trail` holds the cursors of the pages before this one, for Previous.
  async function messagesPage(id, cursor, into, trail = []) {
    const page = await api(`summaries/${id}/expand`, { cursor });
    const last = page.position + page.items.length;
    into.replaceChildren(
      h(
        "div",
        { class: "pager" },
        h("button", { type: "button", id: "msgs-prev", disabled: !page.before_cursor && !trail.length, onclick: () => (trail.length ? messagesPage(id, trail[trail.length - 1], into, trail.slice(0, -1)) : messagesPage(id, page.before_cursor, into)) }, "‹ Previous"),
        h("span", { class: "muted", id: "msgs-range" }, ` messages ${num(page.total ? page.position + 1 : 0)}–${num(last)} of ${num(page.total)} `),
        h("button", { type: "button", id: "msgs-next", disabled: !page.cursor, onclick: () => messagesPage(id, page.cursor, into, [...trail, cursor]) }, "Next ›"),
      ),
      ...page.items.map((m) =>
        h(
          "article",
          { class: `msg ${m.role || "summary"}`, dataset: { message: m.id } },
          h("div", { class: "msg-head" }, `${m.role} · ${when(m.created_at)} · ${num(m.token_count)} tok `, h("a", { href: `#/m/${m.id}`, class: "open-message" }, `message ${m.id}`)),
          h("pre", {}, m.content + (m.clipped ? " … (clipped at the page's token cap: open the message for all)" : "")),
        ),
      ),
    );
  }

  async function select(id) {
    selected = id;
    draw();
    const detail = await api(`summaries/${id}`);
    const body = [
      h("h2", {}, id),
      h("p", {}, badge(`${detail.kind} · depth ${detail.depth}`), ` ${span(detail.earliest_at, detail.latest_at)}`),
      h("p", { class: "muted" }, `${num(detail.token_count)} tokens, summarizing ${num(detail.source_token_count)}; ${num(detail.descendant_count)} summaries below.`),
      detail.condensed_into ? h("p", {}, "Condensed into ", h("a", { href: "#", onclick: (e) => { e.preventDefault(); select(detail.condensed_into); } }, detail.condensed_into)) : null,
      h("pre", { class: "summary-text", id: "summary-text" }, detail.content),
    ];
    if (detail.kind === "condensed") {
      body.push(h("button", { type: "button", id: "expand-children", onclick: () => toggle(id) }, expanded.has(id) ? "Hide the summaries below" : `Show the ${num(detail.child_count)} summaries it was built from`));
      panel.replaceChildren(); append(panel, body);
    } else {
      const list = h("div", { id: "source-messages" });
      body.push(h("h3", {}, `Source messages (${num(detail.child_count)})`), list);
      panel.replaceChildren(); append(panel, body);
      await messagesPage(id, null, list);
    }
  }

  async function focus(id) {
    const detail = await api(`summaries/${id}`);
    const path = [...detail.ancestors].reverse();
    for (let i = 0; i < path.length; i++) {
      const parent = path[i];
      const next = path[i + 1] || id;
      if (!nodes.has(parent)) break;
      let known = children.get(parent) || (await loadChildren(parent));
      while (!known.items.includes(next) && known.items.length < known.total) known = await loadChildren(parent);
      expanded.add(parent);
    }
    if (!nodes.has(id)) nodes.set(id, detail);
    await select(id);
  }

  put(root, 
    h("h1", {}, "Summary DAG"),
    h(
      "p",
      { class: "muted" },
      h("a", { href: `#/c/${cid}` }, "← context window"),
      ` · ${num(data.summary_count)} summaries over ${num(data.message_count)} messages; in context now: ${num(data.roots.length)} summaries and ${num(data.raw_in_context)} raw messages (${num(data.context_tokens)} tokens).`,
    ),
    h("div", { class: "dag-layout" }, graphBox, panel),
  );
  draw();
  const wanted = params.get("focus");
  if (wanted) await focus(wanted);
}
