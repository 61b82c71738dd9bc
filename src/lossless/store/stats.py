"""What ``Store.stats`` counts, in one place for both backends: whole store or one project.

Every figure is a single aggregate query (no per-conversation loop), written
once with a ``{p}`` placeholder that each backend replaces by its own
parameter marker (``?`` for SQLite, ``%s`` for PostgreSQL); ```` is the
backend's table prefix. A project scope follows the rows' links: a message
by its conversation, a part by its message, a quarantined line by the
transcript (source cursor) whose conversation is in the project.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from lossless.store.contract import StoreStats

_IN_PROJECT = "conversation_id IN (SELECT id FROM conversations WHERE project = {p})"

# name -> (table and aggregate, the filter that scopes it to one project)
_FIGURES: dict[str, tuple[str, str]] = {
    "conversations": ("count(*) FROM conversations", "project = {p}"),
    "messages": ("count(*) FROM messages", _IN_PROJECT),
    "parts": (
        "count(*) FROM message_parts",
        "message_id IN (SELECT id FROM messages WHERE " + _IN_PROJECT + ")",
    ),
    "native_records": ("count(*) FROM native_records", _IN_PROJECT),
    "summaries": ("count(*) FROM summaries", _IN_PROJECT),
    "context_items": ("count(*) FROM context_items", _IN_PROJECT),
    "large_files": ("count(*) FROM large_files", _IN_PROJECT),
    "quarantined": (
        "count(*) FROM quarantine",
        "source_path IN (SELECT source_path FROM source_cursors WHERE " + _IN_PROJECT + ")",
    ),
    "message_tokens": ("coalesce(sum(token_count), 0) FROM messages", _IN_PROJECT),
    "summary_tokens": ("coalesce(sum(token_count), 0) FROM summaries", _IN_PROJECT),
    "context_tokens": ("coalesce(sum(token_count), 0) FROM context_items", _IN_PROJECT),
}


def stats_query(project: str | None, *, marker: str) -> tuple[str, list[str]]:
    """One SELECT returning every figure as a column, and its parameters."""
    columns: list[str] = []
    params: list[str] = []
    for name, (source, scope) in _FIGURES.items():
        sql = f"(SELECT {source}"
        if project is not None:
            sql += f" WHERE {scope}"
            params.extend([project] * scope.count("{p}"))
        columns.append(f"{sql}) AS {name}")
    text = "SELECT " + ", ".join(columns)
    return text.replace("{p}", marker), params


def by_client_query(project: str | None, *, marker: str) -> tuple[str, list[str]]:
    """Conversations per client (in the project, if one is given)."""
    where = f" WHERE project = {marker}" if project is not None else ""
    sql = f"SELECT client, count(*) AS n FROM conversations{where} GROUP BY client"
    return sql, [project] if project is not None else []


def build_stats(
    project: str | None,
    *,
    marker: str,
    query: Callable[[str, Sequence[Any]], Sequence[Any]],
) -> StoreStats:
    """``StoreStats`` from two queries run by ``query`` (rows indexable by column name)."""
    sql, params = stats_query(project, marker=marker)
    (row,) = query(sql, params)
    sql, params = by_client_query(project, marker=marker)
    by_client = {str(r["client"]): int(r["n"]) for r in query(sql, params)}
    figures = {name: int(row[name]) for name in _FIGURES}
    return StoreStats(**figures, by_client=by_client)
