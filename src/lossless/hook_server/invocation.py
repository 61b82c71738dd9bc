"""``lcm hook ...`` as arguments, and running one hook in this process.

The client parses the arguments before it asks the server (so this module is
as light as the client: nothing imported at its top); the server parses what clients send with the same function and
runs the hook with ``run_hook``, as an inline hook does.
"""

from __future__ import annotations

# Not `typing.TYPE_CHECKING`: every hook imports this module.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import IO

    # home, event, client, inline bytes, background, lock fd
    HookArgs = tuple[str | None, str, str | None, int | None, bool, int | None]


def hook_args(args: list[str]) -> HookArgs | None:
    """Parse ``[--home H] hook EVENT [--client C] [--inline-bytes N] [--background]``.

    (and the hidden ``--lock-fd N`` a hook passes to the background import it
    starts). None for anything else (help, unknown options), which click
    handles.
    """
    home: str | None = None
    if args[:1] == ["--home"] and len(args) >= 3:
        home, args = args[1], args[2:]
    elif args[:1] and args[0].startswith("--home="):
        home, args = args[0].split("=", 1)[1], args[1:]
    if len(args) < 2 or args[0] != "hook" or args[1].startswith("-"):
        return None
    event, rest = args[1], args[2:]
    client: str | None = None
    inline_bytes: int | None = None
    background = False
    lock_fd: int | None = None
    while rest:
        option = rest.pop(0)
        if option == "--client" and rest:
            client = rest.pop(0)
        elif option == "--inline-bytes" and rest and rest[0].isdigit():
            inline_bytes = int(rest.pop(0))
        elif option == "--background":
            background = True
        elif option == "--lock-fd" and rest and rest[0].isdigit():
            lock_fd = int(rest.pop(0))
        else:
            return None
    return home, event, client, inline_bytes, background, lock_fd


def run_hook(
    parsed: HookArgs,
    *,
    stdin: bytes | None = None,
    stdout: IO[str] | None = None,
    start_server: bool = False,
    note: str = "",
) -> int:
    """Run the parsed hook in this process (inline, or inside the hook server)."""
    import io
    from pathlib import Path

    from lossless import hooks
    from lossless.hook_server.control import start_detached

    home, event, client, inline_bytes, background, lock_fd = parsed
    return hooks.main(
        hooks.canonical_event(event),
        home=Path(home) if home else None,
        client=client,
        stdin=None if stdin is None else io.BytesIO(stdin),
        stdout=stdout,
        inline_bytes=hooks.DEFAULT_INLINE_BYTES if inline_bytes is None else inline_bytes,
        background=background,
        lock_fd=lock_fd,
        start_server=start_detached if start_server else None,
        note=note,
    )
