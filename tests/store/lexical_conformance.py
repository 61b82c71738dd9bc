"""Full-text search semantics every backend must share: stems, exact words first, CJK, any input.

Subclass ``LexicalConformance`` and provide a ``store_factory`` fixture (as
for ``StoreConformance``).
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from tests.store.conformance import StoreFactory, msg

from lossless.errors import InputError
from lossless.models import NewSummary
from lossless.store.contract import GrepQuery, NewMemory, Store


class LexicalConformance:
    @pytest.fixture
    def store(self, store_factory: StoreFactory) -> Iterator[Store]:
        store = store_factory()
        yield store
        store.close()

    def fill(self, store: Store, texts: list[str], project: str = "p1") -> dict[str, int]:
        conv = store.conversations.get_or_create(project=project, session_id="s", client="generic")
        inserted = store.messages.append(
            conv.id,
            [msg(t, f"k{i}", at=f"2026-01-01T00:00:{i:02d}.000Z") for i, t in enumerate(texts)],
        ).inserted
        return {m.content: m.id for m in inserted}

    def found(self, store: Store, pattern: str, **kw: object) -> list[str]:
        hits = store.search.grep(
            GrepQuery(pattern, mode="full_text", scope="messages", limit=20, **kw)  # type: ignore[arg-type]
        )
        ids = {str(m.id): m.content for m in store.messages.get_many([int(h.id) for h in hits])}
        return [ids[h.id] for h in hits]

    # -- stems ------------------------------------------------------------

    def test_a_word_finds_its_inflections(self, store: Store) -> None:
        self.fill(
            store,
            [
                "we need better parsers here",
                "the parsing step failed",
                "parsed it twice",
                "ran two migrations",
                "nothing relevant at all",
            ],
        )
        assert set(self.found(store, "parse")) == {
            "we need better parsers here",
            "the parsing step failed",
            "parsed it twice",
        }
        assert self.found(store, "migration") == ["ran two migrations"]
        assert self.found(store, "migrating") == ["ran two migrations"]

    def test_exact_words_rank_above_stem_only_matches(self, store: Store) -> None:
        # Same length and shape: only the exactness of the word differs. The
        # stem-only rows are written last (newest), which would otherwise win ties.
        self.fill(
            store,
            [
                "the parser crashed today",
                "the parsers crashed today",
                "the parsing crashed today",
            ],
        )
        assert self.found(store, "parsers")[0] == "the parsers crashed today"
        assert self.found(store, "parsing")[0] == "the parsing crashed today"
        assert self.found(store, "parser")[0] == "the parser crashed today"

    def test_exactness_counts_per_word(self, store: Store) -> None:
        self.fill(
            store,
            [
                "deploying the caches nightly",
                "deploy the cache nightly",
                "deployed the cached nightly",
            ],
        )
        found = self.found(store, "deploy cache")
        assert len(found) == 3
        assert found[0] == "deploy the cache nightly"

    def test_a_sub_agents_row_last_in_the_window_does_not_end_the_page_early(
        self, store: Store
    ) -> None:
        """The first page is the start of any longer one. On SQLite the index
        orders rows before a sub-agent's rank is halved: the window's last row,
        a sub-agent's, once "proved" a page that a row just outside, holding the
        word as typed, beat."""
        main = store.conversations.get_or_create(project="p", session_id="m", client="generic")
        sub = store.conversations.get_or_create(
            project="p", session_id="s", client="generic", parent_id=main.id
        )
        filler = [f"unrelated filler words number {i}" for i in range(30)]
        store.messages.append(
            main.id,
            [msg(t, f"f{i}", at=f"2026-01-01T00:00:{i:02d}.000Z") for i, t in enumerate(filler)],
        )
        store.messages.append(
            main.id, [msg("parsed a", f"m{i}", at=f"2026-01-02T00:00:0{i}.000Z") for i in range(3)]
        )
        store.messages.append(sub.id, [msg("parsed a b", "s", at="2026-01-03T00:00:00.000Z")])
        store.messages.append(main.id, [msg("parsing a b c", "x", at="2026-01-01T12:00:00.000Z")])
        longest = [
            h.id
            for h in store.search.grep(
                GrepQuery("parsing", mode="full_text", scope="messages", limit=50)
            )
        ]
        assert len(longest) == 5
        for limit in (1, 2, 3):
            page = store.search.grep(
                GrepQuery("parsing", mode="full_text", scope="messages", limit=limit)
            )
            assert [h.id for h in page] == longest[:limit]

    def test_summaries_and_memories_are_stemmed_too(self, store: Store) -> None:
        conv = store.conversations.get_or_create(project="p1", session_id="s", client="generic")
        store.summaries.create(
            NewSummary(
                conv.id,
                "leaf",
                0,
                "the team discussed several migrations",
                8,
                "2026-01-01T00:00:00.000Z",
                "2026-01-01T01:00:00.000Z",
            )
        )
        store.memory.create(NewMemory(project="p1", text="always run migrations in a transaction"))
        hits = store.search.grep(GrepQuery("migration", mode="full_text", scope="summaries"))
        assert [h.kind for h in hits] == ["summary"]
        assert [h.memory.text for h in store.memory.search("migration", project="p1")] == [
            "always run migrations in a transaction"
        ]

    # -- CJK --------------------------------------------------------------

    CJK = (
        "静默模式已开启，不会再打扰你",
        "请在飞书群里通知大家",
        "数据库迁移失败了",
        "日本語のテキスト検索が必要です",
        "데이터베이스를 백업했습니다",
        "plain english text",
    )

    @pytest.mark.parametrize(
        ("word", "expected"),
        [
            ("静默", "静默模式已开启，不会再打扰你"),
            ("飞书", "请在飞书群里通知大家"),
            ("迁移", "数据库迁移失败了"),
            ("検索", "日本語のテキスト検索が必要です"),
            ("テキスト", "日本語のテキスト検索が必要です"),
            ("데이터베이스", "데이터베이스를 백업했습니다"),
        ],
    )
    def test_cjk_words_are_found_inside_runs(self, store: Store, word: str, expected: str) -> None:
        self.fill(store, list(self.CJK))
        assert self.found(store, word) == [expected]

    # Words of alphabets whose letters Python's folding and the index's differ on.
    ALPHABETS = (
        "Ошибка: файл не найден",
        "Ёлка стоит в углу",
        "Die Straße ist gesperrt",
        "Το αρχείο λείπει από τον δίσκο",
        "İstanbul'da toplantı var",
        "Ça marche très bien",
    )

    @pytest.mark.parametrize(
        ("word", "expected"),
        [
            ("файл", "Ошибка: файл не найден"),
            ("НАЙДЕН", "Ошибка: файл не найден"),
            ("ёлка", "Ёлка стоит в углу"),
            ("Straße", "Die Straße ist gesperrt"),
            ("straße", "Die Straße ist gesperrt"),
            ("αρχείο", "Το αρχείο λείπει από τον δίσκο"),
            ("δίσκο", "Το αρχείο λείπει από τον δίσκο"),
            ("toplantı", "İstanbul'da toplantı var"),
            ("très", "Ça marche très bien"),
            ("tres", "Ça marche très bien"),
            ("ça", "Ça marche très bien"),
        ],
    )
    def test_words_of_every_alphabet_are_found_as_typed(
        self, store: Store, word: str, expected: str
    ) -> None:
        """A word typed as it stands in the text finds it, whatever its letters:
        the index folds the query's words itself (Python's folding of й, ё, ß
        or accented Greek is not the index's)."""
        self.fill(store, list(self.ALPHABETS))
        assert self.found(store, word) == [expected]

    def test_cjk_characters_must_stand_together(self, store: Store) -> None:
        self.fill(store, list(self.CJK))
        assert self.found(store, "静书") == []
        assert set(self.found(store, "迁移 飞书")) == {
            "数据库迁移失败了",
            "请在飞书群里通知大家",
        }

    def test_cjk_snippets_show_the_text_as_written(self, store: Store) -> None:
        self.fill(store, list(self.CJK))
        hits = store.search.grep(GrepQuery("飞书", mode="full_text", scope="messages"))
        assert len(hits) == 1
        assert "\u200b" not in hits[0].snippet
        assert "飞书" in hits[0].snippet and "请在" in hits[0].snippet

    def test_cjk_summaries_and_memories(self, store: Store) -> None:
        conv = store.conversations.get_or_create(project="p1", session_id="s", client="generic")
        store.summaries.create(
            NewSummary(
                conv.id,
                "leaf",
                0,
                "用户要求开启静默模式",
                8,
                "2026-01-01T00:00:00.000Z",
                "2026-01-01T01:00:00.000Z",
            )
        )
        store.memory.create(NewMemory(project="p1", text="通知统一发到飞书群"))
        hits = store.search.grep(GrepQuery("静默", mode="full_text", scope="summaries"))
        assert [h.kind for h in hits] == ["summary"]
        assert [h.memory.text for h in store.memory.search("飞书", project="p1")] == [
            "通知统一发到飞书群"
        ]

    def test_rewritten_cjk_text_leaves_the_index(self, store: Store) -> None:
        ids = self.fill(store, list(self.CJK))
        store.messages.rewrite(ids["请在飞书群里通知大家"], "请在群里通知大家", None)
        assert self.found(store, "飞书") == []
        assert self.found(store, "通知") == ["请在群里通知大家"]

    # -- any input ----------------------------------------------------------

    @pytest.mark.parametrize(
        "pattern",
        [
            '"unbalanced parse',
            "parse*",
            "NEAR(parse fail)",
            "parse AND NOT fail",
            "-parse",
            "content:parse",
            "^parse",
            "parse OR",
            "(parse",
            "parse)",
            "{parse}",
            "parse + fail",
            "'parse'",
            "parse\\",
            "parse;--",
            "parse@fail",
            "parse&fail|x",
            "parse:*",
            "parse <-> fail",
            "!parse",
        ],
    )
    def test_query_syntax_is_plain_text(self, store: Store, pattern: str) -> None:
        self.fill(store, ["the parse step did fail", "unrelated words"])
        assert self.found(store, pattern)[0] == "the parse step did fail"

    @settings(
        max_examples=100,
        deadline=None,
        suppress_health_check=list(HealthCheck),
    )
    @given(pattern=st.text(min_size=1, max_size=40))
    def test_any_pattern_gives_hits_or_a_clear_error(self, store: Store, pattern: str) -> None:
        if not hasattr(self, "_filled"):
            self.fill(store, ["the parse step did fail", "静默模式", *self.CJK[1:]])
            self._filled = True
        # Hits, or an InputError naming the problem: never a backend's syntax error.
        for scope in ("messages", "both"):
            try:
                store.search.grep(GrepQuery(pattern, mode="full_text", scope=scope, limit=5))  # type: ignore[arg-type]
            except InputError as exc:
                assert str(exc)
        try:
            store.memory.search(pattern, project="p1")
        except InputError as exc:
            assert str(exc)
