"""The raw WebSocket client the WebSocket checks rely on (conformance/client/ws.py), against a scripted peer."""

from __future__ import annotations

import socket
import threading

import pytest

from gatecheck.conformance.client.ws import (
    EOF,
    OP_BINARY,
    OP_CLOSE,
    OP_PING,
    OP_TEXT,
    TIMEOUT,
    WSConnection,
    accept_for,
    close_payload,
    encode_frame,
    handshake_request,
    parse_close,
)


class Peer:
    """A one-connection loopback server that sends ``replies`` (bytes, or None = close) and records input."""

    def __init__(self, *replies) -> None:
        self.listener = socket.socket()
        self.listener.bind(("127.0.0.1", 0))
        self.listener.listen(1)
        self.address = self.listener.getsockname()
        self.received = b""
        self.replies = replies
        self.thread = threading.Thread(target=self._serve, daemon=True)
        self.thread.start()

    def _serve(self) -> None:
        conn, _ = self.listener.accept()
        conn.settimeout(2.0)
        try:
            self.received += conn.recv(65536)
            for reply in self.replies:
                if reply is None:
                    break
                conn.sendall(reply)
            else:
                try:
                    while True:
                        chunk = conn.recv(65536)
                        if not chunk:
                            break
                        self.received += chunk
                except OSError:
                    pass
        finally:
            conn.close()
            self.listener.close()


def _server_frame(opcode: int, payload: bytes, **kw) -> bytes:
    return encode_frame(opcode, payload, mask=False, **kw)


_101 = b"HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\r\n"


def test_accept_matches_the_rfc_sample():
    assert accept_for("dGhlIHNhbXBsZSBub25jZQ==") == "s3pPLMBiTxaQ9kYGzzhZRbK+xOo="


def test_handshake_request_omits_what_is_none_and_keeps_extra_headers_in_order():
    data, key = handshake_request(
        "/ws", "h:1", key=None, version=None, protocols=["a", "b"], headers=[("X-One", "1"), ("X-One", "2")]
    )
    assert key is None and b"Sec-WebSocket-Key" not in data and b"Sec-WebSocket-Version" not in data
    assert b"Sec-WebSocket-Protocol: a, b\r\nX-One: 1\r\nX-One: 2\r\n\r\n" in data
    _, fresh = handshake_request("/ws", "h:1")
    assert len(fresh) == 24


@pytest.mark.parametrize("size", [0, 125, 126, 65535, 65536])
def test_frames_round_trip_with_the_minimal_length_and_mask(size):
    payload = bytes(range(256)) * (size // 256) + bytes(size % 256)
    peer = Peer(_101 + _server_frame(OP_BINARY, payload))
    with WSConnection(peer.address, 2.0) as conn:
        assert conn.open(b"GET / HTTP/1.1\r\n\r\n", None).status == 101
        frame = conn.read_frame()
    assert frame.opcode == OP_BINARY and frame.payload == payload and frame.minimal_length() and not frame.masked
    # the client's own frames are masked and decode back (read through the same parser)
    conn2 = WSConnection.__new__(WSConnection)
    conn2.buffer = encode_frame(OP_TEXT, payload, mask_key=b"\x01\x02\x03\x04")
    parsed = conn2._parse_frame()
    assert parsed.masked and parsed.payload == payload and parsed.minimal_length()


def test_non_minimal_length_and_masked_server_frames_are_visible():
    wire = bytes([0x81, 126, 0, 5]) + b"hello" + encode_frame(OP_TEXT, b"x", mask=True)
    peer = Peer(_101 + wire)
    with WSConnection(peer.address, 2.0) as conn:
        conn.open(b"GET / HTTP/1.1\r\n\r\n", None)
        first, second = conn.read_frame(), conn.read_frame()
    assert first.payload == b"hello" and not first.minimal_length()
    assert second.masked


def test_frames_in_the_same_packet_as_the_101_are_kept():
    peer = Peer(_101 + _server_frame(OP_TEXT, b"hi") + _server_frame(OP_CLOSE, close_payload(1000, "bye")))
    with WSConnection(peer.address, 2.0) as conn:
        conn.open(b"GET / HTTP/1.1\r\n\r\n", None)
        frames, close, end = conn.read_frames_until_close()
    assert [f.payload for f in frames] == [b"hi"] and end == "close"
    assert close.close_code == 1000 and close.close_reason == b"bye"


def test_close_delimited_refusal_is_a_response():
    peer = Peer(b"HTTP/1.1 403 Access denied\r\n\r\n", None)
    with WSConnection(peer.address, 2.0) as conn:
        hs = conn.open(b"GET / HTTP/1.1\r\n\r\n", None)
    assert hs.status == 403 and hs.closed


def test_silence_is_a_timeout_and_a_close_is_eof():
    peer = Peer(_101)
    with WSConnection(peer.address, 0.3) as conn:
        conn.open(b"GET / HTTP/1.1\r\n\r\n", None)
        assert conn.read_frame(0.2) == TIMEOUT
    peer = Peer(_101, None)
    with WSConnection(peer.address, 1.0) as conn:
        conn.open(b"GET / HTTP/1.1\r\n\r\n", None)
        assert conn.read_frame() == EOF and conn.wait_closed(0.1)


def test_read_message_joins_fragments_and_sets_controls_aside():
    wire = _server_frame(OP_TEXT, b"frag", fin=False) + _server_frame(OP_PING, b"p") + _server_frame(0, b"ment")
    peer = Peer(_101 + wire)
    with WSConnection(peer.address, 2.0) as conn:
        conn.open(b"GET / HTTP/1.1\r\n\r\n", None)
        assert conn.read_message() == (OP_TEXT, b"fragment")
    assert [f.opcode for f in conn.controls] == [OP_PING]


def test_close_payload_parsing():
    assert parse_close(b"") == (None, b"")
    assert parse_close(b"\x03") == (-1, b"\x03")
    assert parse_close(close_payload(4999, "é")) == (4999, "é".encode())


def test_wss_speaks_the_same_protocol_over_tls():
    """connect(..., tls=True): the handshake and frames go over TLS with the suite's test certificate."""
    import ssl

    from gatecheck import fixtures
    from gatecheck.conformance.client.ws import connect

    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ctx.load_cert_chain(fixtures.TLS_CERT, fixtures.TLS_KEY)
    listener = socket.create_server(("127.0.0.1", 0))

    def serve():
        raw, _ = listener.accept()
        raw.settimeout(3)
        with ctx.wrap_socket(raw, server_side=True) as conn:
            conn.recv(65536)
            conn.sendall(_101 + _server_frame(OP_TEXT, b"over tls"))
            conn.recv(65536)

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    with listener, connect(listener.getsockname(), "/ws", "127.0.0.1", timeout=3, tls=True) as conn:
        assert conn.handshake.status == 101
        assert conn.info is not None and conn.info.version.startswith("TLS"), conn.info  # opened by client.connect
        assert conn.read_message() == (OP_TEXT, b"over tls")
    thread.join(3)


def test_malformed_handshake_response_fails_showing_the_bytes():
    peer = Peer(b"HTTP/1.1 200 OK\r\nthis is not a field line\r\n\r\n")
    with WSConnection(peer.address, 2.0) as conn:
        with pytest.raises(AssertionError, match="this is not a field line"):
            conn.open(b"GET / HTTP/1.1\r\n\r\n", None)
