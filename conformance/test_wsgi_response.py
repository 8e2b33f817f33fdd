"""WSGI responses: start_response, write(), header timing, exc_info, the iterable's close(), Content-Length
and wsgi.file_wrapper (PEP 3333 §The start_response() Callable, §The write() Callable, §Specification
Details, §Handling the Content-Length Header, §Error Handling, §Unicode Issues, §Optional
Platform-Specific File Handling).

The app side is the fixture's ``/script`` WSGI interpreter (fixtures/apps/_wsgi_script.py): eager steps
run inside the application call, steps after the first ``yield``/``lazy`` run inside ``next()`` of the
returned iterable, and every start_response/write call, ``close()`` and ``next()`` after close is in the
event log. Checks assert the wire (timing, framing, bytes) and the app's view (what start_response raised).
Generic wire rules that hold for every interface (Date, HEAD, HTTP/1.0 framing, CR/LF splitting,
streaming) live in test_http1_responses.py and test_streaming.py; these are the WSGI-specific ones.
"""
from __future__ import annotations

import base64
import socket
import time

import pytest

import fixtures

from .http1 import Connection, build_request
from .markers import interfaces, needs, spec
from .scripted import new_token, script_request, step, wait_steps
from .wire import REPLY_TIMEOUT, describe

pytestmark = [interfaces("wsgi"), needs("http1")]

_SR = "PEP 3333 §The start_response() Callable"
_SPEC = "PEP 3333 §Specification Details"
_CL = "PEP 3333 §Handling the Content-Length Header"
_FW = "PEP 3333 §Optional Platform-Specific File Handling"
_OCTETS = ["Content-Type", "application/octet-stream"]
_EXC_MARK = "gatecheck: exception handed to start_response as exc_info"  # fixtures/apps/_wsgi_script.py
_PAUSE = 1.0           # seconds the app sleeps where a check measures timing
_DISCONNECT_GRACE = 2.5
_SMALL = (fixtures.STATIC_DIR / fixtures.STATIC_SMALL).read_bytes()


def _sr(status: str = "200 OK", *headers, opts=None) -> list:
    step_ = ["start_response", status, [_OCTETS, *map(list, headers)]]
    return step_ + [opts] if opts else step_


def _send(server, steps: list, *, method: str = "GET", version: str = "HTTP/1.1", then: bytes = b"",
          count: int = 1, timeout: float = REPLY_TIMEOUT):
    """Send a scripted request (plus ``then`` pipelined); return (token, exchange)."""
    token = new_token()
    data = script_request(server, steps, token=token, method=method, version=version)
    with Connection(server.address, timeout) as conn:
        conn.send(data + then)
        ex = conn.read_responses(count, methods=[method] + ["GET"] * (count - 1))
    return token, ex


def _events(server, token: str, until=("wsgi.close",), timeout: float = REPLY_TIMEOUT) -> list:
    """The token's events once one named in ``until`` was logged (or whatever is there at the deadline)."""
    deadline = time.monotonic() + timeout
    while True:
        events = fixtures.read_events(server.event_dir, token)
        if any(e.get("event") in until for e in events) or time.monotonic() >= deadline:
            return events
        time.sleep(0.02)


def _named(events: list, name: str) -> list:
    return [e for e in events if e.get("event") == name]


def _start_response_calls(events: list) -> list:
    return _named(events, "start_response")


def _ping(server) -> bytes:
    return build_request("GET", "/ping", host=server.authority)


def _timed(server, steps: list, marker: bytes, timeout: float = 5.0) -> tuple:
    """(seconds to the first response byte, seconds to ``marker``, bytes) for one scripted GET."""
    data = script_request(server, steps, token=None)
    first = seen = None
    buf = b""
    with socket.create_connection(server.address, timeout=timeout) as sock:
        start = time.monotonic()
        sock.sendall(data)
        while seen is None and time.monotonic() - start < timeout:
            sock.settimeout(max(0.01, timeout - (time.monotonic() - start)))
            try:
                chunk = sock.recv(65536)
            except socket.timeout:
                break
            if not chunk:
                break
            if first is None:
                first = time.monotonic() - start
            buf += chunk
            if marker in buf.partition(b"\r\n\r\n")[2]:
                seen = time.monotonic() - start
    return first, seen, buf


