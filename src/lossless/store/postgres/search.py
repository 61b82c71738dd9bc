"""grep on PostgreSQL: tsvector full-text ranking and the regex scan (pg_trgm-assisted)."""

from __future__ import annotations

import builtins
import functools
import re
from typing import Any

from lossless.errors import (
    InputError,
)
from lossless.models import (
    SearchHit,
)
from lossless.store import lexical, rows, snippets
from lossless.store.contract import (
    GrepHits,
    GrepQuery,
)
from lossless.store.postgres.repository import Repo, Row
from lossless.store.postgres.statement_budget import DeadlineReached, statement_deadline
from lossless.store.regex import (
    ScanBudget,
    compile_user_regex,
    required_literal,
    snippet_around,
)
from lossless.store.rows import (
    check_text,
    one_line,
)

# Regex grep reads candidates newest first: LIMIT queries of these sizes
# (most greps are done within the first), then a cursor read in pages of
# REGEX_CURSOR_PAGE rows.
REGEX_PAGES = (100, 1_000)
REGEX_CURSOR_PAGE = 1_000

# As on SQLite: a sub-agent's match ranks below an equal one from the session
# that started it (ranks are negative, best lowest), while a much better
# sub-agent match still comes first.
_SUBAGENT_WEIGHT = "(CASE WHEN c.parent_id IS NULL THEN 1.0 ELSE 0.5 END)"
# The most candidates one full-text pass orders by exactness (lexical.best_page).
_MAX_CANDIDATES = 4_000


