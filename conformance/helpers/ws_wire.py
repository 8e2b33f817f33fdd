"""The raw WebSocket client as test_websocket.py's checks use it: /ws_echo connections shown accepted or
alive, echo round trips that check the server's frames, refused handshakes that must still be HTTP, fragments,
and the protocol violations the checks send (RFC 6455)."""

from __future__ import annotations

from gatecheck.conformance.client.ws import (
    EOF,
    OP_BINARY,
    OP_CLOSE,
    OP_CONT,
    OP_PING,
    OP_TEXT,
    TIMEOUT,
    close_payload,
    connect,
    encode_frame,
)

__all__ = [
    "open_echo",
    "Echo",
    "assert_server_frames",
    "live_echo",
    "round_trip",
    "refused_handshake",
    "send_fragments",
    "frame_bytes",
    "PROTOCOL_ERRORS",
    "after_violation",
]


def open_echo(server, path="/ws_echo", **kw):
    return connect(server.address, path, server.authority, **kw)


class Echo:
    """An accepted /ws_echo connection (the check fails at once if the handshake did not give a 101)."""

    def __init__(self, server, **kw):
        self.conn = open_echo(server, **kw)
        hs = self.conn.handshake
        if hs.status != 101:
            self.conn.close()
            raise AssertionError(f"handshake to /ws_echo answered {hs.status}: {hs.raw[:300]!r}")

    def __enter__(self):
        return self.conn

    def __exit__(self, *exc):
        self.conn.close()


def assert_server_frames(conn, frames):
    for frame in frames:
        assert not frame.masked, f"server frame is masked: {frame!r} [6455 §5.1]"
        assert frame.rsv == 0, f"server frame has RSV bits {frame.rsv} without an extension: {frame!r}"
        assert frame.minimal_length(), f"server frame does not use the minimal length encoding: {frame!r}"


def live_echo(server):
    """An accepted /ws_echo connection whose echo has been seen working (one text round trip)."""
    echo = Echo(server)
    try:
        got = round_trip(echo.conn, OP_TEXT, b"alive")
        assert got == (OP_TEXT, b"alive"), f"/ws_echo answered {got!r} to 'alive'"
    except BaseException:
        echo.conn.close()
        raise
    echo.conn.data_frames.clear()
    return echo


def round_trip(conn, opcode: int, payload: bytes, timeout: float = 10.0):
    assert conn.send_frame(opcode, payload), "the server closed the connection before the message was sent"
    got = conn.read_message(timeout)
    assert got not in (EOF, TIMEOUT), f"no echo of a {len(payload)} B message: {got}"
    assert not hasattr(got, "opcode"), f"server closed instead of echoing: {got!r}"
    assert_server_frames(conn, conn.data_frames)
    return got


def refused_handshake(server, **kw):
    """The handshake's answer, which must be a well-formed HTTP response: silence, a close without a
    response, or bytes that are not HTTP never show that a handshake was refused (or not switched)."""
    conn = open_echo(server, **kw)
    try:
        hs = conn.handshake
    finally:
        conn.close()
    assert hs.response is not None, (
        f"no HTTP response to the handshake ({'connection closed' if hs.closed else 'silence'}): {hs.raw[:200]!r}"
    )
    return hs


def send_fragments(conn, opcode, parts, between=None):
    for n, part in enumerate(parts):
        first, last = n == 0, n == len(parts) - 1
        assert conn.send_frame(opcode if first else OP_CONT, part, fin=last), "connection closed mid-message"
        if between is not None and not last:
            conn.send_frame(*between)


def frame_bytes(*specs) -> bytes:
    return b"".join(encode_frame(*s[:2], **(s[2] if len(s) > 2 else {})) for s in specs)


PROTOCOL_ERRORS = {
    "rsv1": frame_bytes((OP_TEXT, b"x", {"rsv": 4})),
    "rsv2": frame_bytes((OP_TEXT, b"x", {"rsv": 2})),
    "rsv3": frame_bytes((OP_BINARY, b"x", {"rsv": 1})),
    "rsv-on-ping": frame_bytes((OP_PING, b"x", {"rsv": 4})),
    "opcode-0x3": frame_bytes((0x3, b"x")),
    "opcode-0x7": frame_bytes((0x7, b"x")),
    "opcode-0xB": frame_bytes((0xB, b"x")),
    "opcode-0xF": frame_bytes((0xF, b"x")),
    "ping-126B": frame_bytes((OP_PING, b"p" * 126)),
    "close-126B": frame_bytes((OP_CLOSE, close_payload(1000, "r" * 124))),
    "fragmented-ping": frame_bytes((OP_PING, b"pi", {"fin": False}), (OP_CONT, b"ng")),
    "continuation-without-start": frame_bytes((OP_CONT, b"orphan")),
    "new-message-inside-fragmented": frame_bytes((OP_TEXT, b"first", {"fin": False}), (OP_TEXT, b"second")),
    "close-1-byte": frame_bytes((OP_CLOSE, b"\x03")),
}


def after_violation(conn, data: bytes, timeout: float = 5.0):
    """Send ``data`` on a connection shown alive (:func:`live_echo`); return (data frames echoed, close
    frame or None, TCP closed?)."""
    conn.try_send(data)
    frames, close, _ = conn.read_frames_until_close(timeout)
    closed = conn.wait_closed(timeout)
    return [f for f in frames if f.opcode in (OP_TEXT, OP_BINARY)], close, closed
