"""Search across layers: memories, messages, summaries and large files in one list.

``search_all`` is what ``lcm search``, the MCP ``lcm_search`` tool and
``Engine.search`` rank with. Candidates come from two places: the full-text
index (each layer's best ``FusionWeights.candidates``) and, when a query
vector is given, the nearest stored vectors (as many). Every candidate then
gets one score, a weighted sum (``FusionWeights``):

    lexical  x (coverage_share x share of the query's words in its text
                + (1 - coverage_share) x bm25 over the best bm25 of its layer)
  + semantic x cosine of its best chunk with the query
  + recency  x 0.5 ** (age in days / half-life)
  + memory_bonus x confidence                      (memories only)

and a sub-agent's transcript is multiplied by ``subagent`` (ranked below the
session that started it). Weighted scores rather than rank fusion: on LoCoMo
reciprocal rank fusion and dense search alone both lose to full text, while
this fusion beats it (docs/benchmarks.md). Each hit says why it was found:
``lexical`` (full text), ``semantic`` (among the nearest vectors), or both.
"""

from __future__ import annotations

import re
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Literal

from lossless.engine.recall import coverage_in, term_set
from lossless.errors import InputError
from lossless.models import Conversation, SearchHit
from lossless.store.contract import EmbeddingKind, GrepQuery, MessageNeighbour, Repositories
from lossless.timeutil import utc_now_iso

HitKind = Literal["memory", "message", "summary", "file"]
MatchReason = Literal["lexical", "semantic"]
_WORD = re.compile(r"\w+", re.UNICODE)


@dataclass(frozen=True, slots=True)
class UnifiedHit:
    """One result of ``search_all``: a memory, a message, a summary or a large file."""

    kind: HitKind
    id: str
    score: float
    text: str
    project: str | None
    conversation_id: int | None = None
    session_id: str | None = None
    created_at: str | None = None
    tags: tuple[str, ...] = ()
    covering_summary_id: str | None = None
    matched: tuple[MatchReason, ...] = ("lexical",)
    # A match inside the message's externalized large file: which, and where.
    file_id: str | None = None
    file_offset: int | None = None


class SearchResults(list[UnifiedHit]):
    """The hits of one search, best first, and what the semantic side covered.

    ``semantic`` is a sentence for the user: how much of the store has vectors
    so far, or why search was lexical only (None when nobody asked).
    """

    def __init__(
        self, hits: Sequence[UnifiedHit] = (), *, semantic: str | None = None, hybrid: bool = False
    ) -> None:
        super().__init__(hits)
        self.semantic = semantic
        self.hybrid = hybrid


@dataclass(frozen=True, slots=True)
class QueryVector:
    """A query's embedding, and the model whose stored vectors it is compared with."""

    model: str
    vector: tuple[float, ...]


