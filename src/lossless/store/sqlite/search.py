"""grep on SQLite: FTS5 full-text ranking and the regex scan (trigram-assisted)."""

from __future__ import annotations

import builtins
import contextlib
import functools
from collections.abc import Callable
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
from lossless.store.regex import (
    GLOB_SPECIAL,
    ScanBudget,
    compile_user_regex,
    is_case_insensitive,
    required_literal,
    snippet_around,
)
from lossless.store.rows import (
    check_text,
    one_line,
)
from lossless.store.sqlite import bounded_rank
from lossless.store.sqlite.regex_scan import Scan, regex_messages
from lossless.store.sqlite.repository import Repo

# bm25 ranks are negative, best lowest: halving a sub-agent's rank puts its
# match below an equal one from the session that started it, while a much
# better sub-agent match still comes first (most transcripts in a real
# history are sub-agents', which would otherwise crowd out the sessions).
_SUBAGENT_WEIGHT = "(CASE WHEN c.parent_id IS NULL THEN 1.0 ELSE 0.5 END)"

# Candidates are passed back as SQL parameters: stay far below SQLite's limit.
_RANKED_MAX_CANDIDATES = 4_000

# A regex grep over summaries tests them newest first until its limit or time
# budget: read through the summaries_latest index (0017), the first rows come
# at once instead of after a sort of every summary. ``{where}``: ``_filters``.
SUMMARIES_NEWEST_FIRST = (
    "SELECT s.id, s.conversation_id, s.latest_at, s.content, c.session_id, c.project "
    "FROM summaries s JOIN conversations c ON c.id = s.conversation_id "
    "WHERE 1=1{where} ORDER BY s.latest_at DESC, s.id DESC"
)
# Summaries fetched at a time by that scan (a few KiB of text each).
_SUMMARY_BLOCK = 64

_MESSAGE_COLUMNS = (
    "m.id, m.conversation_id, m.seq, m.role, m.created_at, c.session_id, c.project, "
    f"substr(m.content, 1, {lexical.READ_CHARS}) AS content"
)


def _summary_hit(row: Any, snippet: str, rank: float = 0.0) -> SearchHit:
    """A summary found by either search mode (``row``: a summaries row joined to
    its conversation)."""
    return SearchHit(
        kind="summary",
        id=row["id"],
        conversation_id=row["conversation_id"],
        role=None,
        created_at=row["latest_at"],
        snippet=snippet,
        rank=rank,
        session_id=row["session_id"],
        project=row["project"],
    )


def full_text_query(pattern: str) -> str:
    """Turn a user's words into an FTS5 query: every word a quoted phrase, OR-ed.

    OR rather than AND because a question rarely shares every word with its
    answer; bm25 still ranks messages holding more of the words first. Stop
    words are left out when the query has other words (see ``stopwords``);
    stems, prefixes and CJK as ``lexical`` says.
    """
    return lexical.fts5_match(lexical.words(pattern), every=False)


def full_text_passes(pattern: str) -> builtins.list[str]:
    """The FTS5 queries grep runs in turn: every word (AND), then any word (OR).

    The AND pass is cheap (few rows to rank) and finds the best matches; the
    OR pass runs only when it left the page short. Ranking every message
    that shares one common word with the query is what makes OR slow.
    """
    return _passes(lexical.words(pattern))


def _passes(words: builtins.list[lexical.Word]) -> builtins.list[str]:
    either = lexical.fts5_match(words, every=False)
    if len(words) == 1:
        return [either]
    return [lexical.fts5_match(words, every=True), either]


