"""The WSGI response iterable: close(), Content-Length, framing, errors and wsgi.file_wrapper (PEP 3333
§Specification Details, §Handling the Content-Length Header, §Error Handling, §Optional Platform-Specific
File Handling).

The returned iterable must be closed exactly once however the request ends — completed, failed in the
middle, or abandoned by the client — and never iterated after close(). The app's Content-Length bounds
what is sent, and a short body must not leave the connection looking reusable. wsgi.file_wrapper, when a
server offers it, sends from the file's current position, honours Content-Length, closes the file, works
without fileno(), and sends nothing when the app drops it. The app side is the fixture's ``/script`` WSGI
interpreter: its iterable logs ``wsgi.close``/``wsgi.next_after_close``, its files ``file.close``.

Application shapes (the table is in conformance/spec/dimensions.py): close() is checked
for every shape whose iterable has one (an iterator class, wsgi.file_wrapper, write() before the iterable,
start_response inside the first next(), a first or later next() that raises), and every Content-Length
rule (exact, longer, shorter, absent) for every shape that delivers a body (those, a list and a generator).
"""

from __future__ import annotations

import base64
import time

import pytest

from gatecheck import fixtures
from gatecheck.conformance.app import (
    events_of,
    events_until,
    named,
    new_token,
    ping,
    run_script,
    script_request,
    step,
    steps_of,
    wait_step,
    wait_steps,
)
from gatecheck.conformance.client.connect import connect
from gatecheck.conformance.client.http1 import Connection, parse_head, read_raw
from gatecheck.conformance.helpers.wire import REPLY_TIMEOUT, describe
from gatecheck.conformance.spec.dimensions import (
    WSGI_BODY_SHAPES,
    WSGI_CLOSING_SHAPES,
    WSGI_RAISING_SHAPES,
    shape_params,
    wsgi_steps,
)
from gatecheck.conformance.spec.markers import interfaces, needs, spec

pytestmark = [interfaces("wsgi"), needs("http1")]

_SPEC = "PEP 3333 §Specification Details"
_CL = "PEP 3333 §Handling the Content-Length Header"
_FW = "PEP 3333 §Optional Platform-Specific File Handling"
_OCTETS = ["Content-Type", "application/octet-stream"]
_SMALL = (fixtures.STATIC_DIR / fixtures.STATIC_SMALL).read_bytes()
_STREAM_BLOCKS = 100  # blocks of the slow stream a client abandons, _BLOCK_PAUSE apart (4 s)
_BLOCK_PAUSE = 0.04
_DISCONNECT_GRACE = 2.0  # seconds a server gets to stop iterating after the client left


def _sr(status: str = "200 OK", *headers) -> list:
    return ["start_response", status, [_OCTETS, *map(list, headers)]]


def _closes(server, token: str, timeout: float = REPLY_TIMEOUT) -> tuple:
    """(wsgi.close events, all events) once close() was logged, plus a moment for a duplicate."""
    events = events_until(server, token, ("wsgi.close",), timeout=timeout, settle=0.2)
    return named(events, "wsgi.close"), events


# -- close() -----------------------------------------------------------------------------------


def _close_events(server, token: str, shape, timeout: float = REPLY_TIMEOUT) -> tuple:
    """(the events that show the shape's close() ran, all events), once one was logged, plus a moment for a
    duplicate."""
    events = events_until(server, token, (shape.closed_by,), timeout=timeout, settle=0.2)
    return named(events, shape.closed_by), events


def _shape_run(server, shape, headers=(), then=()):
    """Run the shape's script on a new connection (``then`` sent after its response): (token, exchange); not
    supported when the shape needs a wsgi.file_wrapper the server does not offer."""
    steps, token = wsgi_steps(shape, headers=headers), new_token()
    try:
        ex = run_script(server, steps, token=token, then=then, timeout=REPLY_TIMEOUT, wait=False).exchange
    finally:  # the answer to a missing wrapper may not even parse
        _file_wrapper_offered(server, token, steps)
    return token, ex


