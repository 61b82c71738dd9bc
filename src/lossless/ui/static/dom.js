// Small DOM helpers. Stored text is untrusted (tool output, web pages):
// it only ever becomes text nodes, never HTML.

export function h(tag, attrs = {}, ...children) {
  const el = document.createElement(tag);
  for (const [key, value] of Object.entries(attrs || {})) {
    if (value === null || value === undefined || value === false) continue;
    if (key === "class") el.className = value;
    else if (key === "dataset") Object.assign(el.dataset, value);
    // The page's CSP forbids style attributes; CSSOM properties are fine.
    else if (key === "style") Object.assign(el.style, value);
    else if (key.startsWith("on") && typeof value === "function") el.addEventListener(key.slice(2), value);
    else el.setAttribute(key, value === true ? "" : String(value));
  }
  append(el, children);
  return el;
}

export function append(el, children) {
  for (const child of children.flat(Infinity)) {
    if (child === null || child === undefined || child === false) continue;
    el.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
  return el;
}

export function svg(tag, attrs = {}, ...children) {
  const el = document.createElementNS("http://www.w3.org/2000/svg", tag);
  for (const [key, value] of Object.entries(attrs)) {
    if (value === null || value === undefined) continue;
    if (key.startsWith("on") && typeof value === "function") el.addEventListener(key.slice(2), value);
    else el.setAttribute(key, String(value));
  }
  for (const child of children.flat(Infinity)) {
    if (child === null || child === undefined) continue;
    el.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
  return el;
}

export const num = (n) => (n === null || n === undefined ? "–" : Number(n).toLocaleString("en-US"));

export function when(ts) {
  if (!ts) return "–";
  return String(ts).slice(0, 16).replace("T", " ");
}

export function span(a, b) {
  if (!a && !b) return "(no time)";
  const x = when(a || b), y = when(b || a);
  if (x === y) return x;
  if (x.slice(0, 10) === y.slice(0, 10)) return `${x} → ${y.slice(11)}`;
  return `${x} → ${y}`;
}

// Text with highlight spans ([start, end) pairs) as <mark> elements.
export function marked(text, spans) {
  const out = h("span", { class: "snippet" });
  let at = 0;
  for (const [start, end] of [...(spans || [])].sort((a, b) => a[0] - b[0])) {
    if (start < at) continue;
    out.append(document.createTextNode(text.slice(at, start)));
    out.append(h("mark", {}, text.slice(start, end)));
    at = end;
  }
  out.append(document.createTextNode(text.slice(at)));
  return out;
}

export function errorBox(error) {
  return h("div", { class: "error", role: "alert" }, String(error && error.message ? error.message : error));
}

export function pager({ offset, limit, total, onPage }) {
  const last = Math.max(0, total - 1);
  const from = total ? offset + 1 : 0;
  const to = Math.min(total, offset + limit);
  return h(
    "div",
    { class: "pager" },
    h("button", { type: "button", disabled: offset <= 0, onclick: () => onPage(Math.max(0, offset - limit)) }, "‹ Previous"),
    h("span", { class: "muted" }, ` ${num(from)}–${num(to)} of ${num(total)} `),
    h("button", { type: "button", disabled: offset + limit > last, onclick: () => onPage(offset + limit) }, "Next ›"),
  );
}

export function badge(text, kind = "") {
  return h("span", { class: `badge ${kind}` }, text);
}

// Element.append stringifies null ("null"); this skips empty children.
export function put(el, ...children) {
  return append(el, children);
}