class Search(Repo):
    def index_backlog(self) -> int:
        # Ids are handed out in order and messages are never deleted, so the
        # backlog is a difference of two lookups; count(*) would read every
        # page of the table (a second at a million rows, in every hook).
        row = self.s._q1(
            "SELECT coalesce((SELECT max(id) FROM messages), 0) "
            "- (SELECT indexed_upto FROM trigram_progress) AS n"
        )
        return max(0, int(row["n"])) if row else 0

    def catch_up(self, max_rows: int) -> int:
        if max_rows <= 0:
            return 0
        with self.s._atomic():
            row = self.s._q1(
                "SELECT max(id) AS last, count(*) AS n FROM (SELECT id FROM messages "
                "WHERE id > (SELECT indexed_upto FROM trigram_progress) ORDER BY id LIMIT ?)",
                (max_rows,),
            )
            if row is None or row["last"] is None:
                return 0
            self.db.execute(
                "INSERT INTO messages_trigram(rowid, content) SELECT id, content FROM messages "
                "WHERE id > (SELECT indexed_upto FROM trigram_progress) AND id <= ?",
                (row["last"],),
            )
            self.db.execute("UPDATE trigram_progress SET indexed_upto = ?", (row["last"],))
            return int(row["n"])

    def grep(self, query: GrepQuery) -> GrepHits:
        if not query.pattern:
            raise InputError("grep pattern is empty")
        check_text(query.pattern, "grep pattern")
        check_text(query.session_id, "session id")
        check_text(query.project, "project")
        check_text(query.since, "since")
        limit = max(0, query.limit)
        if limit == 0:
            return GrepHits()
        budget = ScanBudget(query.time_budget_s)
        hits: list[SearchHit] = []
        if query.scope in ("messages", "both"):
            hits.extend(self._messages(query, limit, budget))
        if query.scope in ("summaries", "both"):
            hits.extend(self._summaries(query, limit, budget))
        return rows.ranked_hits(
            hits,
            full_text=query.mode == "full_text",
            limit=limit,
            covering=self.s.summaries.covering,
            stopped_at=budget.stopped_at,
        )

    def _filters(self, query: GrepQuery, alias: str) -> tuple[str, list[Any]]:
        sql = ""
        params: list[Any] = []
        if query.conversation_id is not None:
            sql += f" AND {alias}.conversation_id = ?"
            params.append(query.conversation_id)
        if query.session_id is not None:
            sql += " AND c.session_id = ?"
            params.append(query.session_id)
        if query.project is not None:
            sql += " AND c.project = ?"
            params.append(query.project)
        if query.since is not None:
            sql += f" AND {alias}.{'created_at' if alias == 'm' else 'latest_at'} >= ?"
            params.append(query.since)
        return sql, params

    def _messages(
        self, query: GrepQuery, limit: int, budget: ScanBudget
    ) -> builtins.list[SearchHit]:
        where, params = self._filters(query, "m")
        if query.mode == "full_text":
            words = lexical.words(query.pattern)
            rows: dict[int, Any] = {}
            passes = _passes(words)
            for number, match in enumerate(passes):
                page = lexical.best_page(
                    (
                        # With filters (a project, a session) the index's best
                        # rows may all be filtered out: filter while ranking.
                        functools.partial(self._best_filtered, match, where, params)
                        if where
                        else self._best(match, words, every=len(passes) > 1 and number == 0)
                    ),
                    words,
                    limit,
                    "created_at",
                    max_window=_RANKED_MAX_CANDIDATES,
                )
                for r in page:
                    rows.setdefault(r["id"], r)
                if len(rows) >= limit:
                    break
            texts = [w.text for w in words]
            return [
                SearchHit(
                    kind="message",
                    id=str(r["id"]),
                    conversation_id=r["conversation_id"],
                    role=r["role"],
                    created_at=r["created_at"],
                    snippet=one_line(snippets.snippet(r["content"], texts)),
                    rank=float(r["rank"]),
                    seq=r["seq"],
                    session_id=r["session_id"],
                    project=r["project"],
                )
                for r in rows.values()
            ]
        # Compiled first: an invalid pattern is the user's error, named as such.
        regex = compile_user_regex(query.pattern)
        # GLOB keeps the whole literal ('_' and '%' are plain there) and is
        # case-sensitive like the regex; a (?i) regex needs LIKE instead.
        if is_case_insensitive(query.pattern):
            literal, operator, wrap = required_literal(query.pattern), "LIKE", "%"
        else:
            literal, operator, wrap = (
                required_literal(query.pattern, avoid=GLOB_SPECIAL),
                "GLOB",
                "*",
            )
        scan = Scan(regex, budget, limit)
        # Its own connection: a scan may run its whole budget matching rows.
        with self.s.reading() as db:
            regex_messages(
                db,
                scan,
                None if literal is None else (f"{wrap}{literal}{wrap}", operator),
                where,
                params,
            )
        return scan.hits

    def _best(
        self, match: str, words: builtins.list[lexical.Word], *, every: bool
    ) -> Callable[[int], builtins.list[dict[str, Any]]]:
        """``fetch(window)``: the ``window`` best rows of ``match`` across the store, best first.

        Small match sets are ranked by FTS5 itself; large ones, or any
        holding a common word, by ``bounded_rank`` (its docstring says what
        that trades). FTS5 sorts by bm25 itself, for this window and the
        next ones (ranking every matching row is the cost, which a growing
        window would pay again), and only a window's rows are joined to
        their message and conversation: joining every matching row before
        sorting cost as much again as ranking them. A sub-agent's weight
        only makes a rank worse, so the index's order bounds the weighted one.
        """
        best: builtins.list[tuple[int, float]] = []
        ranked_upto = 0
        how: bounded_rank.Ranked | None = None

        def fetch(window: int) -> builtins.list[dict[str, Any]]:
            nonlocal ranked_upto, how
            if how is None:
                with self.s._lock:
                    self.s._check_open()
                    how = bounded_rank.rank_pass(self.db, words, match, every=every, need=window)
                best[:] = how.rows
            if how.exact and window > ranked_upto:
                # Room for the next window or two: most pages never need more.
                ranked_upto = min(_RANKED_MAX_CANDIDATES, window * lexical.OVERFETCH**2)
                best[:] = [
                    (r[0], r[1])
                    for r in self.s._q(
                        "SELECT rowid, rank FROM messages_fts WHERE messages_fts MATCH ? "
                        "ORDER BY rank LIMIT ?",
                        [match, ranked_upto],
                    )
                ]
            found = dict(best[:window])
            if not found:
                return []
            marks = ",".join("?" * len(found))
            rows = {
                r["id"]: r
                for r in self.s._q(
                    f"SELECT {_MESSAGE_COLUMNS}, {_SUBAGENT_WEIGHT} AS w FROM messages m "
                    "JOIN conversations c ON c.id = m.conversation_id "
                    f"WHERE m.id IN ({marks})",
                    list(found),
                )
            }
            return [
                {**dict(rows[i]), "rank": rank * rows[i]["w"], "index_rank": rank}
                for i, rank in found.items()
                if i in rows
            ]

        return fetch

    def _best_filtered(
        self, match: str, where: str, params: builtins.list[Any], window: int
    ) -> builtins.list[dict[str, Any]]:
        """The ``window`` best rows of ``match`` passing the filters ``where``, best first."""
        return [
            dict(r)
            for r in self.s._q(
                f"SELECT {_MESSAGE_COLUMNS}, "
                f"messages_fts.rank * {_SUBAGENT_WEIGHT} AS rank FROM messages_fts "
                "JOIN messages m ON m.id = messages_fts.rowid "
                "JOIN conversations c ON c.id = m.conversation_id "
                f"WHERE messages_fts MATCH ?{where} "
                "ORDER BY rank, m.created_at DESC, m.id DESC LIMIT ?",
                [match, *params, window],
            )
        ]

    def _best_summaries(
        self, match: str, where: str, params: builtins.list[Any], window: int
    ) -> builtins.list[dict[str, Any]]:
        """The ``window`` best summaries of ``match`` passing ``where``, best first."""
        return [
            dict(r)
            for r in self.s._q(
                "SELECT s.id, s.conversation_id, s.latest_at, c.session_id, c.project, "
                f"substr(s.content, 1, {lexical.READ_CHARS}) AS content, "
                "snippet(summaries_fts, 0, '[', ']', ' … ', 16) AS snip, "
                f"summaries_fts.rank * {_SUBAGENT_WEIGHT} AS rank FROM summaries_fts "
                "JOIN summary_rowids r ON r.rowid = summaries_fts.rowid "
                "JOIN summaries s ON s.id = r.summary_id "
                "JOIN conversations c ON c.id = s.conversation_id "
                f"WHERE summaries_fts MATCH ?{where} "
                "ORDER BY rank, s.latest_at DESC, s.id DESC LIMIT ?",
                [match, *params, window],
            )
        ]

    def _summaries(
        self, query: GrepQuery, limit: int, budget: ScanBudget
    ) -> builtins.list[SearchHit]:
        where, params = self._filters(query, "s")
        if query.mode == "full_text":
            words = lexical.words(query.pattern)
            ranked: dict[str, Any] = {}
            for match in _passes(words):
                fetch = functools.partial(self._best_summaries, match, where, params)
                for row in lexical.best_page(
                    fetch, words, limit, "latest_at", max_window=_RANKED_MAX_CANDIDATES
                ):
                    ranked.setdefault(row["id"], row)
                if len(ranked) >= limit:
                    break
            return [
                _summary_hit(r, one_line(lexical.shown_text(r["snip"])), float(r["rank"]))
                for r in ranked.values()
            ]
        regex = compile_user_regex(query.pattern)
        hits: list[SearchHit] = []
        # Its own connection, as the messages' scan (a scan may run its whole
        # budget), and read a block at a time: the scan stops at its limit,
        # so the older summaries' text is never read. The cursor is closed
        # at once: a statement left unfinished would hold its read snapshot.
        with (
            self.s.reading() as db,
            contextlib.closing(
                db.execute(SUMMARIES_NEWEST_FIRST.format(where=where), params)
            ) as rows_read,
        ):
            while len(hits) < limit and (block := rows_read.fetchmany(_SUMMARY_BLOCK)):
                for r in block:
                    if budget.spent(r["latest_at"]):
                        return hits
                    found = budget.search(regex, r["content"], r["latest_at"])
                    if found is None:
                        continue
                    snippet = snippet_around(r["content"], found.start(), found.end())
                    hits.append(_summary_hit(r, snippet))
                    if len(hits) >= limit:
                        break
        return hits
