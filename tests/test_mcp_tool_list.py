"""The tool list shipped with the package (``lossless.mcp_tool_list``) is the SDK's own.

The stdio front answers ``tools/list`` from it without importing the SDK,
so it must be exactly what the installed SDK answers over its real stdio.
"""

from __future__ import annotations

import importlib.metadata
import json
from pathlib import Path

import pytest

pytest.importorskip("mcp", reason="the MCP SDK is the 'mcp' extra")

from lossless import mcp_tool_list
from lossless.mcp_stdio import json_line

REGENERATE = "stale: regenerate it with `python -m lossless.mcp_tool_list`"


def test_the_shipped_list_is_the_sdks_answer_byte_for_byte(tmp_path: Path) -> None:
    shipped = json.loads(mcp_tool_list.PACKAGED.read_text(encoding="utf-8"))
    installed = mcp_tool_list.installed_versions()
    if shipped["rendered_by"] != installed:
        # Other versions (a newer SDK than the one that rendered it): the
        # server does not use it (next test), `lcm install` renders the list
        # for the home instead (the last test); nothing here can say whether
        # a tool changed too.
        assert mcp_tool_list.packaged() is None
        pytest.skip(f"rendered by {shipped['rendered_by']}, installed {installed}; {REGENERATE}")
    request = {"jsonrpc": "2.0", "id": 7, "method": "tools/list"}
    (sdk_line,) = mcp_tool_list.sdk_answers([request], tmp_path / "home")
    front_line = json_line({"jsonrpc": "2.0", "id": 7, "result": mcp_tool_list.packaged()})
    assert front_line == sdk_line, REGENERATE
    names = [tool["name"] for tool in shipped["result"]["tools"]]
    assert {"lcm_grep", "lcm_store", "lcm_expand_query", "lcm_job"} <= set(names)


def test_installed_versions_are_the_distributions_own() -> None:
    versions = mcp_tool_list.installed_versions()
    assert versions is not None
    assert versions == {name: importlib.metadata.version(name) for name in mcp_tool_list.RENDERERS}


def test_a_list_rendered_by_other_versions_is_not_used(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    shipped = json.loads(mcp_tool_list.PACKAGED.read_text(encoding="utf-8"))
    other = tmp_path / "mcp_tool_list.json"
    monkeypatch.setattr(mcp_tool_list, "PACKAGED", other)
    other.write_text(json.dumps({**shipped, "rendered_by": {**shipped["rendered_by"], "mcp": "0"}}))
    assert mcp_tool_list.packaged() is None
    other.write_text(json.dumps(shipped))
    assert mcp_tool_list.packaged() == shipped["result"]
    other.write_text("{not json")
    assert mcp_tool_list.packaged() is None


def test_install_renders_the_list_for_an_sdk_the_shipped_one_does_not_fit(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from lossless.mcp_tools_cache import TOOLS_CACHE, ToolsCache

    if mcp_tool_list.packaged() is not None:
        # The shipped list fits: install renders nothing, writes nothing.
        assert mcp_tool_list.prepare_home(tmp_path / "fits") is None
        assert not (tmp_path / "fits").exists()
    home = tmp_path / "home"
    shipped = json.loads(mcp_tool_list.PACKAGED.read_text(encoding="utf-8"))
    other = tmp_path / "mcp_tool_list.json"
    other.write_text(json.dumps({**shipped, "rendered_by": {"mcp": "0"}}))
    monkeypatch.setattr(mcp_tool_list, "PACKAGED", other)
    note = mcp_tool_list.prepare_home(home)
    assert note is not None and "mcp" in note
    cached = ToolsCache(home / TOOLS_CACHE).load()
    (sdk_line,) = mcp_tool_list.sdk_answers(
        [{"jsonrpc": "2.0", "id": 3, "method": "tools/list"}], tmp_path / "sdk-home"
    )
    assert json_line({"jsonrpc": "2.0", "id": 3, "result": cached}) == sdk_line
    # Kept: a second install renders nothing.
    assert mcp_tool_list.prepare_home(home) is None
