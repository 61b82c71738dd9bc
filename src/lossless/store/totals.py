"""The store's counts read from the totals its writes keep, the same SQL on both backends.

``Store.stats`` (``lcm status``, the UI's health page, MCP ``lcm_status``)
adds up one row per conversation of ``conversation_totals`` (migration 0014:
messages, parts, raw lines, summaries, large files and their tokens) and of
``context_totals`` (0012), instead of counting and summing the history
itself: a fixed cost, where summing message tokens alone read every message
row (seconds at a million). Only the conversations (one row each) and the
quarantine (lines that could not be imported) are still counted.
"""

from __future__ import annotations


def stats_sql(placeholder: str, *, scoped: bool) -> str:
    """The query of ``Store.stats``: one row with a column per ``StoreStats`` count.

    ``placeholder`` is the backend's parameter mark (``?`` or ``%s``);
    ``scoped`` queries take the project as their one parameter.
    """
    mine = f"WITH mine AS (SELECT id FROM conversations WHERE project = {placeholder}) "
    where = " WHERE conversation_id IN (SELECT id FROM mine)" if scoped else ""
    conversations = " WHERE id IN (SELECT id FROM mine)" if scoped else ""
    return (
        (mine if scoped else "") + "SELECT "
        f"(SELECT count(*) FROM conversations{conversations}) AS conversations, "
        "coalesce(sum(messages), 0) AS messages, "
        "coalesce(sum(parts), 0) AS parts, "
        "coalesce(sum(native_records), 0) AS native_records, "
        "coalesce(sum(summaries), 0) AS summaries, "
        f"(SELECT coalesce(sum(items), 0) FROM context_totals{where}) AS context_items, "
        "coalesce(sum(large_files), 0) AS large_files, "
        "(SELECT count(*) FROM quarantine) AS quarantined, "
        "coalesce(sum(message_tokens), 0) AS message_tokens, "
        "coalesce(sum(summary_tokens), 0) AS summary_tokens, "
        f"(SELECT coalesce(sum(tokens), 0) FROM context_totals{where}) AS context_tokens "
        f"FROM conversation_totals{where}"
    )


def by_client_sql(placeholder: str, *, scoped: bool) -> str:
    """Conversations per client (``StoreStats.by_client``), scoped like ``stats_sql``."""
    where = f" WHERE project = {placeholder}" if scoped else ""
    return f"SELECT client, count(*) AS n FROM conversations{where} GROUP BY client"


# Items an embedding model can have vectors for, per kind (the embedding
# backlog is these minus ``embedding_counts``): memories belong to a project,
# not a conversation, and are few, so they are counted.
EMBEDDABLE_SQL = (
    "SELECT coalesce(sum(messages), 0) AS message, coalesce(sum(summaries), 0) AS summary, "
    "(SELECT count(*) FROM memories) AS memory, coalesce(sum(large_files), 0) AS file "
    "FROM conversation_totals"
)