# -- start_response and write() ----------------------------------------------------------------

@spec("PEP 3333 §The write() Callable", "MUST")
def test_start_response_returns_a_write_callable_that_sends(server):
    """start_response returns a write(body_data) callable; bytes passed to it are sent as the body."""
    token, ex = _send(server, [_sr(), ["write", "written"], ["return_list", []]])
    write = step(wait_steps(server, token, 3), 1)
    assert write is not None and write.get("ok"), f"write() failed: {write and write.get('error')}"
    assert ex.first.body == b"written", describe(ex)


@spec("PEP 3333 §The write() Callable", "MUST")
def test_write_output_precedes_iterable_output(server):
    """Output passed to write() is sent before anything the returned iterable yields."""
    token, ex = _send(server, [_sr(), ["write", "a"], ["write", "b"], ["yield", "c"], ["yield", "d"]])
    assert ex.first.body == b"abcd", describe(ex)


@spec("PEP 3333 §The write() Callable", "MUST")
def test_write_is_transmitted_while_the_app_proceeds(server):
    """Data passed to write() is sent (or being sent) while the app goes on: it reaches the client before
    the app returns."""
    steps = [_sr(), ["write", "early-bytes"], ["sleep", _PAUSE * 1.5], ["return_list", ["late"]]]
    _, seen, buf = _timed(server, steps, b"early-bytes")
    assert seen is not None, f"write() output never arrived: {buf[:300]!r}"
    assert seen < _PAUSE, f"write() output arrived after {seen:.2f}s; the app returned only after {_PAUSE * 1.5}s"


# -- header timing -----------------------------------------------------------------------------

@spec(_SR, "MUST NOT")
def test_headers_wait_for_the_first_non_empty_block(server):
    """start_response does not transmit the headers: they go out with the first non-empty block, here
    yielded one pause after start_response returned."""
    first, _, buf = _timed(server, [_sr(), ["lazy"], ["sleep", _PAUSE], ["yield", "a"]], b"a")
    assert first is not None, f"no response: {buf[:200]!r}"
    assert first >= _PAUSE * 0.8, f"headers arrived after {first:.2f}s, before the first block ({_PAUSE}s)"


@spec(_SR, "MUST NOT")
def test_empty_blocks_do_not_trigger_the_headers(server):
    """An empty bytestring is not the first block: headers still wait for the first non-empty one."""
    first, _, buf = _timed(server, [_sr(), ["yield", ""], ["sleep", _PAUSE], ["yield", "a"]], b"a")
    assert first is not None, f"no response: {buf[:200]!r}"
    assert first >= _PAUSE * 0.8, (f"headers arrived after {first:.2f}s, right after an empty block and "
                                   f"before the first non-empty one ({_PAUSE}s)")


_EMPTY_BODIES = {"empty-blocks": [["yield", ""], ["yield", ""]], "no-blocks": [["return_list", []]]}


@pytest.mark.parametrize("tail", list(_EMPTY_BODIES.values()), ids=list(_EMPTY_BODIES))
@spec(_SR, "MUST")
def test_empty_body_still_sends_the_headers(server, tail):
    """An iterable that ends without a non-empty block still gets its status and headers sent, with an
    empty body."""
    _, ex = _send(server, [_sr("203 Gatecheck", ["X-Gatecheck", "empty"]), *tail])
    resp = ex.first
    assert resp.status == 203 and resp.header("x-gatecheck") == "empty" and resp.body == b"", describe(ex)


@spec(_SPEC, "MUST")
def test_start_response_inside_the_first_iteration_is_honoured(server):
    """start_response may be called inside the iterable's first next(): its status and headers are used."""
    _, ex = _send(server, [["lazy"], _sr("201 Created", ["X-Lazy", "yes"]), ["yield", "lazy-body"]])
    resp = ex.first
    assert resp.status == 201 and resp.header("x-lazy") == "yes", describe(ex)
    assert resp.body == b"lazy-body", describe(ex)


# -- exc_info ----------------------------------------------------------------------------------

