"""conformance/app/view.py and the clients under it, against a real server serving the fixture app.

One Granian ASGI server on TLS (``tls=on``, the suite's test certificate) carries every exchange here, so the one
``connect(..., tls=True)`` is exercised by each client: HTTP/1.1 (``Connection``), HTTP/2 by ALPN (``H2Client``)
and WebSocket (``wss``: the suite's raw client and websockets), and ``run_script`` over HTTP/1 and HTTP/2 reads
back what the app logged.
"""

from __future__ import annotations

import ssl

import pytest

from gatecheck.conformance.app import (
    asgi_scope,
    decode_probe,
    response_script,
    run_script,
    script_target,
    ws_accepted,
    ws_open,
    ws_script,
    ws_steps,
)
from gatecheck.conformance.app.started import StartedServer
from gatecheck.conformance.client.h2 import H2Client
from gatecheck.conformance.client.http1 import Connection, build_request
from gatecheck.conformance.client.interop import ws_client, ws_recv
from gatecheck.conformance.client.ws import OP_TEXT
from gatecheck.conformance.plugin.targets import targets_from_options


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    (target,) = targets_from_options(["granian:asgi?tls=on"], None, None, None, None)
    root = tmp_path_factory.mktemp("app")
    started = StartedServer(
        target.target, target.capabilities, event_dir=root / "events", log_dir=root / "log", work_dir=root
    )
    (root / "events").mkdir()
    (root / "log").mkdir()
    try:
        started.start(ready_timeout=30.0)
        yield started
    finally:
        started.stop()


def test_http1_over_tls_reads_the_probe_and_says_what_was_negotiated(server):
    with Connection(server.address, 5.0, tls=True) as conn:
        conn.send(build_request("GET", "/probe", host=server.authority))
        resp = conn.read_responses(1, methods=["GET"]).first
    assert conn.info is not None and conn.info.alpn == "http/1.1", conn.info
    assert resp.status == 200 and decode_probe(resp.body)["interface"] == "asgi"


def test_h2_over_tls_negotiates_h2_and_sends_scheme_https(server):
    with H2Client(server.address, authority=server.authority, tls=True) as client:
        resp = client.response(client.request("GET", "/probe"))
        assert client.info.alpn == "h2", client.info
    assert resp.status == 200, resp.describe()
    assert asgi_scope(decode_probe(resp.body))["scheme"] == "https"


@pytest.mark.parametrize("over", ["http1", "h2"])
def test_run_script_sends_the_token_and_reads_the_steps(server, over):
    steps = response_script("asgi", 200, [["x-ran", "yes"]], ["a", "b"])
    run = run_script(server, steps, over=over, tls=True)
    if over == "h2":
        assert run.exchange.status == 200 and run.exchange.body == b"ab", run.exchange.describe()
    else:
        assert run.responses[0].status == 200 and run.responses[0].body == b"ab"
    assert all(run.step(i) and run.step(i)["ok"] for i in range(len(steps))), run.events


def test_wss_echo_and_a_websocket_script(server):
    conn = ws_accepted(ws_open(server, "/ws_echo", tls=True))
    try:
        assert conn.info is not None and conn.info.version.startswith("TLS")
        assert conn.send_text("over wss")
        assert conn.read_message() == (OP_TEXT, b"over wss")
    finally:
        conn.close()
    conn, token = ws_script(server, [["receive"], ["accept"], ["receive"], ["close", 1000]], tls=True)
    with ws_accepted(conn):
        conn.send_text("hi")
        conn.read_frames_until_close()
    assert ws_steps(server, token)[2]["result"].get("text") == "hi"


def test_a_script_target_is_json_in_the_query():
    assert script_target([["start", 200]]) == "/script?s=%5B%5B%22start%22%2C200%5D%5D"


def test_the_websockets_client_over_wss_takes_turns_on_a_socket_that_never_blocks(server):
    """websockets reads a wss connection on its own thread while the caller's thread writes; OpenSSL's
    connection object is not safe for that, so ws_client's TLS socket runs each call under one lock, on a
    socket that never blocks, and waits outside the lock (interop rule 3): messages of one TLS record and of
    many go both ways whole."""
    from gatecheck.conformance.client.interop import _SerializedSSLSocket

    with ws_client(server, "/ws_echo") as ws:
        assert isinstance(ws.socket, _SerializedSSLSocket)
        assert ssl.SSLSocket.gettimeout(ws.socket) == 0.0 and ws.socket.gettimeout() is None
        for size in (10, 70_000, 1 << 20):
            payload = bytes(range(256)) * (size // 256) + b"x" * (size % 256)
            ws.send(payload)
            assert ws_recv(ws) == payload
