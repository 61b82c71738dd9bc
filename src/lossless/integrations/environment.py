"""The Python environment this lcm runs from, and how to add the ``mcp`` extra to it.

``lcm install`` registers ``lcm mcp`` with the client; that server needs the
MCP SDK (the ``mcp`` extra) in the very environment of this lcm, which is a
virtualenv, a pipx venv or a uv tool environment depending on how lossless
was installed. The advice names the right command for each.
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

PACKAGE = "lossless-context"


def has_mcp_sdk() -> bool:
    """Whether the MCP SDK can be imported here (without importing it: that takes ~1 s)."""
    try:
        return importlib.util.find_spec("mcp") is not None
    except (ImportError, ValueError):
        return False


def installer_kind(prefix: Path | None = None) -> str:
    """``uv``, ``pipx`` or ``pip``: what manages the environment at ``prefix``."""
    root = Path(prefix or sys.prefix)
    parts = [p.lower() for p in root.parts]
    if (root / "uv-receipt.toml").exists() or ("uv" in parts and "tools" in parts):
        return "uv"
    if "pipx" in parts and "venvs" in parts:
        return "pipx"
    return "pip"


def mcp_extra_instructions(prefix: Path | None = None) -> str:
    """The command adding the extra for this environment, then the others."""
    commands = {
        "pip": f"{sys.executable} -m pip install '{PACKAGE}[mcp]'",
        "pipx": f"pipx install --force '{PACKAGE}[mcp]'  (or: pipx inject {PACKAGE} mcp)",
        "uv": f"uv tool install --force '{PACKAGE}[mcp]'  (from a checkout: uv tool install --force '.[mcp]')",
    }
    kind = installer_kind(prefix)
    ordered = [kind, *(k for k in commands if k != kind)]
    first, *rest = ordered
    others = "; ".join(f"{k}: {commands[k]}" for k in rest)
    return f"add the 'mcp' extra: {commands[first]} (installed with {first}; otherwise {others})"