@spec(_SR, "SHOULD")
def test_exc_info_before_headers_replaces_status_and_headers(server):
    """start_response(..., exc_info) before anything was sent replaces the stored status and headers."""
    steps = [_sr("200 OK", ["X-First", "1"]),
             ["start_response_exc_info", "500 Internal Server Error", [_OCTETS, ["X-Second", "2"]]],
             ["yield", "error page"]]
    token, ex = _send(server, steps)
    resp = ex.first
    assert resp.status == 500 and resp.header("x-second") == "2", describe(ex)
    assert resp.header("x-first") is None, f"the first call's headers were kept: {describe(ex)}"
    assert len(resp.header_all("content-type")) == 1, describe(ex)


_LATE_EXC = [_sr(), ["yield", "sent"], ["start_response_exc_info", "500 Internal Server Error"], ["yield", "x"]]


@spec(_SR, "MUST")
def test_exc_info_after_headers_raises(server):
    """start_response(..., exc_info) after the headers were sent raises instead of changing the response."""
    token, ex = _send(server, _LATE_EXC)
    calls = _start_response_calls(_events(server, token))
    assert len(calls) == 2, f"start_response calls logged: {calls}"
    assert calls[1].get("ok") is False, f"the late start_response(exc_info) returned normally: {describe(ex)}"


@spec(_SR, "SHOULD")
def test_exc_info_after_headers_reraises_the_original_exception(server):
    """The late start_response(..., exc_info) re-raises the exception it was handed."""
    token, _ = _send(server, _LATE_EXC)
    calls = _start_response_calls(_events(server, token))
    assert len(calls) == 2 and calls[1].get("ok") is False, f"start_response did not raise: {calls}"
    error = calls[1]["error"]
    assert error["type"] == "RuntimeError" and error["message"] == _EXC_MARK, f"raised {error} instead"


@spec(_SR, "MUST")
def test_second_start_response_without_exc_info_raises(server):
    """Calling start_response a second time without exc_info is a fatal error: the call raises."""
    token, ex = _send(server, [_sr("200 OK"), _sr("500 Internal Server Error"), ["yield", "x"]])
    calls = _start_response_calls(_events(server, token))
    assert len(calls) == 2, f"start_response calls logged: {calls}"
    assert calls[1].get("ok") is False, f"the second start_response returned normally: {describe(ex)}"


# -- headers the app must not send, or cannot --------------------------------------------------

_HOP_BY_HOP = [("Connection", "close"), ("Keep-Alive", "timeout=5"), ("Transfer-Encoding", "chunked"),
               ("Upgrade", "gatecheck/1")]


@pytest.mark.parametrize("name,value", _HOP_BY_HOP, ids=[h[0].lower() for h in _HOP_BY_HOP])
@spec("PEP 3333 §Other HTTP Features", "SHOULD")
def test_hop_by_hop_header_from_the_app_is_an_error(server, name, value):
    """A hop-by-hop header from the app is a fatal error: start_response raises."""
    token, ex = _send(server, [_sr("200 OK", [name, value], opts={"reraise": True}), ["yield", "x"]])
    calls = _start_response_calls(_events(server, token, until=("request.end",)))
    assert calls, "start_response was never logged"
    assert calls[0].get("ok") is False, f"start_response accepted {name}: {value}; wire: {describe(ex)}"


_INVALID = {"cr-lf-value": ("X-Bad", "a\r\nX-Injected: 1"), "lf-value": ("X-Bad", "a\nX-Injected: 1"),
            "colon-in-name": ("X-Bad:Name", "v"), "space-in-name": ("X Bad", "v")}


@pytest.mark.parametrize("name,value", list(_INVALID.values()), ids=list(_INVALID))
@spec(_SR, "SHOULD")
def test_invalid_header_is_rejected_when_start_response_is_called(server, name, value):
    """The server checks headers when start_response is called, so an invalid one (CR/LF in a value, a
    colon or space in a name) raises while the app can still react."""
    token, ex = _send(server, [_sr("200 OK", [name, value], opts={"reraise": True}), ["yield", "x"]])
    calls = _start_response_calls(_events(server, token, until=("request.end",)))
    assert calls and calls[0].get("ok") is False, f"start_response accepted {name!r}: {value!r}; {describe(ex)}"
    assert b"\nx-injected" not in ex.raw.lower(), f"the header split the response: {describe(ex)}"


