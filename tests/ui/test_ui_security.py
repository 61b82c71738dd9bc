"""`lcm ui` serves loopback only, and nothing without this launch's token."""

from __future__ import annotations

import http.client
import json
import os
from pathlib import Path

import pytest
from tests.conftest import SUITE_ENV
from tests.ui.ui_server import UiServer, lcm

from lossless.errors import InputError
from lossless.ui.security import check_bind, is_loopback

PATHS = [
    "",
    "static/app.js",
    "static/style.css",
    "static/index.html",
    "api/store",
    "api/conversations",
    "api/health",
    "api/health/figures",
    "api/conversations/1/context",
    "api/search?q=mix",
]


def _get(
    server: UiServer, path: str, *, host: str | None = None, method: str = "GET"
) -> tuple[int, bytes]:
    connection = http.client.HTTPConnection("127.0.0.1", server.port, timeout=30)
    try:
        headers = {"Host": host} if host else {}
        connection.request(method, path, headers=headers)
        response = connection.getresponse()
        return response.status, response.read()
    finally:
        connection.close()


@pytest.mark.parametrize("path", PATHS)
def test_requests_without_the_token_get_403_and_nothing(ui_server: UiServer, path: str) -> None:
    for attempt in (
        f"/{path}",
        f"/not-the-token/{path}",
        f"/{ui_server.token[:-1]}x/{path}",
        f"/{path}?token={ui_server.token}",
    ):
        status, body = _get(ui_server, attempt)
        assert (status, body) == (403, b""), attempt


@pytest.mark.parametrize("path", PATHS)
def test_requests_with_the_token_are_served(ui_server: UiServer, path: str) -> None:
    status, body = _get(ui_server, f"/{ui_server.token}/{path}")
    assert status == 200, body[:300]
    assert body


def test_a_page_reached_under_another_host_name_gets_403(ui_server: UiServer) -> None:
    # A DNS-rebinding page talks to us under its own name.
    status, body = _get(ui_server, f"/{ui_server.token}/api/store", host="attacker.example:80")
    assert (status, body) == (403, b"")
    status, _ = _get(ui_server, f"/{ui_server.token}/api/store", host=f"localhost:{ui_server.port}")
    assert status == 200


def test_the_ui_is_read_only(ui_server: UiServer) -> None:
    for method in ("POST", "PUT", "DELETE", "PATCH"):
        status, _ = _get(ui_server, f"/{ui_server.token}/api/conversations", method=method)
        assert status == 405, method
        status, _ = _get(ui_server, f"/{ui_server.token}/static/app.js", method=method)
        assert status == 405, method


def test_answers_carry_the_security_headers(ui_server: UiServer) -> None:
    connection = http.client.HTTPConnection("127.0.0.1", ui_server.port, timeout=30)
    connection.request("GET", f"/{ui_server.token}/")
    response = connection.getresponse()
    response.read()
    connection.close()
    assert response.getheader("referrer-policy") == "no-referrer"
    assert "default-src 'self'" in (response.getheader("content-security-policy") or "")
    assert response.getheader("cache-control") == "no-store"


def test_each_launch_has_its_own_token(real_store: Path, ui_server: UiServer) -> None:
    env = {**{k: v for k, v in os.environ.items() if not k.startswith("LCM_")}, **SUITE_ENV}
    other = UiServer(real_store, env=env)
    try:
        assert other.token != ui_server.token
        assert len(other.token) >= 40
        status, body = _get(other, f"/{ui_server.token}/api/store")
        assert (status, body) == (403, b"")
    finally:
        other.stop()


def _listening_addresses(port: int) -> set[str]:
    """Local addresses listening on ``port``, read from the kernel's socket tables."""
    found = set()
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        try:
            lines = Path(table).read_text().splitlines()[1:]
        except OSError:
            continue
        for line in lines:
            fields = line.split()
            address, port_hex = fields[1].split(":")
            if fields[3] == "0A" and int(port_hex, 16) == port:  # 0A: LISTEN
                found.add(address)
    return found


def test_the_server_listens_on_loopback_only(ui_server: UiServer) -> None:
    assert ui_server.url.startswith("http://127.0.0.1:")
    if not Path("/proc/net/tcp").exists():
        pytest.skip("no /proc/net/tcp to read the listening address from")
    assert _listening_addresses(ui_server.port) == {"0100007F"}  # 127.0.0.1


@pytest.mark.parametrize("host", ["0.0.0.0", "::", "192.168.1.10", "10.1.2.3"])
def test_other_binds_are_refused_unless_asked_for(host: str) -> None:
    with pytest.raises(InputError, match="--allow-remote"):
        check_bind(host, allow_remote=False)
    check_bind(host, allow_remote=True)


def test_lcm_ui_refuses_a_public_bind_with_a_clear_error(real_store: Path) -> None:
    done = lcm(real_store, "ui", "--host", "0.0.0.0")
    assert done.returncode == 1
    assert "refusing to serve on '0.0.0.0'" in done.stderr
    assert "Traceback" not in done.stderr
    assert "http://" not in done.stdout


def test_loopback_names() -> None:
    assert is_loopback("127.0.0.1") and is_loopback("::1") and is_loopback("localhost")
    assert not is_loopback("0.0.0.0") and not is_loopback("10.0.0.1")


def test_api_errors_are_json_not_tracebacks(ui_server: UiServer) -> None:
    status, body = _get(ui_server, f"/{ui_server.token}/api/conversations/no-such-thing/context")
    assert status == 404
    assert "no conversation" in json.loads(body)["error"]
    status, body = _get(ui_server, f"/{ui_server.token}/api/search?q=(&mode=regex")
    assert status == 400
    assert json.loads(body)["error"]
    status, body = _get(ui_server, f"/{ui_server.token}/api/conversations?limit=abc")
    assert status == 400 and "whole number" in json.loads(body)["error"]


def test_a_port_in_use_is_a_clear_error(real_store: Path) -> None:
    import socket

    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen(1)
        done = lcm(real_store, "ui", "--port", str(taken.getsockname()[1]))
    assert done.returncode == 1
    assert "cannot listen on 127.0.0.1:" in done.stderr
    assert "Traceback" not in done.stderr


def test_lcm_ui_without_the_extra_says_how_to_get_it(tmp_path: Path) -> None:
    # A Python that cannot import starlette: the command names the extra.
    blocker = tmp_path / "block"
    blocker.mkdir()
    (blocker / "starlette.py").write_text("raise ImportError('starlette is not installed')\n")
    env = {**{k: v for k, v in os.environ.items() if not k.startswith("LCM_")}, **SUITE_ENV}
    env["PYTHONPATH"] = str(blocker)
    done = lcm(tmp_path / "home", "ui", env=env)
    assert done.returncode == 1
    assert "pip install 'lossless-context[ui]'" in done.stderr
