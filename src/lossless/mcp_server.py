"""The MCP server (``lcm mcp``): lossless history as tools for the agent, over stdio.

Tools (all read-only but ``lcm_store``):

- ``lcm_grep``: regex or full-text search over messages and summaries.
- ``lcm_search``: ranked full-text search (best first) over history and durable
  memories together.
- ``lcm_store``: keep a durable memory (decision, convention, fix) for the project.
- ``lcm_describe``: one message, summary or large file in full (paged).
- ``lcm_expand``: a summary's sources, one or more levels down, under a token cap.
- ``lcm_expand_query``: answer a question from the history: candidate summaries
  and messages are found and expanded under a token cap; with an LLM provider
  configured a bounded sub-agent writes ``{answer, cited_ids, truncated}``,
  offline the ranked evidence is returned for the calling agent to read.
- ``lcm_status``: what is stored for this project, and whether compaction keeps up.
- ``lcm_llm_map`` / ``lcm_agentic_map`` / ``lcm_job``: start a map job over a
  data set (returns at once), then poll its progress and page its results.

Results are sized for a model's context: every list has a ``limit`` and an
``offset`` to page on, long texts a token cap, and every item carries the id to
pass to the next tool. By default a tool sees only the current project (the
working directory the client started the server in, which is what the hooks
store as a conversation's ``project``); ``all_projects=true`` widens it.

``lcm_expand_query`` is ``Engine.expand_query`` (engine/expand_query.py); its
sub-agent is the summarizer's own provider (summarize/), with the same keys,
timeouts, retries and circuit breaker. It is a single model call with no tools,
so it cannot call ``lcm_expand_query`` (or anything) again; it runs with
``LCM_IN_SUMMARIZER=1`` in its environment, and a server started under that
marker (a ``claude -p`` sub-agent loading its MCP servers) lets it delegate
again only through the scope guard (``delegated_scope`` and ``kept_work``
stated, depth bounded; see ``lossless.mcp_map_tools``). One expansion runs at a time per server (one server per
client session); each has a hard token budget (evidence and answer) and a hard
time budget.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, Literal, cast

from pydantic import Field

from lossless.delegation import inside_subagent
from lossless.engine.expand_query import (
    DEFAULT_QUERY_SECONDS,
    DEFAULT_QUERY_TOKENS,
    MAX_QUERY_SECONDS,
)
from lossless.mcp_identity import (
    HANDSHAKE_VERSIONS,
    INSTRUCTIONS,
    READ_ONLY,
    READ_ONLY_DELEGATING,
    SERVER_NAME,
    STORE_HINTS,
    tool_annotations,
)
from lossless.mcp_map_tools import DelegatedScope, KeptWork
from lossless.mcp_results import (
    DescribeResult,
    ExpandQueryResult,
    ExpandResult,
    GrepResult,
    SearchResult,
    StatusResult,
    StoreResult,
)

if TYPE_CHECKING:
    from lossless.config import Config
    from lossless.engine.engine import Engine
    from lossless.models import SearchHit
    from lossless.summarize.completion import LanguageModel

MAX_LIMIT = 100
SNIPPET_CHARS = 400
DEFAULT_DESCRIBE_TOKENS = 2_000
MAX_TOKENS_CAP = 20_000

Mode = Literal["regex", "full_text"]
Scope = Literal["messages", "summaries", "both"]


class ToolFailure(Exception):
    """A failure the model should read and act on (bad id, bad pattern...)."""


# --------------------------------------------------------------------------- tools


def _clip(text: str, chars: int) -> str:
    text = " ".join(text.split())
    return text if len(text) <= chars else text[: chars - 1] + "…"


def _hit(hit: SearchHit) -> dict[str, Any]:
    shaped: dict[str, Any] = {
        "id": hit.id,
        "kind": hit.kind,
        "role": hit.role,
        "created_at": hit.created_at,
        "session_id": hit.session_id,
        "project": hit.project,
        "conversation_id": hit.conversation_id,
        "covering_summary_id": hit.covering_summary_id,
        "snippet": _clip(hit.snippet, SNIPPET_CHARS),
    }
    if hit.file_id is not None:
        # Inside the message's large file: lcm_describe(file_id, offset=...) shows it.
        shaped["file_id"] = hit.file_id
        shaped["file_offset"] = hit.file_offset
    return shaped


def _window(text: str, query: str, width: int = 160) -> str:
    """A one-line excerpt of ``text`` around the first word of ``query`` it contains."""
    flat = " ".join(text.split())
    lowered = flat.lower()
    positions = [lowered.find(w.lower()) for w in query.split() if len(w) > 2]
    found = [p for p in positions if p >= 0]
    if not found:
        return flat
    start = max(0, min(found) - width // 2)
    return ("…" if start else "") + flat[start:]


class LcmTools:
    """The tool implementations, free of MCP types (the server wraps them).

    ``project`` is the default scope (None: every project). ``model`` is the
    expand_query sub-agent: "configured" (the summarizer's provider, built on
    first use), a ``LanguageModel``, or None (offline, evidence only).
    """

    def __init__(
        self,
        engine: Engine,
        *,
        project: str | None,
        model: LanguageModel | Literal["configured"] | None = "configured",
        subagent_guard: bool = False,
    ) -> None:
        self.engine = engine
        self.project = project
        self.model = model
        self.subagent_guard = subagent_guard
        self._expansion = threading.Lock()

    # -- scope -------------------------------------------------------------

    def _scope(self, all_projects: bool, session_id: str | None) -> str | None:
        if all_projects or session_id:
            return None
        return self.project

    def _empty_note(self, project: str | None) -> str | None:
        if project is None:
            return None
        if self.engine.store.conversations.list(project=project, limit=1):
            return None
        return (
            f"no conversations are stored for this project ({project}); "
            "pass all_projects=true to search every project"
        )

    # -- grep / search -------------------------------------------------------

    def grep(
        self,
        pattern: str,
        *,
        mode: Mode = "regex",
        scope: Scope = "both",
        session_id: str | None = None,
        since: str | None = None,
        all_projects: bool = False,
        limit: int = 20,
        offset: int = 0,
    ) -> dict[str, Any]:
        from lossless.errors import LosslessError
        from lossless.timeutil import parse_since

        project = self._scope(all_projects, session_id)
        try:
            since_ts = parse_since(since) if since else None
            hits = self.engine.grep(
                pattern,
                mode=mode,
                scope=scope,
                session_id=session_id,
                project=project,
                since=since_ts,
                limit=offset + limit + 1,
            )
        except (LosslessError, ValueError) as exc:
            raise ToolFailure(str(exc)) from None
        page = hits[offset : offset + limit]
        result: dict[str, Any] = {
            "pattern": pattern,
            "mode": mode,
            "project": project if project is not None else "(all projects)",
            "hits": [_hit(h) for h in page],
            "next_offset": offset + limit if len(hits) > offset + limit else None,
            "hint": "lcm_describe an id for the full text; lcm_expand a covering_summary_id "
            "with around_message_id=<the hit's id> to read the hit in its context, or a "
            "sum_ id for what it summarizes",
        }
        note = None if page else self._empty_note(project)
        if not hits.complete:
            result["complete"] = False
            note = (
                f"the regex scan stopped at its time budget: messages older than "
                f"{hits.scanned_until} were not searched; add a literal of 3+ characters, "
                "or narrow with since/session_id"
            )
        if note:
            result["note"] = note
        return result

    def search(
        self,
        query: str,
        *,
        scope: Scope = "both",
        session_id: str | None = None,
        since: str | None = None,
        all_projects: bool = False,
        limit: int = 10,
        offset: int = 0,
    ) -> dict[str, Any]:
        """Memories and history ranked together; filtered searches cover history only."""
        from lossless.errors import LosslessError

        if session_id or since or scope != "both":
            found = self.grep(
                query,
                mode="full_text",
                scope=scope,
                session_id=session_id,
                since=since,
                all_projects=all_projects,
                limit=limit,
                offset=offset,
            )
            found["query"] = found.pop("pattern")
            return found
        project = self._scope(all_projects, None)
        try:
            hits = self.engine.search(query, project=project, limit=offset + limit + 1)
        except LosslessError as exc:
            raise ToolFailure(str(exc)) from None
        page = hits[offset : offset + limit]
        result: dict[str, Any] = {
            "query": query,
            "mode": "hybrid" if hits.hybrid else "full_text",
            "semantic": hits.semantic,
            "project": project if project is not None else "(all projects)",
            "hits": [
                {
                    "id": h.id,
                    "kind": h.kind,
                    "score": round(h.score, 4),
                    "matched": list(h.matched),
                    "created_at": h.created_at,
                    "session_id": h.session_id,
                    "project": h.project,
                    "conversation_id": h.conversation_id,
                    "covering_summary_id": h.covering_summary_id,
                    "tags": list(h.tags),
                    "snippet": _clip(
                        h.text if h.file_id else _window(h.text, query), SNIPPET_CHARS
                    ),
                    **({"file_id": h.file_id, "file_offset": h.file_offset} if h.file_id else {}),
                }
                for h in page
            ],
            "next_offset": offset + limit if len(hits) > offset + limit else None,
            "hint": "memories (mem_) are durable notes; lcm_describe a message id, "
            "lcm_expand a sum_ id or covering_summary_id",
        }
        note = None if page else self._empty_note(project)
        if note:
            result["note"] = note
        return result

    # -- memory ------------------------------------------------------------

    def store_memory(
        self, text: str, *, tags: list[str] | None = None, confidence: float = 1.0
    ) -> dict[str, Any]:

        from lossless.engine.memory import remember
        from lossless.errors import LosslessError

        project = self.project or os.getcwd()
        try:
            written = remember(
                self.engine.store,
                text,
                project=project,
                tags=tags or (),
                confidence=confidence,
                redactor=self.engine.redactors.for_project(project),
            )
        except LosslessError as exc:
            raise ToolFailure(str(exc)) from None
        memory = written.memory
        return {
            "id": memory.id,
            "created": written.created,
            "project": memory.project,
            "tags": list(memory.tags),
            "confidence": memory.confidence,
            "note": "stored" if written.created else "an equivalent memory already existed",
        }

    # -- describe ----------------------------------------------------------

    def describe(
        self, ref: str, *, max_tokens: int = DEFAULT_DESCRIBE_TOKENS, offset: int = 0
    ) -> dict[str, Any]:
        from lossless.engine import retrieval
        from lossless.errors import LosslessError

        try:
            found = self.engine.describe(ref)
        except LosslessError as exc:
            raise ToolFailure(str(exc)) from None
        info: dict[str, Any]
        if isinstance(found, retrieval.MessageDescription):
            m = found.message
            conv = found.conversation
            content = m.content
            info = {
                "kind": "message",
                "id": str(m.id),
                "role": m.role,
                "created_at": m.created_at,
                "token_count": m.token_count,
                "seq": m.seq,
                "conversation_id": m.conversation_id,
                "session_id": conv.session_id if conv else None,
                "project": conv.project if conv else None,
                "covering_summary_id": found.covering_summary_id,
                "parts": [
                    {
                        "kind": p.kind,
                        **({"tool_name": p.tool_name} if p.tool_name else {}),
                        **({"tool_call_id": p.tool_call_id} if p.tool_call_id else {}),
                    }
                    for p in found.parts
                ],
            }
        elif isinstance(found, retrieval.SummaryDescription):
            s = found.summary
            content = s.content
            ids = found.source_message_ids
            info = {
                "kind": "summary",
                "id": s.id,
                "summary_kind": s.kind,
                "depth": s.depth,
                "earliest_at": s.earliest_at,
                "latest_at": s.latest_at,
                "token_count": s.token_count,
                "conversation_id": s.conversation_id,
                "session_id": found.conversation.session_id if found.conversation else None,
                "source_summary_ids": found.source_summary_ids,
                "source_message_count": len(ids),
                "source_message_range": [str(ids[0]), str(ids[-1])] if ids else None,
                "condensed_into": found.condensed_into,
            }
        else:
            f = found.file
            if found.error:
                raise ToolFailure(found.error)
            content = found.content or ""
            info = {
                "kind": "file",
                "id": f.id,
                "name": f.original_name,
                "media_type": f.media_type,
                "byte_size": f.byte_size,
                "token_count": f.token_count,
                "exploration_summary": f.exploration_summary,
            }
        chars = max(1, max_tokens) * 4
        piece = content[offset : offset + chars]
        info["content"] = piece
        info["content_offset"] = offset
        info["content_chars"] = len(content)
        more = offset + chars < len(content)
        info["truncated"] = more
        info["next_offset"] = offset + chars if more else None
        return info

    # -- expand ----------------------------------------------------------

    def expand(
        self,
        summary_id: str,
        *,
        depth: int | None = 1,
        max_tokens: int = 4_000,
        include_messages: bool = True,
        cursor: str | None = None,
        around_message_id: str | None = None,
    ) -> dict[str, Any]:
        from lossless.errors import LosslessError

        try:
            expansion = self.engine.expand(
                summary_id,
                depth=depth,
                token_cap=max_tokens,
                include_messages=include_messages,
                cursor=cursor or None,
                around=around_message_id or None,
            )
        except LosslessError as exc:
            raise ToolFailure(str(exc)) from None
        data = expansion.as_dict()
        root = expansion.root
        data["root_summary"] = {
            "kind": root.kind,
            "depth": root.depth,
            "earliest_at": root.earliest_at,
            "latest_at": root.latest_at,
        }
        if expansion.truncated:
            data["hint"] = (
                "output stopped at the token cap: call lcm_expand again with the same "
                "summary_id and cursor to continue exactly where it stopped"
            )
        return data

    # -- expand_query ------------------------------------------------------

    def _model(self) -> tuple[LanguageModel | None, str | None]:
        """The sub-agent's model, built on first use, and why there is none."""
        if self.model == "configured":
            from lossless.summarize.errors import SummarizerError

            try:
                self.model = self.engine.language_model
            except SummarizerError as exc:
                return None, f"{type(exc).__name__}: {exc}"[:500]
        return self.model, None

    def expand_query(
        self,
        question: str,
        *,
        session_id: str | None = None,
        all_projects: bool = False,
        max_tokens: int = DEFAULT_QUERY_TOKENS,
        time_budget_s: float = DEFAULT_QUERY_SECONDS,
        delegated_scope: str | None = None,
        kept_work: str | None = None,
    ) -> dict[str, Any]:
        if self.subagent_guard:
            from lossless.mcp_map_tools import MapToolFailure, guard

            try:
                guard("lcm_expand_query", delegated_scope, kept_work)
            except MapToolFailure as exc:
                raise ToolFailure(f"{exc}; or use lcm_search and lcm_expand yourself") from None
        if not self._expansion.acquire(blocking=False):
            raise ToolFailure(
                "another lcm_expand_query is still running in this session (one at a time); "
                "wait for it, or use lcm_search / lcm_expand directly"
            )
        try:
            return self._expand_query(
                question,
                session_id=session_id,
                all_projects=all_projects,
                max_tokens=max_tokens,
                time_budget_s=time_budget_s,
            )
        finally:
            self._expansion.release()

    def _expand_query(
        self,
        question: str,
        *,
        session_id: str | None,
        all_projects: bool,
        max_tokens: int,
        time_budget_s: float,
    ) -> dict[str, Any]:
        from lossless.errors import LosslessError

        project = self._scope(all_projects, session_id)
        model, model_error = self._model()
        try:
            found = self.engine.expand_query(
                question,
                session_id=session_id,
                project=project,
                max_tokens=max_tokens,
                time_budget_s=time_budget_s,
                model=model,
            )
        except LosslessError as exc:
            raise ToolFailure(str(exc)) from None
        result: dict[str, Any] = {
            "question": question,
            "project": project if project is not None else "(all projects)",
            "mode": found.mode,
            "truncated": found.truncated,
            "evidence_tokens": found.evidence_tokens,
            "answer": found.answer,
            "cited_ids": found.cited_ids,
        }
        error = found.model_error or model_error
        if error:
            result["subagent_error"] = error
        if not found.evidence:
            result["evidence"] = []
            result["note"] = (
                self._empty_note(project)
                or "nothing in the history matches the question's words; try lcm_grep with "
                "a pattern, or other words"
            )
            return result
        if found.mode == "answer":
            return result | {
                "evidence_ids": found.evidence_ids,
                "subagent": found.model,
                "subagent_tokens": {"input": found.input_tokens, "output": found.output_tokens},
            }
        return result | {
            "evidence": [
                {
                    "id": e.id,
                    "kind": e.kind,
                    "relation": e.relation,
                    "session_id": e.session_id,
                    "when": e.when,
                    "text": e.text,
                }
                for e in found.evidence
            ],
            "note": "ranked evidence, best first (no LLM provider answered): read it to "
            "answer; lcm_expand any sum_ id or lcm_describe any message id for more",
        }

    # -- status ------------------------------------------------------------

    def status(self, *, all_projects: bool = False) -> dict[str, Any]:
        project = None if all_projects else self.project
        report = self.engine.status(project=project)
        totals = self.engine.store.stats() if project is not None else report.stats
        return {
            "project": project if project is not None else "(all projects)",
            "conversations": report.stats.conversations,
            "messages": report.stats.messages,
            "summaries": report.stats.summaries,
            "context_tokens": report.stats.context_tokens,
            "newest_session": report.newest_session,
            "compaction_pending": report.compaction_pending,
            "compaction_errors": {str(k): v for k, v in report.compaction_errors.items()},
            "worker_pid": report.worker_pid,
            "summarizer": report.summarizer,
            "expand_query_mode": "answer" if self._model()[0] else "evidence",
            "store": {
                "backend": report.backend,
                "home": report.home,
                "conversations": totals.conversations,
                "messages": totals.messages,
                "summaries": totals.summaries,
            },
        }


