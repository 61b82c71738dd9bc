"""Stop words: left out of a full-text query that has other words."""

from __future__ import annotations

import pytest

from lossless.errors import InputError
from lossless.store.sqlite.search import full_text_passes
from lossless.store.stopwords import STOP_WORDS, content_words


def test_function_words_go_when_content_words_remain() -> None:
    assert content_words(["How", "do", "I", "fix", "the", "parser"]) == ["fix", "parser"]
    assert full_text_passes("how do I fix the parser?") == [
        '"fix" AND "parser"',
        '"fix" OR "parser"*',
    ]


def test_a_query_of_only_stop_words_is_searched_as_given() -> None:
    assert content_words(["what", "is", "this"]) == ["what", "is", "this"]
    assert full_text_passes("what is this") == [
        '"what" AND "is" AND "this"',
        '"what"* OR "is" OR "this"*',
    ]
    with pytest.raises(InputError):
        full_text_passes("?!")


@pytest.mark.parametrize("word", ["error", "test", "file", "not_found", "KeyError", "fix"])
def test_technical_words_are_never_stop_words(word: str) -> None:
    assert word.casefold() not in STOP_WORDS
