// Durable memories, paged.
import { api } from "../api.js";
import { h, put, num, when, pager, badge } from "../dom.js";

const LIMIT = 50;

export async function render(root, { params, go }) {
  const q = params.get("q") || "";
  const archived = params.get("archived") === "1";
  const offset = Number(params.get("offset") || 0);
  const data = await api("memories", { q, archived: archived ? 1 : "", offset, limit: LIMIT });
  const input = h("input", { type: "search", name: "q", value: q, placeholder: "filter memories", "aria-label": "filter" });
  const box = h("input", { type: "checkbox", name: "archived", checked: archived });
  put(root, 
    h("h1", {}, "Memories"),
    h("form", { class: "filters", onsubmit: (e) => { e.preventDefault(); go("/memories", { q: input.value, archived: box.checked ? 1 : "" }); } }, input, h("label", {}, box, " include archived"), h("button", { type: "submit" }, "Filter")),
    data.items.length
      ? h(
          "table",
          { class: "grid", id: "memories" },
          h("thead", {}, h("tr", {}, ["memory", "project", "tags", "confidence", "used / shown", "created", "source"].map((t) => h("th", {}, t)))),
          h(
            "tbody",
            {},
            data.items.map((m) =>
              h(
                "tr",
                {},
                h("td", {}, m.text, h("div", { class: "muted small" }, m.id, m.archived ? " (archived)" : "")),
                h("td", { class: "project" }, m.project),
                h("td", {}, m.tags.map((t) => badge(t))),
                h("td", { class: "n" }, m.confidence.toFixed(2)),
                h("td", { class: "n" }, `${num(m.used_count)} / ${num(m.surfaced_count)}`),
                h("td", {}, when(m.created_at)),
                h("td", {}, m.source_summary_id && m.source_conversation_id ? h("a", { href: `#/c/${m.source_conversation_id}/dag?focus=${m.source_summary_id}` }, m.source_summary_id) : m.source_conversation_id ? h("a", { href: `#/c/${m.source_conversation_id}` }, `conversation ${m.source_conversation_id}`) : "–"),
              ),
            ),
          ),
        )
      : h("p", { class: "empty" }, "No memories yet: `lcm remember \"…\"` adds one; compaction promotes decisions it finds."),
    pager({ offset, limit: LIMIT, total: data.total, onPage: (o) => go("/memories", { q, archived: archived ? 1 : "", offset: o }) }),
  );
}
