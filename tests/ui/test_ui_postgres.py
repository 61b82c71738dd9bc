"""The UI over PostgreSQL: same pages, same engine answers, and it says which store."""

from __future__ import annotations

import json
import os
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from tests.conftest import SHARED_DATA
from tests.pg_fixtures import own_pg_server, pg_home  # noqa: F401
from tests.ui.test_ui_browser import open_page, shoot
from tests.ui.ui_server import UiServer, lcm


def get(server: UiServer, path: str) -> Any:
    with urllib.request.urlopen(server.url + path, timeout=60) as response:
        return json.loads(response.read())


@pytest.fixture
def pg_ui(pg_home: str, tmp_path: Path) -> Iterator[tuple[UiServer, Path]]:  # noqa: F811
    if not SHARED_DATA.is_dir():
        pytest.skip(f"real transcripts not found at {SHARED_DATA} (../shared/data)")
    home = tmp_path / "pg-ui-home"
    spotter = SHARED_DATA / "claude-code" / "spotter"
    for args in (
        (
            "import",
            str(spotter / "4d5611e5-241a-462a-8d15-5122611a9569.jsonl"),
            str(spotter / "4d5611e5-241a-462a-8d15-5122611a9569"),
            "-q",
            "--complete",
        ),
        ("compact", "--all", "-q"),
    ):
        done = lcm(home, *args, env=dict(os.environ))
        assert done.returncode == 0, done.stderr
    server = UiServer(home, env=dict(os.environ))
    try:
        yield server, home
    finally:
        server.stop()


def test_the_ui_reads_a_postgresql_store_and_says_so(
    pg_ui: tuple[UiServer, Path], page: Any, artifacts: Path
) -> None:
    server, home = pg_ui
    assert get(server, "api/store")["backend"] == "postgresql"
    listing = get(server, "api/conversations")
    assert listing["total_with_subagents"] == 3
    parent = next(r for r in listing["rows"] if r["children"])
    context = get(server, f"api/conversations/{parent['id']}/context?limit=200")
    expected = json.loads(
        lcm(home, "context", str(parent["id"]), "--json", env=dict(os.environ)).stdout
    )
    assert context["breakdown"] == expected["breakdown"]
    assert context["messages"] == expected["request"]["messages"][:200]
    dag = get(server, f"api/conversations/{parent['id']}/dag")
    assert dag["roots"]
    children = get(server, f"api/summaries/{dag['roots'][0]['id']}/children")
    assert children["total"] == dag["roots"][0]["child_count"] > 0
    hits = get(server, "api/search?q=mix+test&mode=full_text&limit=10")["hits"]
    grep = json.loads(
        lcm(
            home,
            "grep",
            "mix test",
            "--mode",
            "full_text",
            "-n",
            "10",
            "--json",
            env=dict(os.environ),
        ).stdout
    )
    assert [h["id"] for h in hits] == [h["id"] for h in grep["hits"]]
    assert get(server, "api/health")["store"]["backend"] == "postgresql"
    # In the browser: every page names the store it shows.
    open_page(page, server, "/health")
    assert page.inner_text("#store").startswith("postgresql:")
    assert "PostgreSQL" in page.inner_text("#store-stats")
    shoot(page, artifacts, "postgres-health")
    open_page(page, server, "/")
    assert page.locator("#conversations tbody tr").count() == 3
    shoot(page, artifacts, "postgres-conversations")
