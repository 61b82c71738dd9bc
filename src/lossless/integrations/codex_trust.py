"""Codex's per-hook trust: which of lossless's hooks Codex will run.

Codex runs a hook from ``hooks.json`` only when the user's ``config.toml``
records it as trusted: a ``[hooks.state."<key>"]`` table whose
``trusted_hash`` equals the hook's current hash (otherwise ``hooks/list``
reports it ``untrusted`` or ``modified`` and the hook is skipped, silently).

- The key is ``<hooks.json path>:<event in snake_case>:<group index>:<handler index>``.
- The hash is ``sha256:`` + the SHA-256 of a canonical JSON identity: the
  event label, the group's matcher (absent when none) and the one handler,
  normalized (``type``, ``command``, ``timeout`` in seconds, default 600,
  ``async``; ``statusMessage`` when set), with object keys sorted and no
  whitespace.

That is how Codex 0.171 computes it (the real-client tests compare with its
own ``hooks/list``). Because a later Codex may change the recipe, the
installer also asks the installed Codex itself (``codex app-server``,
``hooks/list``) when it can, and records what Codex reports.
"""

from __future__ import annotations

import hashlib
import json
import re
import shutil
import subprocess
import time
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from lossless.integrations.commands import is_lcm_hook

DEFAULT_TIMEOUT_S = 600
APP_SERVER_TIMEOUT_S = 15.0


def event_label(event: str) -> str:
    """``SessionStart`` -> ``session_start`` (Codex's key label for an event)."""
    return re.sub(r"(?<!^)(?=[A-Z])", "_", event).lower()


def hook_key(hooks_file: Path, event: str, group_index: int, handler_index: int) -> str:
    return f"{hooks_file}:{event_label(event)}:{group_index}:{handler_index}"


def hook_hash(event: str, matcher: str | None, handler: Mapping[str, Any]) -> str:
    timeout = handler.get("timeout")
    normalized: dict[str, Any] = {
        "type": "command",
        "command": handler.get("command"),
        "timeout": max(1, int(timeout)) if isinstance(timeout, int) else DEFAULT_TIMEOUT_S,
        "async": bool(handler.get("async", False)),
    }
    if isinstance(handler.get("statusMessage"), str):
        normalized["statusMessage"] = handler["statusMessage"]
    identity: dict[str, Any] = {"event_name": event_label(event), "hooks": [normalized]}
    if matcher is not None:
        identity["matcher"] = matcher
    canonical = json.dumps(identity, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return "sha256:" + hashlib.sha256(canonical.encode("utf-8")).hexdigest()


@dataclass(frozen=True, slots=True)
class HookTrust:
    """One lossless hook in a hooks.json, with the trust Codex needs for it."""

    key: str
    event: str
    command: str
    current_hash: str


def lcm_hooks(hooks_doc: Mapping[str, Any], hooks_file: Path) -> list[HookTrust]:
    """Every lossless handler in a hooks.json document, with its key and hash."""
    found: list[HookTrust] = []
    hooks = hooks_doc.get("hooks")
    if not isinstance(hooks, Mapping):
        return found
    for event, groups in hooks.items():
        if not isinstance(groups, list):
            continue
        for group_index, group in enumerate(groups):
            handlers = group.get("hooks") if isinstance(group, Mapping) else None
            if not isinstance(handlers, list):
                continue
            matcher = group.get("matcher")
            for handler_index, handler in enumerate(handlers):
                if not isinstance(handler, Mapping) or not is_lcm_hook(handler.get("command")):
                    continue
                found.append(
                    HookTrust(
                        hook_key(hooks_file, str(event), group_index, handler_index),
                        str(event),
                        str(handler["command"]),
                        hook_hash(
                            str(event), matcher if isinstance(matcher, str) else None, handler
                        ),
                    )
                )
    return found


def trust_states(config_doc: Mapping[str, Any]) -> dict[str, str]:
    """key -> trusted_hash recorded in a parsed config.toml."""
    hooks = config_doc.get("hooks")
    state = hooks.get("state") if isinstance(hooks, Mapping) else None
    if not isinstance(state, Mapping):
        return {}
    return {
        str(key).strip(): str(value["trusted_hash"])
        for key, value in state.items()
        if isinstance(value, Mapping) and isinstance(value.get("trusted_hash"), str)
    }


def find_codex() -> str | None:
    return shutil.which("codex")


@dataclass(frozen=True, slots=True)
class ListedHook:
    """A hook as Codex's own ``hooks/list`` reports it."""

    key: str
    command: str
    current_hash: str
    trust_status: str


def codex_hooks_list(
    codex: str, cwd: Path, env: Mapping[str, str] | None = None
) -> list[ListedHook] | str:
    """Ask Codex (``codex app-server``, JSON-RPC over stdio) which hooks it sees for ``cwd``.

    Returns the hooks, or what went wrong as a sentence (Codex missing, too old
    to have ``hooks/list``, or not answering in time).
    """
    import os
    import queue
    import threading

    try:
        proc = subprocess.Popen(
            [codex, "app-server"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            text=True,
            cwd=cwd if cwd.is_dir() else None,
            env={**os.environ, **(env or {})},
        )
    except OSError as exc:
        return f"{codex} cannot run: {exc}"
    lines: queue.Queue[str | None] = queue.Queue()

    def pump() -> None:
        assert proc.stdout is not None
        for line in proc.stdout:
            lines.put(line)
        lines.put(None)

    threading.Thread(target=pump, daemon=True).start()
    deadline = time.monotonic() + APP_SERVER_TIMEOUT_S

    def call(request_id: int, method: str, params: dict[str, Any]) -> dict[str, Any] | str:
        assert proc.stdin is not None
        proc.stdin.write(json.dumps({"id": request_id, "method": method, "params": params}) + "\n")
        proc.stdin.flush()
        while True:
            try:
                line = lines.get(timeout=max(0.01, deadline - time.monotonic()))
            except queue.Empty:
                return f"codex app-server did not answer {method} in {APP_SERVER_TIMEOUT_S:g}s"
            if line is None:
                return f"codex app-server exited before answering {method}"
            try:
                message = json.loads(line)
            except ValueError:
                continue
            if isinstance(message, dict) and message.get("id") == request_id:
                if "error" in message:
                    return f"codex app-server refused {method}: {message['error']}"
                result = message.get("result")
                return result if isinstance(result, dict) else {}

    try:
        started = call(1, "initialize", {"clientInfo": {"name": "lcm", "version": "1"}})
        if isinstance(started, str):
            return started
        assert proc.stdin is not None
        proc.stdin.write(json.dumps({"method": "initialized"}) + "\n")
        proc.stdin.flush()
        listed = call(2, "hooks/list", {"cwds": [str(cwd)]})
        if isinstance(listed, str):
            return listed
    except OSError as exc:
        return f"codex app-server failed: {exc}"
    finally:
        proc.kill()
        proc.wait()
    hooks: list[ListedHook] = []
    for entry in listed.get("data") or []:
        for hook in entry.get("hooks") or [] if isinstance(entry, dict) else []:
            if isinstance(hook, dict) and isinstance(hook.get("key"), str):
                hooks.append(
                    ListedHook(
                        hook["key"],
                        str(hook.get("command") or ""),
                        str(hook.get("currentHash") or ""),
                        str(hook.get("trustStatus") or ""),
                    )
                )
    return hooks