_NON_LATIN1 = {"status": (["start_response", "200 O\u20acK", [_OCTETS]]),
               "header-value": _sr("200 OK", ["X-Euro", "caf\u20ac"]),
               "header-name": _sr("200 OK", ["X-\u20ac", "v"])}


@pytest.mark.parametrize("sr", list(_NON_LATIN1.values()), ids=list(_NON_LATIN1))
@spec("PEP 3333 §Unicode Issues", "MUST")
def test_non_latin1_status_or_header_is_an_error(server, sr):
    """A status or header with a code point above U+00FF is a fatal error: never a normal 200 response,
    never the text encoded some other way on the wire."""
    token, ex = _send(server, [sr + [{"reraise": True}], ["yield", "x"]])
    complete_ok = [r for r in ex.final if r.status == 200]
    assert not complete_ok, f"sent a normal 200 for a non-latin-1 {sr}: {describe(ex)}"
    assert "\u20ac".encode() not in ex.raw, f"the app's text reached the wire as UTF-8: {describe(ex)}"


# -- close() -----------------------------------------------------------------------------------

@spec(_SPEC, "MUST")
def test_close_is_called_once_after_a_complete_response(server):
    """The iterable's close() is called exactly once when the response is complete."""
    token, ex = _send(server, [_sr(), ["yield", "a"], ["yield", "b"]])
    assert ex.first.body == b"ab", describe(ex)
    events = _events(server, token)
    time.sleep(0.2)  # a second close() would follow the first
    closes = _named(fixtures.read_events(server.event_dir, token), "wsgi.close")
    assert len(closes) == 1, f"close() called {len(closes)} times; events: {[e['event'] for e in events]}"


@spec(_SPEC, "MUST")
def test_close_is_called_once_when_iteration_raises(server):
    """close() is called exactly once when the iterable raises in the middle of the response."""
    token, _ = _send(server, [_sr(), ["yield", "a"], ["raise", "mid-body"], ["yield", "b"]])
    events = _events(server, token)
    time.sleep(0.2)
    closes = _named(fixtures.read_events(server.event_dir, token), "wsgi.close")
    assert len(closes) == 1, f"close() called {len(closes)} times; events: {[e['event'] for e in events]}"


_ABORTED = {"chunked": [], "content-length": [["Content-Length", "10"]]}


@pytest.mark.parametrize("headers", list(_ABORTED.values()), ids=list(_ABORTED))
@spec("PEP 3333 §Error Handling", "SHOULD")
def test_response_is_aborted_when_iteration_raises(server, headers):
    """When the iterable raises after body bytes of a non-text response were sent, the response is
    aborted (connection closed, truncation visible), never completed as if it were whole."""
    token, ex = _send(server, [_sr("200 OK", *headers), ["yield", "abc"], ["raise", "mid-body"]])
    complete = [r for r in ex.final if r.status == 200]
    assert not complete, f"the failed response was framed as complete ({complete[0].framing}): {describe(ex)}"
    assert ex.closed, f"the connection stayed open after the aborted response: {describe(ex)}"


def _disconnect_during_stream(server) -> tuple:
    """Start a 5 s stream (100 blocks, 50 ms apart), drop the connection after the first bytes; return
    (token, time.time() of the drop)."""
    token = new_token()
    steps = [_sr(), ["repeat", 100, [["yield", {"size": 1000}], ["sleep", 0.05]]]]
    data = script_request(server, steps, token=token)
    with socket.create_connection(server.address, timeout=REPLY_TIMEOUT) as sock:
        sock.sendall(data)
        sock.recv(4096)
        time.sleep(0.2)
        dropped = time.time()
    return token, dropped


@spec(_SPEC, "MUST")
def test_close_is_called_after_the_client_disconnects(server):
    """When the client goes away during a slow streamed response, the iterable's close() is still called,
    exactly once."""
    token, _ = _disconnect_during_stream(server)
    events = _events(server, token, timeout=8.0)
    time.sleep(0.2)
    closes = _named(fixtures.read_events(server.event_dir, token), "wsgi.close")
    assert len(closes) == 1, f"close() called {len(closes)} times; events: {[e['event'] for e in events][-8:]}"


