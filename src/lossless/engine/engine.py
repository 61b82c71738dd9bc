"""The ``Engine``: one object that ties config, store and summarizer together.

Library users and every surface (CLI, hooks, MCP server, worker) go through it::

    from lossless import Engine

    with Engine.open() as engine:          # ~/.lcm, SQLite, offline summarizer
        chat = engine.conversation("my-session", project="my-app")
        chat.ingest([{"role": "user", "content": "hello"}])
        hits = engine.grep("hello")
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterable, Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, cast

from lossless.config import Config, load_config
from lossless.engine.expand_query_limits import (
    DEFAULT_CANDIDATES,
    DEFAULT_QUERY_SECONDS,
    DEFAULT_QUERY_TOKENS,
)
from lossless.errors import InputError, NotFoundError
from lossless.models import Conversation, NewMessage
from lossless.store import open_store
from lossless.store.contract import GrepHits, GrepMode, GrepScope, Store
from lossless.tokens import CHARS_PER_TOKEN, TokenEstimator, estimate_tokens

# Ingest (and with it redaction, whose detectors compile their patterns at
# import), retrieval, compaction, assembly and the summarizers are imported
# where they are used: ``lcm hook`` opens an Engine on every agent turn and
# only ingests, ``lcm grep`` only reads.
if TYPE_CHECKING:
    from lossless.engine import retrieval
    from lossless.engine.assembly import AssembledContext, Format
    from lossless.engine.compaction import (
        CompactionPlan,
        CompactionResult,
        Compactor,
        PassResult,
    )
    from lossless.engine.dag import DagView
    from lossless.engine.embedding import EmbeddingRun, SemanticStatus
    from lossless.engine.expand_query import QueryAnswer
    from lossless.engine.ingest import FileImportResult, Importer, ImportReport, MessagePrep
    from lossless.engine.operators.jobs import JobReport
    from lossless.engine.search import SearchResults
    from lossless.engine.sensitive import Redactors
    from lossless.engine.status import Status
    from lossless.sources.base import SourceKind
    from lossless.store.map_jobs import MapKind
    from lossless.summarize import Summarizer
    from lossless.summarize.completion import LanguageModel


class Engine:
    """Lossless context management over one store."""

    def __init__(
        self,
        config: Config,
        store: Store,
        *,
        token_estimator: TokenEstimator = estimate_tokens,
    ) -> None:
        self.config = config
        self.store = store
        self.estimate = token_estimator
        self._redactors: Redactors | None = None

    @classmethod
    def open(
        cls,
        home: Path | str | None = None,
        *,
        config: Config | None = None,
        store: Store | None = None,
        token_estimator: TokenEstimator | None = None,
        **settings: Any,
    ) -> Engine:
        """Open the engine for ``home`` (default ``$LCM_HOME`` or ``~/.lcm``).

        ``settings`` override configuration values by name, e.g.
        ``Engine.open(fresh_tail_count=16, summarizer_provider="openai")``.
        """
        if config is None:
            config = load_config(home, overrides=settings)
        elif settings:
            raise InputError("pass either a Config or individual settings, not both")
        return cls(
            config,
            store if store is not None else open_store(config),
            token_estimator=token_estimator or estimate_tokens,
        )

    def close(self) -> None:
        self.store.close()

    def __enter__(self) -> Engine:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- conversations ---------------------------------------------------

    def conversation(
        self, session_id: str, *, project: str = "default", client: str = "api"
    ) -> ConversationHandle:
        """The conversation for ``session_id`` in ``project``, created on first use."""
        conversation = self.store.conversations.get_or_create(
            project=project, session_id=session_id, client=client
        )
        return ConversationHandle(self, conversation)

    def resolve_conversation(self, ref: str | int) -> Conversation:
        """Find a conversation by numeric id, exact session id, or unique session-id prefix."""
        text = str(ref).strip()
        if text.isdigit():
            found = self.store.conversations.get(int(text))
            if found is not None:
                return found
        exact = self.store.conversations.find_by_session(text)
        if exact is not None:
            return exact
        if len(text) >= 4:
            matches = [c for c in self.store.conversations.list() if c.session_id.startswith(text)]
            if len(matches) == 1:
                return matches[0]
            if len(matches) > 1:
                ids = ", ".join(str(c.id) for c in matches[:10])
                raise InputError(
                    f"{text!r} matches {len(matches)} conversations ({ids}); be precise"
                )
        raise NotFoundError(f"no conversation {text!r} (use `lcm conversations` to list them)")

    # -- ingest ----------------------------------------------------------

    @property
    def redactors(self) -> Redactors:
        """Secret redaction per project: built-in detectors plus the user's patterns."""
        if self._redactors is None:
            from lossless.engine.sensitive import PatternBook, Redactors

            self._redactors = Redactors(
                PatternBook.load(self.config.home),
                enabled=self.config.redaction_enabled,
            )
        return self._redactors

    def message_prep(self) -> list[MessagePrep]:
        """Steps every (already redacted) message passes through before storage."""

        threshold = self.config.large_file_threshold

        def store_large_content(conversation: Conversation, message: NewMessage) -> NewMessage:
            if self.estimate is estimate_tokens and _below_threshold(message, threshold):
                # Nothing in it can be stored apart: spare a hook the import.
                return message
            from lossless.engine.large_files import externalize_large_content

            return externalize_large_content(
                self.store, self.config, conversation.id, message, estimator=self.estimate
            )

        def count_tokens(_conversation: Conversation, message: NewMessage) -> NewMessage:
            if self.estimate is estimate_tokens and message.token_count is None:
                # Both stores count a message without a count with this same
                # estimate: a copy of every message (~5% of an import) spared.
                return message
            return dataclasses.replace(message, token_count=self.estimate(message.content))

        return [store_large_content, count_tokens]

    def importer(
        self, *, project_override: str | None = None, defer_substring_index: bool = False
    ) -> Importer:
        """An importer for this store. ``defer_substring_index`` leaves the trigram
        index of what it imports to ``build_search_index`` (or the worker), as
        ``lcm import`` does; otherwise each file's messages are indexed at once
        unless the backlog is large (``engine.indexing``)."""
        from lossless.engine.ingest import Importer

        return Importer(
            self.store,
            redactors=self.redactors,
            prepare=self.message_prep(),
            project_override=project_override,
            defer_substring_index=defer_substring_index,
        )

    def build_search_index(self, progress: Callable[[int], None] | None = None) -> int:
        """Add every message not yet in the substring (trigram) index; how many.

        Grep finds those messages either way; this makes regex grep fast again
        after a large import. ``progress`` gets the count of each chunk.
        """
        from lossless.engine.indexing import catch_up_all

        return catch_up_all(self.store, progress=progress)

    def import_file(
        self,
        path: Path,
        kind: SourceKind | None = None,
        *,
        final: bool | None = None,
        progress: Callable[[int], None] | None = None,
    ) -> FileImportResult:
        return self.importer().import_file(path, kind, final=final, progress=progress)

    def import_paths(
        self,
        files: Iterable[tuple[SourceKind | None, Path]],
        *,
        progress: Callable[[int], None] | None = None,
    ) -> ImportReport:
        from lossless.engine.ingest import ImportReport

        importer = self.importer()
        report = ImportReport()
        for kind, path in files:
            report.files.append(importer.import_file(path, kind, progress=progress))
        return report

    def ingest(
        self, conversation: Conversation, messages: Sequence[NewMessage | dict[str, Any]]
    ) -> list[int]:
        """Store messages given by an embedding agent; returns the new message ids.

        Messages are redacted, large content is stored apart, tokens are
        counted; all of it or nothing is stored.
        """
        from lossless.engine.ingest import ingest_messages

        converted = [
            item if isinstance(item, NewMessage) else _message_from_dict(item) for item in messages
        ]
        with self.store.transaction() as tx:
            return ingest_messages(
                tx,
                conversation,
                converted,
                redactor=self.redactors.for_conversation(conversation),
                prepare=self.message_prep(),
            )

    # -- retrieval -------------------------------------------------------

    def grep(
        self,
        pattern: str,
        *,
        mode: GrepMode = "regex",
        scope: GrepScope = "both",
        conversation: str | int | None = None,
        session_id: str | None = None,
        project: str | None = None,
        since: str | None = None,
        limit: int = 50,
        time_budget_s: float | None = None,
    ) -> GrepHits:
        """Search history; a regex scan stops after ``time_budget_s`` seconds
        (default: the ``grep.time_budget_s`` setting; 0: no limit) and the
        result says so (``complete``, ``scanned_until``)."""
        from lossless.engine.grep import grep

        conversation_id = self.resolve_conversation(conversation).id if conversation else None
        if time_budget_s is None:
            time_budget_s = self.config.grep_time_budget_s
        return grep(
            self.store,
            pattern,
            mode=mode,
            scope=scope,
            conversation_id=conversation_id,
            session_id=session_id,
            project=project,
            since=since,
            limit=limit,
            time_budget_s=time_budget_s or None,
            files_home=self.config.home,
        )

    def search(
        self,
        query: str,
        *,
        project: str | None = None,
        conversation_id: int | None = None,
        limit: int = 20,
        include_history: bool = True,
        include_memory: bool = True,
        semantic: bool = True,
    ) -> SearchResults:
        """Memories, messages, summaries and large files ranked together, best first.

        Hybrid (full text + vectors, ``engine.search``) where semantic search is
        available and ``semantic``; otherwise full text only. The result's
        ``semantic`` says which, and how much of the store has vectors so far.
        """
        from lossless.embeddings.loader import SemanticUnavailable, load_embedder
        from lossless.engine.embedding import semantic_status
        from lossless.engine.search import PendingQueryVector, search_all

        status = semantic_status(self.store, self.config)
        note = status.describe()
        vector: PendingQueryVector | None = None
        if status.active and semantic:
            try:
                embedder = load_embedder(self.config.semantic_model)
                # Embedded beside the full-text search (``PendingQueryVector``).
                vector = PendingQueryVector(embedder.spec.name, lambda: embedder.query(query))
            except SemanticUnavailable as exc:
                note = str(exc)
        elif status.active:
            note = "semantic search not asked for: full text only"
        results = search_all(
            self.store,
            query,
            project=project,
            conversation_id=conversation_id,
            limit=limit,
            include_history=include_history,
            include_memory=include_memory,
            files_home=self.config.home,
            semantic=vector,
        )
        results.semantic = note
        return results

    def semantic_status(self) -> SemanticStatus:
        """Whether search can be semantic here and how much has vectors (loads no model)."""
        from lossless.engine.embedding import semantic_status

        return semantic_status(self.store, self.config)

    def embed(
        self,
        *,
        progress: Callable[[int], None] | None = None,
        should_stop: Callable[[], bool] | None = None,
    ) -> EmbeddingRun:
        """Compute the vectors the background worker has not yet, in the foreground.

        Raises ``SemanticUnavailable`` (with the install command) when no model
        can run here. ``progress`` gets the count of items of each batch.
        """
        from lossless.embeddings.loader import SemanticUnavailable, load_embedder
        from lossless.engine.embedding import embed_backlog, semantic_status

        status = semantic_status(self.store, self.config, with_progress=False)
        if status.reason is not None:
            raise SemanticUnavailable(status.reason)
        embedder = load_embedder(self.config.semantic_model)
        return embed_backlog(self.store, embedder, progress=progress, should_stop=should_stop)

    def describe(self, ref: str) -> retrieval.Description:
        from lossless.engine import retrieval

        return retrieval.describe(self.store, ref)

    def expand(
        self,
        summary_id: str,
        *,
        depth: int | None = 1,
        token_cap: int | None = None,
        include_messages: bool = True,
        cursor: str | None = None,
        around: int | str | None = None,
    ) -> retrieval.Expansion:
        """One page of a summary's expansion (``engine/expansion.py``): ``depth``
        levels (None: all), continued with the page's ``cursor``, or opened at
        the covered message ``around``."""
        from lossless.engine import retrieval

        return retrieval.expand(
            self.store,
            summary_id,
            depth=depth,
            token_cap=token_cap or self.config.max_expand_tokens,
            include_messages=include_messages,
            cursor=cursor,
            around=around,
            estimate=self.estimate,
        )

    # -- operators (engine/operators/) ---------------------------------------

    def map(
        self,
        items: Iterable[Any] | str | Path,
        prompt: str,
        *,
        schema: dict[str, Any] | None = None,
        kind: MapKind = "llm_map",
        provider: str | None = None,
        model: str | None = None,
        base_url: str | None = None,
        concurrency: int | None = None,
        max_retries: int = 3,
        output: str | Path | None = None,
        project: str = "library",
        language_model: LanguageModel | None = None,
    ) -> JobReport:
        """Run ``prompt`` over every item (a list, or a JSONL file's path) and wait.

        One model call per item (``kind="agentic_map"``: one tool-using
        sub-agent), answers validated against ``schema`` and retried with the
        error fed back. Returns the job's report; its results, in input order,
        come from ``engine.map_results(report.job.id)``. ``language_model``
        overrides the provider built from the other arguments.
        """
        from lossless.engine.operators import jobs
        from lossless.engine.operators.spec import DEFAULT_CONCURRENCY, MapSpec

        from_file = isinstance(items, str | Path)
        spec = MapSpec(
            kind=kind,
            prompt=prompt,
            schema=schema,
            provider=provider,
            model=model,
            base_url=base_url,
            concurrency=concurrency or DEFAULT_CONCURRENCY[kind],
            max_retries=max_retries,
            input_path=str(Path(items).resolve()) if isinstance(items, str | Path) else None,
            output_path=str(Path(output).resolve()) if output is not None else None,
        )
        job = jobs.start(
            self, spec, project=project, items=None if from_file else cast(Iterable[Any], items)
        )
        return jobs.run(self, job.id, model=language_model)

    def map_results(self, job_id: str) -> Iterator[dict[str, Any]]:
        """A map job's result records in input order (``status``, ``result`` or ``error``)."""
        from lossless.engine.operators import jobs

        return jobs.iter_results(self, job_id)

    # -- compaction and assembly (engine/compaction.py, engine/assembly.py) --

    @property
    def summarizer(self) -> Summarizer:
        """The summarizer named by the configuration, built on first use."""
        current: Summarizer | None = self.__dict__.get("_summarizer")
        if current is None:
            from lossless.summarize.configured import summarizer_from_config

            current = summarizer_from_config(self.config, estimator=self.estimate)
            self.__dict__["_summarizer"] = current
        return current

    @summarizer.setter
    def summarizer(self, value: Summarizer) -> None:
        self.__dict__["_summarizer"] = value

    @property
    def language_model(self) -> LanguageModel | None:
        """The configured provider as a free-form model (None offline: extractive).

        The same object as ``summarizer`` where it can answer prompts, so
        answers and summaries share one retry budget and circuit breaker.
        Raises ``SummarizerFatalError`` when the provider cannot be built
        (missing SDK, no command).
        """
        from lossless.summarize.configured import language_model_of

        return language_model_of(self.summarizer)

    def expand_query(
        self,
        question: str,
        *,
        session_id: str | None = None,
        project: str | None = None,
        max_tokens: int = DEFAULT_QUERY_TOKENS,
        time_budget_s: float = DEFAULT_QUERY_SECONDS,
        candidates: int = DEFAULT_CANDIDATES,
        model: LanguageModel | Literal["configured"] | None = "configured",
    ) -> QueryAnswer:
        """Answer ``question`` from the history (see ``engine/expand_query.py``).

        Evidence is gathered under ``max_tokens``; ``model`` ("configured": the
        summarizer's provider; None: evidence only) answers from it within
        ``time_budget_s``. A provider that cannot be built is reported in
        ``model_error`` and the evidence is returned instead.
        """
        from lossless.engine import expand_query
        from lossless.summarize.errors import SummarizerError

        error: str | None = None
        if model == "configured":
            try:
                model = self.language_model
            except SummarizerError as exc:
                model, error = None, f"{type(exc).__name__}: {exc}"[:500]
        return expand_query.expand_query(
            self,
            question,
            model=model,
            session_id=session_id,
            project=project,
            max_tokens=max_tokens,
            time_budget_s=time_budget_s,
            candidates=candidates,
            model_error=error,
        )

    def _conversation_id(self, conversation: Conversation | ConversationHandle | int | str) -> int:
        if isinstance(conversation, Conversation | ConversationHandle):
            return conversation.id
        return self.resolve_conversation(conversation).id

    def compactor(
        self,
        *,
        owner: str | None = None,
        lease_ttl_s: float | None = None,
        wait_s: float = 0.0,
        on_pass: Callable[[PassResult], None] | None = None,
    ) -> Compactor:
        """A ``Compactor`` on this engine's store, config and summarizer.

        ``owner`` names the lease holder, ``lease_ttl_s`` how long its lease on a
        conversation lasts, ``wait_s`` how long to wait for another holder's
        lease, ``on_pass`` is called after every compaction pass.
        """
        from lossless.engine.compaction import Compactor

        return Compactor(
            self.store,
            self.config,
            self.summarizer,
            estimator=self.estimate,
            owner=owner,
            lease_ttl_s=lease_ttl_s,
            wait_s=wait_s,
            on_pass=on_pass,
        )

    def after_turn(
        self,
        conversation: Conversation | ConversationHandle | int | str,
        messages: Sequence[NewMessage | dict[str, Any]] = (),
        *,
        budget: int | None = None,
    ) -> CompactionResult:
        """Ingest this turn's ``messages`` (if any), then compact incrementally
        (best-effort; only a misconfigured summarizer raises)."""
        conversation_id = self._conversation_id(conversation)
        if messages:
            stored = self.store.conversations.get(conversation_id)
            assert stored is not None
            self.ingest(stored, messages)
        return self.compactor().after_turn(conversation_id, budget=budget)

    def compact(
        self,
        conversation: Conversation | ConversationHandle | int | str,
        *,
        until: int | None = None,
        mode: str = "sweep",
        wait_s: float = 30.0,
    ) -> CompactionResult:
        """Compact now: a full ``sweep`` (default), ``incremental``, or down to
        ``until`` tokens (``compact_until_under``)."""
        conversation_id = self._conversation_id(conversation)
        compactor = self.compactor(wait_s=wait_s)
        if until is not None:
            return compactor.compact_until_under(conversation_id, until)
        if mode == "incremental":
            return compactor.incremental(conversation_id)
        if mode != "sweep":
            raise InputError(f"unknown compaction mode {mode!r}; use sweep or incremental")
        return compactor.sweep(conversation_id)

    def compaction_plan(
        self, conversation: Conversation | ConversationHandle | int | str
    ) -> CompactionPlan:
        """What ``compact`` would do now, without summarizing anything."""
        return self.compactor().plan(self._conversation_id(conversation))

    def assemble(
        self,
        conversation: Conversation | ConversationHandle | int | str,
        budget: int | None = None,
        *,
        format: Format = "anthropic",
        system: str | None = None,
    ) -> AssembledContext:
        """The messages to send the model now, within ``budget`` tokens
        (default ``context_budget_tokens``), shaped for ``format``."""
        from lossless.engine.assembly import assemble

        return assemble(
            self.store,
            self._conversation_id(conversation),
            budget=self.config.context_budget_tokens if budget is None else budget,
            format=format,
            fresh_tail_count=self.config.fresh_tail_count,
            system=system,
            estimator=self.estimate,
        )

    def status(self, *, project: str | None = None) -> Status:
        """What is stored (in ``project``, or everywhere) and whether compaction keeps up.

        A fixed number of queries however large the store (``lcm status``,
        MCP ``lcm_status``).
        """
        from lossless.engine.status import engine_status

        return engine_status(self, project=project)

    def dag(self, conversation: Conversation | ConversationHandle | int | str) -> DagView:
        """The conversation's summary DAG (``lcm dag``)."""
        from lossless.engine.dag import build_dag

        return build_dag(self.store, self._conversation_id(conversation))


