"""WebSocket on the wire (RFC 6455): the opening handshake, framing, control frames, UTF-8 and errors.

Every check here talks to ``/ws_echo`` (accept, then echo text as text and binary as binary) with the raw
client in ``conformance/client/ws.py``, so the same wire rules are checked through ASGI and RSGI. The closing
handshake is in ``test_websocket_close.py``; interface mappings in ``test_websocket_asgi.py`` and
``test_websocket_rsgi.py``.

"Fail the WebSocket Connection" [6455 §7.1.7]: the server MUST close the connection and SHOULD send a Close
frame with a suitable code first. The MUST and the SHOULD are separate checks.

Evidence: a check passes only on what the server sent. A refused or unswitched handshake needs a
well-formed HTTP response (silence or a bare close is no answer); a connection the server must fail
is first shown alive by an echo round trip on it, so its close right after the violation is the
server's doing, not a server that never spoke WebSocket.
"""

from __future__ import annotations

import os

import pytest

from gatecheck.conformance.client.ws import OP_BINARY, OP_CONT, OP_PING, OP_PONG, OP_TEXT, accept_for, encode_frame
from gatecheck.conformance.helpers.ws_wire import (
    PROTOCOL_ERRORS,
    Echo,
    after_violation,
    frame_bytes,
    live_echo,
    refused_handshake,
    round_trip,
    send_fragments,
)
from gatecheck.conformance.spec.markers import interfaces, needs, spec

pytestmark = [interfaces("asgi", "rsgi"), needs("websockets")]

_HS = "RFC 6455 §4.2.1"


# -- opening handshake ------------------------------------------------------------------------------


@spec("RFC 6455 §4.2.2", "MUST")
def test_valid_handshake_is_answered_with_101_and_upgrade_headers(server):
    """A valid opening handshake is answered 101 with Upgrade: websocket and Connection: Upgrade."""
    with Echo(server) as conn:
        hs = conn.handshake
        assert (hs.header("upgrade") or "").lower() == "websocket", hs.raw
        assert "upgrade" in [t.strip().lower() for t in (hs.header("connection") or "").split(",")], hs.raw


@pytest.mark.parametrize(
    "key",
    ["dGhlIHNhbXBsZSBub25jZQ==", "AAAAAAAAAAAAAAAAAAAAAA==", "/////////////////////w=="],
    ids=["rfc-sample", "zeros", "ones"],
)
@spec("RFC 6455 §4.2.2", "MUST")
def test_accept_is_base64_sha1_of_the_key_as_sent(server, key):
    """Sec-WebSocket-Accept is base64(SHA-1(key + GUID)) over the key as sent, and appears exactly once."""
    with Echo(server, key=key) as conn:
        values = conn.handshake.header_all("sec-websocket-accept")
        assert values == [accept_for(key)], conn.handshake.raw
    if key.startswith("dGhl"):
        assert accept_for(key) == "s3pPLMBiTxaQ9kYGzzhZRbK+xOo="


@pytest.mark.parametrize(
    "key",
    [
        None,
        "abc",
        "dGhlIHNhbXBsZSBub25jZQ",
        "AAAAAAAAAAAAAAAAAAAAAAA=",
        "AAAAAAAAAAAAAAAAAAAAAAAA",
        "!!!!!!!!!!!!!!!!!!!!!!==",
    ],
    ids=["missing", "short", "unpadded", "17-bytes", "18-bytes", "not-base64"],
)
@spec(_HS, "MUST")
def test_key_not_decoding_to_16_bytes_is_refused(server, key):
    """A missing Sec-WebSocket-Key, or one that does not base64-decode to 16 bytes, gets an HTTP error, not 101."""
    hs = refused_handshake(server, key=key)
    assert 400 <= hs.status < 500, f"key {key!r} answered {hs.status}: {hs.raw[:300]!r}"


@spec(_HS, "MUST")
def test_duplicate_key_is_refused(server):
    """Sec-WebSocket-Key MUST NOT appear more than once: two keys get an HTTP error, not 101."""
    hs = refused_handshake(server, headers=[("Sec-WebSocket-Key", "AAAAAAAAAAAAAAAAAAAAAA==")])
    assert hs.status is not None and 400 <= hs.status < 500, f"answered {hs.status}: {hs.raw[:300]!r}"


@pytest.mark.parametrize("version", ["12", "14", "99", "abc"])
@spec("RFC 6455 §4.2.2", "MUST")
def test_unsupported_version_is_refused_listing_version_13(server, version):
    """A Sec-WebSocket-Version the server does not speak gets an HTTP error (such as 426) carrying
    Sec-WebSocket-Version: 13."""
    hs = refused_handshake(server, version=version)
    assert hs.status is not None and 400 <= hs.status < 500, f"answered {hs.status}: {hs.raw[:300]!r}"
    offered = [v.strip() for value in hs.header_all("sec-websocket-version") for v in value.split(",")]
    assert "13" in offered, f"{hs.status} without Sec-WebSocket-Version: 13: {hs.raw[:300]!r}"


