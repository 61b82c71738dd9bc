"""Tool calls answered before the MCP SDK has loaded (``lcm mcp``'s first seconds).

Importing the SDK costs about a second of CPU (seconds of wall time on a busy
machine), and a client may call a tool as soon as it has the tool list (which
the front answers from its cache). So the front opens the store in a thread
of its own right after ``initialize`` and answers the read-only tools' calls
itself until the SDK says it is ready; from then on every call is the SDK's.

An early answer is the SDK's answer: the same ``LcmTools`` call, the same
result (``structuredContent``) and text (pydantic's JSON of it, indented),
checked against the SDK by ``tests/test_mcp_early.py``. Anything the front is
not sure to answer the way the SDK would goes to the SDK (it answers when it
has loaded): a tool that delegates or starts a job, arguments that do not
validate against the tool's cached ``inputSchema`` exactly as sent (the SDK
coerces some, and words its own errors), a schema keyword this module does
not know, a tool that fails (the SDK words the error).

``lcm_store`` is the one write answered early (an agent's first memory of a
session otherwise waited the SDK's whole import: 0.6 s, seconds under load).
A write must never run twice, so it is handed to the SDK only when it failed
before anything was stored (``remember`` refuses or redacts before its one
transaction, which a failure rolls back: the SDK's own attempt then fails or
succeeds on its own); once stored, the front answers whatever happens.
"""

from __future__ import annotations

import json
import math
import queue
import threading
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from lossless.mcp_tools import LcmTools

#: The tools answered early: no model call, no job started; all read-only but
#: ``EARLY_WRITES``.
EARLY_TOOLS = ("lcm_grep", "lcm_search", "lcm_describe", "lcm_expand", "lcm_status", "lcm_store")
#: The early tools that write: never handed to the SDK once they have run.
EARLY_WRITES = frozenset({"lcm_store"})
# What those calls import on first use, imported with the store's opening so
# that a first call does not wait for them (nor race the SDK's imports).
_WARM = (
    "lossless.engine.retrieval",
    "lossless.engine.recall",
    "lossless.engine.status",
    "lossless.engine.memory",
    "lossless.timeutil",
)

# The JSON Schema words of the tools' argument schemas that are checked here;
# a schema with any other is left to the SDK.
_KNOWN = {
    "type",
    "properties",
    "required",
    "title",
    "description",
    "default",
    "enum",
    "anyOf",
    "minimum",
    "maximum",
    "exclusiveMinimum",
    "exclusiveMaximum",
    "minLength",
    "maxLength",
    "items",
}


class _Unsure(Exception):
    """The front cannot be sure how the SDK would take these arguments."""


def _check(schema: dict[str, Any], value: Any) -> None:
    if not set(schema) <= _KNOWN:
        raise _Unsure
    if "anyOf" in schema:
        for option in schema["anyOf"]:
            try:
                _check(option, value)
            except _Unsure:
                continue
            return
        raise _Unsure
    kind = schema.get("type")
    if kind == "string":
        # A lone surrogate (JSON allows "\\ud800") is the SDK's to refuse or take.
        ok = isinstance(value, str) and _utf8(value)
    elif kind == "integer":
        ok = isinstance(value, int) and not isinstance(value, bool)
    elif kind == "number":
        # NaN and infinities (Python's JSON reads them) are the SDK's.
        ok = isinstance(value, int | float) and not isinstance(value, bool)
        ok = ok and math.isfinite(value)
    elif kind == "boolean":
        ok = isinstance(value, bool)
    elif kind == "null":
        ok = value is None
    elif kind == "array":
        ok = isinstance(value, list) and isinstance(schema.get("items"), dict)
        if ok:
            for item in value:
                _check(schema["items"], item)
    else:
        ok = False  # objects, no type: the SDK's
    if not ok:
        raise _Unsure
    if "items" in schema and kind != "array":
        raise _Unsure
    if "enum" in schema and value not in schema["enum"]:
        raise _Unsure
    if isinstance(value, str):
        if len(value) < schema.get("minLength", 0) or len(value) > schema.get(
            "maxLength", len(value)
        ):
            raise _Unsure
    elif not isinstance(value, bool | type(None)):
        if "minimum" in schema and value < schema["minimum"]:
            raise _Unsure
        if "maximum" in schema and value > schema["maximum"]:
            raise _Unsure
        if "exclusiveMinimum" in schema and value <= schema["exclusiveMinimum"]:
            raise _Unsure
        if "exclusiveMaximum" in schema and value >= schema["exclusiveMaximum"]:
            raise _Unsure


