"""The MCP tools' implementations (``LcmTools``), free of MCP and pydantic types.

``mcp_server`` wraps them as SDK tools (their schemas come from its typed
wrappers); ``mcp_stdio``'s front calls them directly for the first calls of a
session, while the SDK is still loading. Nothing here imports the SDK or
pydantic, so the front can open the tools in its first few hundred ms.
"""

from __future__ import annotations

import os
import threading
from typing import TYPE_CHECKING, Any, Literal

from lossless.engine.expand_query_limits import DEFAULT_QUERY_SECONDS, DEFAULT_QUERY_TOKENS
from lossless.search_scope import SearchScope

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
            "searched": SearchScope(project=project, session_id=session_id).describe(),
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
            "searched": SearchScope(project=project).describe(),
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


def open_tools(
    config: Config,
    *,
    project: str | None,
    model: LanguageModel | Literal["configured"] | None = "configured",
) -> LcmTools:
    """Tools over the store ``config`` names, for ``project`` (None: all)."""
    from lossless.delegation import inside_subagent
    from lossless.engine.engine import Engine

    engine = Engine.open(config=config)
    return LcmTools(engine, project=project, model=model, subagent_guard=inside_subagent())
