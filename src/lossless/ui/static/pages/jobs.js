// Jobs: `lcm map` runs when this version has them, and the compaction queue.
import { api } from "../api.js";
import { h, put, num } from "../dom.js";

export async function render(root) {
  const data = await api("jobs");
  const c = data.compaction;
  put(root, 
    h("h1", {}, "Jobs"),
    h("h2", {}, "lcm map"),
    data.map.available ? mapJobs(data.map.jobs) : h("p", { class: "muted", id: "map-unavailable" }, `Not available: ${data.map.reason}.`),
    h("h2", {}, "Compaction"),
    h("p", {}, c.worker_pid ? `Worker running (pid ${c.worker_pid}).` : "No worker running.", ` ${num(c.pending.length)} conversation(s) waiting, ${num(c.failed.length)} failed.`),
    c.pending.length ? h("ul", {}, c.pending.map((p) => h("li", {}, h("a", { href: `#/c/${p.id}` }, p.session_id), ` waiting ${num(p.waiting_s)} s`))) : null,
    c.failed.length ? h("ul", { class: "bad" }, c.failed.map((p) => h("li", {}, h("a", { href: `#/c/${p.id}` }, p.session_id), `: ${p.error}`))) : null,
  );
}

function mapJobs(jobs) {
  if (!jobs.length) return h("p", { class: "muted", id: "map-none" }, "No lcm map jobs yet.");
  return h("table", { id: "map-jobs" },
    h("thead", {}, h("tr", {}, ["job", "kind", "status", "ok", "failed", "pending", "calls", "tokens", "cost", "prompt"].map((t) => h("th", {}, t)))),
    h("tbody", {}, jobs.map((j) => h("tr", {},
      h("td", {}, j.conversation_id ? h("a", { href: `#/c/${j.conversation_id}` }, j.id) : j.id),
      h("td", {}, j.kind),
      h("td", { class: j.status === "done" ? "" : "muted" }, j.status),
      h("td", {}, num(j.items.ok)),
      h("td", { class: j.items.failed ? "bad" : "" }, num(j.items.failed)),
      h("td", {}, num(j.items.pending + j.items.running)),
      h("td", {}, num(j.usage.calls)),
      h("td", {}, num(j.usage.input_tokens + j.usage.output_tokens)),
      h("td", {}, j.usage.cost_usd === null ? "unknown" : `$${j.usage.cost_usd.toFixed(4)}`),
      h("td", {}, j.prompt.length > 80 ? j.prompt.slice(0, 79) + "…" : j.prompt),
    ))),
  );
}