def _utf8(text: str) -> bool:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def _as_validated(schema: dict[str, Any], value: Any) -> Any:
    """``value`` as the SDK's validation hands it to the tool: pydantic makes a
    whole number given for a ``float`` argument a float (``1`` -> ``1.0``)."""
    if schema.get("type") == "number" and isinstance(value, int):
        return float(value)
    return value


def checked_arguments(schema: dict[str, Any], given: Any) -> dict[str, Any] | None:
    """``given`` with the defaults of ``schema`` filled in, or None when the
    front cannot be sure the SDK would accept them as they are."""
    if not isinstance(given, dict) or schema.get("type") != "object":
        return None
    properties = schema.get("properties", {})
    if not set(schema) <= _KNOWN or not set(given) <= set(properties):
        return None
    if not set(schema.get("required", ())) <= set(given):
        return None
    arguments: dict[str, Any] = {}
    try:
        for name, prop in properties.items():
            if name in given:
                _check(prop, given[name])
                arguments[name] = _as_validated(prop, given[name])
            elif "default" in prop:
                arguments[name] = prop["default"]
            else:
                return None
    except _Unsure:
        return None
    return arguments


def _run(tools: LcmTools, name: str, arguments: dict[str, Any]) -> dict[str, Any]:
    """The ``LcmTools`` call each SDK wrapper of ``mcp_server.build_server`` makes."""
    if name == "lcm_grep":
        return tools.grep(arguments.pop("pattern"), **arguments)
    if name == "lcm_search":
        return tools.search(arguments.pop("query"), **arguments)
    if name == "lcm_describe":
        return tools.describe(arguments.pop("id"), **arguments)
    if name == "lcm_expand":
        depth = arguments.pop("depth")
        return tools.expand(arguments.pop("summary_id"), depth=depth or None, **arguments)
    if name == "lcm_status":
        return tools.status(**arguments)
    if name == "lcm_store":
        return tools.store_memory(arguments.pop("text"), **arguments)
    raise KeyError(name)


