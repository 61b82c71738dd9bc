"""Summaries and completions from an external CLI (e.g. ``claude -p``, ``llm``, ``ollama run``).

The whole prompt (system + user) goes to the command's stdin, never its
argv: transcripts can be megabytes, and argv is visible to every local user
in the process list. The command runs in its own process group so a timeout
kills everything it spawned, not just the direct child (otherwise a
grandchild holding stdout open would hang us past the timeout).

The child gets ``LCM_IN_SUMMARIZER=1`` in its environment so hooks installed
by lossless can recognise a summarizer session (``claude -p`` runs hooks too)
and stay out of it instead of recursing.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
from collections.abc import Mapping, Sequence

from lossless.delegation import child_environment
from lossless.summarize.completion import Completion, CompletionRequest
from lossless.summarize.errors import (
    SummarizerFatalError,
    SummarizerRefused,
    SummarizerUnavailable,
)
from lossless.summarize.normalize import clean_output
from lossless.summarize.prompts import build_prompt
from lossless.summarize.protocol import SummaryRequest, SummaryResponse
from lossless.tokens import estimate_tokens

_STDERR_TAIL = 600


class CommandSummarizer:
    """Pipes the prompt to ``argv`` and takes its stdout as the summary."""

    def __init__(
        self,
        argv: Sequence[str],
        *,
        timeout_s: float = 120.0,
        env: Mapping[str, str] | None = None,
        cwd: str | None = None,
        model: str | None = None,
    ) -> None:
        if not argv or not all(isinstance(a, str) and a for a in argv):
            raise ValueError("command must be a non-empty list of non-empty strings")
        self.name = "command"
        self.argv = list(argv)
        self.timeout_s = timeout_s
        self.model = model
        self._env = dict(env) if env is not None else None
        self._cwd = cwd

    def _child_env(self) -> dict[str, str]:
        # Inherit the caller's environment (PATH, the CLI's own login) unless told otherwise.
        base = dict(os.environ) if self._env is None else dict(self._env)
        return child_environment(base)

    def summarize(self, request: SummaryRequest) -> SummaryResponse:
        system, user = build_prompt(request)
        # A CLI takes no output cap; the prompt states the budget.
        done = self.complete(CompletionRequest(system, user, max_output_tokens=1))
        return SummaryResponse(done.text, done.input_tokens, done.output_tokens, done.model)

    def complete(self, request: CompletionRequest) -> Completion:
        """Pipe system and user prompt to the command, as one stdin stream."""
        prompt = f"{request.system}\n\n{request.user}\n"
        timeout_s = min(self.timeout_s, request.timeout_s or self.timeout_s)
        command = self.argv[0]
        try:
            proc = subprocess.Popen(
                self.argv,
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                env=self._child_env(),
                cwd=self._cwd,
                start_new_session=sys.platform != "win32",
            )
        except FileNotFoundError as exc:
            raise SummarizerFatalError(
                f"summarizer command not found: {command!r} (is it installed and on PATH?)"
            ) from exc
        except PermissionError as exc:
            raise SummarizerFatalError(f"summarizer command not executable: {command!r}") from exc
        except OSError as exc:
            raise SummarizerUnavailable(
                f"could not start summarizer command {command!r}: {exc}"
            ) from exc
        with _RUNNING_LOCK:
            _RUNNING.add(proc)
        try:
            out, err = proc.communicate(prompt.encode("utf-8"), timeout=timeout_s)
        except subprocess.TimeoutExpired:
            _kill_tree(proc)
            _reap(proc)
            raise SummarizerUnavailable(
                f"summarizer command {command!r} timed out after {timeout_s:g}s"
            ) from None
        except BaseException:
            _kill_tree(proc)
            _reap(proc)
            raise
        finally:
            with _RUNNING_LOCK:
                _RUNNING.discard(proc)
        stderr = err.decode("utf-8", errors="replace").strip()
        if proc.returncode != 0:
            tail = stderr[-_STDERR_TAIL:] if stderr else "(no stderr)"
            raise SummarizerUnavailable(
                f"summarizer command {command!r} exited with status {proc.returncode}: {tail}"
            )
        text = clean_output(out.decode("utf-8", errors="replace"))
        if not text:
            hint = f"; stderr: {stderr[-_STDERR_TAIL:]}" if stderr else ""
            raise SummarizerRefused(f"summarizer command {command!r} printed nothing{hint}")
        return Completion(
            text=text,
            input_tokens=estimate_tokens(prompt),
            output_tokens=estimate_tokens(text),
            model=self.model,
        )


# Commands running now, so a process that must end at once (an MCP server
# whose client left) can take their process groups with it.
_RUNNING: set[subprocess.Popen[bytes]] = set()
_RUNNING_LOCK = threading.Lock()


def kill_running() -> None:
    """Kill every command still running, with everything it spawned."""
    with _RUNNING_LOCK:
        running = list(_RUNNING)
    for proc in running:
        _kill_tree(proc)


def _kill_tree(proc: subprocess.Popen[bytes]) -> None:
    """Kill the child and everything in its process group (it leads its own group)."""
    if sys.platform == "win32":
        proc.kill()
        return
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        proc.kill()


def _reap(proc: subprocess.Popen[bytes]) -> None:
    """Collect the killed child; a descendant that left the group may keep pipes open."""
    try:
        proc.communicate(timeout=5)
    except subprocess.TimeoutExpired:
        for stream in (proc.stdout, proc.stderr):
            if stream is not None:
                stream.close()
        proc.wait()
