"""The budgets of ``expand_query`` by default, apart from the module that answers.

``Engine.expand_query``, the MCP tool and the CLI show them as their defaults;
importing ``engine/expand_query.py`` for four numbers would load its records
and prompts into every command that opens an engine (``lcm grep`` included).
"""

from __future__ import annotations

DEFAULT_QUERY_TOKENS = 4_000
DEFAULT_QUERY_SECONDS = 60.0
MAX_QUERY_SECONDS = 180.0
DEFAULT_CANDIDATES = 8
