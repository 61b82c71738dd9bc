"""The MCP SDK's ``tools/list`` answer for lossless's tools, shipped with the package.

Why: clients build their first model request from the tool lists their MCP
servers have given by then (Codex waits one second for the optional ones by
default), and on a version's first start the SDK was the only source of the
list, so the list waited for the SDK's import (1-5 s of wall time on a busy
machine) and the first request went out without lossless's tools. The list
depends only on the code that defines the tools and on the SDK and pydantic
versions that render their schemas, so it is rendered once, by the SDK
itself over its real stdio, and kept in ``mcp_tool_list.json`` beside this
module with the versions it was rendered with. The stdio front answers
``tools/list`` from it when the installed versions are the same; otherwise
it falls back to the list cached in the lossless home, then to the SDK.

``tests/test_mcp_tool_list.py`` holds the file to the SDK's live answer byte
for byte; after changing a tool, regenerate it with::

    python -m lossless.mcp_tool_list

Standard library only (the front imports it before anything else).
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any

PACKAGED = Path(__file__).with_name("mcp_tool_list.json")
# The distributions whose versions decide how the tools' schemas render.
RENDERERS = ("mcp", "mcp_types", "pydantic", "pydantic_core")


def _normal(name: str) -> str:
    return name.lower().replace("-", "_").replace(".", "_")


def installed_versions() -> dict[str, str] | None:
    """The installed versions of ``RENDERERS`` from their ``.dist-info`` folders,
    or None when one of them cannot be found that way.

    Read from the folder names beside each package (one directory listing)
    rather than through ``importlib.metadata``, whose import alone costs the
    front 10-30 ms.
    """
    import importlib.util

    versions: dict[str, str] = {}
    listings: dict[Path, list[str]] = {}
    for name in RENDERERS:
        try:
            spec = importlib.util.find_spec(name)
        except (ImportError, ValueError):
            return None
        if spec is None or not spec.origin:
            return None
        site = Path(spec.origin).parent.parent
        if site not in listings:
            try:
                listings[site] = os.listdir(site)
            except OSError:
                return None
        for entry in listings[site]:
            if not entry.endswith(".dist-info"):
                continue
            project, _, version = entry[: -len(".dist-info")].rpartition("-")
            if _normal(project) == name:
                versions[name] = version
                break
        else:
            return None
    return versions


def packaged() -> dict[str, Any] | None:
    """The shipped ``tools/list`` result, or None when it was rendered by other
    versions of the SDK or pydantic than the installed ones (or is unreadable)."""
    try:
        data = json.loads(PACKAGED.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    if not isinstance(data, dict) or data.get("rendered_by") != installed_versions():
        return None
    result = data.get("result")
    return result if isinstance(result, dict) and result.get("tools") else None


def sdk_answers(requests: list[dict[str, Any]], home: Path) -> list[bytes]:
    """The SDK server's own answer lines to ``requests`` (after an ``initialize``),
    from ``serve_stdio`` run without the front over its real stdin/stdout, on
    a store in ``home``."""
    import subprocess

    code = (
        "from lossless.config import load_config\n"
        "from lossless.mcp_server import serve_stdio\n"
        f"serve_stdio(load_config({str(home)!r}), project={str(home)!r})\n"
    )
    opening: list[dict[str, Any]] = [
        {
            "jsonrpc": "2.0",
            "id": "lcm-render-init",
            "method": "initialize",
            "params": {
                "protocolVersion": "2025-06-18",
                "capabilities": {},
                "clientInfo": {"name": "lcm-render", "version": "1"},
            },
        },
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
    ]
    home.mkdir(parents=True, exist_ok=True)
    env = {key: value for key, value in os.environ.items() if not key.startswith("LCM_")}
    proc = subprocess.Popen(
        [sys.executable, "-c", code],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        env={**env, "LCM_HOME": str(home)},
        cwd=home,
    )
    assert proc.stdin is not None and proc.stdout is not None
    answers: list[bytes] = []
    try:
        for message in [*opening, *requests]:
            proc.stdin.write(json.dumps(message).encode() + b"\n")
            proc.stdin.flush()
            if "id" in message:
                line = proc.stdout.readline()
                if not line:
                    raise RuntimeError("the SDK server ended before answering")
                if message is not opening[0]:
                    answers.append(line)
    finally:
        proc.stdin.close()
        proc.wait(timeout=60)
        proc.stdout.close()
    return answers


def sdk_tool_list() -> dict[str, Any]:
    """The installed SDK's live ``tools/list`` result (a server on a scratch store)."""
    import tempfile

    with tempfile.TemporaryDirectory() as home:
        (line,) = sdk_answers([{"jsonrpc": "2.0", "id": 1, "method": "tools/list"}], Path(home))
    result: dict[str, Any] = json.loads(line)["result"]
    if result.get("nextCursor"):
        raise RuntimeError("the SDK paged its tool list; the front serves one page only")
    return result


def render() -> dict[str, Any]:
    """The file's content: the SDK's live ``tools/list`` result and the versions it ran."""
    versions = installed_versions()
    if versions is None:
        raise RuntimeError(f"cannot read the installed versions of {', '.join(RENDERERS)}")
    return {"rendered_by": versions, "result": sdk_tool_list()}


def prepare_home(home: Path) -> str | None:
    """Make the server's first start in ``home`` answer ``tools/list`` without
    waiting for the SDK, when the shipped list does not fit the installed SDK:
    render it with the installed SDK now and keep it in the home's cache.

    Returns a line for the user saying so, or None when the shipped list
    serves (nothing to do). ``lcm install`` calls it: a user whose SDK is newer
    than the one that rendered the shipped list still gets the tools in a
    client's first request.
    """
    if packaged() is not None:
        return None
    from lossless.mcp_tools_cache import TOOLS_CACHE, ToolsCache

    cache = ToolsCache(home / TOOLS_CACHE)
    if cache.load() is not None:
        return None
    try:
        cache.store(sdk_tool_list())
    except Exception as exc:  # the install stands; only the first start is slower
        return (
            f"could not render the MCP tool list ({type(exc).__name__}: {exc}); "
            "the server's first start waits for the SDK to list its tools"
        )
    versions = installed_versions() or {}
    sdk = versions.get("mcp", "the installed version")
    return f"rendered the MCP tool list with mcp {sdk} for the server's first start"


def main() -> None:
    PACKAGED.write_text(json.dumps(render(), indent=1, ensure_ascii=False) + "\n", "utf-8")
    print(f"wrote {PACKAGED}")


if __name__ == "__main__":
    main()
