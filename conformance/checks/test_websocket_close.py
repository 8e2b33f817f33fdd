"""The WebSocket closing handshake on the wire (RFC 6455 §5.5.1, §7), through ASGI and RSGI alike.

Client-initiated closes go to ``/ws_echo``; server-initiated ones come from ``/ws_probe`` (one text message,
then the app closes with 1000). The raw client never answers by itself, so each check sees exactly which
frames the server sent, in which order, and whether it closed the TCP connection.

Evidence: before a client-initiated close the connection is shown alive by an echo round trip, so a
dropped connection after the Close is the server's answer to it, not a server that never spoke WebSocket.
"""

from __future__ import annotations

import pytest

from gatecheck.conformance.app import ws_accepted, ws_script, ws_steps
from gatecheck.conformance.client.ws import EOF, OP_BINARY, OP_CLOSE, OP_TEXT, close_payload, connect, encode_frame
from gatecheck.conformance.spec.markers import interfaces, needs, spec
from gatecheck.conformance.spec.observables import observable_names, observable_row
from gatecheck.conformance.spec.results import not_supported

pytestmark = [interfaces("asgi", "rsgi"), needs("websockets")]

_NEVER_ON_WIRE = (1005, 1006, 1015)


def _open(server, path="/ws_echo"):
    conn = connect(server.address, path, server.authority)
    if conn.handshake.status != 101:
        conn.close()
        raise AssertionError(f"handshake to {path} answered {conn.handshake.status}: {conn.handshake.raw[:300]!r}")
    return conn


def _close_exchange(server, payload: bytes):
    """Open /ws_echo, show it alive with an echo, send a Close with ``payload``; return (frames before the reply, reply
    or None, frames after the reply, TCP closed by the server?)."""
    conn = _open(server)
    try:
        assert conn.send_text("alive"), "the server closed the connection right after the 101"
        got = conn.read_message()
        assert got == (OP_TEXT, b"alive"), f"/ws_echo answered {got!r} to 'alive' (the connection is not alive)"
        conn.send_frame(OP_CLOSE, payload)
        before, reply, _ = conn.read_frames_until_close(5.0)
        after = []
        if reply is not None:
            after, _, _ = conn.read_frames_until_close(3.0)
        return before, reply, after, conn.wait_closed(5.0)
    finally:
        conn.close()


_VALID = [1000, 1001, 1002, 1003, 1007, 1008, 1009, 1010, 1011, 3000, 3999, 4000, 4999]


@pytest.mark.parametrize("code", _VALID)
@spec("RFC 6455 §5.5.1", "MUST")
def test_client_close_is_answered_with_close_then_tcp_close(server, code):
    """A client Close with a valid code is answered with a Close frame, and then the server closes the TCP
    connection without waiting for the client."""
    _, reply, after, closed = _close_exchange(server, close_payload(code, "gatecheck"))
    assert reply is not None, f"no Close frame in reply to Close {code}"
    assert reply.close_code not in _NEVER_ON_WIRE, f"reply carries reserved code {reply.close_code}"
    assert not after, f"frames after the server's Close: {after}"
    assert closed, "the server did not close the TCP connection after the closing handshake"


@pytest.mark.parametrize("code", [1000, 3000, 4999])
@spec("RFC 6455 §5.5.1", "POLICY")
def test_close_reply_echoes_the_client_code(server, code):
    """POLICY (RFC 6455 says the reply "typically" echoes; Autobahn 7.7 expects it): the server's Close
    reply carries the client's code, or 1000."""
    _, reply, _, _ = _close_exchange(server, close_payload(code))
    assert reply is not None and reply.close_code in (code, 1000), f"reply to Close {code}: {reply!r}"


@spec("RFC 6455 §5.5.1", "MUST")
def test_client_close_with_utf8_reason_is_answered(server):
    """A Close whose reason is non-ASCII UTF-8 is a valid Close and is answered with a Close."""
    _, reply, _, closed = _close_exchange(server, close_payload(1000, "déjà vu ✓ 𝄞"))
    assert reply is not None and reply.close_code in (None, 1000), f"reply: {reply!r}"
    assert closed


@spec("RFC 6455 §7.4.1", "MUST NOT")
def test_close_without_code_is_answered_without_1005_on_the_wire(server):
    """A Close without a status code is answered with a Close that is empty or carries a real code, never
    1005 (which only names the absence of a code locally)."""
    _, reply, _, closed = _close_exchange(server, b"")
    assert reply is not None, "no Close frame in reply to an empty Close"
    assert reply.close_code not in _NEVER_ON_WIRE, f"reply carries reserved code {reply.close_code}"
    assert closed


_INVALID = [0, 999, 1004, 1005, 1006, 1015, 1016, 1100, 2000, 2999]