# --------------------------------------------------------------------------- server


def _server_classes() -> tuple[Any, type[Exception]]:
    """The SDK's high-level server class and its ToolError: ``MCPServer`` in
    mcp 2, ``FastMCP`` in mcp 1 (same tool API)."""
    import importlib

    try:
        server = importlib.import_module("mcp.server.mcpserver")
        errors = importlib.import_module("mcp.server.mcpserver.exceptions")
        server_class = server.MCPServer
    except ImportError:
        server = importlib.import_module("mcp.server.fastmcp")
        errors = importlib.import_module("mcp.server.fastmcp.exceptions")
        server_class = server.FastMCP
    tool_error: type[Exception] = errors.ToolError
    return server_class, tool_error


Limit = Annotated[int, Field(ge=1, le=MAX_LIMIT, description="Most results to return.")]
Offset = Annotated[int, Field(ge=0, description="Results to skip (from next_offset).")]
AllProjects = Annotated[
    bool,
    Field(description="Search every project instead of only the current one."),
]
SessionFilter = Annotated[
    str | None,
    Field(description="Only this session id (overrides the project scope)."),
]
Since = Annotated[
    str | None,
    Field(description="Only newer than this: an ISO date/time or an age like 30m, 12h, 7d."),
]
TokenCap = Annotated[
    int,
    Field(ge=50, le=MAX_TOKENS_CAP, description="Token cap of the returned text."),
]


