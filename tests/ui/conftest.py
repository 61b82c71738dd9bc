"""Fixtures of the UI tests: a compacted store of the real transcripts, the
``lcm ui`` server over it, and headless Chromium driven by Playwright."""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from tests.conftest import SHARED_DATA, SUITE_ENV
from tests.ui.ui_server import CHROMIUM, CHROMIUM_FLAGS, UiServer, build_real_store

ARTIFACTS = Path(__file__).resolve().parent / "artifacts"


def _unavailable(reason: str) -> None:
    if os.environ.get("CI", "").lower() == "true":
        pytest.fail(f"browser tests cannot run under CI: {reason}", pytrace=False)
    pytest.skip(f"browser tests skipped: {reason}")


@pytest.fixture(scope="session")
def real_store(tmp_path_factory: pytest.TempPathFactory) -> Path:
    if not SHARED_DATA.is_dir():
        pytest.skip(f"real transcripts not found at {SHARED_DATA} (../shared/data)")
    home = tmp_path_factory.mktemp("ui-store")
    env = {**{k: v for k, v in os.environ.items() if not k.startswith("LCM_")}, **SUITE_ENV}
    build_real_store(home, SHARED_DATA, env=env)
    return home


@pytest.fixture(scope="session")
def ui_server(real_store: Path) -> Iterator[UiServer]:
    env = {**{k: v for k, v in os.environ.items() if not k.startswith("LCM_")}, **SUITE_ENV}
    server = UiServer(real_store, env=env)
    try:
        yield server
    finally:
        server.stop()


# Module scope: Playwright's sync API keeps an asyncio loop marked running on
# this thread while it is open, and any later test that runs a loop of its own
# (anyio, asyncio.run: the MCP tests) would fail after the UI tests.
@pytest.fixture(scope="module")
def browser(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        _unavailable("playwright is not installed (pip install -e '.[ui-test]')")
    if not CHROMIUM.exists():
        _unavailable(f"{CHROMIUM} is missing (apt-get install chromium)")
    profile = tmp_path_factory.mktemp("chromium-profile")
    with sync_playwright() as playwright:
        # A persistent context on a fresh folder: the --user-data-dir is ours.
        context = playwright.chromium.launch_persistent_context(
            str(profile),
            executable_path=str(CHROMIUM),
            headless=True,
            args=CHROMIUM_FLAGS,
            viewport={"width": 1400, "height": 900},
        )
        try:
            yield context
        finally:
            context.close()


@pytest.fixture
def page(browser: Any) -> Iterator[Any]:
    """A fresh tab; any script error or failed request fails the test."""
    tab = browser.new_page()
    problems: list[str] = []
    tab.on("pageerror", lambda error: problems.append(f"page error: {error}"))
    tab.on(
        "console",
        lambda message: (
            problems.append(f"console: {message.text}") if message.type == "error" else None
        ),
    )
    tab.on(
        "response",
        lambda response: (
            problems.append(f"{response.status} {response.url}") if response.status >= 400 else None
        ),
    )
    yield tab
    tab.close()
    assert not problems, problems


@pytest.fixture(scope="session")
def artifacts() -> Path:
    shutil.rmtree(ARTIFACTS, ignore_errors=True)
    ARTIFACTS.mkdir(parents=True)
    return ARTIFACTS