class PendingQueryVector:
    """A query's embedding, computed in a thread while the full-text half runs.

    The model's C engine releases the GIL for the whole forward pass, so on
    two cores a hybrid search waits for the longer of embedding and full-text
    search rather than their sum (``search_all`` asks for the vector only
    once its full-text candidates are in). An error is raised where the
    vector is asked for, as if it had been computed there.
    """

    def __init__(self, model: str, compute: Callable[[], Sequence[float]]) -> None:
        self.model = model
        self._compute = compute
        self._vector: tuple[float, ...] | None = None
        self._error: BaseException | None = None
        self._thread = threading.Thread(target=self._run, name="lcm-query-vector", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        try:
            self._vector = tuple(self._compute())
        except BaseException as exc:  # handed to the caller of result()
            self._error = exc

    def result(self) -> QueryVector:
        self._thread.join()
        if self._error is not None:
            raise self._error
        assert self._vector is not None
        return QueryVector(self.model, self._vector)


@dataclass(frozen=True, slots=True)
class FusionWeights:
    """The knobs of the fused score (see the module docstring).

    ``semantic``, ``coverage_share`` and ``context`` were tuned on LoCoMo's
    even-numbered conversations: ``semantic`` 3 of 3-5 once vectors were
    centred (``embeddings.centring``), by any@5 + any@10 + multi-hop any@10
    there (the issue's three targets); coverage share (0.3-1.0) and context
    weights (0-1.5) in the session before, by any@5 + any@10.
    docs/benchmarks.md reports the odd ones apart. Cosines are of centred
    vectors: on LoCoMo a question and an unrelated turn score about 0 (99.9 %
    below 0.27), a question and its evidence turn 0.18-0.52 (10th-90th
    percentile), hence a weight near the lexical one.
    """

    lexical: float = 1.0
    semantic: float = 3.0
    coverage_share: float = 0.6
    context: tuple[tuple[int, float], ...] = ((-2, 0.5), (-1, 1.0), (1, 0.6))
    """A message's semantic score reads it with its neighbours: (seq offset,
    weight) beside its own vector at 1.0 (``engine.semantic_context``)."""
    semantic_floor: float = 0.3
    """A hit found by its vector alone (no word of the query) needs at least
    this cosine, and so does a hit said to match ``semantic``. On LoCoMo,
    99.9 % of (question, turn of another conversation) pairs score below
    0.27 once centred; a floor up to 0.3 cost no recall on the tuning split."""
    recency: float = 0.02
    recency_half_life_days: float = 30.0
    subagent: float = 0.8
    memory_bonus: float = 0.1
    """Times confidence: a curated memory beats a message that matches equally well."""
    candidates: int = 50


DEFAULT_FUSION = FusionWeights()


@dataclass(slots=True)
class _Candidate:
    kind: HitKind
    id: str
    text: str = ""
    lexical: float = 0.0
    cosine: float | None = None
    from_text: bool = False
    from_vector: bool = False
    project: str | None = None
    conversation_id: int | None = None
    session_id: str | None = None
    created_at: str | None = None
    tags: tuple[str, ...] = ()
    covering_summary_id: str | None = None
    confidence: float = 0.0
    file_id: str | None = None
    file_offset: int | None = None


def search_all(
    repos: Repositories,
    query: str,
    *,
    project: str | None = None,
    conversation_id: int | None = None,
    limit: int = 20,
    include_history: bool = True,
    include_memory: bool = True,
    files_home: Path | None = None,
    semantic: QueryVector | PendingQueryVector | None = None,
    weights: FusionWeights = DEFAULT_FUSION,
    now: str | None = None,
) -> SearchResults:
    """History and memory in one list, best first; hybrid when ``semantic`` is given.

    With ``files_home`` (where large files are stored) the bodies of large
    files are searched by full text too. Ties: memories first, then newest.
    """
    if limit < 0:
        raise InputError("limit must be 0 or more")
    if not _WORD.search(query):
        raise InputError(f"search query {query!r} has no searchable words")
    if limit == 0:
        return SearchResults(hybrid=semantic is not None)
    wanted = max(limit, weights.candidates)
    query_terms = term_set(query)
    found: dict[tuple[str, str], _Candidate] = {}
    if conversation_id is not None:
        include_memory = False  # memories belong to projects, not conversations
    if include_memory:
        _lexical_memories(repos, query, query_terms, project, wanted, weights, found)
    if include_history:
        _lexical_history(
            repos, query, query_terms, project, conversation_id, wanted, weights, found, files_home
        )
    # Each conversation read once per search (the describing and the scoring both ask).
    conversations: dict[int, Conversation | None] = {}
    if semantic is not None:
        # What the vector half needs of the full-text candidates is read while
        # the query is still being embedded (``PendingQueryVector``).
        early = _before_the_vector(repos, semantic.model, weights, found, conversations)
        _semantic(
            repos,
            semantic if isinstance(semantic, QueryVector) else semantic.result(),
            project,
            conversation_id,
            wanted,
            include_history,
            include_memory,
            weights,
            found,
            early,
        )
    stamp = _parse(now or utc_now_iso())
    if semantic is not None:
        _drop_beyond_the_page(repos, found, limit, weights, stamp, conversations)
        _describe_vector_only(repos, found, conversations)
    hits: list[UnifiedHit] = []
    for c in found.values():
        score = _score(repos, c, weights, stamp, conversations)
        reasons: tuple[MatchReason, ...] = (
            *(("lexical",) if c.from_text else ()),
            *(("semantic",) if c.from_vector else ()),
        )
        hits.append(
            UnifiedHit(
                kind=c.kind,
                id=c.id,
                score=score,
                text=c.text,
                project=c.project,
                conversation_id=c.conversation_id,
                session_id=c.session_id,
                created_at=c.created_at,
                tags=c.tags,
                covering_summary_id=c.covering_summary_id,
                matched=reasons,
                file_id=c.file_id,
                file_offset=c.file_offset,
            )
        )
    hits.sort(key=lambda h: h.created_at or "", reverse=True)
    hits.sort(key=lambda h: (-round(h.score, 9), h.kind != "memory"))
    return SearchResults(hits[:limit], hybrid=semantic is not None)


def _score(
    repos: Repositories,
    c: _Candidate,
    weights: FusionWeights,
    stamp: datetime,
    conversations: dict[int, Conversation | None],
) -> float:
    """A described candidate's fused score (the module docstring's sum)."""
    score = weights.lexical * c.lexical + weights.semantic * (c.cosine or 0.0)
    if c.created_at and weights.recency:
        age_days = max(0.0, (stamp - _parse(c.created_at)).total_seconds() / 86400)
        score += weights.recency * 0.5 ** (age_days / weights.recency_half_life_days)
    if c.kind == "memory":
        score += weights.memory_bonus * c.confidence
    elif c.conversation_id is not None:
        if c.conversation_id not in conversations:
            conversations[c.conversation_id] = repos.conversations.get(c.conversation_id)
        owner = conversations[c.conversation_id]
        if owner is not None and owner.parent_id is not None:
            score *= weights.subagent
    return score


# Below the page's bound by more than rounding could ever close (scores are
# compared to 9 decimals).
_BOUND_MARGIN = 1e-6


def _drop_beyond_the_page(
    repos: Repositories,
    found: dict[tuple[str, str], _Candidate],
    limit: int,
    weights: FusionWeights,
    stamp: datetime,
    conversations: dict[int, Conversation | None],
) -> None:
    """Drop the messages found by vector alone that cannot reach the first ``limit``,
    before they are read (``_describe_vector_only``).

    Such a message's score lacks only its age: between no recency and full
    recency (times ``subagent`` in a sub-agent's transcript), so it has
    bounds. The full-text candidates' scores are known (their conversations
    were read before the vector). A message whose best possible score is
    below the ``limit``-th best lower bound has at least ``limit`` candidates
    certainly above it: it would be cut from the page anyway. On LoCoMo a
    search described ~54 such messages, of which ~2 reached its first 20.
    """
    if min(weights.lexical, weights.semantic, weights.recency, weights.subagent) < 0:
        return
    bare = [k for k, c in found.items() if not c.from_text and c.kind == "message"]
    if not bare or len(found) <= limit:
        return

    def corners(c: _Candidate) -> tuple[float, float]:
        # Its conversation is read now (the describing would read it too):
        # a sub-agent's factor is then known, not only bounded.
        factor = 1.0
        if c.conversation_id is not None:
            if c.conversation_id not in conversations:
                conversations[c.conversation_id] = repos.conversations.get(c.conversation_id)
            owner = conversations[c.conversation_id]
            if owner is not None and owner.parent_id is not None:
                factor = weights.subagent
        base = weights.semantic * (c.cosine or 0.0)
        return base * factor, (base + weights.recency) * factor

    # Lower bounds: exact for the described candidates; other vector-only
    # items (memories, summaries, files) are left out, which only lowers it.
    lows = [_score(repos, c, weights, stamp, conversations) for c in found.values() if c.from_text]
    bounds = {k: corners(found[k]) for k in bare}
    lows += [low for low, _ in bounds.values()]
    if len(lows) < limit:
        return
    bound = sorted(lows, reverse=True)[limit - 1]
    for k, (_, high) in bounds.items():
        if high < bound - _BOUND_MARGIN:
            del found[k]


def _relative(values: Sequence[float]) -> list[float]:
    """Each value over the best; all 1.0 when the best is 0 (bm25 on tiny corpora)."""
    best = max(values, default=0.0)
    if best <= 0:
        return [1.0 for _ in values]
    return [max(0.0, v) / best for v in values]


def _lexical_score(
    weights: FusionWeights, query_terms: frozenset[str], text: str, bm25: float
) -> float:
    words = coverage_in(query_terms, text)
    return weights.coverage_share * words + (1 - weights.coverage_share) * bm25


def _lexical_memories(
    repos: Repositories,
    query: str,
    query_terms: frozenset[str],
    project: str | None,
    wanted: int,
    weights: FusionWeights,
    found: dict[tuple[str, str], _Candidate],
) -> None:
    memory_hits = repos.memory.search(query, project=project, limit=wanted)
    for hit, bm25 in zip(memory_hits, _relative([h.score for h in memory_hits]), strict=True):
        m = hit.memory
        text = f"{m.text} {' '.join(m.tags)}"
        found[("memory", m.id)] = _Candidate(
            kind="memory",
            id=m.id,
            text=m.text,
            lexical=_lexical_score(weights, query_terms, text, bm25),
            from_text=True,
            project=m.project,
            conversation_id=m.source_conversation_id,
            created_at=m.created_at,
            tags=m.tags,
            confidence=m.confidence,
        )


def _lexical_history(
    repos: Repositories,
    query: str,
    query_terms: frozenset[str],
    project: str | None,
    conversation_id: int | None,
    wanted: int,
    weights: FusionWeights,
    found: dict[tuple[str, str], _Candidate],
    files_home: Path | None,
) -> None:
    request = GrepQuery(
        pattern=query,
        mode="full_text",
        scope="both",
        project=project,
        conversation_id=conversation_id,
        limit=wanted,
    )
    if files_home is None:
        history = repos.search.grep(request)
    else:
        from lossless.engine.file_search import grep_with_files

        history = grep_with_files(repos, files_home, request)
    texts = _full_texts(repos, history)
    # SQLite ranks are negative bm25 (lower is better): flip to "higher is better".
    for hit, bm25 in zip(history, _relative([-h.rank for h in history]), strict=True):
        text = texts.get((hit.kind, hit.id), hit.snippet)
        found[(hit.kind, hit.id)] = _Candidate(
            kind=hit.kind,
            id=hit.id,
            text=hit.snippet,
            lexical=_lexical_score(weights, query_terms, text, bm25),
            from_text=True,
            project=hit.project,
            conversation_id=hit.conversation_id,
            session_id=hit.session_id,
            created_at=hit.created_at,
            covering_summary_id=hit.covering_summary_id,
            file_id=hit.file_id,
            file_offset=hit.file_offset,
        )


def _semantic(
    repos: Repositories,
    semantic: QueryVector,
    project: str | None,
    conversation_id: int | None,
    wanted: int,
    include_history: bool,
    include_memory: bool,
    weights: FusionWeights,
    found: dict[tuple[str, str], _Candidate],
    early: _Early,
) -> None:
    kinds: list[EmbeddingKind] = []
    if include_memory:
        kinds.append("memory")
    if include_history:
        kinds += ["message", "summary", "file"]
    near = repos.vectors.nearest(
        semantic.model,
        semantic.vector,
        limit=wanted,
        kinds=kinds,
        project=project,
        conversation_id=conversation_id,
    )
    for hit in near:
        candidate = found.setdefault(
            (hit.kind, hit.ref),
            _Candidate(kind=hit.kind, id=hit.ref, conversation_id=hit.conversation_id),
        )
        candidate.cosine = hit.score
        candidate.from_vector = True
    if weights.context:
        _in_context(repos, semantic, weights, found, early)
    lexical_only: list[tuple[EmbeddingKind, str]] = [
        (c.kind, c.id) for c in found.values() if c.cosine is None
    ]
    cosines = repos.vectors.similarities(semantic.model, semantic.vector, lexical_only)
    for key, cosine in cosines.items():
        found[key].cosine = cosine
    # Below the floor a vector is no reason to show an item, nor to say it matched by meaning.
    too_far = [k for k, c in found.items() if c.cosine is None or c.cosine < weights.semantic_floor]
    for far in too_far:
        if found[far].from_text:
            found[far].from_vector = False
        else:
            del found[far]


@dataclass(slots=True)
class _Early:
    """The full-text candidates' neighbourhoods, read before the query vector:
    the messages asked for, and the neighbourhoods found (by message id)."""

    asked: set[int]
    hoods: dict[int, list[MessageNeighbour]]


def _reach(weights: FusionWeights) -> tuple[int, int]:
    """How far back and ahead neighbourhoods are read: one step wider than the
    context weights reach, so a vector hit's neighbours are scored from their
    own context (``_in_context``)."""
    back = max([0, *(-d for d, _ in weights.context)])
    ahead = max([0, *(d for d, _ in weights.context)])
    return back + 1, ahead + 1


def _before_the_vector(
    repos: Repositories,
    model: str,
    weights: FusionWeights,
    found: dict[tuple[str, str], _Candidate],
    conversations: dict[int, Conversation | None],
) -> _Early:
    """Read what the vector half and the scoring need of the full-text candidates.

    None of it depends on the query vector, so it is read while the query is
    embedded in its thread (on two cores the search then waits for the
    longer of the two rather than their sum): each message candidate's
    neighbourhood, and every candidate's conversation (``conversations``,
    added to). Full-text candidates are never dropped, so nothing read here
    is read for nothing; the vector hits' part is read after.
    """
    for c in found.values():
        owner = c.conversation_id
        if c.kind != "memory" and owner is not None and owner not in conversations:
            conversations[owner] = repos.conversations.get(owner)
    messages = {int(c.id) for c in found.values() if c.kind == "message"}
    if not weights.context or not messages:
        return _Early(messages, {})
    before, after = _reach(weights)
    return _Early(
        messages, repos.vectors.neighbourhoods(model, sorted(messages), before=before, after=after)
    )


def _in_context(
    repos: Repositories,
    semantic: QueryVector,
    weights: FusionWeights,
    found: dict[tuple[str, str], _Candidate],
    early: _Early,
) -> None:
    """Score message candidates with their neighbours (``engine.semantic_context``).

    The messages next to a vector hit become candidates too: the answer to a
    question that matched is often the turn after it. Neighbourhoods are
    fetched one step wider than the weights reach, so those neighbours are
    scored from their own context; the full-text candidates' ones were read
    before the vector (``early``).
    """
    from lossless.engine.semantic_context import context_cosines

    messages = [int(c.id) for c in found.values() if c.kind == "message"]
    if not messages:
        return
    before, after = _reach(weights)
    rest = [m for m in messages if m not in early.asked]
    read = {**early.hoods}
    if rest:
        read.update(repos.vectors.neighbourhoods(semantic.model, rest, before=before, after=after))
    # In message id order, as one read of them all returns them (the order
    # context_cosines meets them in).
    hoods = {m: read[m] for m in sorted(read)}
    by_vector = {int(c.id) for c in found.values() if c.kind == "message" and c.from_vector}
    own = {m: hood for m, hood in hoods.items() if m not in by_vector}
    near = {m: hood for m, hood in hoods.items() if m in by_vector}
    scores = context_cosines(semantic.vector, own, weights.context)
    scores.update(context_cosines(semantic.vector, near, weights.context, (0, -1, 1)))
    for message_id, hood in near.items():
        conversation = found[("message", str(message_id))].conversation_id
        for n in hood:
            if n.offset in (-1, 1) and ("message", str(n.message_id)) not in found:
                found[("message", str(n.message_id))] = _Candidate(
                    kind="message",
                    id=str(n.message_id),
                    conversation_id=conversation,
                    from_vector=True,
                )
    for (kind, ref), c in found.items():
        if kind == "message" and int(ref) in scores:
            # Its best chunk may beat the context of its first one.
            c.cosine = max(c.cosine if c.cosine is not None else -1.0, scores[int(ref)])


def _describe_vector_only(
    repos: Repositories,
    found: dict[tuple[str, str], _Candidate],
    conversations: dict[int, Conversation | None],
) -> None:
    """Text, time and place of the candidates the full-text search did not return
    (``conversations``: the ones read so far, by id; added to)."""
    bare = [c for c in found.values() if not c.from_text]
    message_ids = [int(c.id) for c in bare if c.kind == "message"]
    messages = {str(m.id): m for m in repos.messages.get_many(message_ids)} if message_ids else {}
    covering = repos.summaries.covering(message_ids) if message_ids else {}

    def place(c: _Candidate) -> None:
        if c.conversation_id is None:
            return
        if c.conversation_id not in conversations:
            conversations[c.conversation_id] = repos.conversations.get(c.conversation_id)
        owner = conversations[c.conversation_id]
        if owner is not None:
            c.project = owner.project
            c.session_id = owner.session_id

    for c in bare:
        if c.kind == "message" and c.id in messages:
            message = messages[c.id]
            c.text, c.created_at = message.content, message.created_at
            c.covering_summary_id = covering.get(message.id)
        elif c.kind == "summary":
            summary = repos.summaries.get(c.id)
            if summary is not None:
                c.text, c.created_at = summary.content, summary.latest_at
        elif c.kind == "file":
            large = repos.files.get(c.id)
            if large is not None:
                c.text, c.created_at = large.exploration_summary, large.created_at
        elif c.kind == "memory":
            memory = repos.memory.get(c.id)
            if memory is not None:
                c.text, c.created_at, c.tags = memory.text, memory.created_at, memory.tags
                c.project, c.confidence = memory.project, memory.confidence
            continue
        place(c)


def _parse(ts: str) -> datetime:
    return datetime.fromisoformat(ts.replace("Z", "+00:00"))


def _full_texts(repos: Repositories, hits: Sequence[SearchHit]) -> dict[tuple[str, str], str]:
    texts: dict[tuple[str, str], str] = {}
    # A hit inside a large file is scored on its snippet: the message itself
    # holds only the file's reference.
    message_ids = [int(h.id) for h in hits if h.kind == "message" and h.file_id is None]
    for message in repos.messages.get_many(message_ids) if message_ids else []:
        texts[("message", str(message.id))] = message.content
    for hit in hits:
        if hit.kind == "summary":
            summary = repos.summaries.get(hit.id)
            if summary is not None:
                texts[("summary", hit.id)] = summary.content
    return texts