def _ran_to_its_end(server, token: str, steps: list, got: str) -> None:
    """Evidence without a response: the app's log shows every step ran (the server took the whole iterable)."""
    wait_step(server, token, len(steps) - 1, REPLY_TIMEOUT)
    ran = len(steps_of(events_of(server, token)))
    assert ran == len(steps), f"no response and no evidence the app ran to its end ({ran} of {len(steps)}): {got}"


def _file_wrapper_offered(server, token: str, steps: list) -> None:
    for index, step_ in enumerate(steps):
        if step_[0] == "file_wrapper":
            _offered(wait_step(server, token, index, REPLY_TIMEOUT))


@pytest.mark.parametrize("shape", shape_params(WSGI_CLOSING_SHAPES))
@spec(_SPEC, "MUST")
def test_close_is_called_after_a_complete_response(server, shape):
    """The iterable's close() is called when the response is complete, whatever the shape (for
    wsgi.file_wrapper: its close() closes the file). Evidence the response completed: a whole 200 response
    (its body is the Content-Length checks' business)."""
    token, ex = _shape_run(server, shape)
    assert ex.first.status == 200, describe(ex)
    closes, events = _close_events(server, token, shape)
    assert closes, f"close() was never called; events: {[e['event'] for e in events]}"


@pytest.mark.parametrize("shape", shape_params(WSGI_CLOSING_SHAPES + WSGI_RAISING_SHAPES))
@spec(_SPEC + " (once)", "POLICY")
def test_close_is_not_called_twice(server, shape):
    """POLICY (the text says close() must be called, not how often; calling it twice is the suite's reading
    of a fault): close() is called no more than once for one response."""
    token, _ = _shape_run(server, shape)
    closes, events = _close_events(server, token, shape)
    if not closes:
        pytest.skip("close() was never called here (test_close_is_called_* fails)")
    assert len(closes) == 1, f"close() called {len(closes)} times; events: {[e['event'] for e in events]}"


@pytest.mark.parametrize("shape", shape_params(WSGI_RAISING_SHAPES))
@spec(_SPEC, "MUST")
def test_close_is_called_when_iteration_raises(server, shape):
    """close() is called when the iterable raises, in its first next() or in the middle of the response.

    Evidence, not absence: the app's log must show the raise (the request reached the iterable)."""
    token, _ = _shape_run(server, shape)
    closes, events = _close_events(server, token, shape)
    assert any(e.get("event") == "script.end" and e.get("outcome") == "raised" for e in events), (
        f"no evidence the iterable ran and raised; events: {[e['event'] for e in events]}"
    )
    assert closes, f"close() was never called; events: {[e['event'] for e in events]}"


_ABORTED = {"chunked": [], "content-length": [["Content-Length", "10"]]}


@pytest.mark.parametrize("headers", list(_ABORTED.values()), ids=list(_ABORTED))
@spec("PEP 3333 §Error Handling (abort)", "POLICY")
def test_response_is_aborted_when_iteration_raises(server, headers):
    """POLICY (the text: the server "can then trap this (fatal) exception and abort the response"; no
    keyword): when the iterable raises after body bytes of a non-text response were sent, the response is
    aborted (connection closed, truncation visible), never completed as if it were whole.

    Evidence, not absence: the app's log must show it yielded its bytes (so there was a response to
    abort); a close before the app ran proves nothing."""
    token, ex, _ = run_script(
        server, [_sr("200 OK", *headers), ["yield", "abc"], ["raise", "mid-body"]], timeout=REPLY_TIMEOUT, wait=False
    )
    yielded = step(wait_steps(server, token, 2), 1)
    assert yielded and yielded.get("ok"), f"no evidence the app ran and yielded (step: {yielded}): {describe(ex)}"
    complete = [r for r in ex.final if r.status == 200]
    assert not complete, f"the failed response was framed as complete ({complete[0].framing}): {describe(ex)}"
    assert ex.closed, f"the connection stayed open after the aborted response: {describe(ex)}"


