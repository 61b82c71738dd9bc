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

from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, cast

from pydantic import Field

from lossless.engine.expand_query_limits import (
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
from lossless.mcp_tools import (
    DEFAULT_DESCRIBE_TOKENS,
    MAX_LIMIT,
    MAX_TOKENS_CAP,
    LcmTools,
    Mode,
    Scope,
    ToolFailure,
    open_tools,
)

if TYPE_CHECKING:
    from lossless.config import Config

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


def serve_stdio(config: Config, *, project: str | None, tools: LcmTools | None = None) -> None:
    """Run the SDK server on stdin/stdout until they close (behind ``mcp_stdio``'s front).

    ``tools``: already opened over ``config``'s store (the front opens them
    early); None: opened here, for ``project``.
    """
    _check_handshake_versions()
    if tools is None:
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
