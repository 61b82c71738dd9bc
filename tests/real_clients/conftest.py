"""Fixtures for the tests that drive the real Claude Code and Codex CLI."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from tests.conftest import stop_processes_started_under
from tests.real_clients.harness import Sandbox, ensure_clients
from tests.real_clients.model_server import ModelServer, Reply, Request, Script


@pytest.fixture(scope="session")
def clients_bin() -> Path:
    return ensure_clients()


class Conversation:
    """The script the model server plays; tests swap it between client runs."""

    def __init__(self) -> None:
        self.script: Script = lambda request: Reply(text="ok")

    def __call__(self, request: Request) -> Reply:
        return self.script(request)


@pytest.fixture
def conversation() -> Conversation:
    return Conversation()


@pytest.fixture
def sandbox(tmp_path: Path, clients_bin: Path, conversation: Conversation) -> Iterator[Sandbox]:
    server = ModelServer(conversation).start()
    box = Sandbox(tmp_path, clients_bin, server)
    box.project.mkdir(parents=True)
    try:
        yield box
    finally:
        server.stop()
        # The clients' hooks ran on the sandbox's hook server (on, as for a
        # user): it must not outlive the test.
        from lossless.hook_server.control import stop

        stop(box.lcm_home)
        # Nor anything else a client started in the sandbox (Codex leaves its
        # app-server running after `codex exec`; a worker may still compact).
        stop_processes_started_under(str(tmp_path))
