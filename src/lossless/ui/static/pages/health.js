// The store's health: what `lcm status` and `lcm doctor` report, backlogs included.
import { api } from "../api.js";
import { h, put, num, badge } from "../dom.js";

function table(rows, id) {
  return h("table", { class: "grid kv", id }, h("tbody", {}, rows.map(([k, v]) => h("tr", {}, h("th", {}, k), h("td", {}, v)))));
}

export async function render(root, { params, go, isCurrent }) {
  const doctor = params.get("doctor") === "1";
  // The counts sum every message row (seconds on a large store): asked for
  // beside the rest, shown when they come.
  const counting = api("health/figures");
  const data = await api("health", { doctor: doctor ? 1 : "" });
  if (!isCurrent()) return;
  const info = data.store;
  const redacted = Object.entries(data.redactions).map(([k, v]) => `${k} ${num(v)}`).join(", ");
  const pending = "counting…";
  const stats = table(
    [
      ["backend", `${info.backend} (${info.path || ""})`],
      ["version", info.server_version ? `PostgreSQL ${info.server_version}` : info.sqlite_version ? `SQLite ${info.sqlite_version}` : "–"],
      ["schema", (info.migrations || []).join(", ") || "none"],
      ["size", info.bytes_on_disk !== undefined ? `${(info.bytes_on_disk / 1e6).toFixed(1)} MB` : "–"],
      ["conversations", pending],
      ["messages", pending],
      ["summaries", pending],
      ["large files", pending],
      ["quarantined lines", pending],
      ["redacted secrets", redacted || "none"],
    ],
    "store-stats",
  );
  put(root,
    h("h1", {}, "Health"),
    h("h2", {}, "Store"),
    stats,
    h("h2", {}, "Backlogs"),
    table(
      [
        ["substring index", data.substring_index_backlog ? `${num(data.substring_index_backlog)} message(s) not indexed yet (regex grep scans them meanwhile)` : "up to date"],
        ["compaction waiting", num(data.compaction_pending)],
        ["compaction failed", num(data.compaction_failed)],
        ["worker", data.worker_pid ? `running (pid ${data.worker_pid})` : "not running"],
      ],
      "backlogs",
    ),
    h("h2", {}, "Doctor"),
  );
  // Painted: everything but the counts is on screen.
  window.__lcmPaint = performance.now();
  document.body.dataset.painted = "health";
  const s = await counting;
  if (!isCurrent()) return;
  const cells = stats.querySelectorAll("td");
  const counted = [num(s.conversations), `${num(s.messages)} (${num(s.message_tokens)} tokens)`, `${num(s.summaries)} (${num(s.summary_tokens)} tokens)`, num(s.large_files), num(s.quarantined)];
  counted.forEach((text, i) => { cells[4 + i].textContent = text; });
  if (!data.doctor) {
    put(root, h("button", { type: "button", id: "run-doctor", onclick: () => go("/health", { doctor: 1 }) }, "Run the store, worker, summarizer and hook checks"), h("p", { class: "muted" }, "The integrity check reads the whole database: slow on a large store."));
    return;
  }
  put(root, 
    h(
      "table",
      { class: "grid", id: "doctor" },
      h("tbody", {}, data.doctor.map((c) => h("tr", {}, h("td", {}, badge(c.status, c.status === "ok" ? "ok" : c.status === "problem" ? "bad" : "warn")), h("td", {}, `${c.area}: ${c.name}`), h("td", {}, c.detail, c.fix ? h("div", { class: "muted" }, `fix: ${c.fix}`) : null)))),
    ),
  );
}
