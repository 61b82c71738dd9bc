"""The MCP server's cached ``tools/list`` answer, read before the SDK is imported.

Standard library only: the stdio front (``mcp_stdio``) answers a client's
first ``tools/list`` from it, and ``lcm install`` (``mcp_tool_list``) fills it
when the list shipped with the package does not fit the installed SDK.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any

# Where, under the data folder, the answer is kept.
TOOLS_CACHE = "cache/mcp-tools-list.json"


class ToolsCache:
    """The SDK's own ``tools/list`` answer, kept for the next start.

    The tool list depends only on the code (lossless's tools, the SDK that
    renders their schemas), so it is keyed by lossless's version and the size
    and modification time of the files that define it; any change there is a
    miss, answered by the SDK and stored again. Written atomically; an
    unreadable file is a miss.
    """

    def __init__(self, path: Path) -> None:
        self.path = path
        self._key: str | None = None

    def key(self) -> str:
        if self._key is None:
            import importlib.util

            from lossless import __version__

            here = Path(__file__).resolve().parent
            files = sorted(here.glob("mcp_*.py"))  # every module that defines tools
            for package in ("mcp", "mcp_types", "pydantic"):
                spec = importlib.util.find_spec(package)
                if spec is not None and spec.origin:
                    files.append(Path(spec.origin))
            marks = []
            for file in files:
                try:
                    info = file.stat()
                except OSError:
                    continue
                marks.append(f"{file.name}:{info.st_size}:{info.st_mtime_ns}")
            self._key = "|".join([__version__, sys.version.split()[0], *marks])
        return self._key

    def load(self) -> dict[str, Any] | None:
        try:
            data = json.loads(self.path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return None
        if not isinstance(data, dict) or data.get("key") != self.key():
            return None
        result = data.get("result")
        return result if isinstance(result, dict) and result.get("tools") else None

    def store(self, result: dict[str, Any]) -> None:
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            tmp = self.path.with_name(f"{self.path.name}.{os.getpid()}.tmp")
            tmp.write_text(json.dumps({"key": self.key(), "result": result}), encoding="utf-8")
            os.replace(tmp, self.path)
        except OSError:
            pass  # a read-only home only costs the next start its speed