class Search(Repo):
    # pg_trgm's GIN index is maintained by the server as rows are written.
    def index_backlog(self) -> int:
        return 0

    def catch_up(self, max_rows: int) -> int:
        return 0

    def grep(self, query: GrepQuery) -> GrepHits:
        if not query.pattern:
            raise InputError("grep pattern is empty")
        check_text(query.pattern, "grep pattern")
        check_text(query.session_id, "session id")
        check_text(query.project, "project")
        check_text(query.since, "since")
        words: list[lexical.Word] = []
        if query.mode == "full_text":
            words = lexical.words(query.pattern)
        else:
            compile_user_regex(query.pattern)
        limit = max(0, query.limit)
        if limit == 0:
            return GrepHits()
        with self.s._pinned():
            return self._grep(query, words, limit)

    def _grep(self, query: GrepQuery, words: builtins.list[lexical.Word], limit: int) -> GrepHits:
        budget = ScanBudget(query.time_budget_s)
        hits: list[SearchHit] = []
        if query.mode == "full_text":
            if query.scope in ("messages", "both"):
                hits.extend(self._full_text(query, words, limit, kind="message"))
            if query.scope in ("summaries", "both"):
                hits.extend(self._full_text(query, words, limit, kind="summary"))
        else:
            if query.scope in ("messages", "both"):
                hits.extend(self._regex(query, limit, budget, kind="message"))
            if query.scope in ("summaries", "both"):
                hits.extend(self._regex(query, limit, budget, kind="summary"))
        return rows.ranked_hits(
            hits,
            full_text=query.mode == "full_text",
            limit=limit,
            covering=self.s.summaries.covering,
            stopped_at=budget.stopped_at,
        )

    def _filters(self, query: GrepQuery, kind: str) -> tuple[str, list[Any]]:
        alias = "m" if kind == "message" else "s"
        sql = ""
        params: list[Any] = []
        if query.conversation_id is not None:
            sql += f" AND {alias}.conversation_id = %s"
            params.append(query.conversation_id)
        if query.session_id is not None:
            sql += " AND c.session_id = %s"
            params.append(query.session_id)
        if query.project is not None:
            sql += " AND c.project = %s"
            params.append(query.project)
        if query.since is not None:
            sql += f" AND {alias}.{'created_at' if kind == 'message' else 'latest_at'} >= %s"
            params.append(query.since)
        return sql, params

    def _full_text(
        self, query: GrepQuery, words: builtins.list[lexical.Word], limit: int, *, kind: str
    ) -> builtins.list[SearchHit]:
        """As on SQLite: every word (AND) first, then any word (OR) if the page is short.

        Ranking is the costly part and one common word matches a large share
        of the store; all the words together match few rows. Each pass's
        candidates come best first by ``ts_rank`` and are ordered by
        ``lexical.best_page`` (exact words first).
        """
        where, params = self._filters(query, kind)
        found: dict[Any, dict[str, Any]] = {}
        passes = ["every", "q"] if len(words) > 1 else ["q"]
        for match in passes:
            page = lexical.best_page(
                functools.partial(self._best, kind, words, match, where, params),
                words,
                limit,
                "at",
                max_window=_MAX_CANDIDATES,
            )
            for r in page:
                found.setdefault(r["id"], r)
            if len(found) >= limit:
                break
        texts = [w.text for w in words]
        return [
            SearchHit(
                kind="message" if kind == "message" else "summary",
                id=str(r["id"]),
                conversation_id=r["conversation_id"],
                role=r["role"],
                created_at=r["at"],
                snippet=one_line(snippets.snippet(r["content"], texts)),
                rank=float(r["rank"]),
                seq=r["seq"],
                session_id=r["session_id"],
                project=r["project"],
            )
            for r in found.values()
        ]

    def _best(
        self,
        kind: str,
        words: builtins.list[lexical.Word],
        match: str,
        where: str,
        params: builtins.list[Any],
        window: int,
    ) -> builtins.list[dict[str, Any]]:
        """The ``window`` best rows holding every word (``match='every'``) or any ('q')."""
        if kind == "message":
            alias, table, at = "m", "messages", "created_at"
            columns = "m.id, m.conversation_id, m.seq, m.role"
        else:
            alias, table, at = "s", "summaries", "latest_at"
            columns = "s.id, s.conversation_id, NULL::bigint AS seq, NULL::text AS role"
        terms = [("search_prefix(%s)" if w.prefix else "search_word(%s)", w.typed) for w in words]
        either = " || ".join(t for t, _ in terms)
        every = " && ".join(t for t, _ in terms)
        # Ranked by the any-word query in every pass, so that a row's rank
        # does not depend on the pass that found it. ts_rank is
        # higher-is-better; negated so that, as with FTS5's bm25 rank,
        # ascending order puts the best hit first, and halved for a
        # sub-agent's match as on SQLite. The content (for snippets and
        # exactness) is read for the window's rows only.
        sql = (
            f"WITH q AS MATERIALIZED (SELECT {either} AS q"
            + (f", {every} AS every" if match == "every" else "")
            + "), r AS ("
            f"SELECT {alias}.id, {alias}.{at} AS at, "
            f"-ts_rank({alias}.search_document, q.q, 1)::float8 * {_SUBAGENT_WEIGHT} AS rank "
            f"FROM {table} {alias} JOIN conversations c ON c.id = {alias}.conversation_id, q "
            f"WHERE {alias}.search_document @@ q.{match}{where} "
            f"ORDER BY rank, {alias}.{at} DESC NULLS LAST, {alias}.id DESC LIMIT %s) "
            f"SELECT {columns}, r.at, r.rank, "
            f"left({alias}.content, {lexical.READ_CHARS}) AS content, "
            f"c.session_id, c.project FROM r JOIN {table} {alias} ON {alias}.id = r.id "
            f"JOIN conversations c ON c.id = {alias}.conversation_id "
            f"ORDER BY r.rank, r.at DESC NULLS LAST, r.id DESC"
        )
        values = [text for _, text in terms]
        query_params = [*values, *values] if match == "every" else values
        return [dict(r) for r in self.s._q(sql, [*query_params, *params, window])]

    def _regex(
        self, query: GrepQuery, limit: int, budget: ScanBudget, *, kind: str
    ) -> builtins.list[SearchHit]:
        """Newest first, Python's ``re`` deciding; the trigram index narrows the rows."""
        regex = compile_user_regex(query.pattern)
        where, params = self._filters(query, kind)
        # LIKE wildcards in the literal are escaped rather than avoided: the
        # longest literal is the most selective one ('request_id=dead', not
        # 'request'), and pg_trgm reads escaped patterns.
        literal = required_literal(query.pattern, avoid="")
        if kind == "message":
            alias, at, table = "m", "m.created_at", "messages m"
            columns = "m.id, m.conversation_id, m.seq, m.role, m.created_at AS at, m.content"
        else:
            alias, at, table = "s", "s.latest_at", "summaries s"
            columns = (
                "s.id, s.conversation_id, NULL::bigint AS seq, NULL::text AS role, "
                "s.latest_at AS at, s.content"
            )
        prefilter = ""
        pre_params: list[Any] = []
        if literal is not None:
            # ILIKE only for (?i) patterns, whose literals are ASCII: the
            # index may then over-select, never under-select, and ``re``
            # makes the final call either way.
            operator = "ILIKE" if regex.flags & re.IGNORECASE else "LIKE"
            prefilter = f" AND {alias}.content {operator} %s"
            pre_params = [f"%{_like_escape(literal)}%"]
        base = (
            f"SELECT {columns}, c.session_id, c.project FROM {table} "
            f"JOIN conversations c ON c.id = {alias}.conversation_id "
            f"WHERE true{prefilter}{where}"
        )
        # A summary without latest_at sorts last, as in SQLite. A message
        # always has a time, and without NULLS LAST its order is the time
        # index's, read backwards.
        nullable = kind == "summary"
        order = f" ORDER BY {at} DESC{' NULLS LAST' if nullable else ''}, {alias}.id DESC"
        base_params = [*pre_params, *params]
        hits: list[SearchHit] = []
        last_at: list[Any] = []  # the time of the last row read, once one is

        def scan(rows: builtins.list[Row]) -> bool:
            """Match ``rows``; True once the page is full or the time budget spent."""
            for r in rows:
                if budget.spent(r["at"]):
                    return True
                last_at[:] = [r["at"]]
                found = budget.search(regex, r["content"], r["at"])
                if found is None:
                    continue
                hits.append(
                    SearchHit(
                        kind="message" if kind == "message" else "summary",
                        id=str(r["id"]),
                        conversation_id=r["conversation_id"],
                        role=r["role"],
                        created_at=r["at"],
                        snippet=snippet_around(r["content"], found.start(), found.end()),
                        seq=r["seq"],
                        session_id=r["session_id"],
                        project=r["project"],
                    )
                )
                if len(hits) >= limit:
                    return True
            return False

        try:
            with (
                self.s._connection() as conn,
                statement_deadline(conn, budget, self.s.statement_timeout_ms) as arm,
            ):
                # First a few LIMIT queries: the planner sees how few rows are
                # wanted and walks the time index backwards when the literal
                # is common (the usual case: done within the first page), or
                # sorts the index's few candidates when it is rare.
                older: tuple[str, builtins.list[Any]] = ("", [])
                for size in REGEX_PAGES:
                    arm()
                    rows = conn.execute(
                        base + older[0] + order + f" LIMIT {size}", [*base_params, *older[1]]
                    ).fetchall()
                    if scan(rows) or len(rows) < size:
                        return hits
                    older = _older_than(alias, at, rows[-1], nullable=nullable)
                # Then one query for everything older, read through a
                # server-side cursor: more LIMIT queries would each scan the
                # candidates again.
                arm()
                with conn.transaction(), conn.cursor(name="lcm_grep_regex") as cursor:
                    cursor.execute(base + older[0] + order, [*base_params, *older[1]])
                    while True:
                        rows = cursor.fetchmany(REGEX_CURSOR_PAGE)
                        if scan(rows) or len(rows) < REGEX_CURSOR_PAGE:
                            return hits
        except DeadlineReached:
            # Everything older than the last row read went unsearched (all of
            # it, if none was read).
            if last_at:
                budget.stop(last_at[0])
            else:
                newest = self.s._q1(f"SELECT max({at.split('.')[1]}) AS at FROM {table}")
                budget.stop(None if newest is None else newest["at"])
            return hits


def _older_than(
    alias: str, at: str, last: Row, *, nullable: bool
) -> tuple[str, builtins.list[Any]]:
    """The condition for rows after ``last`` in newest-first order (NULL times last)."""
    if not nullable:
        # A row comparison the (time, id) index can start from.
        return f" AND ({at}, {alias}.id) < (%s, %s)", [last["at"], last["id"]]
    if last["at"] is None:
        return f" AND {at} IS NULL AND {alias}.id < %s", [last["id"]]
    return (
        f" AND ({at} < %s OR {at} IS NULL OR ({at} = %s AND {alias}.id < %s))",
        [last["at"], last["at"], last["id"]],
    )


def _like_escape(text: str) -> str:
    """``text`` as a LIKE pattern matching itself (backslash is LIKE's default escape)."""
    return text.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
