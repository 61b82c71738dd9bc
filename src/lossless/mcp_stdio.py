"""``lcm mcp`` on stdio: answer ``initialize`` at once, then hand over to the SDK.

Why a front at all: importing the MCP SDK costs about a second of CPU on
this project's machine (``mcp_types`` builds hundreds of pydantic models),
and some clients (Codex) do not wait for a slow server: its tools are then
missing from the session's first model request. Nothing in the ``initialize``
answer needs the SDK (it is the server's name, version, instructions,
capabilities and the negotiated protocol version), so this module, which
imports only the standard library, answers it from the process's first
milliseconds. The tool list comes from the package (``mcp_tool_list``: the
SDK's own answer, rendered once) or the home's cache of the SDK's answer;
``ping`` and the empty prompt and resource lists are fixed answers. What
the front cannot answer is the SDK's: the front relays bytes between the
client's stdin/stdout and two pipes the SDK server runs on, and gives the
SDK the client's own ``initialize`` request first (its answer, the same as
ours, is dropped), so the SDK's session is in the state the client believes
it is in. The SDK is imported (on the main thread) only when the first such
request arrives: a session that lists the tools and calls the read-only
ones (or stores memories) never pays its second of CPU.

Other designs measured or considered: importing the SDK lazily inside its own
``initialize`` handler is impossible (the handler is the SDK); a hand-written
JSON-RPC server would drop the SDK's validation and structured output, so the
front answers only what it can answer exactly as the SDK would, and only
until the SDK is up. What ``initialize`` says is pinned here and checked
against the SDK's own answer by the tests (``tests/test_mcp_stdio.py``), the
early tool answers likewise (``tests/test_mcp_early.py``).

Tool calls that arrive while the SDK is not running (a client may call as
soon as it has the tool list) are answered by the front itself for the
read-only tools and ``lcm_store`` (``lossless.mcp_early``): it opens the store in a thread
right after ``initialize`` and hands the opened tools to the SDK when it
starts, which serves every call once it answers the front's ``ping``.

The front also ends the process when the client goes away: stdin closed
(client exit) or the parent process gone, even while a tool call is running
(the SDK alone would wait for the call to finish first).
"""

from __future__ import annotations

import contextlib
import json
import os
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any

from lossless.mcp_identity import CAPABILITIES, HANDSHAKE_VERSIONS, INSTRUCTIONS, SERVER_NAME
from lossless.mcp_tools_cache import TOOLS_CACHE, ToolsCache

if TYPE_CHECKING:
    from lossless.config import Config
    from lossless.mcp_early import EarlyCalls
    from lossless.mcp_tools import LcmTools

PARENT_POLL_S = 1.0
FIRST_LINE_WAIT_S = 0.5
# The front's own request to the SDK, after the client's `initialized`: its
# answer says the SDK serves calls now.
READY_PING_ID = "lcm-front-sdk-ready"


def initialize_result(params: dict[str, Any]) -> dict[str, Any]:
    """The ``initialize`` result for a client's request ``params``."""
    from lossless import __version__

    requested = params.get("protocolVersion")
    version = requested if requested in HANDSHAKE_VERSIONS else HANDSHAKE_VERSIONS[-1]
    return {
        "capabilities": CAPABILITIES,
        "instructions": INSTRUCTIONS,
        "protocolVersion": version,
        "serverInfo": {"name": SERVER_NAME, "version": __version__},
    }


def _initialize_request(line: bytes) -> dict[str, Any] | None:
    """The JSON-RPC ``initialize`` request in ``line``, or None for anything else."""
    try:
        message = json.loads(line)
    except ValueError:
        return None
    if (
        isinstance(message, dict)
        and message.get("method") == "initialize"
        and "id" in message
        and isinstance(message.get("params", {}), dict)
    ):
        return message
    return None