@spec(_SPEC + " (early disconnect)", "POLICY")
def test_iteration_stops_soon_after_the_client_disconnects(server):
    """After the client disconnects, the server stops iterating and calls close() within a few blocks,
    rather than producing the rest of the response for nobody. (Suite policy: PEP 3333 asks for close()
    when the request ends early and for apps to expect early close; it sets no deadline.)"""
    token, dropped = _disconnect_during_stream(server)
    events = _events(server, token, timeout=8.0)
    closes = _named(events, "wsgi.close")
    assert closes, "close() was never called"
    late = closes[0]["t"] - dropped
    assert late < _DISCONNECT_GRACE and not closes[0].get("exhausted"), (
        f"close() came {late:.1f}s after the disconnect, exhausted={closes[0].get('exhausted')} "
        f"({closes[0].get('items')} of 100 blocks produced)")


_CLOSE_RUNS = {"complete": [_sr(), ["yield", "a"]], "error": [_sr(), ["yield", "a"], ["raise", "x"]]}


@pytest.mark.parametrize("steps", list(_CLOSE_RUNS.values()), ids=list(_CLOSE_RUNS))
@spec(_SPEC + " (wsgiref.validate)", "POLICY")
def test_no_next_after_close(server, steps):
    """The server never calls next() on the iterable after close(). (wsgiref.validate asserts it; the
    PEP implies it.)"""
    token, _ = _send(server, steps)
    _events(server, token)
    time.sleep(0.2)
    events = fixtures.read_events(server.event_dir, token)
    assert not _named(events, "wsgi.next_after_close"), [e["event"] for e in events]


# -- Content-Length ----------------------------------------------------------------------------

@spec(_CL, "SHOULD NOT")
def test_body_longer_than_content_length_is_not_sent(server):
    """When the app yields more than its Content-Length, no more than that many bytes are sent: the client
    never reads the excess as the start of the next response."""
    steps = [_sr("200 OK", ["Content-Length", "3"]), ["yield", "abc"], ["yield", "EXCESS"]]
    _, ex = _send(server, steps, then=_ping(server), count=2)
    assert b"EXCESS" not in ex.raw, f"bytes beyond Content-Length were sent: {describe(ex)}"
    if len(ex.final) == 2:
        assert ex.final[0].body == b"abc" and ex.final[1].body == b"ok", describe(ex)


@spec(_CL, "SHOULD")
def test_write_past_content_length_raises(server):
    """write() within the declared Content-Length works; a write() past it raises."""
    steps = [_sr("200 OK", ["Content-Length", "3"]), ["write", "ab"], ["write", "cdef"], ["return_list", []]]
    token, ex = _send(server, steps)
    writes = _named(_events(server, token, until=("request.end",)), "write")
    assert len(writes) == 2, f"write() calls logged: {writes}"
    assert writes[0].get("ok"), f"write() within Content-Length failed: {writes[0].get('error')}"
    assert writes[1].get("ok") is False, f"write() past Content-Length returned; {describe(ex)}"
    assert b"def" not in ex.raw, describe(ex)


@spec(_CL, "SHOULD")
def test_body_shorter_than_content_length_closes_the_connection(server):
    """When the app sends fewer bytes than its Content-Length, the server closes the connection promptly
    instead of reusing it (which would splice the next response into this body)."""
    steps = [_sr("200 OK", ["Content-Length", "10"]), ["yield", "abc"]]
    with Connection(server.address, REPLY_TIMEOUT) as conn:
        conn.send(script_request(server, steps, token=None) + _ping(server))
        closed = conn.wait_closed(1.5)
        raw = conn.buffer
    assert b"HTTP/1." not in raw.partition(b"\r\n\r\nabc")[2], f"the next response was spliced in: {raw!r}"
    assert closed, f"the connection stayed open 1.5s after a short body: {raw[-200:]!r}"