def new_server(server_class: Any) -> Any:
    """The SDK server, reporting this package's name and version in ``initialize``."""
    from lossless import __version__

    try:
        return server_class(SERVER_NAME, instructions=INSTRUCTIONS, version=__version__)
    except TypeError:
        # mcp 1's FastMCP takes no version: set it on its low-level server.
        server = server_class(SERVER_NAME, instructions=INSTRUCTIONS)
        server._mcp_server.version = __version__
        return server


def build_server(tools: LcmTools) -> Any:
    """An MCP server exposing ``tools``; run it with ``.run("stdio")``."""
    server_class, tool_error = _server_classes()
    server = new_server(server_class)

    def call(fn: Callable[[], dict[str, Any]]) -> dict[str, Any]:
        try:
            return fn()
        except ToolFailure as exc:
            raise tool_error(str(exc)) from None

    def lcm_grep(
        pattern: Annotated[str, Field(min_length=1, description="Regular expression (Python).")],
        mode: Annotated[
            Mode, Field(description="regex (default) or full_text (ranked words).")
        ] = "regex",
        scope: Annotated[Scope, Field(description="Search messages, summaries or both.")] = "both",
        session_id: SessionFilter = None,
        since: Since = None,
        all_projects: AllProjects = False,
        limit: Limit = 20,
        offset: Offset = 0,
    ) -> GrepResult:
        """Find messages and summaries matching a regular expression, newest first.

        Each hit gives the message or summary id (for lcm_describe) and, for a
        message that has been compacted, the covering summary id (for
        lcm_expand). Page with offset=next_offset. A regex with no literal of 3+
        characters reads every message and may stop at a time budget: the
        result then has complete=false and a note saying how far back it got.
        """
        return cast(
            "GrepResult",
            call(
                lambda: tools.grep(
                    pattern,
                    mode=mode,
                    scope=scope,
                    session_id=session_id,
                    since=since,
                    all_projects=all_projects,
                    limit=limit,
                    offset=offset,
                )
            ),
        )

    def lcm_search(
        query: Annotated[str, Field(min_length=1, description="Words to look for.")],
        scope: Annotated[Scope, Field(description="Search messages, summaries or both.")] = "both",
        session_id: SessionFilter = None,
        since: Since = None,
        all_projects: AllProjects = False,
        limit: Limit = 10,
        offset: Offset = 0,
    ) -> SearchResult:
        """Ranked search over every stored message, summary and large file, best match first.

        Use it to find where something was discussed when you know some words
        or only the idea: where semantic search is installed it is hybrid
        (words and meaning), and each hit's ``matched`` says which found it. Without session_id/since/scope filters it also
        searches durable memories (mem_ ids), ranked together with the history.
        Each hit gives ids to follow with lcm_describe (messages) or lcm_expand
        (summaries and covering_summary_id).
        """
        return cast(
            "SearchResult",
            call(
                lambda: tools.search(
                    query,
                    scope=scope,
                    session_id=session_id,
                    since=since,
                    all_projects=all_projects,
                    limit=limit,
                    offset=offset,
                )
            ),
        )

    def lcm_store(
        text: Annotated[str, Field(min_length=1, max_length=4000, description="The fact to keep.")],
        tags: Annotated[
            list[str] | None, Field(description="Short labels, e.g. ['convention', 'db'].")
        ] = None,
        confidence: Annotated[
            float, Field(ge=0.0, le=1.0, description="How sure you are (0..1).")
        ] = 1.0,
    ) -> StoreResult:
        """Keep a durable memory for this project: a decision, a convention, a fix.

        Memories outlive sessions and compaction: lcm_search finds them and
        relevant ones are shown with future prompts. Near-duplicates are
        merged, so storing the same fact twice is harmless. Never store secrets.
        """
        return cast(
            "StoreResult", call(lambda: tools.store_memory(text, tags=tags, confidence=confidence))
        )

    def lcm_describe(
        id: Annotated[
            str,
            Field(description="A message id (123 or msg_123), summary id (sum_...) or file_..."),
        ],
        max_tokens: TokenCap = DEFAULT_DESCRIBE_TOKENS,
        offset: Annotated[
            int, Field(ge=0, description="Character offset into the content (next_offset).")
        ] = 0,
    ) -> DescribeResult:
        """Show one message, summary or large file: metadata and content, verbatim.

        Long content comes in pages of max_tokens; continue with
        offset=next_offset. A summary lists what it was built from; a message
        names the summary that covers it.
        """
        return cast(
            "DescribeResult", call(lambda: tools.describe(id, max_tokens=max_tokens, offset=offset))
        )

    def lcm_expand(
        summary_id: Annotated[str, Field(description="The summary to open (sum_...).")],
        depth: Annotated[
            int,
            Field(
                ge=0,
                description="Levels below the summary to show (1: what it was built from); "
                "0: all levels, down to every message.",
            ),
        ] = 1,
        max_tokens: TokenCap = 4_000,
        include_messages: Annotated[
            bool, Field(description="Include the verbatim source messages of leaf summaries.")
        ] = True,
        cursor: Annotated[
            str, Field(description="The cursor a truncated lcm_expand returned: the next page.")
        ] = "",
        around_message_id: Annotated[
            str,
            Field(
                description="Open the page at this covered message (a grep hit's id; "
                "summary_id is its covering_summary_id)."
            ),
        ] = "",
    ) -> ExpandResult:
        """Open a summary into what it was built from: child summaries, or for a
        leaf summary the original messages verbatim.

        One page at most max_tokens; when truncated=true, pass the returned
        cursor back to continue exactly where it stopped. around_message_id
        opens the page at that message (before_cursor reads what led to it).
        """
        return cast(
            "ExpandResult",
            call(
                lambda: tools.expand(
                    summary_id,
                    depth=depth or None,
                    max_tokens=max_tokens,
                    include_messages=include_messages,
                    cursor=cursor,
                    around_message_id=around_message_id,
                )
            ),
        )

    def lcm_expand_query(
        question: Annotated[str, Field(min_length=1, description="What you want to know.")],
        session_id: SessionFilter = None,
        all_projects: AllProjects = False,
        max_tokens: Annotated[
            int, Field(ge=200, le=MAX_TOKENS_CAP, description="Token cap of the evidence.")
        ] = DEFAULT_QUERY_TOKENS,
        time_budget_s: Annotated[
            float, Field(gt=0, le=MAX_QUERY_SECONDS, description="Hard time limit, seconds.")
        ] = DEFAULT_QUERY_SECONDS,
        delegated_scope: DelegatedScope = None,
        kept_work: KeptWork = None,
    ) -> ExpandQueryResult:
        """Answer a question from the compacted history of past sessions.

        Finds the summaries and messages that best match the question, expands
        them under max_tokens, and, when an LLM provider is configured, has a
        sub-agent answer from that evidence only: {answer, cited_ids,
        truncated}. Offline it returns the ranked evidence itself (mode
        "evidence") for you to read. One call at a time per session.
        """
        return cast(
            "ExpandQueryResult",
            call(
                lambda: tools.expand_query(
                    question,
                    session_id=session_id,
                    all_projects=all_projects,
                    max_tokens=max_tokens,
                    time_budget_s=time_budget_s,
                    delegated_scope=delegated_scope,
                    kept_work=kept_work,
                )
            ),
        )

    def lcm_status(all_projects: AllProjects = False) -> StatusResult:
        """What lossless holds for this project: conversations, messages, summaries,
        context tokens, pending compaction and the summarizer in use."""
        return cast("StatusResult", call(lambda: tools.status(all_projects=all_projects)))

    for fn, title, hints in (
        (lcm_grep, "Grep history", READ_ONLY),
        (lcm_search, "Search history and memories", READ_ONLY),
        (lcm_store, "Store a memory", STORE_HINTS),
        (lcm_describe, "Describe a message, summary or file", READ_ONLY),
        (lcm_expand, "Expand a summary", READ_ONLY),
        (lcm_expand_query, "Answer from history", READ_ONLY_DELEGATING),
        (lcm_status, "Lossless status", READ_ONLY),
    ):
        server.add_tool(fn, title=title, annotations=tool_annotations(hints))
    from lossless.mcp_map_tools import add_map_tools

    add_map_tools(server, tools, tool_error)
    return server


