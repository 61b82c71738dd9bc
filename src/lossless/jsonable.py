"""Plain JSON values from the package's records, for ``--json`` output and the web UI."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any


def to_jsonable(value: Any) -> Any:
    """``value`` with dataclasses, tuples, paths and bytes turned into JSON types."""
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {k: to_jsonable(v) for k, v in dataclasses.asdict(value).items()}
    if isinstance(value, dict):
        return {str(k): to_jsonable(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [to_jsonable(v) for v in value]
    if isinstance(value, Path):
        return str(value)
    if isinstance(value, bytes):
        return value.decode("utf-8", "replace")
    return value