@pytest.fixture(scope="module")
def abandoned_stream(server):
    """A slow stream the client leaves after its first bytes: (close events, all events, time it left)."""
    token = new_token()
    steps = [_sr(), ["repeat", _STREAM_BLOCKS, [["yield", {"size": 1000}], ["sleep", _BLOCK_PAUSE]]]]
    with connect(server, timeout=REPLY_TIMEOUT) as sock:
        sock.sendall(script_request(server, steps, token=token))
        read_raw(sock, bool, timeout=REPLY_TIMEOUT, cap=4096)  # the first bytes, then leave
        time.sleep(0.2)
        left = time.time()
    closes, events = _closes(server, token, timeout=_STREAM_BLOCKS * _BLOCK_PAUSE + 4)
    return closes, events, left


@spec(_SPEC, "MUST")
def test_close_is_called_after_the_client_disconnects(server, abandoned_stream):
    """When the client goes away during a slow streamed response, the iterable's close() is still called."""
    closes, events, _ = abandoned_stream
    assert closes, f"close() was never called; events: {[e['event'] for e in events][-8:]}"


@spec(_SPEC + " (early disconnect)", "POLICY")
def test_iteration_stops_soon_after_the_client_disconnects(server, abandoned_stream):
    """After the client disconnects, the server stops iterating and calls close() within a few blocks,
    rather than producing the rest of the response for nobody. (Suite policy: PEP 3333 asks for close()
    when the request ends early and for apps to expect early close; it sets no deadline.)"""
    closes, _, left = abandoned_stream
    assert closes, "close() was never called"
    late = closes[0]["t"] - left
    assert late < _DISCONNECT_GRACE and not closes[0].get("exhausted"), (
        f"close() came {late:.1f}s after the disconnect, exhausted={closes[0].get('exhausted')} "
        f"({closes[0].get('items')} of {_STREAM_BLOCKS} blocks produced)"
    )


@pytest.mark.parametrize(
    "shape", shape_params(s for s in WSGI_CLOSING_SHAPES + WSGI_RAISING_SHAPES if s.closed_by == "wsgi.close")
)
@spec(_SPEC + " (wsgiref.validate)", "POLICY")
def test_no_next_after_close(server, shape):
    """The server never calls next() on the iterable after close(), whatever the shape. (wsgiref.validate
    asserts it; the PEP implies it.)"""
    token, _ = _shape_run(server, shape)
    closes, events = _close_events(server, token, shape)
    assert closes, f"close() was never called: {[e['event'] for e in events]}"
    assert not named(events, "wsgi.next_after_close"), [e["event"] for e in events]


# -- Content-Length and framing, in every shape ------------------------------------------------


def _length(size: int) -> list:
    return [["Content-Length", str(size)]]


@pytest.mark.parametrize("shape", shape_params(WSGI_BODY_SHAPES))
@spec("RFC 9112 §6.3", "DEFINED")
def test_body_matching_content_length_is_sent_whole(server, shape):
    """With a Content-Length equal to what the app hands over, the body arrives whole, exactly that long,
    and the connection stays usable: the request sent after it is answered (or the server closes after the
    response, saying so or not)."""
    _, ex = _shape_run(server, shape, _length(len(shape.body)), then=(ping(server),))
    resp = ex.first
    assert resp.status == 200 and resp.body == shape.body, describe(ex)
    assert resp.header("content-length") in (None, str(len(shape.body))), describe(ex)
    if len(ex.final) == 2:
        assert ex.final[1].body == b"ok", describe(ex)
    assert not ex.leftover, f"bytes after the response: {describe(ex)}"


@pytest.mark.parametrize("shape", shape_params(WSGI_BODY_SHAPES))
@spec(_CL, "SHOULD NOT")
def test_body_longer_than_content_length_is_not_sent(server, shape):
    """When the app hands over more than its Content-Length, no more than that many bytes are sent: the
    client never reads the excess as the start of the next response. A server may raise an error instead: no
    byte and a close, or a 5xx, after the app's log shows it took the whole body, is *not supported* (what such
    a server sends cannot be judged; a close is never a pass); without that log, a failure."""
    declared = len(shape.body) - 5
    token, ex = _shape_run(server, shape, _length(declared), then=(ping(server),))
    refused = (not ex.raw and ex.closed) or (ex.final and ex.first.status >= 500)
    if refused:
        _ran_to_its_end(server, token, wsgi_steps(shape, headers=_length(declared)), describe(ex))
        pytest.skip(
            f"not supported: the server refused the over-long body with an error (PEP 3333 allows it): {ex.raw[:120]!r}"
        )
    # evidence: a 200 framed by the app's Content-Length (what it carries is the other checks' business)
    assert ex.first.status == 200 and ex.first.header("content-length") == str(declared), describe(ex)
    assert not ex.leftover, f"bytes beyond Content-Length were sent: {describe(ex)}"
    if len(ex.final) == 2:
        assert ex.final[1].body == b"ok", f"bytes beyond Content-Length were sent: {describe(ex)}"