def _below_threshold(message: NewMessage, threshold: int) -> bool:
    """True when no text of ``message`` exceeds ``threshold`` tokens by the default estimate.

    ``externalize_large_content`` only stores apart texts that are the
    content, a part's text or a piece of one, and the default estimate grows
    with length, so the longest of them bounds them all.
    """
    limit = threshold * CHARS_PER_TOKEN
    if threshold <= 0 or len(message.content) > limit:
        return False
    return all(part.text is None or len(part.text) <= limit for part in message.parts)


def _message_from_dict(data: dict[str, Any]) -> NewMessage:
    from lossless.sources.generic import message_from_dict

    try:
        return message_from_dict(data)
    except ValueError as exc:
        raise InputError(f"not a usable message: {exc}") from None


class ConversationHandle:
    """One conversation, bound to its engine: what an agent loop holds on to."""

    def __init__(self, engine: Engine, conversation: Conversation) -> None:
        self.engine = engine
        self.conversation = conversation

    @property
    def id(self) -> int:
        return self.conversation.id

    def ingest(self, messages: Sequence[NewMessage | dict[str, Any]]) -> list[int]:
        return self.engine.ingest(self.conversation, messages)

    def grep(
        self,
        pattern: str,
        *,
        mode: GrepMode = "regex",
        scope: GrepScope = "both",
        since: str | None = None,
        limit: int = 50,
        time_budget_s: float | None = None,
    ) -> GrepHits:
        """``Engine.grep`` within this conversation."""
        return self.engine.grep(
            pattern,
            mode=mode,
            scope=scope,
            conversation=self.conversation.id,
            since=since,
            limit=limit,
            time_budget_s=time_budget_s,
        )

    def after_turn(
        self, messages: Sequence[NewMessage | dict[str, Any]] = (), *, budget: int | None = None
    ) -> CompactionResult:
        return self.engine.after_turn(self.conversation, messages, budget=budget)

    def compact(self, *, until: int | None = None, mode: str = "sweep") -> CompactionResult:
        return self.engine.compact(self.conversation, until=until, mode=mode)

    def assemble(
        self, budget: int | None = None, *, format: Format = "anthropic", system: str | None = None
    ) -> AssembledContext:
        return self.engine.assemble(self.conversation, budget, format=format, system=system)

    def dag(self) -> DagView:
        return self.engine.dag(self.conversation)