def open_tools(
    config: Config,
    *,
    project: str | None,
    model: LanguageModel | Literal["configured"] | None = "configured",
) -> LcmTools:
    """Tools over the store ``config`` names, for ``project`` (None: all)."""
    from lossless.engine.engine import Engine

    engine = Engine.open(config=config)
    return LcmTools(engine, project=project, model=model, subagent_guard=inside_subagent())


def serve_stdio(config: Config, *, project: str | None) -> None:
    """Run the SDK server on stdin/stdout until they close (behind ``mcp_stdio``'s front)."""
    _check_handshake_versions()
    tools = open_tools(config, project=project)
    try:
        build_server(tools).run("stdio")
    finally:
        tools.engine.close()


def _check_handshake_versions() -> None:
    """Warn when the SDK negotiates other protocol versions than the front announced."""
    import importlib
    import sys

    try:
        sdk = tuple(importlib.import_module("mcp_types.version").HANDSHAKE_PROTOCOL_VERSIONS)
    except (ImportError, AttributeError):
        return  # an SDK without this registry (mcp 1): nothing to compare
    if sdk != HANDSHAKE_VERSIONS:
        print(
            f"lcm mcp: warning: the MCP SDK negotiates {sdk}, lossless answered initialize "
            f"for {HANDSHAKE_VERSIONS}; upgrade lossless-context or pin its tested mcp version",
            file=sys.stderr,
        )


def default_project() -> str:
    """The current project: the working directory the client started us in."""
    return str(Path.cwd())
