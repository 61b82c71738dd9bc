"""lossless: Lossless Context Management for LLM agents.

The public API is small: open an ``Engine``, get a conversation, ingest,
search and expand. Everything else is reachable from the engine.
"""

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

__all__ = [
    "Config",
    "ConfigError",
    "Conversation",
    "ConversationHandle",
    "Engine",
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
