"""Streaming both ways: request bodies of 0 B to 10 MiB, written in random pieces and (for chunked)
random chunk sizes, come back byte-exact from the iterated echo of every interface while they are still
being uploaded; response chunks reach the client as the app sends them, not when it finishes.

The upload and the download run at once (a writer thread), because ``/echo_iter`` streams each piece
back as it reads it: a client that wrote everything first could deadlock on full socket buffers.
"""

from __future__ import annotations

import random
import threading
import time

import pytest

from gatecheck.conformance.app import random_bytes, response_script, script_target
from gatecheck.conformance.client.bounded import DEFAULT_CAP, DONE, OVERFLOW, RESET, TIMEOUT, recv_once
from gatecheck.conformance.client.connect import connect
from gatecheck.conformance.client.http1 import Overflow, ParseError, answered, parse_responses, read_raw
from gatecheck.conformance.helpers.support import body_not_read
from gatecheck.conformance.helpers.wire import REPLY_TIMEOUT, request
from gatecheck.conformance.spec.markers import interfaces, needs, spec
from gatecheck.fixtures import payload_bytes

pytestmark = needs("http1")

_SIZES = {"0B": 0, "1B": 1, "64KiB+1": 65537, "1MiB": 1 << 20, "10MiB": 10 << 20}
# Content-Length defines the body length (RFC 9112 §6.3, a definition); a recipient MUST decode chunked (§7.1)
_FRAMING_CLAUSE = {"length": ("RFC 9112 §6.3", "DEFINED"), "chunked": ("RFC 9112 §7.1", "MUST")}
_DEADLINE = 30.0  # seconds for a whole exchange (10 MiB each way takes about 1 s here): half the check deadline
_STALL = 10.0  # seconds without a byte from the server mid-stream: it stopped answering


def _pieces(data: bytes, rng: random.Random, max_log2: int = 17) -> list:
    """``data`` cut at random boundaries (piece sizes spread log-uniformly from 1 B to 2**max_log2 B)."""
    out, pos = [], 0
    while pos < len(data):
        size = max(1, int(2 ** rng.uniform(0, max_log2)))
        out.append(data[pos : pos + size])
        pos += size
    return out


def _exchange_streaming(server, head: bytes, payload: bytes, rng: random.Random) -> tuple:
    """Send ``head`` + ``payload`` in random writes from a thread while reading until a final response is complete,
    the server closes (the request says Connection: close) or its bytes cannot be a response any more. Returns (raw
    response bytes, error from the writer or None)."""
    sock = connect(server, timeout=REPLY_TIMEOUT)
    writes = [head] + _pieces(payload, rng)
    failure: list = []

    def writer():
        try:
            for piece in writes:
                sock.sendall(piece)
        except OSError as exc:
            failure.append(exc)

    thread = threading.Thread(target=writer, daemon=True)
    try:
        thread.start()
        received, end = _read_while_streaming(sock)
        if end == RESET:
            failure.append(ConnectionResetError("the server reset the connection"))
        elif end == TIMEOUT:
            failure.append(
                TimeoutError(
                    f"the server sent nothing for {_STALL:g} s after {len(received)} B (or the "
                    f"exchange passed {_DEADLINE:g} s): it stopped answering mid-stream"
                )
            )
    finally:
        sock.close()
        thread.join(5.0)
    return received, (failure[0] if failure else None)


def _read_while_streaming(sock) -> tuple:
    """The server's bytes until it closes, a final response is complete (a server that keeps the connection open
    after its answer costs no deadline) or the bytes cannot be a response, ``_STALL`` s pass without a byte or
    ``_DEADLINE`` s in all: (bytes, how the read ended)."""
    buf = bytearray()
    deadline = time.monotonic() + _DEADLINE
    while not answered(buf, "POST"):
        end = recv_once(sock, buf, deadline=min(deadline, time.monotonic() + _STALL))
        if end == OVERFLOW:  # past the client's cap: a failure naming it, the bytes cut (no copy kept)
            raise Overflow.of(buf, DEFAULT_CAP, "streaming the echo")
        if end is not None:
            return bytes(buf), end
    return bytes(buf), DONE


def _parse(raw: bytes, method: str) -> tuple:
    """(responses, None), or ([], what is wrong): the check raises, so pytest never prints ``raw`` whole."""
    try:
        return parse_responses(raw, methods=[method], closed=True)[0], None
    except ParseError as exc:
        return [], f"not a valid HTTP/1.x response: {exc}; got {raw[:300]!r}"


