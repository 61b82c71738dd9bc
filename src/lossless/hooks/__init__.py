"""Hook handlers for Claude Code and Codex: ``lcm hook <Event>`` with the event JSON on stdin.

What each event does:

- ``UserPromptSubmit``, ``PostToolUse``, ``PostToolUseFailure``, ``Stop``, ``SubagentStop``,
  ``PostCompact``: ingest what the transcript (``transcript_path``) gained since
  the last hook, and the sub-agent transcripts under ``<session>/subagents/``.
  The trailing assistant message is held back (``final=False``): it may still
  gain blocks, and the next hook stores it whole.
- ``PreCompact``: the same ingest, before the client rewrites its context.
  Never blocks the client's compaction (it only reads and stores).
- ``SessionEnd``: a final ingest (nothing held back) and a ``sweep`` compaction
  request.
- ``SessionStart`` with ``source`` ``compact`` or ``resume``: ingest, then print
  the session's summary DAG (top summaries with ids and time ranges, and how
  to expand them) as ``hookSpecificOutput.additionalContext``.

Sessions lossless starts itself (a ``claude -p`` summarizer or sub-agent,
marked by ``LCM_IN_SUMMARIZER``) are not captured.

After an ingest, if the conversation has more raw tokens outside its fresh tail
than one leaf chunk, a compaction request is recorded and the background
worker is started detached (``lossless.worker``). Compaction never runs here.

On PostgreSQL a hook that cannot use the server still captures, into a local
outbox delivered later (``lossless.offline_capture``).

A hook never breaks the user's session: every failure is caught, written to
``$LCM_HOME/logs/hooks.log`` with a traceback, and the process exits 0 with
nothing on stdout. Imports are kept lazy so start-up stays short: every
module here has a stdlib-only top level (a test guards what a hook loads).

The package's rooms: ``dispatch`` (entry point and routing), ``events``
(names, payload, outcome), ``ingest`` (which transcripts, inline or in the
background), ``recall`` (memories around a turn), ``context`` (the
SessionStart view), ``log`` (``hooks.log``).
"""

from __future__ import annotations

from lossless.hooks.context import MAX_CONTEXT_CHARS, session_context
from lossless.hooks.dispatch import handle, main
from lossless.hooks.events import EVENTS, HookInputError, HookOutcome, canonical_event
from lossless.hooks.ingest import DEFAULT_INLINE_BYTES, transcript_paths

__all__ = [
    "DEFAULT_INLINE_BYTES",
    "EVENTS",
    "MAX_CONTEXT_CHARS",
    "HookInputError",
    "HookOutcome",
    "canonical_event",
    "handle",
    "main",
    "session_context",
    "transcript_paths",
]
