// Projects and conversations: filter, sort and page on the server.
import { api } from "../api.js";
import { h, put, num, when, pager, badge } from "../dom.js";

const SORTS = [
  ["last", "last activity"],
  ["created", "created"],
  ["messages", "messages"],
  ["project", "project"],
  ["session", "session"],
];
const LIMIT = 50;

function stateBadge(row) {
  if (row.compaction === "error") return badge("compaction failed", "bad");
  if (row.compaction === "pending") return badge("compaction waiting", "warn");
  if (row.compaction === "compacted") {
    const depths = Object.entries(row.summaries_by_depth).map(([d, n]) => `d${d}:${n}`).join(" ");
    return badge(`${row.summaries} summaries (${depths})`, "ok");
  }
  return badge("not compacted", "");
}

function rowCells(row, child) {
  return h(
    "tr",
    { class: child ? "child" : "", dataset: { conversation: row.id } },
    h(
      "td",
      {},
      child ? h("span", { class: "muted" }, "↳ sub-agent ") : null,
      h("a", { href: `#/c/${row.id}` }, row.title || row.session_id),
      h("div", { class: "muted small" }, `#${row.id}`),
    ),
    h("td", { class: "project" }, row.project),
    h("td", {}, row.client),
    h("td", { class: "n" }, num(row.messages)),
    h("td", { class: "n" }, num(row.history_tokens)),
    h("td", { class: "n" }, num(row.context_tokens)),
    h("td", {}, stateBadge(row), " ", h("a", { href: `#/c/${row.id}/dag`, class: "small" }, "DAG")),
    h("td", {}, when(row.last_activity)),
  );
}

export async function render(root, { params, go }) {
  const q = params.get("q") || "";
  const project = params.get("project") || "";
  const client = params.get("client") || "";
  const sort = params.get("sort") || "last";
  const order = params.get("order") || "desc";
  const offset = Number(params.get("offset") || 0);
  const state = { q, project, client, sort, order };
  const data = await api("conversations", { ...state, offset, limit: LIMIT });

  const apply = (changes) => go("/", { ...state, ...changes, offset: changes.offset || 0 });
  const filter = h("input", { type: "search", name: "q", value: q, placeholder: "session, project or title", "aria-label": "filter" });
  const form = h(
    "form",
    { class: "filters", onsubmit: (e) => { e.preventDefault(); apply({ q: filter.value.trim() }); } },
    filter,
    h(
      "select",
      { name: "project", "aria-label": "project", onchange: (e) => apply({ project: e.target.value }) },
      h("option", { value: "" }, "all projects"),
      data.projects.map((p) => h("option", { value: p, selected: p === project }, p)),
    ),
    h(
      "select",
      { name: "client", "aria-label": "client", onchange: (e) => apply({ client: e.target.value }) },
      h("option", { value: "" }, "all clients"),
      data.clients.map((c) => h("option", { value: c, selected: c === client }, c)),
    ),
    h(
      "select",
      { name: "sort", "aria-label": "sort", onchange: (e) => apply({ sort: e.target.value }) },
      SORTS.map(([value, label]) => h("option", { value, selected: value === sort }, `sort: ${label}`)),
    ),
    h("button", { type: "button", onclick: () => apply({ order: order === "desc" ? "asc" : "desc" }) }, order === "desc" ? "↓ newest/largest first" : "↑ oldest/smallest first"),
    h("button", { type: "submit" }, "Filter"),
  );
  const table = h(
    "table",
    { class: "grid", id: "conversations" },
    h(
      "thead",
      {},
      h("tr", {}, ["conversation", "project", "client", "messages", "history tokens", "context tokens", "compaction", "last activity"].map((t) => h("th", {}, t))),
    ),
    h(
      "tbody",
      {},
      data.rows.map((row) => [
        rowCells(row, false),
        row.children.map((c) => rowCells(c, true)),
        row.more_children ? h("tr", { class: "child" }, h("td", { colspan: 8, class: "muted" }, `… ${row.more_children} more sub-agents`)) : null,
      ]),
    ),
  );
  put(root, 
    h("h1", {}, "Conversations"),
    h("p", { class: "muted" }, `${num(data.total)} conversations (${num(data.total_with_subagents)} with sub-agents). History tokens: everything stored; context tokens: what the model sees now.`),
    form,
    data.rows.length ? table : h("p", { class: "empty" }, "No conversation matches."),
    pager({ offset, limit: LIMIT, total: data.total, onPage: (o) => apply({ offset: o }) }),
  );
}