@pytest.mark.parametrize("shape", shape_params(WSGI_BODY_SHAPES))
@spec(_CL, "SHOULD")
def test_body_shorter_than_content_length_closes_the_connection(server, shape):
    """When the app hands over fewer bytes than its Content-Length, the server closes the connection
    promptly instead of reusing it (which would splice the next response into this body).

    Evidence, not absence: either the response's head (a 200 declaring the app's length) arrives, or the
    app's log shows every step ran, so the server took the whole short body (granian 2.8.7 sometimes closes
    before sending the truncated response: the connection is still not reused); a close before the app ran
    proves nothing."""
    declared = len(shape.body) + 10
    steps = wsgi_steps(shape, headers=_length(declared))
    token = new_token()

    def answered(buf: bytes) -> bool:  # the head and as many body bytes as the app handed over
        head, sep, body = buf.partition(b"\r\n\r\n")
        return bool(sep) and len(body) >= len(shape.body)

    with Connection(server.address, REPLY_TIMEOUT) as conn:
        conn.send(script_request(server, steps, token=token))
        # the response first (within the reply timeout), then the close (within 1.5 s of it)
        raw, end = read_raw(conn.sock, answered, timeout=REPLY_TIMEOUT)
        conn.buffer, conn.closed = raw, end in ("closed", "reset")
        closed = conn.wait_closed(1.5)
        raw = conn.buffer
    _file_wrapper_offered(server, token, steps)
    head, sep, after = raw.partition(b"\r\n\r\n")
    if sep:
        got = parse_head(head)
        assert got.status == 200 and got.header("content-length") == str(declared), (
            f"the truncated response is not a 200 declaring the app's {declared} bytes: {raw[:300]!r}"
        )
    else:
        _ran_to_its_end(server, token, steps, repr(raw[:300]))
    assert b"HTTP/1." not in after, f"the next response was spliced in: {raw[-300:]!r}"
    assert closed, f"the connection stayed open 1.5s after a short body: {raw[-200:]!r}"


@pytest.mark.parametrize("shape", shape_params(WSGI_BODY_SHAPES))
@spec("RFC 9112 §6.3", "DEFINED")
def test_body_without_content_length_is_framed(server, shape):
    """Without a Content-Length from the app, the body arrives whole and delimited (a computed length,
    chunked, or a close); a computed Content-Length is the body's length."""
    _, ex = _shape_run(server, shape, then=(ping(server),))
    assert ex.first.status == 200 and ex.first.body == shape.body, describe(ex)
    assert ex.first.header("content-length") in (None, str(len(shape.body))), describe(ex)
    if len(ex.final) == 2:
        assert ex.final[1].body == b"ok", describe(ex)


@spec(_SPEC, "SHOULD")
def test_binary_body_is_transmitted_unmodified(server):
    """Yielded bytes are sent unmodified: line endings, NUL, 0xFF and chunk-terminator look-alikes."""
    blocks = [b"a\r\nb\nc\rd", b"\x00\xff\x80", b"0\r\n\r\n", b"\r\n"]
    steps = [_sr()] + [["yield", {"b64": base64.b64encode(b).decode()}] for b in blocks]
    _, ex, _ = run_script(server, steps, then=(ping(server),), timeout=REPLY_TIMEOUT, wait=False)
    assert ex.first.body == b"".join(blocks), describe(ex)


