// The router: one page module per hash route (#/c/12/dag?focus=sum_...).
import { api } from "./api.js";
import { h, errorBox } from "./dom.js";
import * as conversations from "./pages/conversations.js";
import * as context from "./pages/context.js";
import * as dag from "./pages/dag.js";
import * as message from "./pages/message.js";
import * as search from "./pages/search.js";
import * as memories from "./pages/memories.js";
import * as files from "./pages/files.js";
import * as jobs from "./pages/jobs.js";
import * as health from "./pages/health.js";

const routes = [
  [/^\/?$/, conversations, "conversations"],
  [/^\/conversations$/, conversations, "conversations"],
  [/^\/c\/([^/]+)$/, context, "conversations"],
  [/^\/c\/([^/]+)\/dag$/, dag, "conversations"],
  [/^\/m\/(\d+)$/, message, "conversations"],
  [/^\/search$/, search, "search"],
  [/^\/memories$/, memories, "memories"],
  [/^\/files$/, files, "files"],
  [/^\/jobs$/, jobs, "jobs"],
  [/^\/health$/, health, "health"],
];

export function parseHash() {
  const raw = location.hash.replace(/^#/, "") || "/";
  const [path, query = ""] = raw.split("?");
  return { path, params: new URLSearchParams(query) };
}

export function go(path, params = {}) {
  const query = new URLSearchParams();
  for (const [key, value] of Object.entries(params)) {
    if (value !== null && value !== undefined && value !== "") query.set(key, String(value));
  }
  const qs = query.toString();
  location.hash = `#${path}${qs ? "?" + qs : ""}`;
}

let generation = 0;

async function render() {
  const { path, params } = parseHash();
  const view = document.getElementById("view");
  const mine = ++generation;
  for (const [pattern, page, nav] of routes) {
    const match = path.match(pattern);
    if (!match) continue;
    for (const link of document.querySelectorAll("[data-nav]")) {
      link.classList.toggle("active", link.dataset.nav === nav);
    }
    const root = h("div", { class: "page" });
    view.replaceChildren(root);
    document.body.dataset.page = nav;
    delete document.body.dataset.ready;
    try {
      await page.render(root, { match, params, go, isCurrent: () => mine === generation });
    } catch (error) {
      if (mine === generation) root.append(errorBox(error));
    }
    // Ready means the page names its store too (requests run side by side).
    await storeShown;
    if (mine === generation) {
      window.__lcmReady = performance.now();
      document.body.dataset.ready = "1";
    }
    return;
  }
  view.replaceChildren(errorBox(`no page ${path}`));
}

async function showStore() {
  const label = document.getElementById("store");
  try {
    const store = await api("store");
    label.textContent = `${store.backend}: ${store.where}`;
    label.dataset.backend = store.backend;
  } catch (error) {
    label.textContent = `store unavailable: ${error.message}`;
  }
}

const storeShown = showStore();
window.addEventListener("hashchange", render);
render();
