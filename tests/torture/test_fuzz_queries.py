"""Property-based fuzzing of MCP tool arguments and full-text queries.

MCP: every tool the server lists is called through the SDK's real client (in
memory) with arguments generated from its own input schema, mixed with wrong
types, huge numbers, odd Unicode, unknown keys and missing ones. Each call
must come back as a result or a tool error with a message (never a crashed
session, never a traceback in the text), and the server must still answer
``lcm_status`` afterwards.

Full text: any text a user may type (FTS5 and tsquery syntax included:
quotes, ``*``, ``NEAR``, ``AND``, ``-``, ``^``, ``:``, parentheses) is either
searched or refused with an ``InputError``, never a database error, on
SQLite and PostgreSQL.

``LCM_TORTURE_EXAMPLES`` sets the number of generated cases per test (default
40; 2,000 in the long mode, ``LCM_TORTURE_LONG=1``).
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from tests.torture.knobs import EXAMPLES

from lossless.config import load_config
from lossless.engine.engine import Engine
from lossless.errors import InputError
from lossless.store.contract import GrepQuery

mcp = pytest.importorskip("mcp", reason="the MCP SDK is the 'mcp' extra")

from anyio.from_thread import BlockingPortal, start_blocking_portal  # noqa: E402

from lossless.mcp_server import build_server, open_tools  # noqa: E402

#: Tools that start sub-agents or jobs (a model, a worker) are left out: their
#: argument checking is the same code, and a run would cost a model call.
SKIPPED_TOOLS = {"lcm_expand_query", "lcm_llm_map", "lcm_agentic_map"}

ODD_TEXT = st.one_of(
    st.text(max_size=40),
    st.sampled_from(
        [
            "",
            " ",
            "\x00",
            "\ud800",
            "sum_",
            "sum_" + "f" * 64,
            "file_0",
            "-1",
            "99999999999999999999999",
            "1e309",
            "NaN",
            '"unclosed',
            "a" * 5000,
            "(a|aa)+$",
            "\u202e\u0000\uffff",
            "../../etc/passwd",
        ]
    ),
)
JSON_SCALARS = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(2**70), max_value=2**70),
    st.floats(allow_nan=False, allow_infinity=False),
    ODD_TEXT,
)
JSON_VALUES = st.recursive(
    JSON_SCALARS,
    lambda inner: st.one_of(
        st.lists(inner, max_size=4), st.dictionaries(st.text(max_size=8), inner, max_size=4)
    ),
    max_leaves=8,
)


def _value_for(schema: dict[str, Any]) -> st.SearchStrategy[Any]:
    """Mostly a value of the schema's type (to get past validation), sometimes anything."""
    kind = schema.get("type")
    if "enum" in schema:
        typed: st.SearchStrategy[Any] = st.sampled_from(schema["enum"])
    elif kind == "integer":
        typed = st.integers(min_value=-(2**40), max_value=2**40)
    elif kind == "number":
        typed = st.floats(allow_nan=False, allow_infinity=False)
    elif kind == "boolean":
        typed = st.booleans()
    elif kind == "string":
        typed = ODD_TEXT
    elif "anyOf" in schema:
        typed = st.one_of(*[_value_for(s) for s in schema["anyOf"]])
    else:
        typed = JSON_VALUES
    return st.one_of(typed, typed, typed, JSON_VALUES)


def _arguments(schema: dict[str, Any]) -> st.SearchStrategy[dict[str, Any]]:
    properties: dict[str, Any] = schema.get("properties", {})
    fields = {name: _value_for(prop) for name, prop in properties.items()}
    known = st.fixed_dictionaries({}, optional=fields)
    extra = st.dictionaries(st.text(min_size=1, max_size=10), JSON_VALUES, max_size=2)
    return st.tuples(known, extra).map(lambda pair: {**pair[1], **pair[0]})


@pytest.fixture(scope="module")
def seeded_home(tmp_path_factory: pytest.TempPathFactory) -> Path:
    home = tmp_path_factory.mktemp("fuzz-home") / "home"
    with Engine.open(config=load_config(home, env={})) as engine:
        engine.conversation("s-fuzz", project="/w").ingest(
            [
                {"role": "user", "content": "Which port does the billing service use?"},
                {"role": "assistant", "content": "The billing service listens on port 8443."},
            ]
        )
    return home


@pytest.fixture(scope="module")
def client(seeded_home: Path) -> Iterator[tuple[BlockingPortal, Any]]:
    tools = open_tools(load_config(seeded_home, env={}), project="/w")
    with (
        start_blocking_portal() as portal,
        portal.wrap_async_context_manager(mcp.Client(build_server(tools))) as session,
    ):
        yield portal, session
    tools.engine.close()


@pytest.fixture(scope="module")
def tool_schemas(client: tuple[BlockingPortal, Any]) -> dict[str, dict[str, Any]]:
    portal, session = client
    listed = portal.call(session.list_tools)
    tools = getattr(listed, "tools", listed)
    schemas = {}
    for tool in tools:
        schema = getattr(tool, "input_schema", None) or getattr(tool, "inputSchema", None)
        if tool.name not in SKIPPED_TOOLS:
            schemas[tool.name] = dict(schema or {})
    assert {"lcm_grep", "lcm_search", "lcm_describe", "lcm_expand", "lcm_status"} <= set(schemas)
    return schemas


def _text(result: Any) -> str:
    return "".join(getattr(c, "text", "") for c in getattr(result, "content", []) or [])


def _is_error(result: Any) -> bool:
    return bool(getattr(result, "is_error", None) or getattr(result, "isError", None))


@settings(
    max_examples=EXAMPLES,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(data=st.data())
def test_any_arguments_to_any_tool_get_an_answer(
    client: tuple[BlockingPortal, Any], tool_schemas: dict[str, dict[str, Any]], data: Any
) -> None:
    portal, session = client
    name = data.draw(st.sampled_from(sorted(tool_schemas)), label="tool")
    arguments = data.draw(_arguments(tool_schemas[name]), label="arguments")
    result = portal.call(session.call_tool, name, arguments)
    text = _text(result)
    assert "Traceback" not in text, text
    if _is_error(result):
        assert text.strip(), f"{name}({arguments!r}) failed without a message"
    status = portal.call(session.call_tool, "lcm_status", {})
    assert not _is_error(status), _text(status)


# --------------------------------------------------------------------------- full text

FTS_WORDS = st.sampled_from(
    ['"', "*", "NEAR", "AND", "OR", "NOT", "-", "^", ":", "(", ")", "{", "}", "+", "'", "\\"]
)
QUERIES = st.lists(st.one_of(FTS_WORDS, st.text(max_size=12)), min_size=1, max_size=8).map(" ".join)


@pytest.fixture
def fts_engine(backend: str, tmp_path: Path) -> Iterator[Engine]:
    with Engine.open(config=load_config(tmp_path / "fts-home")) as engine:
        engine.conversation("s-fts", project="/w").ingest(
            [
                {"role": "user", "content": "NEAR the billing AND port: 8443 (see ^docs*)"},
                {"role": "assistant", "content": 'café naïve 東京 emoji 🎉 "quoted" -dash'},
            ]
        )
        yield engine


@settings(
    max_examples=EXAMPLES,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(query=QUERIES)
def test_any_full_text_query_is_searched_or_refused(fts_engine: Engine, query: str) -> None:
    try:
        hits = fts_engine.store.search.grep(GrepQuery(query, mode="full_text", limit=5))
    except InputError as exc:
        assert str(exc)
        return
    assert hits.complete