@pytest.mark.parametrize(
    "size,framing",
    [
        pytest.param(size, framing, id=f"{label}-{framing}", marks=spec(*clause))
        for label, size in _SIZES.items()
        for framing, clause in _FRAMING_CLAUSE.items()
    ],
)
def test_iterated_echo_streams_body_back_byte_exact(server, size, framing):
    """A body of 0 B–10 MiB, written in random pieces (chunked: random chunk sizes too), comes back
    byte-exact from /echo_iter, which streams each piece back as it reads it."""
    rng = random.Random(size * 2 + (framing == "chunked"))
    body = random_bytes(size, seed=size + 7)
    headers = [("Content-Type", "application/octet-stream"), ("Connection", "close")]
    if framing == "length":
        headers.append(("Content-Length", str(size)))
        payload = body
    else:
        headers.append(("Transfer-Encoding", "chunked"))
        payload = b"".join(b"%x\r\n%s\r\n" % (len(c), c) for c in _pieces(body, rng, 18)) + b"0\r\n\r\n"
    head = request(server, "POST", "/echo_iter", headers, content_length=False)
    raw, error = _exchange_streaming(server, head, payload, rng)
    assert not isinstance(error, TimeoutError), f"{error}; got {raw[:300]!r}"
    responses, problem = _parse(raw, "POST")
    assert not problem, problem
    finals = [r for r in responses if not r.interim]
    assert finals, f"no complete response (writer error: {error!r}); got {raw[:300]!r}"
    got = finals[0].body
    if framing == "chunked":
        body_not_read(server, finals[0], body)  # a 411, or a WSGI app with no way to read it: not supported
    assert finals[0].status == 200, raw[:300]
    if got != body:
        first = next((i for i, (a, b) in enumerate(zip(got, body)) if a != b), min(len(got), len(body)))
        raise AssertionError(f"sent {len(body)} B, got {len(got)} B back; first difference at byte {first}")


_MARKS = (b"first-chunk;", b"second-chunk;", b"last-chunk;")
_PAUSE = 0.4


def _chunk_arrivals(server) -> dict:
    """Ask the app for three chunks with _PAUSE seconds between them; return {mark: arrival time}."""
    steps = response_script(
        server.interface, 200, [("content-type", "text/plain")], [m.decode() for m in _MARKS], pause=_PAUSE
    )
    sock = connect(server, timeout=REPLY_TIMEOUT)
    arrivals: dict = {}

    def all_arrived(received) -> bool:  # called after every read: the time each mark first showed up
        now = time.monotonic()
        for mark in _MARKS:
            if mark in received and mark not in arrivals:
                arrivals[mark] = now
        return len(arrivals) == len(_MARKS)

    try:
        sock.sendall(request(server, "GET", script_target(steps), [("Connection", "close")]))
        received, _ = read_raw(sock, all_arrived, timeout=REPLY_TIMEOUT + 2 * _PAUSE)
    finally:
        sock.close()
    assert len(arrivals) == len(_MARKS), f"not every chunk arrived: {received[:400]!r}"
    return arrivals


def _assert_streamed(server) -> None:
    arrivals = _chunk_arrivals(server)
    first, second, last = (arrivals[m] for m in _MARKS)
    # the app sleeps _PAUSE seconds between the chunks; a server that buffers delivers all three at once
    assert second - first > _PAUSE * 0.5 and last - second > _PAUSE * 0.5, (
        f"chunks arrived {second - first:.2f}s and {last - second:.2f}s apart; the app paused {_PAUSE}s "
        f"between them (time to first chunk vs last: the response was buffered)"
    )


@interfaces("asgi")
@spec("ASGI WWW §Response Body", "MUST")
def test_asgi_body_chunks_reach_the_client_as_sent(server):
    """Each http.response.body with more_body reaches the client before the app sends the next one."""
    _assert_streamed(server)


@interfaces("rsgi")
@spec("RSGI §HTTP protocol interface", "DEFINED")
def test_rsgi_stream_chunks_reach_the_client_as_sent(server):
    """Each send_bytes on a response_stream transport reaches the client before the app sends the next."""
    _assert_streamed(server)


@interfaces("wsgi")
@spec("PEP 3333 §Buffering and Streaming", "MUST")
def test_wsgi_yielded_blocks_reach_the_client_as_yielded(server):
    """Each block the response iterable yields is transmitted before the next block is requested."""
    _assert_streamed(server)


@spec("RFC 9112 §7.1", "DEFINED")
def test_many_small_streamed_chunks_arrive_byte_exact(server):
    """A response streamed as 500 chunks of 100 octets is framed correctly and arrives byte-exact."""
    piece = {"size": 100}
    steps = {
        "asgi": [["start", 200, []], ["repeat", 499, [["body", piece, True]]], ["body", piece]],
        "rsgi": [["stream", 200, []], ["repeat", 500, [["send_bytes", piece]]]],
        "wsgi": [["start_response", "200 OK", []], ["repeat", 500, [["yield", piece]]]],
    }[server.interface]
    sock = connect(server, timeout=REPLY_TIMEOUT)
    try:
        sock.sendall(request(server, "GET", script_target(steps), [("Connection", "close")]))
        received, _ = read_raw(sock, lambda buf: answered(buf, "GET"), timeout=REPLY_TIMEOUT * 2)
    finally:
        sock.close()
    responses, problem = _parse(received, "GET")
    assert not problem, problem
    assert responses and responses[0].status == 200, received[:300]
    assert responses[0].body == payload_bytes(100) * 500, (
        f"{len(responses[0].body)} of 50000 octets, framing {responses[0].framing}"
    )
