"""What ``lcm grep`` does once its arguments are read, without click.

The click command (``cli/history.py``) and the click-free start of the
common cases (``cli/fast_path.py``) both run this, so they print the same.
Where each writes to (``say`` for stderr's lines, ``emit`` for the JSON
document) is theirs: click's ``echo`` for the one, plain writes for the other.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from lossless.cli.output import print_table
from lossless.jsonable import to_jsonable

if TYPE_CHECKING:
    from lossless.engine.engine import Engine


def run_grep(
    engine: Engine,
    pattern: str,
    *,
    mode: str,
    scope: str,
    conversation: str | None,
    session: str | None,
    project: str | None,
    since: str | None,
    limit: int,
    time_budget: float | None,
    as_json: bool,
    say: Callable[[str], None],
    emit: Callable[[Any], None],
) -> None:
    """Search and print the hits (``since``: a timestamp, already parsed)."""
    from lossless.search_scope import SearchScope

    conversation_id = None if conversation is None else engine.resolve_conversation(conversation).id
    searched = SearchScope(project=project, conversation_id=conversation_id, session_id=session)
    hits = engine.grep(
        pattern,
        mode=mode,  # type: ignore[arg-type]
        scope=scope,  # type: ignore[arg-type]
        conversation=conversation_id,
        session_id=session,
        project=project,
        since=since,
        limit=limit,
        time_budget_s=time_budget,
    )
    if as_json:
        emit(
            {
                "pattern": pattern,
                "mode": mode,
                "scope": searched.as_json(),
                "hits": to_jsonable(hits),
                "complete": hits.complete,
                "scanned_until": hits.scanned_until,
            }
        )
        return
    if not hits.complete:
        say(
            f"lcm grep: stopped at the time budget; messages older than "
            f"{hits.scanned_until} were not searched (narrow with --since/--conversation, "
            "or --time-budget 0 to search everything)"
        )
    say(f"searched {searched.describe()}")
    if not hits:
        say("no matches")
        return
    print_table(
        ["id", "conv", "role", "time", "covered by", "snippet"],
        [
            (
                h.id,
                h.conversation_id,
                h.role or "summary",
                h.created_at,
                h.covering_summary_id or "",
                h.snippet,
            )
            for h in hits
        ],
        max_width=100,
    )