@spec(_HS, "MUST")
def test_missing_version_is_refused(server):
    """A handshake without Sec-WebSocket-Version gets an HTTP error, not 101."""
    hs = refused_handshake(server, version=None)
    assert hs.status is not None and 400 <= hs.status < 500, f"answered {hs.status}: {hs.raw[:300]!r}"


@pytest.mark.parametrize(
    "kw",
    [{"upgrade": None}, {"connection": None}, {"upgrade": "h2c"}, {"connection": "keep-alive"}],
    ids=["no-upgrade", "no-connection", "upgrade-h2c", "connection-without-upgrade"],
)
@spec(_HS, "MUST")
def test_request_without_websocket_upgrade_is_not_switched(server, kw):
    """Without Upgrade: websocket and Connection: Upgrade the request is not switched to WebSocket (no 101
    with Upgrade: websocket, no Sec-WebSocket-Accept). Evidence: a well-formed HTTP response that is not
    that 101; no response at all is not one."""
    hs = refused_handshake(server, **kw)
    upgraded_to = (hs.header("upgrade") or "").lower()
    assert not (hs.status == 101 and "websocket" in upgraded_to), f"switched to WebSocket: {hs.raw[:300]!r}"
    assert not hs.header_all("sec-websocket-accept"), hs.raw[:300]


@pytest.mark.parametrize("method", ["POST", "PUT"])
@spec(_HS, "MUST")
def test_non_get_upgrade_is_not_switched(server, method):
    """The opening handshake MUST be a GET: another method with upgrade headers gets no 101 (evidence: a
    well-formed HTTP response other than 101)."""
    hs = refused_handshake(server, method=method)
    assert hs.status != 101, f"{method} upgrade switched protocols: {hs.raw[:300]!r}"


@spec(_HS, "MUST")
def test_http10_upgrade_is_not_switched(server):
    """The opening handshake needs HTTP/1.1 or later (and Upgrade is ignored in HTTP/1.0, RFC 9110 §7.8):
    a well-formed HTTP response other than 101 shows it."""
    hs = refused_handshake(server, http_version="HTTP/1.0")
    assert hs.status != 101, f"HTTP/1.0 upgrade switched protocols: {hs.raw[:300]!r}"


@pytest.mark.parametrize(
    "kw",
    [{"connection": "keep-alive, Upgrade"}, {"upgrade": "WebSocket"}, {"connection": "upgrade"}],
    ids=["connection-list", "upgrade-mixed-case", "connection-lower-case"],
)
@spec(_HS, "DEFINED")
def test_upgrade_tokens_are_case_insensitive_and_listed(server, kw):
    """Connection is a token list and both tokens compare case-insensitively: these handshakes are valid."""
    hs = refused_handshake(server, **kw)
    assert hs.status == 101, f"valid handshake answered {hs.status}: {hs.raw[:300]!r}"


@spec("RFC 6455 §4.2.2", "MUST NOT")
def test_no_subprotocol_header_when_none_was_chosen(server):
    """When the application chose no subprotocol the 101 carries no Sec-WebSocket-Protocol (not even empty)."""
    with Echo(server, protocols=["gatecheck.a", "gatecheck.b"]) as conn:
        assert conn.handshake.header_all("sec-websocket-protocol") == [], conn.handshake.raw


@pytest.mark.parametrize(
    "offer",
    [None, "x-gatecheck-unknown", "x-gatecheck-unknown; p=1"],
    ids=["none-offered", "unknown", "unknown-with-param"],
)
@spec("RFC 6455 §4.2.2", "MUST NOT")
def test_no_extension_the_client_did_not_offer(server, offer):
    """The 101 lists only extensions the client offered (here: none it can know), in at most one header."""
    headers = [("Sec-WebSocket-Extensions", offer)] if offer else []
    with Echo(server, headers=headers) as conn:
        assert conn.handshake.header_all("sec-websocket-extensions") == [], conn.handshake.raw


@spec("RFC 7692 §7.1.2.2", "MUST NOT")
def test_permessage_deflate_answer_obeys_the_offer(server):
    """A server accepting a bare permessage-deflate offer answers one header, without client_max_window_bits."""
    with Echo(server, headers=[("Sec-WebSocket-Extensions", "permessage-deflate")]) as conn:
        values = conn.handshake.header_all("sec-websocket-extensions")
        assert len(values) <= 1, values
        for value in values:
            names = [p.split("=")[0].strip().lower() for p in value.split(";")]
            assert names[0] == "permessage-deflate", value
            assert "client_max_window_bits" not in names, value
            assert len(names) == len(set(names)), f"duplicated parameter: {value}"