class _Front:
    """The relays between the client's streams and the SDK's pipes."""

    def __init__(
        self,
        client_in: IO[bytes],
        client_out: IO[bytes],
        tools_cache: ToolsCache | None,
        open_tools: Callable[[], LcmTools] | None = None,
        packaged_tool_list: bool = True,
    ) -> None:
        self.client_in = client_in
        self.packaged_tool_list = packaged_tool_list
        self.client_out = client_out
        self.tools_cache = tools_cache
        self.open_tools = open_tools
        self.early: EarlyCalls | None = None
        self.early_started = threading.Event()
        self.write_lock = threading.Lock()
        self.sdk_lock = threading.Lock()
        self.sdk_in: IO[bytes] | None = None
        self.dropped_id: Any = None
        self.drop_pending = False
        self.list_ids: set[Any] = set()  # tools/list requests whose answers fill the cache
        self.first_line = threading.Event()
        # Set when a request needs the SDK: only then is it imported (see serve).
        self.sdk_wanted = threading.Event()
        self._tool_list: dict[str, Any] | None = None

    def send(self, data: bytes) -> None:
        with self.write_lock:
            self.client_out.write(data)
            self.client_out.flush()

    def to_sdk(self, line: bytes, *, wake: bool = True) -> None:
        """Write ``line`` to the SDK; ``wake``: start the SDK if it is not running
        (the opening lines it must see first wait in the pipe without starting it)."""
        assert self.sdk_in is not None
        if wake:
            self.sdk_wanted.set()
        with self.sdk_lock:
            self.sdk_in.write(line)
            self.sdk_in.flush()

    def tool_list(self) -> dict[str, Any] | None:
        """The ``tools/list`` result without the SDK: the one shipped with the
        package when it was rendered by the installed SDK, else the home's
        cache, else None (the SDK answers, and its answer fills the cache)."""
        if self._tool_list is None and self.tools_cache is not None:
            from lossless import mcp_tool_list

            shipped = mcp_tool_list.packaged() if self.packaged_tool_list else None
            self._tool_list = shipped or self.tools_cache.load()
        return self._tool_list

    def _start_early(self) -> None:
        """Open the tools in the background, for calls that come before the SDK."""
        try:
            if self.open_tools is None or self.tools_cache is None:
                return
            cached = self.tool_list()
            if cached is None:
                return  # a new version's first start: the SDK answers everything
            from lossless.mcp_early import EarlyCalls

            schemas = {
                tool["name"]: tool["inputSchema"]
                for tool in cached["tools"]
                if isinstance(tool, dict)
                and isinstance(tool.get("name"), str)
                and isinstance(tool.get("inputSchema"), dict)
            }
            self.early = EarlyCalls(self.open_tools, schemas, self.send, self._hand_over)
            self.early.start()
        except Exception:  # no early answers: the SDK answers everything, as before
            self.early = None
        finally:
            self.early_started.set()

    def _hand_over(self, line: bytes) -> None:
        # The SDK side gone: the process is ending anyway.
        with contextlib.suppress(BrokenPipeError, ValueError):
            self.to_sdk(line)

    def opened_tools(self) -> LcmTools | None:
        """The tools the front opened early (None: it did not), for the SDK to use."""
        self.early_started.wait(FIRST_LINE_WAIT_S)
        return self.early.tools() if self.early is not None else None

    def client_to_sdk(self, sdk_in: IO[bytes]) -> None:
        """Answer a leading ``initialize``, then copy every line to the SDK; exit at EOF."""
        self.sdk_in = sdk_in
        first = self.client_in.readline()
        if not first:
            _client_gone()
        request = _initialize_request(first)
        try:
            if request is not None:
                self.dropped_id, self.drop_pending = request["id"], True
                reply = {
                    "jsonrpc": "2.0",
                    "id": request["id"],
                    "result": initialize_result(request.get("params") or {}),
                }
                self.send(json_line(reply))
        finally:
            self.first_line.set()
        try:
            self._start_early()
            self.to_sdk(first, wake=request is None)
            for line in iter(self.client_in.readline, b""):
                if self._answered_from_cache(line) or self._answered_fixed(line):
                    continue
                if self.early is not None and self.early.take(line):
                    continue
                initialized = b'"notifications/initialized"' in line and _is_initialized(line)
                self.to_sdk(line, wake=not initialized)
                if self.early is not None and initialized:
                    ping = {"jsonrpc": "2.0", "id": READY_PING_ID, "method": "ping"}
                    self.to_sdk(json.dumps(ping).encode() + b"\n", wake=False)
        except (BrokenPipeError, ValueError):
            pass  # the SDK side ended: the process is ending anyway
        _client_gone()

    def _answered_from_cache(self, line: bytes) -> bool:
        """Answer a first-page ``tools/list`` from the cache; note a miss to fill it."""
        if self.tools_cache is None or b'"tools/list"' not in line:
            return False
        try:
            message = json.loads(line)
        except ValueError:
            return False
        if not isinstance(message, dict) or message.get("method") != "tools/list":
            return False
        params = message.get("params") or {}
        if not isinstance(message.get("id"), str | int) or not isinstance(params, dict):
            return False
        if params.get("cursor"):
            return False
        cached = self.tool_list()
        if cached is None:
            self.list_ids.add(message["id"])
            return False
        self.send(json_line({"jsonrpc": "2.0", "id": message["id"], "result": cached}))
        return True

    def _answered_fixed(self, line: bytes) -> bool:
        """Answer ``ping`` and the empty prompt and resource lists as the SDK does."""
        if not any(method in line for method in _FIXED_MARKS):
            return False
        try:
            message = json.loads(line)
        except ValueError:
            return False
        if not isinstance(message, dict) or not isinstance(message.get("id"), str | int):
            return False
        method = message.get("method")
        result = FIXED_ANSWERS.get(method) if isinstance(method, str) else None
        params = message.get("params")
        if result is None or set(message) - {"jsonrpc", "id", "method", "params"}:
            return False
        if params is not None and (not isinstance(params, dict) or set(params) - {"_meta"}):
            return False  # a cursor, or anything else: the SDK's to answer
        self.send(json_line({"jsonrpc": "2.0", "id": message["id"], "result": result}))
        return True

    def sdk_to_client(self, sdk_out: IO[bytes]) -> None:
        """Copy the SDK's lines to the client, minus its answer to our ``initialize``."""
        for line in iter(sdk_out.readline, b""):
            if self.drop_pending and self._answers_dropped(line):
                self.drop_pending = False
                continue
            if READY_PING_ID.encode() in line and self._answers_ready_ping(line):
                if self.early is not None:
                    self.early.sdk_ready.set()
                continue
            if self.list_ids and self.tools_cache is not None:
                self._fill_cache(line)
            try:
                self.send(line)
            except (BrokenPipeError, ValueError):
                _client_gone()

    def _fill_cache(self, line: bytes) -> None:
        try:
            message = json.loads(line)
        except ValueError:
            return
        if not isinstance(message, dict) or not isinstance(message.get("id"), str | int):
            return
        if message["id"] not in self.list_ids:
            return
        self.list_ids.discard(message["id"])
        result = message.get("result")
        if isinstance(result, dict) and not result.get("nextCursor") and self.tools_cache:
            self.tools_cache.store(result)

    def _answers_ready_ping(self, line: bytes) -> bool:
        try:
            message = json.loads(line)
        except ValueError:
            return False
        return isinstance(message, dict) and message.get("id") == READY_PING_ID

    def _answers_dropped(self, line: bytes) -> bool:
        try:
            message = json.loads(line)
        except ValueError:
            return False
        return (
            isinstance(message, dict)
            and message.get("id") == self.dropped_id
            and ("result" in message or "error" in message)
        )