@spec("PEP 3333 §Error Handling", "SHOULD")
def test_app_exception_before_output_is_trapped(server):
    """An exception escaping the app before any output is trapped: the server goes on serving."""
    run_script(server, [["raise", "before any output"]], timeout=REPLY_TIMEOUT, wait=False)
    _, after, _ = run_script(server, [_sr(), ["yield", "still here"]], timeout=REPLY_TIMEOUT, wait=False)
    assert after.first.body == b"still here", describe(after)


@spec("PEP 3333 §Error Handling (status)", "POLICY")
def test_app_exception_before_output_gives_a_server_error(server):
    """POLICY (the text asks the server to trap and log, not what to answer): an exception escaping the app
    before any output gets a 5xx response."""
    _, ex, _ = run_script(server, [["raise", "before any output"]], timeout=REPLY_TIMEOUT, wait=False)
    assert 500 <= ex.first.status < 600, describe(ex)


# -- wsgi.file_wrapper -------------------------------------------------------------------------


def _offered(event: dict | None) -> None:
    if event is not None and not event.get("ok") and "not in environ" in str(event.get("error")):
        pytest.skip("not supported: the server offers no wsgi.file_wrapper")


def _file_wrapper_run(server, options: dict | None = None, headers=(), name: str = fixtures.STATIC_SMALL):
    step_ = ["file_wrapper", name, options] if options else ["file_wrapper", name]
    token, ex, _ = run_script(server, [_sr("200 OK", *headers), step_], timeout=REPLY_TIMEOUT, wait=False)
    made = step(wait_steps(server, token, 2), 1)
    _offered(made)
    assert made is not None and made.get("ok"), f"wsgi.file_wrapper failed: {made}"
    return ex, events_until(server, token, ("file.close",), settle=0.2)


@spec(_FW, "MUST")
def test_file_wrapper_close_closes_the_file(server):
    """The iterable from wsgi.file_wrapper has a close() that calls the file's close(), once."""
    ex, events = _file_wrapper_run(server)
    assert ex.first.body == _SMALL, describe(ex)
    assert len(named(events, "file.close")) == 1, [e["event"] for e in events]


@spec(_FW, "SHOULD")
def test_file_wrapper_starts_at_the_current_position(server):
    """Transmission starts at the file's current position, not at its beginning."""
    ex, _ = _file_wrapper_run(server, {"seek": 10})
    assert ex.first.body == _SMALL[10:], describe(ex)


@spec(_FW, "SHOULD")
def test_file_wrapper_honours_content_length(server):
    """With a Content-Length, no more than that many bytes of the file are sent (from the current position)."""
    ex, _ = _file_wrapper_run(server, {"seek": 3}, headers=[["Content-Length", "7"]])
    assert ex.first.body == _SMALL[3:10], describe(ex)
    assert not ex.leftover, describe(ex)


@spec(_FW, "MUST")
def test_file_wrapper_works_without_fileno(server):
    """A file-like object with only read() and close() (no fileno, so no sendfile) is still sent whole."""
    ex, events = _file_wrapper_run(server, {"fileno": False})
    assert ex.first.body == _SMALL, describe(ex)
    assert len(named(events, "file.close")) == 1, [e["event"] for e in events]


@spec(_FW, "MUST")
def test_file_wrapper_accepts_a_block_size(server):
    """wsgi.file_wrapper(file, block_size) takes the optional block size and still sends the whole file."""
    ex, _ = _file_wrapper_run(server, {"block_size": 7, "fileno": False})
    assert ex.first.body == _SMALL, describe(ex)


@spec(_FW, "MUST NOT")
def test_discarded_file_wrapper_transmits_nothing(server):
    """A wsgi.file_wrapper result the app drops (as middleware may) sends nothing of the file."""
    token, ex, _ = run_script(
        server,
        [_sr(), ["discard_file_wrapper", fixtures.STATIC_SMALL], ["yield", "other"]],
        timeout=REPLY_TIMEOUT,
        wait=False,
    )
    _offered(step(wait_steps(server, token, 3), 1))
    assert ex.first.body == b"other", describe(ex)
    assert _SMALL[:20] not in ex.raw, describe(ex)