# -- data frames --------------------------------------------------------------------------------------

_LENGTHS = [0, 1, 125, 126, 127, 65535, 65536]


@pytest.mark.parametrize("size", _LENGTHS, ids=lambda n: f"{n}B")
@spec("RFC 6455 §5.2", "MUST")
def test_binary_message_round_trips_with_minimal_length(server, size):
    """A binary message of any length comes back byte-exact in unmasked frames with minimal length encoding."""
    payload = os.urandom(size)
    with Echo(server) as conn:
        assert round_trip(conn, OP_BINARY, payload) == (OP_BINARY, payload)


@pytest.mark.parametrize("size", _LENGTHS, ids=lambda n: f"{n}B")
@spec("RFC 6455 §5.6", "DEFINED")
def test_text_message_round_trips_as_text(server, size):
    """A text message comes back as a text message with the same UTF-8 bytes."""
    payload = ("é" * (size // 2) + "a" * (size % 2)).encode("utf-8")
    with Echo(server) as conn:
        assert round_trip(conn, OP_TEXT, payload) == (OP_TEXT, payload)


@pytest.mark.parametrize(
    "text",
    ["\U0001f600", "\uffff", "\U0010ffff", "\ufeffbom", "\u0000nul", "κόσμε"],
    ids=["4-byte", "U+FFFF", "U+10FFFF", "BOM", "NUL", "greek"],
)
@spec("RFC 6455 §5.6", "DEFINED")
def test_valid_utf8_edge_cases_are_accepted(server, text):
    """Text messages holding valid UTF-8 edge cases (4-byte sequences, noncharacters, U+10FFFF) are accepted."""
    payload = text.encode("utf-8")
    with Echo(server) as conn:
        assert round_trip(conn, OP_TEXT, payload) == (OP_TEXT, payload)


@pytest.mark.parametrize("opcode", [OP_BINARY, OP_TEXT], ids=["binary", "text"])
@spec("RFC 6455 §5.2", "DEFINED")
def test_one_mebibyte_message_round_trips_byte_exact(server, opcode):
    """A 1 MiB message comes back byte-exact."""
    payload = os.urandom(1 << 20) if opcode == OP_BINARY else ("gatecheck-é" * 100_000).encode()[: 1 << 20]
    with Echo(server, timeout=20.0) as conn:
        got = round_trip(conn, opcode, payload, timeout=20.0)
        assert got[0] == opcode and len(got[1]) == len(payload) and got[1] == payload


@spec("RFC 6455 §5.4", "MUST")
def test_text_fragmented_inside_code_points_is_reassembled(server):
    """A text message sent in 1-byte fragments (splitting multi-byte code points) arrives as one message."""
    payload = "hé€𝄞!".encode("utf-8")
    with Echo(server) as conn:
        send_fragments(conn, OP_TEXT, [payload[i : i + 1] for i in range(len(payload))])
        assert conn.read_message() == (OP_TEXT, payload)


@spec("RFC 6455 §5.4", "MUST")
def test_binary_fragments_of_varied_sizes_are_reassembled(server):
    """A binary message in fragments of 0, 1, 125, 126 and 70 000 bytes arrives whole and in order."""
    parts = [os.urandom(n) for n in (0, 1, 125, 126, 70_000, 3)]
    with Echo(server, timeout=10.0) as conn:
        send_fragments(conn, OP_BINARY, parts)
        assert conn.read_message() == (OP_BINARY, b"".join(parts))


@spec("RFC 6455 §5.4", "MUST")
def test_ping_between_fragments_is_answered_and_message_kept(server):
    """A ping interleaved between fragments is answered with its pong, and the message still arrives whole."""
    with Echo(server) as conn:
        send_fragments(conn, OP_TEXT, [b"frag", b"ment", b"ed"], between=(OP_PING, b"mid"))
        got = conn.read_message()
        assert got == (OP_TEXT, b"fragmented"), got
        pongs = [f for f in conn.controls if f.opcode == OP_PONG]
        if not pongs:
            frame = conn.read_frame(3.0)
            pongs = [frame] if getattr(frame, "opcode", None) == OP_PONG else []
        assert pongs and pongs[0].payload == b"mid", f"pongs: {conn.controls}"


# -- control frames -----------------------------------------------------------------------------------


@pytest.mark.parametrize("size", [0, 1, 125], ids=lambda n: f"{n}B")
@spec("RFC 6455 §5.5.2", "MUST")
def test_ping_is_answered_with_identical_pong(server, size):
    """A ping is answered with a pong carrying the identical application data."""
    payload = os.urandom(size)
    with Echo(server) as conn:
        conn.send_frame(OP_PING, payload)
        frame = conn.read_frame()
        assert getattr(frame, "opcode", None) == OP_PONG, f"expected a pong, got {frame!r}"
        assert frame.payload == payload and not frame.masked and frame.fin


@spec("RFC 6455 §5.5.3", "DEFINED")
def test_unsolicited_pong_is_ignored(server):
    """An unsolicited pong needs no answer and does not end the connection."""
    with Echo(server) as conn:
        conn.send_frame(OP_PONG, b"heartbeat")
        assert round_trip(conn, OP_TEXT, b"still open") == (OP_TEXT, b"still open")
        assert conn.controls == [], f"answered a pong with {conn.controls}"


# -- protocol errors: Fail the WebSocket Connection --------------------------------------------------


@pytest.mark.parametrize("case", list(PROTOCOL_ERRORS), ids=list(PROTOCOL_ERRORS))
@spec("RFC 6455 §7.1.7", "MUST")
def test_protocol_error_fails_the_connection(server, case):
    """A frame that breaks the framing rules fails the connection: nothing is echoed and the server closes
    the TCP connection without waiting for the client. Evidence: the close comes right after an echo
    round trip on the same connection."""
    with live_echo(server) as conn:
        data, close, closed = after_violation(conn, PROTOCOL_ERRORS[case])
        assert not data, f"server processed the bad frame(s): {data}"
        assert closed, f"the server kept the connection open after a protocol error (Close frame: {close!r})"


@pytest.mark.parametrize("case", list(PROTOCOL_ERRORS), ids=list(PROTOCOL_ERRORS))
@spec("RFC 6455 §7.1.7", "SHOULD")
def test_protocol_error_is_signalled_with_close_1002(server, case):
    """Before closing on a protocol error the server sends a Close frame with code 1002."""
    with live_echo(server) as conn:
        _, close, _ = after_violation(conn, PROTOCOL_ERRORS[case])
        assert close is not None and close.close_code == 1002, f"got {close!r} instead of Close 1002"


@spec("RFC 6455 §5.1", "MUST")
def test_unmasked_client_frame_closes_the_connection(server):
    """The server closes the connection on an unmasked client frame (it MAY send Close 1002 first).
    Evidence: the close comes right after an echo round trip on the same connection."""
    with live_echo(server) as conn:
        data, close, closed = after_violation(conn, encode_frame(OP_TEXT, b"unmasked", mask=False))
        assert not data, f"server echoed an unmasked frame: {data}"
        assert closed, f"the server kept the connection open after an unmasked frame (Close frame: {close!r})"


_BAD_UTF8 = {
    "lone-continuation": b"\x80",
    "invalid-byte": b"ok\xff",
    "truncated-2-byte": b"\xc3(",
    "ends-mid-code-point": b"ab\xce",
    "overlong": b"\xc0\xaf",
    "surrogate": b"\xed\xa0\x80",
    "above-U+10FFFF": b"\xf4\x90\x80\x80",
}


def _bad_text(case: str) -> bytes:
    if case == "fragmented":
        return frame_bytes(
            (OP_TEXT, "κό".encode(), {"fin": False}), (OP_CONT, b"\xce", {"fin": False}), (OP_CONT, b"\xff")
        )
    return encode_frame(OP_TEXT, _BAD_UTF8[case])


_UTF8_CASES = list(_BAD_UTF8) + ["fragmented"]


@pytest.mark.parametrize("case", _UTF8_CASES)
@spec("RFC 6455 §8.1", "MUST")
def test_invalid_utf8_text_fails_the_connection(server, case):
    """A text message that is not valid UTF-8 fails the connection: nothing echoed, TCP closed. Evidence: the
    close comes right after an echo round trip on the same connection."""
    with live_echo(server) as conn:
        data, close, closed = after_violation(conn, _bad_text(case))
        assert not data, f"server echoed invalid UTF-8: {data}"
        assert closed, f"the server kept the connection open after invalid UTF-8 (Close frame: {close!r})"


@pytest.mark.parametrize("case", _UTF8_CASES)
@spec("RFC 6455 §7.1.7", "SHOULD")
def test_invalid_utf8_text_is_signalled_with_close_1007(server, case):
    """The Close frame that fails a connection on invalid UTF-8 carries 1007 (inconsistent data)."""
    with live_echo(server) as conn:
        _, close, _ = after_violation(conn, _bad_text(case))
        assert close is not None and close.close_code == 1007, f"got {close!r} instead of Close 1007"
