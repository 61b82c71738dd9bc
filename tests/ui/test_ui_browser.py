"""End to end in headless Chromium: every page loads and shows real content,
the DAG leads to a source message and back, a search hit leads into the
conversation and the DAG, a large expansion pages. Screenshots of each step
are kept in tests/ui/artifacts/ (git-ignored)."""

from __future__ import annotations

import base64
import re
from pathlib import Path
from typing import Any

import pytest
from tests.ui.ui_server import UiServer

# Counts the colours of a screenshot in the browser itself (no image library
# needed): a blank or single-colour page has almost none.
_IMAGE_STATS = """async (data) => {
  const image = new Image();
  image.src = "data:image/png;base64," + data;
  await image.decode();
  const canvas = document.createElement("canvas");
  canvas.width = image.width; canvas.height = image.height;
  const ctx = canvas.getContext("2d");
  ctx.drawImage(image, 0, 0);
  const pixels = ctx.getImageData(0, 0, image.width, image.height).data;
  const colours = new Set();
  let dark = 0;
  for (let i = 0; i < pixels.length; i += 16) {
    colours.add((pixels[i] >> 3) << 10 | (pixels[i + 1] >> 3) << 5 | (pixels[i + 2] >> 3));
    if (pixels[i] + pixels[i + 1] + pixels[i + 2] < 200) dark++;
  }
  return { colours: colours.size, dark: dark / (pixels.length / 16) };
}"""


def open_page(page: Any, server: UiServer, fragment: str) -> None:
    page.goto(f"{server.url}#{fragment}")
    wait_ready(page)


def wait_ready(page: Any) -> None:
    page.wait_for_selector("body[data-ready='1']", timeout=20_000)


def shoot(page: Any, artifacts: Path, name: str) -> Path:
    """Screenshot the page and check it shows real, error-free content."""
    path = artifacts / f"{name}.png"
    png = page.screenshot(path=str(path), full_page=False)
    assert page.locator(".error").count() == 0, page.locator(".error").first.inner_text()
    stats = page.evaluate(_IMAGE_STATS, base64.b64encode(png).decode())
    assert stats["colours"] >= 8, f"{name}: the screenshot is nearly blank ({stats})"
    assert 0.002 < stats["dark"] < 0.6, f"{name}: no text, or all dark ({stats})"
    return path


PAGES = [
    ("conversations", "/", "#conversations tbody tr"),
    ("search", "/search?q=mix+test&mode=full_text", "#hits li"),
    ("memories", "/memories", "#memories tbody tr"),
    ("files", "/files", "h1"),
    ("jobs", "/jobs", "#map-jobs tbody tr"),
    ("health", "/health?doctor=1", "#doctor tr"),
]


@pytest.mark.parametrize(("name", "fragment", "selector"), PAGES)
def test_each_page_loads(
    page: Any, ui_server: UiServer, artifacts: Path, name: str, fragment: str, selector: str
) -> None:
    open_page(page, ui_server, fragment)
    assert page.locator(selector).count() >= 1
    assert "sqlite" in page.inner_text("#store")
    if name == "health":
        # The counts come on their own request; the page is ready once they are in.
        figures = page.inner_text("#store-stats")
        assert "counting" not in figures and re.search(
            r"messages\s+[\d,]+ \([\d,]+ tokens\)", figures
        )
    shoot(page, artifacts, f"page-{name}")


def _conversation_with_dag(page: Any, ui_server: UiServer) -> str:
    open_page(page, ui_server, "/?sort=messages")
    rows = page.locator("#conversations tbody tr:has(.badge.ok:has-text('d1:'))")
    assert rows.count() >= 1
    return str(rows.first.get_attribute("data-conversation"))


def test_context_window_bar_and_assembled_context(
    page: Any, ui_server: UiServer, artifacts: Path
) -> None:
    conversation = _conversation_with_dag(page, ui_server)
    page.click(f"#conversations tr[data-conversation='{conversation}'] td a")
    page.wait_for_selector("body[data-painted='context']")
    kinds = page.locator("#context-bar .seg").evaluate_all("els => els.map(e => e.dataset.kind)")
    assert "tail" in kinds and "free" in kinds and "summary" in kinds
    assert page.locator("#assembled .msg").count() >= 1
    assert page.locator("#assembled .block.summary").count() >= 1
    shoot(page, artifacts, "context-window")
    # A smaller budget leaves older items out and says so.
    page.fill("input[name=budget]", "2000")
    page.click("button:has-text('Assemble')")
    page.wait_for_function("location.hash.includes('budget=2000')")
    wait_ready(page)
    assert page.locator("text=left out").count() + page.locator(".warn").count() >= 1
    shoot(page, artifacts, "context-window-small-budget")