# What the SDK answers for these on a server with tools only (checked against
# the SDK by tests/test_mcp_stdio.py); the front answers them itself, so a
# client's start-up listing or keep-alive does not make it import the SDK.
FIXED_ANSWERS: dict[str, dict[str, Any]] = {
    "ping": {},
    "prompts/list": {"prompts": []},
    "resources/list": {"resources": []},
    "resources/templates/list": {"resourceTemplates": []},
}
_FIXED_MARKS = (b'"ping"', b'"prompts/list"', b'"resources/list"', b'"resources/templates/list"')


def json_line(message: dict[str, Any]) -> bytes:
    """``message`` as one JSON-RPC line, serialized as the SDK serializes its answers."""
    return json.dumps(message, ensure_ascii=False, separators=(",", ":")).encode() + b"\n"


def _is_initialized(line: bytes) -> bool:
    try:
        message = json.loads(line)
    except ValueError:
        return False
    return isinstance(message, dict) and message.get("method") == "notifications/initialized"


def _client_gone() -> None:
    """End now: nobody is left to read an answer, and a running call must not hold us.

    A sub-agent command that a running ``lcm_expand_query`` started is killed
    with its process group (it runs in a session of its own, so it would not
    get our hang-up); the store needs nothing: every write is a transaction.
    """
    try:
        command = sys.modules.get("lossless.summarize.command")
        if command is not None:
            command.kill_running()
        sys.stderr.flush()
    finally:
        os._exit(0)


