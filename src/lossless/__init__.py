"""lossless: Lossless Context Management for LLM agents.

The public API is small: open an ``Engine``, get a conversation, ingest,
search and expand. Everything else is reachable from the engine.

Exports load on first use, so ``lcm hook`` (which runs on every agent turn)
does not pay for importing the whole engine.
"""

from __future__ import annotations

# Not `typing.TYPE_CHECKING`: every hook imports this package first, and
# typing (with re, enum, functools) costs a hook's client a few ms.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

    from lossless.config import Config, load_config
    from lossless.engine.engine import ConversationHandle, Engine
    from lossless.errors import (
        ConfigError,
        InputError,
        LosslessError,
        NotFoundError,
        StoreError,
    )
    from lossless.models import Conversation, Message, NewMessage, NewPart, SearchHit, Summary
    from lossless.store.contract import GrepHits

_EXPORTS = {
    "Config": "lossless.config",
    "load_config": "lossless.config",
    "ConversationHandle": "lossless.engine.engine",
    "Engine": "lossless.engine.engine",
    "ConfigError": "lossless.errors",
    "InputError": "lossless.errors",
    "LosslessError": "lossless.errors",
    "NotFoundError": "lossless.errors",
    "StoreError": "lossless.errors",
    "Conversation": "lossless.models",
    "Message": "lossless.models",
    "NewMessage": "lossless.models",
    "NewPart": "lossless.models",
    "SearchHit": "lossless.models",
    "Summary": "lossless.models",
    "GrepHits": "lossless.store.contract",
}

__all__ = [
    "Config",
    "ConfigError",
    "Conversation",
    "ConversationHandle",
    "Engine",
    "GrepHits",
    "InputError",
    "LosslessError",
    "Message",
    "NewMessage",
    "NewPart",
    "NotFoundError",
    "SearchHit",
    "StoreError",
    "Summary",
    "load_config",
]

__version__ = "0.1.0"


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'lossless' has no attribute {name!r}")
    import importlib

    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value
