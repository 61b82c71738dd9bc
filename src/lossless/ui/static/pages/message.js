// One stored message, verbatim, with the way back to the summary covering it.
import { api } from "../api.js";
import { h, put, num, when, badge } from "../dom.js";

export async function render(root, { match }) {
  const m = await api(`messages/${match[1]}`);
  const back = m.covering_summary_id
    ? h("p", {}, "Covered by ", h("a", { href: `#/c/${m.conversation_id}/dag?focus=${m.covering_summary_id}`, id: "back-to-summary" }, `${m.covering_summary_id} in the DAG`), m.summary_path.length > 1 ? h("span", { class: "muted" }, ` (under ${m.summary_path.slice(1).join(" ← ")})`) : null)
    : h("p", { class: "muted", id: "not-compacted" }, "Not compacted yet: this message is in the context as it is.");
  put(root, 
    h("h1", {}, `Message ${m.id}`),
    h("p", { class: "muted" }, `${m.role} · seq ${m.seq} · ${when(m.created_at)} · ${num(m.token_count)} tokens · conversation `, h("a", { href: `#/c/${m.conversation_id}` }, m.session_id || `#${m.conversation_id}`), ` · ${m.native_record_count} native record(s)`),
    back,
    h("pre", { class: "message-text", id: "message-text" }, m.content),
    m.parts.length ? h("h2", {}, `Parts (${m.parts.length})`) : null,
    m.parts.map((p) => h("div", { class: "block" }, h("div", { class: "block-head" }, badge(p.kind), ` ${p.tool_name || ""} ${p.tool_call_id || ""}`), p.text ? h("pre", {}, p.text) : null)),
  );
}