def test_dag_to_a_source_message_and_back(page: Any, ui_server: UiServer, artifacts: Path) -> None:
    conversation = _conversation_with_dag(page, ui_server)
    open_page(page, ui_server, f"/c/{conversation}/dag")
    condensed = page.locator("svg.dag g.node.condensed").first
    root_id = condensed.get_attribute("data-id")
    condensed.click()
    page.wait_for_selector("#expand-children")
    # Only the summary's own fields: no stray "null" for a field it lacks.
    assert [t.strip() for t in page.locator("#dag-panel > p").all_inner_texts()].count("null") == 0
    assert "null" not in page.inner_text("#dag-panel").split("\n")
    page.click("#expand-children")
    page.wait_for_selector("svg.dag g.node.leaf")
    shoot(page, artifacts, "dag-expanded")
    leaf = page.locator("svg.dag g.node.leaf").first
    leaf_id = leaf.get_attribute("data-id")
    leaf.click()
    page.wait_for_selector("#source-messages article.msg")
    assert page.inner_text("#dag-panel h2") == leaf_id
    assert page.inner_text("#summary-text").strip()
    shoot(page, artifacts, "dag-leaf-selected")
    message_link = page.locator("#source-messages a.open-message").first
    message_id = message_link.inner_text().split()[-1]
    message_link.click()
    wait_ready(page)
    page.wait_for_selector("#message-text")
    assert page.url.endswith(f"#/m/{message_id}")
    shoot(page, artifacts, "source-message")
    page.click("#back-to-summary")
    wait_ready(page)
    page.wait_for_selector(f"svg.dag g.node.selected[data-id='{leaf_id}']")
    assert page.inner_text("#dag-panel h2") == leaf_id
    # The path down from the root was opened to show it.
    assert page.locator(f"svg.dag g.node.open[data-id='{root_id}']").count() == 1
    shoot(page, artifacts, "dag-back-at-summary")


def test_search_and_follow_a_hit(page: Any, ui_server: UiServer, artifacts: Path) -> None:
    open_page(page, ui_server, "/search")
    page.fill("input[name=q]", "mix test")
    page.select_option("select[name=mode]", "full_text")
    page.click("#search-form button[type=submit]")
    page.wait_for_selector("#hits li mark")
    marks = page.locator("#hits li mark").all_inner_texts()
    assert all(m.casefold().startswith(("mix", "test")) for m in marks[:20])
    shoot(page, artifacts, "search-hits")
    hit = page.locator("#hits li.message:has(a.dag-link)").first
    dag_link = hit.locator("a.dag-link")
    summary_id = (dag_link.get_attribute("href") or "").split("focus=")[-1]
    hit.locator("a.hit-link").click()
    wait_ready(page)
    page.wait_for_selector("#message-text")
    shoot(page, artifacts, "search-hit-message")
    page.go_back()
    wait_ready(page)
    page.locator(f"#hits a.dag-link[href$='{summary_id}']").first.click()
    wait_ready(page)
    page.wait_for_selector(f"svg.dag g.node.selected[data-id='{summary_id}']")
    shoot(page, artifacts, "search-hit-in-dag")


def test_a_large_expansion_pages(page: Any, ui_server: UiServer, artifacts: Path) -> None:
    conversation = _conversation_with_dag(page, ui_server)
    open_page(page, ui_server, f"/c/{conversation}/dag")
    page.locator("svg.dag g.node.condensed").first.click()
    page.click("#expand-children")
    page.wait_for_selector("svg.dag g.node.leaf")
    counts = page.locator("svg.dag g.node.leaf text.t3").all_text_contents()
    sizes = [int(t.split()[0].replace(",", "")) for t in counts if t.endswith("messages")]
    biggest = max(range(len(sizes)), key=lambda i: sizes[i])
    assert sizes[biggest] > 50, "a leaf of the real sessions covers more than two pages"
    leaf = page.locator("svg.dag g.node.leaf").nth(biggest)
    leaf_id = leaf.get_attribute("data-id")
    leaf.click()
    page.wait_for_selector("#source-messages article.msg")
    assert page.inner_text("#dag-panel h2") == leaf_id
    seen: list[str] = []
    pages = 0
    while True:
        ids = page.locator("#source-messages article.msg").evaluate_all(
            "els => els.map(e => e.dataset.message)"
        )
        seen.extend(ids)
        pages += 1
        if pages == 2:
            shoot(page, artifacts, "expansion-page-2")
        if page.locator("#msgs-next").is_disabled():
            break
        before = page.text_content("#msgs-range")
        page.click("#msgs-next")
        page.wait_for_function(
            "before => document.querySelector('#msgs-range').textContent !== before", arg=before
        )
    # A message longer than a page continues on the next one under the same id.
    whole = [m for i, m in enumerate(seen) if i == 0 or seen[i - 1] != m]
    assert len(whole) == sizes[biggest] == len(set(whole))
    assert pages >= 2
    # Back one page: the ids of the page before the last, again.
    last_range = page.text_content("#msgs-range")
    page.click("#msgs-prev")
    page.wait_for_function(
        "before => document.querySelector('#msgs-range').textContent !== before", arg=last_range
    )
    back = page.locator("#source-messages article.msg").evaluate_all(
        "els => els.map(e => e.dataset.message)"
    )
    assert back and seen[-(len(ids) + len(back)) : -len(ids)] == back


def test_first_meaningful_paint_of_a_conversation(
    page: Any, ui_server: UiServer, record_property: Any
) -> None:
    conversation = _conversation_with_dag(page, ui_server)
    page.goto("about:blank")
    page.goto(f"{ui_server.url}#/c/{conversation}")
    page.wait_for_selector("body[data-painted='context']")
    paint_ms = page.evaluate("window.__lcmPaint")
    record_property("first_meaningful_paint_ms", paint_ms)
    print(f"first meaningful paint of conversation {conversation}: {paint_ms:.0f} ms")
    assert paint_ms > 0
