"""``lcm grep``, ``describe`` and ``status`` without click, for the arguments they are usually given.

Importing click (and what only click imports: uuid, platform, gettext,
locale) and building the commands of ``cli/history.py`` is about a seventh of
a ``lcm grep``, ``describe`` or ``status`` on a large store, more than grep's search.
``parse`` reads the common forms: ``[--home DIR] COMMAND [PATTERN]`` with the
command's options as ``--name value``, ``--name=value`` or ``-n value``, each
at most once, with values click would accept unchanged. Anything else (help,
a value click would reject or convert, a short option run together with its
value, ``--``, a control character, an unknown option, a shell-completion
request, a stream that is not UTF-8) is left to click, which answers it as it
always has. What the command then does and prints is the click command's own
code (``cli/grep_command.py``, ``cli/describe_command.py``,
``cli/status_command.py``), printing through the same functions. A ``job_…``
ref of describe is left to click (map jobs are described by ``cli/map.py``).

``OPTIONS`` restates the click commands' options and their defaults;
``tests/cli/test_fast_path.py`` holds it to them.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from lossless.cli.state import CliState

# Per command: option -> (parameter, kind): "flag", "text", "count" (an
# integer >= 1), "index" (an integer >= 0), "seconds" (a number >= 0), or the
# values a choice allows.
OPTIONS: dict[str, dict[str, tuple[str, str | tuple[str, ...]]]] = {
    "grep": {
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
    },
    "describe": {
        "--offset": ("offset", "index"),
        "--chars": ("chars", "count"),
        "--json": ("as_json", "flag"),
    },
    "status": {"--sizes": ("sizes", "flag"), "--json": ("as_json", "flag")},
}
# Per command: what click passes for an option not given, and its argument.
DEFAULTS: dict[str, dict[str, Any]] = {
    "grep": {
        "mode": "regex",
        "scope": "both",
        "conversation": None,
        "session": None,
        "project": None,
        "since": None,
        "limit": 20,
        "time_budget": None,
        "as_json": False,
    },
    "describe": {"offset": None, "chars": None, "as_json": False},
    "status": {"sizes": False, "as_json": False},
}
ARGUMENT: dict[str, str | None] = {"grep": "pattern", "describe": "ref", "status": None}


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
    if kind in ("count", "index"):
        least = 1 if kind == "count" else 0
        return int(value) if value.isascii() and value.isdigit() and int(value) >= least else None
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


def parse(args: list[str]) -> tuple[str, Path | None, dict[str, Any]] | None:
    """(the command, ``--home``, its parameters) for a common ``lcm grep``,
    ``describe`` or ``status``; None for anything click should read."""
    home: Path | None = None
    if args[:1] == ["--home"] and len(args) >= 2:
        home, args = _home(args[1]), args[2:]
        if home is None:
            return None
    elif args[:1] and args[0].startswith("--home="):
        home, args = _home(args[0].split("=", 1)[1]), args[1:]
        if home is None:
            return None
    if not args or args[0] not in OPTIONS:
        return None
    command, options, argument = args[0], OPTIONS[args[0]], ARGUMENT[args[0]]
    params: dict[str, Any] = {}
    given: str | None = None
    rest = args[1:]
    while rest:
        arg = rest.pop(0)
        if not arg.startswith("-"):
            if argument is None or given is not None or not _plain(arg):
                return None
            given = arg
            continue
        name, inline, value = arg.partition("=")
        if name not in options or (inline and not name.startswith("--")):
            return None
        parameter, kind = options[name]
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
    if argument is not None:
        if given is None:
            return None
        params[argument] = given
    return command, home, {**DEFAULTS[command], **params}


def _utf8(stream: Any) -> bool:
    import codecs

    try:
        return codecs.lookup(getattr(stream, "encoding", None) or "").name == "utf-8"
    except LookupError:
        return False


def run(args: list[str]) -> int | None:
    """Run ``lcm ARGS`` if ``parse`` reads it: its exit code; else None (click's turn)."""
    if "_LCM_COMPLETE" in os.environ or not (_utf8(sys.stdout) and _utf8(sys.stderr)):
        return None
    parsed = parse(args)
    if parsed is None:
        return None
    command, home, params = parsed
    if command == "grep":
        return _grep(home, params)
    if command == "describe":
        return _describe(home, params)
    return _status(home, params)


def _grep(home: Path | None, params: dict[str, Any]) -> int | None:
    since: str | None = params.pop("since")
    since_ts: str | None = None
    if since is not None:
        from lossless.timeutil import parse_since

        try:
            since_ts = parse_since(since)
        except ValueError:
            return None  # click says what is wrong with it
    from lossless.cli.grep_command import run_grep
    from lossless.cli.output import print_json

    return _running(
        home,
        lambda state: run_grep(state.engine(), since=since_ts, say=_say, emit=print_json, **params),
    )


def _describe(home: Path | None, params: dict[str, Any]) -> int | None:
    if params["ref"].strip().startswith("job_"):
        return None
    from lossless.cli.describe_command import run_describe
    from lossless.cli.lines import PrintedLines

    ref = params.pop("ref")
    return _running(
        home, lambda state: run_describe(state.engine(), ref, out=PrintedLines(), **params)
    )


def _status(home: Path | None, params: dict[str, Any]) -> int | None:
    from lossless.cli.lines import PrintedLines
    from lossless.cli.status_command import run_status, status_engine

    return _running(
        home, lambda state: run_status(status_engine(state), out=PrintedLines(), **params)
    )


def _running(home: Path | None, work: Callable[[CliState], None]) -> int:
    """``work`` on the command's state, closed after it, its errors answered as
    the click group answers them (``cli.app._Group.invoke``, click's ``main``)."""
    from lossless.cli.state import CliState
    from lossless.errors import LosslessError

    state = CliState(home)
    try:
        try:
            try:
                work(state)
            finally:
                state.close()
        except LosslessError as exc:
            _say(f"lcm: error: {exc}")
            return 1
        except (EOFError, KeyboardInterrupt):
            _say("")  # as click: close the terminal's ^C line, then say so
            _say("Aborted!")
            return 1
    except BrokenPipeError:  # `lcm grep ... | head`
        sys.stderr.close()
    return 0


def _say(line: str) -> None:
    sys.stderr.write(line + "\n")
    sys.stderr.flush()
