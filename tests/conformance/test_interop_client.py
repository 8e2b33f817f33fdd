"""The field's clients as the interop checks hold them (conformance/client/interop.py), against the hostile
server (tests/hostile/server.py) as a real process: an endless body stops at the cap, an endless WebSocket
message at websockets' ``max_size``, and a connection closed without an answer is a failure that shows the
client's exception - never a pass, never a hang."""

from __future__ import annotations

import time
from types import SimpleNamespace

import pytest

from gatecheck import fixtures
from gatecheck.conformance.client import interop
from gatecheck.conformance.client.interop import WS_MAX_SIZE, ClientFailed, fetch, http_client, ws_client, ws_recv
from gatecheck.servers import Target, start_server


@pytest.fixture
def hostile(tmp_path):
    """start(mode) -> a served-target look-alike (url, authority, address) of the hostile server in ``mode``."""
    started = []

    def start(mode: str, *, tls: bool = False):
        cmd = "{python} -m tests.hostile.server --port {port} --mode " + mode
        options = (("cmd", cmd),)
        if tls:
            options = (("cmd", cmd + " --tls-cert {tls_cert} --tls-key {tls_key}"), ("features", "tls"))
        srv = start_server(
            Target("command", "asgi", "h1", options),
            app="x:y",
            log_dir=tmp_path,
            tls=(fixtures.TLS_CERT, fixtures.TLS_KEY),
        )
        started.append(srv)
        return SimpleNamespace(url=srv.url, authority=f"{srv.host}:{srv.port}", address=(srv.host, srv.port))

    yield start
    for srv in started:
        srv.stop(grace=1.0)


def test_an_endless_body_stops_at_the_cap(hostile):
    server = hostile("endless-body")
    began = time.monotonic()
    with http_client(server, http2=False) as client:
        with pytest.raises(AssertionError, match="passed the cap of 100000 B"):
            fetch(client, "GET", "/x", cap=100_000)
    assert time.monotonic() - began < 10


def test_an_endless_websocket_message_stops_at_max_size(hostile):
    server = hostile("ws-endless-message")
    with pytest.raises(AssertionError, match=f"refused the server's frames: PayloadTooBig: .*{WS_MAX_SIZE}"):
        with ws_client(server, "/ws_echo") as ws:
            ws_recv(ws, timeout=3)


def test_a_closed_connection_fails_showing_the_exception(hostile):
    server = hostile("close")
    with http_client(server, http2=False) as client:
        with pytest.raises(ClientFailed, match=r"httpx GET /x raised RemoteProtocolError: "):
            fetch(client, "GET", "/x", cap=10)


def test_a_websocket_handshake_answered_with_a_close_fails_showing_the_exception(hostile):
    server = hostile("close")
    with pytest.raises(ClientFailed, match=r"websockets could not open ws://.*InvalidMessage"):
        with ws_client(server, "/ws_echo"):
            pass


class _StuckClose:
    """A websockets connection look-alike whose close blocks until its socket is shut (or for ever)."""

    def __init__(self, *, wakes: bool, raises: BaseException | None = None):
        import socket
        import threading

        self.socket, self._peer = socket.socketpair()
        self.released = threading.Event()
        self.wakes, self.raises = wakes, raises

    def close(self, code=1000, reason=""):
        if self.raises is not None:
            raise self.raises
        while not self.released.is_set():
            try:
                if self.wakes and self.socket.recv(1) == b"":
                    self.released.set()
            except OSError:
                self.released.set()
            if not self.wakes:
                self.released.wait(0.05)


def test_a_close_stuck_past_every_deadline_is_left_to_end_with_its_socket_shut(monkeypatch):
    from gatecheck.conformance.client import interop

    monkeypatch.setattr(interop, "CLOSE_BOUND", 0.3)
    ws = _StuckClose(wakes=True)
    began = time.monotonic()
    assert interop.ws_close(ws) is False and time.monotonic() - began < 2
    assert ws.released.wait(2)  # the shut socket ended the stuck close
    with pytest.raises(ConnectionResetError):  # what a close that returned raised is the caller's
        interop.ws_close(_StuckClose(wakes=False, raises=ConnectionResetError("gone")))


def test_a_wss_reader_waiting_inside_a_tls_record_ends_when_websockets_closes(hostile, monkeypatch):
    """A record cut short after the 101 leaves websockets' reader thread waiting for the rest of it. With
    the socket as websockets leaves it (blocking), that thread sat in a read that closing the socket does
    not end, and websockets' close, which joins it, never returned. The serialized socket waits in slices
    and ends once the socket is closed: the close returns once websockets' close timeout (TIMEOUT) passed."""
    monkeypatch.setattr(interop, "TIMEOUT", 2.0)
    monkeypatch.setattr(interop, "CLOSE_BOUND", 8.0)
    server = hostile("ws-partial-tls-record", tls=True)
    assert server.url.startswith("https:")
    began = time.monotonic()
    with ws_client(server, "/ws_echo") as ws:
        time.sleep(0.3)  # the reader reaches the cut record
        closed = interop.ws_close(ws)
    assert closed, "websockets' close was still running after CLOSE_BOUND"
    assert time.monotonic() - began < 6


def test_a_check_past_its_deadline_says_where_its_other_threads_were():
    import threading

    from gatecheck.conformance.plugin.interrupts import _other_threads

    gate = threading.Event()
    waiter = threading.Thread(target=gate.wait, name="reader-under-test", daemon=True)
    waiter.start()
    try:
        said = _other_threads()
    finally:
        gate.set()
    assert "reader-under-test at threading.py:" in said and "in wait" in said, said
