"""Search inside externalized large files, so content moved out of a message stays findable.

A file block or tool output above ``large_file_threshold`` tokens is stored
apart (``engine.large_files``) and the message keeps only a reference, so the
store's word and trigram indexes never see its body. This module searches the
bodies themselves: the files in the query's scope are read and matched with
the same rules as the store (a regex, or the query's words for full text), and
each match becomes a hit on the message that holds the reference, naming the
file id and the character offset of the match; ``lcm describe file_… --offset
N`` shows the text there.

The bodies are scanned, not indexed: a grep reads every large file in its
scope (the OS caches them). That costs about what reading them costs, which
is small next to the store for typical histories (large files are few); the
scan honours the grep's time budget and says when it stopped.
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from lossless.models import Conversation, LargeFile, SearchHit
from lossless.store.contract import GrepHits, GrepQuery, Repositories
from lossless.store.regex import compile_user_regex, snippet_around
from lossless.store.stopwords import content_words

# Words of a full-text query as the store's index splits them.
_WORD = re.compile(r"\w+")


@dataclass(frozen=True, slots=True)
class FileMatch:
    """Where a large file's text matched a query: the characters and a snippet around them."""

    file: LargeFile
    offset: int
    end: int
    # Full text: the share of the query's words the file holds (1.0: all).
    score: float
    snippet: str


# (file, its text, seconds left or None) -> the first match; TimeoutError past the time.
Matcher = Callable[[LargeFile, str, float | None], FileMatch | None]


def grep_with_files(repos: Repositories, home: Path, query: GrepQuery) -> GrepHits:
    """The store's hits for ``query`` merged with hits inside large files.

    A message that the store found through its file reference and that also
    matches inside the file is given once, as the file hit (which says where).
    Regex hits stay newest first. Full text: files holding every word of the
    query come first (the store cannot see them at all, and such a match is
    as strong as a hit gets), then the store's ranking, then partial file hits.
    """
    started = time.monotonic()
    stored = repos.search.grep(query)
    deadline = None
    if query.time_budget_s is not None:
        deadline = started + query.time_budget_s
    in_files, files_complete = search_large_files(repos, home, query, deadline=deadline)
    if not in_files:
        if files_complete:
            return stored
        return GrepHits(stored, complete=False, scanned_until=stored.scanned_until)
    by_id = {h.id: h for h in in_files}
    kept = [by_id.pop(h.id) if h.kind == "message" and h.id in by_id else h for h in stored]
    rest = [h for h in in_files if h.id in by_id]
    if query.mode == "regex":
        merged = sorted(
            [*kept, *rest], key=lambda h: (h.created_at or "", int(h.id) if h.id.isdigit() else 0)
        )
        merged.reverse()
    else:
        whole = [h for h in rest if h.rank >= 1.0]
        partial = [h for h in rest if h.rank < 1.0]
        merged = [*whole, *kept, *partial]
    return GrepHits(
        merged[: query.limit],
        complete=stored.complete and files_complete,
        scanned_until=stored.scanned_until,
    )


def search_large_files(
    repos: Repositories, home: Path, query: GrepQuery, *, deadline: float | None = None
) -> tuple[list[SearchHit], bool]:
    """Hits inside large files for ``query`` (best first), and whether every file was read."""
    if query.scope == "summaries" or query.limit <= 0:
        return [], True
    files = _files_in_scope(repos, query)
    if not files:
        return [], True
    match = _matcher(query)
    found: list[FileMatch] = []
    complete = True
    for large in files:
        if deadline is not None and time.monotonic() > deadline:
            complete = False
            break
        text = _read(home, large)
        if text is None:
            continue
        left = None if deadline is None else max(0.001, deadline - time.monotonic())
        try:
            hit = match(large, text, left)
        except TimeoutError:
            complete = False
            break
        if hit is not None:
            found.append(hit)
    if query.mode == "regex":
        found.sort(key=lambda m: (m.file.created_at, m.file.id), reverse=True)
    else:
        found.sort(key=lambda m: (-m.score, m.file.created_at), reverse=False)
    return _hits(repos, found[: query.limit]), complete


def _files_in_scope(repos: Repositories, query: GrepQuery) -> list[LargeFile]:
    conversation_ids: list[int] | None = None
    if query.conversation_id is not None:
        conversation_ids = [query.conversation_id]
    elif query.session_id is not None or query.project is not None:
        conversations = repos.conversations.list(project=query.project)
        conversation_ids = [
            c.id
            for c in conversations
            if query.session_id is None or c.session_id == query.session_id
        ]
        if not conversation_ids:
            return []
    files = repos.files.list_all(conversation_ids)
    if query.since is not None:
        files = [f for f in files if f.created_at >= query.since]
    return files


