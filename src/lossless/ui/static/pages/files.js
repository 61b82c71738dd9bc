// Large files stored apart from their messages, with their exploration summaries.
import { api } from "../api.js";
import { h, put, num, when } from "../dom.js";

export async function render(root, { params, go }) {
  const cursor = Number(params.get("cursor") || 0);
  const open = params.get("open");
  const data = await api("files", { cursor, limit: 50 });
  put(root, 
    h("h1", {}, "Large files"),
    h("p", { class: "muted" }, "Content too large to keep inline is stored apart; the message keeps a reference and an exploration summary."),
  );
  if (open) {
    const f = await api(`files/${encodeURIComponent(open)}`);
    put(root, 
      h(
        "section",
        { class: "file-detail", id: "file-detail" },
        h("h2", {}, f.name || f.id),
        h("p", { class: "muted" }, `${f.id} · ${f.media_type} · ${num(f.byte_size)} bytes · ${num(f.token_count)} tokens · `, f.message_id ? h("a", { href: `#/m/${f.message_id}` }, `message ${f.message_id}`) : null),
        h("pre", {}, f.exploration_summary),
        f.error ? h("p", { class: "error" }, f.error) : h("pre", { class: "file-content" }, f.content + (f.clipped ? "\n… (clipped; `lcm describe` shows all)" : "")),
      ),
    );
  }
  put(root, 
    data.items.length
      ? h(
          "table",
          { class: "grid", id: "files" },
          h("thead", {}, h("tr", {}, ["file", "size", "tokens", "exploration summary", "conversation", "stored"].map((t) => h("th", {}, t)))),
          h(
            "tbody",
            {},
            data.items.map((f) =>
              h(
                "tr",
                {},
                h("td", {}, h("a", { href: `#/files?cursor=${cursor}&open=${f.id}` }, f.name || f.id), h("div", { class: "muted small" }, `${f.id} · ${f.media_type}`)),
                h("td", { class: "n" }, num(f.byte_size)),
                h("td", { class: "n" }, num(f.token_count)),
                h("td", {}, h("pre", { class: "small" }, f.exploration_summary)),
                h("td", {}, h("a", { href: `#/c/${f.conversation_id}` }, f.session_id)),
                h("td", {}, when(f.created_at)),
              ),
            ),
          ),
        )
      : h("p", { class: "empty" }, "No large files on this page."),
    h(
      "div",
      { class: "pager" },
      h("button", { type: "button", disabled: cursor <= 0, onclick: () => go("/files", {}) }, "‹ First"),
      h("span", { class: "muted" }, ` ${num(data.conversations_walked)} of ${num(data.conversations)} conversations looked at `),
      h("button", { type: "button", disabled: data.next_cursor === null, onclick: () => go("/files", { cursor: data.next_cursor }) }, "Next ›"),
    ),
  );
}