@pytest.mark.parametrize("code", _INVALID)
@spec("RFC 6455 §7.4.2", "POLICY")
def test_close_with_reserved_code_fails_the_connection(server, code):
    """POLICY (Autobahn 7.9): a Close carrying a code that must not be sent (0–999, 1004–1006, 1015,
    unassigned 1016–2999) is answered with Close 1002 or a dropped connection, not a normal echo."""
    _, reply, _, closed = _close_exchange(server, close_payload(code))
    assert reply is None or reply.close_code == 1002, f"reply to Close {code}: {reply!r}"
    assert closed


@spec("RFC 6455 §7.1.7", "SHOULD")
def test_close_reason_with_invalid_utf8_fails_the_connection(server):
    """A Close whose reason is not UTF-8 fails the connection: the reply (if any) carries 1007 or 1002."""
    _, reply, _, closed = _close_exchange(server, close_payload(1000, b"bad \xff\xfe reason"))
    assert reply is None or reply.close_code in (1007, 1002), f"reply: {reply!r}"
    assert closed


@spec("RFC 6455 §5.5.1", "MUST NOT")
def test_no_data_frame_follows_the_server_close(server):
    """After the app's message and Close, nothing but the TCP close follows the server's Close frame."""
    conn = _open(server, "/ws_probe")
    try:
        before, close, end = conn.read_frames_until_close(5.0)
        assert close is not None, f"no Close frame from /ws_probe (ended with {end})"
        assert [f.opcode for f in before] == [OP_TEXT], f"frames before Close: {before}"
        conn.send_close(1000)
        after, second, end = conn.read_frames_until_close(3.0)
        assert not after and second is None, f"after the server's Close: {after} {second!r}"
    finally:
        conn.close()


@spec("RFC 6455 §5.5.1", "MUST")
def test_server_closes_tcp_after_server_initiated_handshake(server):
    """When the server started the closing handshake and the client answered, the server closes the TCP
    connection (it SHOULD be the side that does so)."""
    conn = _open(server, "/ws_probe")
    try:
        _, close, _ = conn.read_frames_until_close(5.0)
        assert close is not None
        conn.send_close(1000)
        assert conn.wait_closed(5.0), "TCP connection still open 5 s after both Close frames"
    finally:
        conn.close()


@spec("RFC 6455 §5.5.1", "MUST NOT")
def test_message_sent_with_the_close_is_never_echoed_after_it(server):
    """A message sent together with the client's Close is echoed before the server's Close or not at all:
    no data frame follows the server's Close."""
    conn = _open(server)
    try:
        conn.send(encode_frame(OP_BINARY, b"last words") + encode_frame(OP_CLOSE, b"\x03\xe8"))
        before, reply, end = conn.read_frames_until_close(5.0)
        assert reply is not None, f"no Close reply ({end})"
        assert all(f.payload == b"last words" for f in before), before
        after, _, end = conn.read_frames_until_close(3.0)
        assert not after and end == EOF, f"after the Close: {after} ({end})"
    finally:
        conn.close()


# -- the code of the close the server sends because the app ended  -----------------

_ENDED = "test_websocket_close.py::test_close_code_after_the_app_ended"
_MEANING = {
    1000: "normal closure: the purpose was fulfilled",
    1001: "going away",
    1002: "protocol error",
    1003: "unacceptable data",
    1005: "no status code (local only)",
    1006: "abnormal closure (local only)",
    1007: "inconsistent data",
    1008: "policy violation",
    1009: "too big",
    1010: "extension expected",
    1015: "TLS failure (local only)",
}


@pytest.mark.parametrize("ending", observable_names(_ENDED))
def test_close_code_after_the_app_ended(server, ending):
    """When the app raises (or returns) after accepting, without closing, and the server sends a Close frame
    for it, the frame's code is one the text allows (conformance/spec/observables.py): after a raise 1011 (the code
    defined for "an unexpected condition that prevented it from fulfilling the request") or no code, since
    1000 would tell the client the purpose was fulfilled; after a return any code an endpoint may send, never
    1005, 1006 or 1015, or no code. A connection that ends without a Close frame has no code to judge (not
    supported here; test_app_ending_after_accept_closes_the_socket judges it). Evidence: the event log shows
    the app ended as scripted."""
    row = observable_row(_ENDED, ending, server.interface)
    conn, token = ws_script(server, [list(s) for s in row.steps])
    with ws_accepted(conn):
        _, close, end = conn.read_frames_until_close(5.0)
    ended = server.wait_for_event(token, "script.end", 5.0) if ending == "return" else None
    raised = ws_steps(server, token).get(len(row.steps) - 1) if ending == "raise" else None
    assert ending == "return" or (raised is not None and not raised["ok"]), (
        f"the event log does not show the app raising: {raised}"
    )
    assert ending == "raise" or ended is not None, "the event log does not show the app returning"
    if close is None:
        not_supported(f"the server ended the connection without a Close frame ({end}): no close code to judge")
    code = close.close_code
    assert code in row.allowed, (
        f"the app {ending}d and the server closed with {code} ({_MEANING.get(code, 'not a code the text allows here')})"
    )