def _read(home: Path, large: LargeFile) -> str | None:
    path = Path(large.path)
    if not path.is_absolute():
        path = home / path
    try:
        return path.read_text("utf-8", errors="replace")
    except OSError:
        # A missing content file is reported by `lcm verify`/describe, not here.
        return None


def _matcher(query: GrepQuery) -> Matcher:
    if query.mode == "regex":
        compiled = compile_user_regex(query.pattern)

        def regex_match(large: LargeFile, text: str, left: float | None) -> FileMatch | None:
            found = compiled.search(text, timeout_s=left)
            if found is None:
                return None
            return FileMatch(
                large,
                found.start(),
                found.end(),
                1.0,
                snippet_around(text, found.start(), found.end()),
            )

        return regex_match
    words = list(dict.fromkeys(w.lower() for w in content_words(_WORD.findall(query.pattern))))

    def words_match(large: LargeFile, text: str, left: float | None) -> FileMatch | None:
        lowered = text.lower()
        if len(lowered) != len(text):
            # A few characters change length when lowered (offsets would drift).
            lowered = "".join(ch.lower() if len(ch.lower()) == 1 else ch for ch in text)
        first: tuple[int, int] | None = None
        matched = 0
        for word in words:
            at = _word_at(lowered, word)
            if at < 0:
                continue
            matched += 1
            if first is None or at < first[0]:
                first = (at, at + len(word))
        if first is None:
            return None
        # Any word matches, as in the store; files holding more of them rank first.
        return FileMatch(
            large,
            first[0],
            first[1],
            matched / len(words),
            snippet_around(text, first[0], first[1]),
        )

    return words_match


def _referencing_message(repos: Repositories, large: LargeFile) -> int | None:
    """The first message holding ``large``'s reference (files are content-addressed:
    the same content pasted twice is one file)."""
    if large.message_id is not None:
        return large.message_id
    found = repos.search.grep(
        GrepQuery(
            pattern=re.escape(f"[file {large.id}:"),
            mode="regex",
            scope="messages",
            conversation_id=large.conversation_id,
            limit=20,
        )
    )
    ids = [int(h.id) for h in found if h.kind == "message"]
    return min(ids) if ids else None


def _word_at(text: str, word: str) -> int:
    """Where ``word`` first starts a word of ``text`` (-1: nowhere); a query word
    matches any word it begins, as the store's stemmed search does. ``str.find``
    runs at memory speed; a case-insensitive ``\\b`` regex is ~40x slower."""
    at = text.find(word)
    if not word.isascii():
        # Chinese, Japanese and Korean are written without spaces: a word is
        # found inside a longer run, as the store's index finds it.
        return at
    while at >= 0:
        if at == 0 or not (text[at - 1].isalnum() or text[at - 1] == "_"):
            return at
        at = text.find(word, at + 1)
    return -1


def _hits(repos: Repositories, matches: Sequence[FileMatch]) -> list[SearchHit]:
    holders = {m.file.id: _referencing_message(repos, m.file) for m in matches}
    message_ids = [i for i in holders.values() if i is not None]
    messages = {m.id: m for m in repos.messages.get_many(message_ids)}
    conversations: dict[int, Conversation | None] = {}
    covering = repos.summaries.covering(message_ids)
    hits: list[SearchHit] = []
    for found in matches:
        message = messages.get(holders[found.file.id] or -1)
        if message is None:
            continue
        if message.conversation_id not in conversations:
            conversations[message.conversation_id] = repos.conversations.get(
                message.conversation_id
            )
        conversation = conversations[message.conversation_id]
        name = found.file.original_name or "content"
        hits.append(
            SearchHit(
                kind="message",
                id=str(message.id),
                conversation_id=message.conversation_id,
                role=message.role,
                created_at=message.created_at,
                snippet=f"in {found.file.id} ({name}) at offset {found.offset}: {found.snippet}",
                rank=found.score,
                seq=message.seq,
                session_id=conversation.session_id if conversation else None,
                project=conversation.project if conversation else None,
                covering_summary_id=covering.get(message.id),
                file_id=found.file.id,
                file_offset=found.offset,
            )
        )
    return hits