def _watch_parent(parent: int) -> None:
    # A client killed hard may leave stdin open in a descendant; its pid changes us.
    while True:
        time.sleep(PARENT_POLL_S)
        if os.getppid() != parent:
            _client_gone()


def main(
    load_config: Callable[[], Config],
    *,
    home: Path | None,
    project: str | None,
    all_projects: bool,
    packaged_tool_list: bool = True,
) -> None:
    """``lcm mcp``: serve the tools for ``project`` (default: the working directory).

    ``home`` is the lossless home (None: ``$LCM_HOME`` or ``~/.lcm``); the
    tool-list cache lives in it. ``packaged_tool_list=False`` ignores the
    list shipped with the package (the tests of the home's cache).

    Raises ``ConfigError`` before anything is served when the SDK is missing.
    """
    import importlib.util

    from lossless.errors import ConfigError

    if importlib.util.find_spec("mcp") is None:
        raise ConfigError(
            "the MCP server needs the 'mcp' package; "
            "install it with: pip install 'lossless-context[mcp]'"
        )

    scope = None if all_projects else (project or str(Path.cwd()))
    config: list[Config] = []
    config_lock = threading.Lock()

    def loaded_config() -> Config:
        # Once, by whichever thread asks first (its problems are printed once).
        with config_lock:
            if not config:
                config.append(load_config())
            return config[0]

    def open_tools() -> LcmTools:
        from lossless.mcp_tools import open_tools

        return open_tools(loaded_config(), project=scope)

    def run_sdk(tools: LcmTools | None) -> None:
        from lossless import mcp_server

        mcp_server.serve_stdio(loaded_config(), project=scope, tools=tools)

    from lossless.config import default_home

    where = home if home is not None else default_home(os.environ)
    serve(
        run_sdk,
        tools_cache=ToolsCache(where / TOOLS_CACHE),
        open_tools=open_tools,
        packaged_tool_list=packaged_tool_list,
    )


def serve(
    run_sdk: Callable[[LcmTools | None], None],
    *,
    tools_cache: ToolsCache | None = None,
    open_tools: Callable[[], LcmTools] | None = None,
    packaged_tool_list: bool = True,
) -> None:
    """Serve the client on this process's stdin/stdout.

    ``run_sdk`` runs the SDK server over stdio until its stdin ends, with the
    tools the front opened early (``open_tools``, used when the tool list is
    known without the SDK) or None; it is called on the main thread with fd 0
    and 1 redirected to the front's pipes, once a request needs the SDK, so
    it may import whatever it needs. The process ends when the client goes
    away or ``run_sdk`` returns or fails.
    """
    client_in = os.fdopen(os.dup(0), "rb")
    client_out = os.fdopen(os.dup(1), "wb")
    to_sdk_r, to_sdk_w = os.pipe()
    from_sdk_r, from_sdk_w = os.pipe()
    os.dup2(to_sdk_r, 0)
    os.dup2(from_sdk_w, 1)
    os.close(to_sdk_r)
    os.close(from_sdk_w)
    front = _Front(client_in, client_out, tools_cache, open_tools, packaged_tool_list)
    parent = os.getppid()
    threads = (
        threading.Thread(
            target=front.client_to_sdk, args=(os.fdopen(to_sdk_w, "wb"),), daemon=True
        ),
        threading.Thread(
            target=front.sdk_to_client, args=(os.fdopen(from_sdk_r, "rb"),), daemon=True
        ),
        threading.Thread(target=_watch_parent, args=(parent,), daemon=True),
    )
    for thread in threads:
        thread.start()
    # The SDK's imports (about a second of CPU) would compete with the front's
    # answers for the GIL and the CPU: they start only when a request needs
    # the SDK (a tool the front does not answer, a method it does not know,
    # a tool list it has not got). A session that only lists the tools and
    # reads never imports it.
    front.sdk_wanted.wait()
    code = 0
    try:
        run_sdk(front.opened_tools())
    except SystemExit as exc:
        code = exc.code if isinstance(exc.code, int) else 1
    except BaseException as exc:  # reported, then the process ends: the client sees it go
        print(f"lcm mcp: {type(exc).__name__}: {exc}", file=sys.stderr)
        code = 1
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)
