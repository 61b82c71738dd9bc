// Jobs: `lcm map` runs when this version has them, and the compaction queue.
import { api } from "../api.js";
import { h, put, num } from "../dom.js";

export async function render(root) {
  const data = await api("jobs");
  const c = data.compaction;
  put(root, 
    h("h1", {}, "Jobs"),
    h("h2", {}, "lcm map"),
    data.map.available ? h("p", {}, `${num(data.map.jobs.length)} job(s)`) : h("p", { class: "muted", id: "map-unavailable" }, `Not available: ${data.map.reason}.`),
    h("h2", {}, "Compaction"),
    h("p", {}, c.worker_pid ? `Worker running (pid ${c.worker_pid}).` : "No worker running.", ` ${num(c.pending.length)} conversation(s) waiting, ${num(c.failed.length)} failed.`),
    c.pending.length ? h("ul", {}, c.pending.map((p) => h("li", {}, h("a", { href: `#/c/${p.id}` }, p.session_id), ` waiting ${num(p.waiting_s)} s`))) : null,
    c.failed.length ? h("ul", { class: "bad" }, c.failed.map((p) => h("li", {}, h("a", { href: `#/c/${p.id}` }, p.session_id), `: ${p.error}`))) : null,
  );
}
