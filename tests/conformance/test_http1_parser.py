"""The raw HTTP/1 response parser the wire checks rely on: every framing, fed whole and byte by byte."""

from __future__ import annotations

import pytest

from gatecheck.conformance.client.http1 import HEAD_CAP, ParseError, broken_start, build_request, parse_responses

CASES = {
    "length": (b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhello", [b"hello"]),
    "chunked": (
        b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5;x=y\r\nhello\r\n1\r\n!\r\n0\r\nT: v\r\n\r\n",
        [b"hello!"],
    ),
    "interim then final": (b"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 204 No Content\r\n\r\n", [b"", b""]),
    "pipelined": (
        b"HTTP/1.1 200 OK\r\nContent-Length: 1\r\n\r\naHTTP/1.1 200 OK\r\nContent-Length: 1\r\n\r\nb",
        [b"a", b"b"],
    ),
}


@pytest.mark.parametrize("name", CASES)
def test_parses_whole_and_byte_by_byte(name):
    data, bodies = CASES[name]
    responses, leftover = parse_responses(data, closed=False)
    assert [r.body for r in responses] == bodies and leftover == b""
    # fed one byte at a time, never more responses than are complete
    for cut in range(len(data)):
        partial, _ = parse_responses(data[:cut], closed=False)
        assert len(partial) <= len(bodies)


@pytest.mark.parametrize("name", CASES)
def test_a_valid_start_is_never_called_broken_at_any_cut(name):
    data = CASES[name][0]
    assert not any(broken_start(data[:cut]) for cut in range(len(data) + 1))


@pytest.mark.parametrize(
    "data",
    [
        b"garbage",
        b"HTTP/1.1 200 OK\r\nthis is not a field line\r\nContent-Length: 2\r\n\r\nok",
        b"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 200 OK\r\nbad line\r\n\r\n",
    ],
    ids=["not-http", "bad-field-line", "bad-final-after-interim"],
)
def test_bytes_that_cannot_begin_a_response_are_broken_as_soon_as_they_show_it(data):
    assert broken_start(data)
    assert not broken_start(b"HTTP/1.1 200 OK\r\nthis is not a field line")  # the head is not complete yet


def test_trailers_are_kept_apart_from_headers():
    responses, _ = parse_responses(CASES["chunked"][0])
    assert responses[0].trailers == [(b"T", b"v")] and responses[0].framing == "chunked"


def test_head_responses_have_no_body_whatever_their_length():
    data = b"HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nHTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok"
    responses, _ = parse_responses(data, methods=["HEAD", "GET"])
    assert [r.body for r in responses] == [b"", b"ok"]


def test_close_delimited_body_needs_the_close():
    data = b"HTTP/1.0 200 OK\r\n\r\nabc"
    assert parse_responses(data, closed=False)[0] == []
    responses, _ = parse_responses(data, closed=True)
    assert responses[0].body == b"abc" and responses[0].framing == "close"


@pytest.mark.parametrize(
    "data",
    [
        b"HTTP/1.1 2000 OK\r\n\r\n",
        b"garbage\r\n\r\n",
        b"HTTP/1.1 200 OK\r\nno-colon\r\n\r\n",
        b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n",
        b"HTTP/1.1 200 OK\r\nContent-Length: 1, 2\r\n\r\nx",
    ],
)
def test_invalid_responses_raise(data):
    with pytest.raises(ParseError):
        parse_responses(data)


@pytest.mark.parametrize(
    "data",
    [
        b"HTTP/1.1 200\r\nContent-Length: 0\r\n\r\n",  # no SP after the code (RFC 9112 §4)
        b"HTTP/1.1 200 OK\r\nX-A : 1\r\nContent-Length: 0\r\n\r\n",  # whitespace before the colon (§5.1)
        b"HTTP/1.1 200 OK\r\nX[A]: 1\r\nContent-Length: 0\r\n\r\n",  # a name that is not a token (§5)
        b"HTTP/1.1 200 OK\r\nX-A: 1\r\n folded\r\nContent-Length: 0\r\n\r\n",  # obs-fold (§5.2)
        b"HTTP/1.1 200 OK\r\nX-A: a\nX-B: 1\r\nContent-Length: 0\r\n\r\n",  # a bare LF inside a field line
        b"HTTP/1.1 200 OK\r\nX-A: a\x00b\r\nContent-Length: 0\r\n\r\n",  # NUL in a value (RFC 9110 §5.5)
        b"HTTP/1.1 200 OK\r\nthis is not a field line\r\nContent-Length: 2\r\n\r\nok",
        b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n0\r\nBad Trailer: x\r\n\r\n",
    ],
    ids=[
        "no-sp-after-code",
        "space-before-colon",
        "non-token-name",
        "obs-fold",
        "bare-lf",
        "nul",
        "not-a-field",
        "bad-trailer",
    ],
)
def test_malformed_heads_raise(data):
    with pytest.raises(ParseError):
        parse_responses(data)


def test_bytes_that_cannot_begin_a_response_raise_before_any_head_ends():
    with pytest.raises(ParseError, match="do not begin a response"):
        parse_responses(b"\x00\x17garbage", closed=False)
    assert parse_responses(b"HTT", closed=False) == ([], b"HTT")


def test_a_head_longer_than_the_cap_raises_naming_it():
    with pytest.raises(ParseError, match=str(HEAD_CAP)):
        parse_responses(b"HTTP/1.1 200 OK\r\nX-Huge: " + b"a" * (HEAD_CAP + 1), closed=False)


def test_parsing_stops_after_a_101():
    data = b"HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\n\r\n\x81\x02hi"
    responses, leftover = parse_responses(data, closed=False)
    assert [r.status for r in responses] == [101] and leftover == b"\x81\x02hi"


def test_build_request_adds_host_and_length_only_when_absent():
    assert build_request("POST", "/e", [("X", "1")], b"abc") == (
        b"POST /e HTTP/1.1\r\nHost: 127.0.0.1\r\nX: 1\r\nContent-Length: 3\r\n\r\nabc"
    )
    raw = build_request("GET", "/", [("Host", "h")], host="ignored")
    assert raw.count(b"Host") == 1
    assert b"Host" not in build_request("GET", "/", host=None)


# -- the client's rules (RFC 9112 §9.3, §9.6) ------------------------------------------------------------------

PERSISTS = {
    "1.1 without Connection": (b"HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n", True),
    "1.1 close in a list": (b"HTTP/1.1 200 OK\r\nConnection: keep-alive, Close\r\nContent-Length: 0\r\n\r\n", False),
    "1.0 without keep-alive": (b"HTTP/1.0 200 OK\r\nContent-Length: 0\r\n\r\n", False),
    "1.0 with keep-alive": (b"HTTP/1.0 200 OK\r\nConnection: Keep-Alive\r\nContent-Length: 0\r\n\r\n", True),
    "1.1 close-delimited": (b"HTTP/1.1 200 OK\r\n\r\nbody", False),
}


@pytest.mark.parametrize("name", PERSISTS)
def test_persistence_is_read_as_rfc_9112_section_9_3_says(name):
    from gatecheck.conformance.client.http1 import persistent

    data, expected = PERSISTS[name]
    (resp,), _ = parse_responses(data, closed=True)
    assert persistent(resp) is expected


def test_a_connection_sends_no_request_after_a_response_or_request_that_ended_it():
    """``Connection`` refuses to start a request on a connection that ended (its own close, or a response's);
    the rest of a request already begun still goes (a body after a 100)."""
    import socket
    import threading

    from gatecheck.conformance.client.http1 import AfterClose, Connection

    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(1)

    def serve():
        conn, _ = listener.accept()
        with conn:
            conn.recv(65536)
            conn.sendall(b"HTTP/1.0 200 OK\r\nContent-Length: 2\r\n\r\nok")
            conn.recv(65536)

    threading.Thread(target=serve, daemon=True).start()
    with Connection(listener.getsockname(), 5.0) as conn:
        conn.send(build_request("GET", "/", host="x"))
        assert conn.may_send()
        assert conn.read_responses(1).first.body == b"ok"
        assert not conn.may_send() and "HTTP/1.0" in conn.ending
        conn.send(b"more body bytes", continuation=True)
        with pytest.raises(AfterClose):
            conn.send(build_request("GET", "/again", host="x"))
    listener.close()
    closing = Connection.__new__(Connection)
    closing.ending, closing.sock = "", type("S", (), {"sendall": lambda self, data: None})()
    closing.send(build_request("GET", "/", [("Connection", "close")], host="x"))
    assert "client's own request" in closing.ending