@spec("RFC 9112 §6.3", "MUST")
def test_one_element_list_without_length_is_framed(server):
    """A one-element list without Content-Length arrives whole and self-delimited (computed length or
    chunked) or close-delimited; a computed Content-Length is the element's length."""
    _, ex = _send(server, [_sr(), ["return_list", ["hello world"]]], then=_ping(server), count=2)
    resp = ex.first
    assert resp.body == b"hello world", describe(ex)
    assert resp.header("content-length") in (None, "11"), describe(ex)
    if len(ex.final) == 2:
        assert ex.final[1].body == b"ok", describe(ex)


@spec(_SPEC, "SHOULD")
def test_binary_body_is_transmitted_unmodified(server):
    """Yielded bytes are sent unmodified: line endings, NUL, 0xFF and chunk-terminator look-alikes."""
    blocks = [b"a\r\nb\nc\rd", b"\x00\xff\x80", b"0\r\n\r\n", b"\r\n"]
    steps = [_sr()] + [["yield", {"b64": base64.b64encode(b).decode()}] for b in blocks]
    _, ex = _send(server, steps, then=_ping(server), count=2)
    assert ex.first.body == b"".join(blocks), describe(ex)


@spec("PEP 3333 §Error Handling", "SHOULD")
def test_app_exception_before_output_gives_a_server_error(server):
    """An exception escaping the app before any output is trapped: the client gets a 5xx response and the
    server goes on serving."""
    _, ex = _send(server, [["raise", "before any output"]])
    assert 500 <= ex.first.status < 600, describe(ex)
    _, after = _send(server, [_sr(), ["yield", "still here"]])
    assert after.first.body == b"still here", describe(after)


# -- wsgi.file_wrapper -------------------------------------------------------------------------

def _file_wrapper_run(server, options: dict | None = None, headers=(), name: str = fixtures.STATIC_SMALL):
    step_ = ["file_wrapper", name, options] if options else ["file_wrapper", name]
    token, ex = _send(server, [_sr("200 OK", *headers), step_])
    fw = step(wait_steps(server, token, 2), 1)
    if fw is not None and not fw.get("ok") and "not in environ" in str(fw.get("error")):
        pytest.skip("not supported: the server offers no wsgi.file_wrapper")
    assert fw is not None and fw.get("ok"), f"wsgi.file_wrapper failed: {fw}"
    return ex, _events(server, token, until=("file.close",))


@spec(_FW, "MUST")
def test_file_wrapper_close_closes_the_file(server):
    """The iterable from wsgi.file_wrapper has a close() that calls the file's close(), once."""
    ex, events = _file_wrapper_run(server)
    assert ex.first.body == _SMALL, describe(ex)
    assert len(_named(events, "file.close")) == 1, [e["event"] for e in events]


@spec(_FW, "MUST")
def test_file_wrapper_starts_at_the_current_position(server):
    """Transmission starts at the file's current position, not at its beginning."""
    ex, _ = _file_wrapper_run(server, {"seek": 10})
    assert ex.first.body == _SMALL[10:], describe(ex)


@spec(_FW, "MUST")
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
    assert len(_named(events, "file.close")) == 1, [e["event"] for e in events]


@spec(_FW, "MUST")
def test_file_wrapper_accepts_a_block_size(server):
    """wsgi.file_wrapper(file, block_size) takes the optional block size and still sends the whole file."""
    ex, _ = _file_wrapper_run(server, {"block_size": 7, "fileno": False})
    assert ex.first.body == _SMALL, describe(ex)


@spec(_FW, "MUST NOT")
def test_discarded_file_wrapper_transmits_nothing(server):
    """A wsgi.file_wrapper result the app drops (as middleware may) sends nothing of the file."""
    token, ex = _send(server, [_sr(), ["discard_file_wrapper", fixtures.STATIC_SMALL], ["yield", "other"]])
    made = step(wait_steps(server, token, 3), 1)
    if made is not None and not made.get("ok") and "not in environ" in str(made.get("error")):
        pytest.skip("not supported: the server offers no wsgi.file_wrapper")
    assert ex.first.body == b"other", describe(ex)
    assert _SMALL[:20] not in ex.raw, describe(ex)
