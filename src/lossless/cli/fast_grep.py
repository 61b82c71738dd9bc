"""``lcm grep`` without click, for the arguments it is usually given.

Importing click (and what only click imports: uuid, platform, gettext,
locale) and building the commands of ``cli/history.py`` is about an eighth
of a ``lcm grep`` on a large store, more than its search. ``parse`` reads the
common forms: ``[--home DIR] grep PATTERN`` with the command's options as
``--name value``, ``--name=value`` or ``-n value``, each at most once, with
values click would accept unchanged. Anything else (help, a value click would
reject or convert, a short option run together with its value, ``--``, a
control character, an unknown option, a shell-completion request, a stream
that is not UTF-8) is left to click, which answers it as it always has. The
search and its printing are ``cli/grep_command.py``'s, as under click.

``OPTIONS`` and ``DEFAULTS`` restate the click command's options;
``tests/cli/test_fast_grep.py`` holds them to it.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any

# Option -> (parameter, kind): "flag", "text", "count" (an integer >= 1),
# "seconds" (a number >= 0), or the tuple of the values a choice allows.
OPTIONS: dict[str, tuple[str, str | tuple[str, ...]]] = {
    "--mode": ("mode", ("regex", "full_text")),
    "--scope": ("scope", ("messages", "summaries", "both")),
    "--conversation": ("conversation", "text"),
    "-c": ("conversation", "text"),
    "--session": ("session", "text"),
    "--project": ("project", "text"),
    "--since": ("since", "text"),
    "--limit": ("limit", "count"),
    "-n": ("limit", "count"),
    "--time-budget": ("time_budget", "seconds"),
    "--json": ("as_json", "flag"),
}
DEFAULTS: dict[str, Any] = {
    "mode": "regex",
    "scope": "both",
    "conversation": None,
    "session": None,
    "project": None,
    "since": None,
    "limit": 20,
    "time_budget": None,
    "as_json": False,
}


def _plain(text: str) -> bool:
    """No control characters (click's echo would strip terminal codes) and no
    leading dash (click would read an option there)."""
    return (
        bool(text) and not text.startswith("-") and all(ch >= " " and ch != "\x7f" for ch in text)
    )


def _number(text: str) -> bool:
    """Digits with at most one point inside: what float() reads as written."""
    whole, _, fraction = text.partition(".")
    return whole.isdigit() and (not fraction or fraction.isdigit())


def _convert(kind: str | tuple[str, ...], value: str) -> Any:
    """The value click would pass for ``value``, or None where click should judge it."""
    if isinstance(kind, tuple):
        return value if value in kind else None
    if kind == "count":
        return int(value) if value.isascii() and value.isdigit() and int(value) >= 1 else None
    if kind == "seconds":
        return float(value) if value.isascii() and _number(value) else None
    return value


def _home(value: str) -> Path | None:
    """``--home``'s folder as click's ``Path(file_okay=False)`` takes it, or None
    where click would refuse it (a file, an unreadable folder)."""
    if not _plain(value):
        return None
    if os.path.exists(value) and (not os.path.isdir(value) or not os.access(value, os.R_OK)):
        return None
    return Path(value)


def parse(args: list[str]) -> tuple[Path | None, dict[str, Any]] | None:
    """(``--home``, the grep command's parameters) for a common ``lcm grep``;
    None for anything click should read."""
    home: Path | None = None
    if args[:1] == ["--home"] and len(args) >= 2:
        home, args = _home(args[1]), args[2:]
        if home is None:
            return None
    elif args[:1] and args[0].startswith("--home="):
        home, args = _home(args[0].split("=", 1)[1]), args[1:]
        if home is None:
            return None
    if args[:1] != ["grep"]:
        return None
    params: dict[str, Any] = {}
    pattern: str | None = None
    rest = args[1:]
    while rest:
        arg = rest.pop(0)
        if not arg.startswith("-"):
            if pattern is not None or not _plain(arg):
                return None
            pattern = arg
            continue
        name, inline, value = arg.partition("=")
        if name not in OPTIONS or (inline and not name.startswith("--")):
            return None
        parameter, kind = OPTIONS[name]
        if parameter in params:
            return None  # click keeps the last; leave repeats to it
        if kind == "flag":
            if inline:
                return None
            params[parameter] = True
            continue
        if not inline:
            if not rest:
                return None
            value = rest.pop(0)
        if not _plain(value):
            return None
        converted = _convert(kind, value)
        if converted is None:
            return None
        params[parameter] = converted
    if pattern is None:
        return None
    return home, {"pattern": pattern, **DEFAULTS, **params}


def _utf8(stream: Any) -> bool:
    import codecs

    try:
        return codecs.lookup(getattr(stream, "encoding", None) or "").name == "utf-8"
    except LookupError:
        return False


def run(args: list[str]) -> int | None:
    """Run ``lcm ARGS`` if it is a grep ``parse`` reads: its exit code; else None."""
    if "_LCM_COMPLETE" in os.environ or not (_utf8(sys.stdout) and _utf8(sys.stderr)):
        return None
    parsed = parse(args)
    if parsed is None:
        return None
    home, params = parsed
    since: str | None = params.pop("since")
    since_ts: str | None = None
    if since is not None:
        from lossless.timeutil import parse_since

        try:
            since_ts = parse_since(since)
        except ValueError:
            return None  # click says what is wrong with it
    from lossless.cli.grep_command import run_grep
    from lossless.cli.state import CliState
    from lossless.errors import LosslessError

    state = CliState(home)
    try:
        try:
            engine = state.engine()
            run_grep(engine, since=since_ts, say=_say, emit=_emit, **params)
        finally:
            state.close()
    except LosslessError as exc:
        _say(f"lcm: error: {exc}")
        return 1
    except BrokenPipeError:  # `lcm grep ... | head`
        sys.stderr.close()
        return 0
    except (EOFError, KeyboardInterrupt):
        _say("")  # as click: close the terminal's ^C line, then say so
        _say("Aborted!")
        return 1
    return 0


def _say(line: str) -> None:
    sys.stderr.write(line + "\n")
    sys.stderr.flush()


def _emit(value: Any) -> None:
    """One JSON document on stdout, as ``cli.app.emit_json`` prints it."""
    import json

    from lossless.jsonable import to_jsonable

    sys.stdout.write(json.dumps(to_jsonable(value), ensure_ascii=False, indent=2) + "\n")
    sys.stdout.flush()