class EarlyCalls:
    """Opens the tools in the background; answers early calls while the SDK loads.

    ``open_tools`` opens ``LcmTools`` over the store; ``schemas`` is each
    tool's ``inputSchema`` (from the cached tool list); ``send`` writes one
    line to the client, ``hand_over`` one line to the SDK. ``sdk_ready`` is
    set by the front once the SDK answers: calls are the SDK's from then on.
    """

    def __init__(
        self,
        open_tools: Callable[[], LcmTools],
        schemas: dict[str, dict[str, Any]],
        send: Callable[[bytes], None],
        hand_over: Callable[[bytes], None],
    ) -> None:
        self._open_tools = open_tools
        self.schemas = {name: schemas[name] for name in EARLY_TOOLS if name in schemas}
        self._send = send
        self._hand_over = hand_over
        self._opened = threading.Event()
        self._tools: LcmTools | None = None
        self._to_json: Callable[[Any], str] | None = None
        # Early writes run one at a time in the order they came, as the SDK
        # runs its (synchronous) tools: on one thread of their own.
        self._writes: queue.SimpleQueue[tuple[bytes, str | int, str, dict[str, Any]]] = (
            queue.SimpleQueue()
        )
        self._writer: threading.Thread | None = None
        self.sdk_ready = threading.Event()

    def start(self) -> None:
        threading.Thread(target=self._open, daemon=True, name="lcm-mcp-early").start()

    def _open(self) -> None:
        try:
            import importlib

            from lossless import dataclass_cache, regex_cache

            # What hooks and commands keep: the engine's patterns and records
            # load from it instead of compiling (nothing is written from here).
            regex_cache.install()
            dataclass_cache.install()
            self._tools = self._open_tools()
            for module in _WARM:
                importlib.import_module(module)
            self._to_json = _pydantic_json()
        except Exception:  # the SDK opens the tools itself and reports the problem
            self._tools = None
        finally:
            self._opened.set()

    def tools(self) -> LcmTools | None:
        """The opened tools (waits for the opening), or None when it failed."""
        self._opened.wait()
        return self._tools

    def take(self, line: bytes) -> bool:
        """Start answering the request on ``line`` here; False: it is the SDK's."""
        if self.sdk_ready.is_set() or b'"tools/call"' not in line:
            return False
        try:
            return self._take(line)
        except Exception:  # an odd request or cached schema: the SDK's to answer
            return False

    def _take(self, line: bytes) -> bool:
        try:
            message = json.loads(line)
        except ValueError:
            return False
        if not isinstance(message, dict) or message.get("method") != "tools/call":
            return False
        request_id = message.get("id")
        params = message.get("params")
        if not isinstance(request_id, str | int) or not isinstance(params, dict):
            return False
        if set(params) - {"name", "arguments", "_meta"}:
            return False
        name = params.get("name")
        schema = self.schemas.get(name) if isinstance(name, str) else None
        if schema is None or name is None:
            return False
        arguments = checked_arguments(schema, params.get("arguments", {}))
        if arguments is None:
            return False
        if name in EARLY_WRITES:
            self._writes.put((line, request_id, name, arguments))
            if self._writer is None:
                self._writer = threading.Thread(
                    target=self._write_in_order, daemon=True, name="lcm-mcp-early-writes"
                )
                self._writer.start()
            return True
        threading.Thread(
            target=self._answer, args=(line, request_id, name, arguments), daemon=True
        ).start()
        return True

    def _write_in_order(self) -> None:
        while True:
            self._answer(*self._writes.get())

    def _answer(
        self, line: bytes, request_id: str | int, name: str, arguments: dict[str, Any]
    ) -> None:
        tools = self.tools()
        to_json = self._to_json
        try:
            if tools is None or to_json is None:
                raise LookupError("the tools did not open")
            result = _run(tools, name, arguments)
        except Exception:
            # A tool failure (the SDK words its error) or anything unexpected,
            # before anything was stored: the SDK answers this request, when
            # it has loaded.
            self._hand_over(line)
            return
        try:
            text = to_json(result)
            answer: dict[str, Any] = {
                "jsonrpc": "2.0",
                "id": request_id,
                "result": {
                    "content": [{"text": text, "type": "text"}],
                    "isError": False,
                    "structuredContent": result,
                },
            }
            data = json.dumps(answer, ensure_ascii=False, separators=(",", ":")).encode()
        except Exception as exc:
            if name not in EARLY_WRITES:
                self._hand_over(line)
                return
            # Stored already: handing it over would store it twice. Said as a
            # tool error, the form the SDK gives one.
            answer = {
                "jsonrpc": "2.0",
                "id": request_id,
                "result": {
                    "content": [{"text": f"stored, but the answer failed: {exc}", "type": "text"}],
                    "isError": True,
                },
            }
            data = json.dumps(answer, ensure_ascii=False, separators=(",", ":")).encode()
        self._send(data + b"\n")


def _pydantic_json() -> Callable[[Any], str]:
    """The SDK's text of a tool result: pydantic's JSON, indented by two."""
    import pydantic_core

    def to_json(value: Any) -> str:
        return pydantic_core.to_json(value, fallback=str, indent=2).decode()

    # Its first call sets up its serializer (~2 ms): done here, in the
    # opening thread, not in the client's first call.
    to_json({"warm": [1, 0.5, "x", None]})
    return to_json
