"""WSGI start_response and write(): what the server sends, when, and what it refuses (PEP 3333 §The
start_response() Callable, §The write() Callable, §Specification Details, §Other HTTP Features, §Unicode
Issues, §Handling the Content-Length Header).

The app side is the fixture's ``/script`` WSGI interpreter (fixtures/apps/_wsgi_script.py): eager steps run
inside the application call, steps after the first ``yield``/``lazy`` inside ``next()`` of the returned
iterable, and every start_response/write call is in the event log with what it returned or raised. Checks
assert the wire (timing, status, headers, bytes) and the app's view (did start_response raise). Generic
wire rules that hold for every interface (Date, HEAD, HTTP/1.0 framing, CR/LF splitting, streaming) live
in test_http1_responses.py and test_streaming.py; the iterable's close(), Content-Length and
wsgi.file_wrapper in test_wsgi_iterable.py.
"""

from __future__ import annotations

import time

import pytest

from gatecheck.conformance.app import events_until, named, new_token, run_script, script_request, step, wait_steps
from gatecheck.conformance.client.connect import connect
from gatecheck.conformance.client.http1 import ParseError, read_raw
from gatecheck.conformance.helpers.wire import REPLY_TIMEOUT, describe
from gatecheck.conformance.spec.markers import interfaces, needs, spec
from gatecheck.conformance.spec.observables import observable_row

pytestmark = [interfaces("wsgi"), needs("http1")]

_SR = "PEP 3333 §The start_response() Callable"
_SPEC = "PEP 3333 §Specification Details"
_CL = "PEP 3333 §Handling the Content-Length Header"
_OCTETS = ["Content-Type", "application/octet-stream"]
_EXC_MARK = "gatecheck: exception handed to start_response as exc_info"  # fixtures/apps/_wsgi_script.py
_PAUSE = 1.0  # seconds the app sleeps where a check measures timing


def _sr(status: str = "200 OK", *headers, opts=None) -> list:
    step_ = ["start_response", status, [_OCTETS, *map(list, headers)]]
    return step_ + [opts] if opts else step_


def _calls(server, token: str, until=("wsgi.close",)) -> list:
    """The logged start_response calls of the request."""
    return named(events_until(server, token, until), "start_response")


def _timed(server, steps: list, marker: bytes, end: bytes, timeout: float = 5.0) -> tuple:
    """(seconds to the first response byte, seconds to ``marker`` in the body, bytes) for one scripted GET;
    reading stops once ``end`` arrived (the response is over) or after ``timeout``."""
    data = script_request(server, steps, token=None)
    first = seen = None

    def over(buf) -> bool:  # called after every read: note the first byte and the marker
        nonlocal first, seen
        first = time.monotonic() - start if first is None and buf else first
        body = buf.partition(b"\r\n\r\n")[2]
        if seen is None and marker in body:
            seen = time.monotonic() - start
        return end in body

    with connect(server, timeout=timeout) as sock:
        start = time.monotonic()
        sock.sendall(data)
        buf, _ = read_raw(sock, over, timeout=timeout)
    return first, seen, buf


# -- start_response and write() ----------------------------------------------------------------


@spec("PEP 3333 §The write() Callable", "MUST")
def test_start_response_returns_a_write_callable_that_sends(server):
    """start_response returns a write(body_data) callable; bytes passed to it are sent as the body."""
    token, ex, _ = run_script(
        server, [_sr(), ["write", "written"], ["return_list", []]], timeout=REPLY_TIMEOUT, wait=False
    )
    write = step(wait_steps(server, token, 3), 1)
    assert write is not None and write.get("ok"), f"write() failed: {write and write.get('error')}"
    assert ex.first.body == b"written", describe(ex)


@spec("PEP 3333 §The write() Callable", "DEFINED")
def test_write_output_precedes_iterable_output(server):
    """Output passed to write() is sent before anything the returned iterable yields."""
    token, ex, _ = run_script(
        server,
        [_sr(), ["write", "a"], ["write", "b"], ["yield", "c"], ["yield", "d"]],
        timeout=REPLY_TIMEOUT,
        wait=False,
    )
    assert ex.first.body == b"abcd", describe(ex)


@spec("PEP 3333 §The write() Callable", "MUST")
def test_write_is_transmitted_while_the_app_proceeds(server):
    """Data passed to write() is sent (or being sent) while the app goes on: it reaches the client before
    the app returns."""
    steps = [_sr(), ["write", "early-bytes"], ["sleep", _PAUSE * 1.5], ["return_list", ["late"]]]
    _, seen, buf = _timed(server, steps, b"early-bytes", end=b"late")
    assert seen is not None, f"write() output never arrived: {buf[:300]!r}"
    assert seen < _PAUSE, f"write() output arrived after {seen:.2f}s; the app returned only after {_PAUSE * 1.5}s"


# -- header timing -----------------------------------------------------------------------------


@spec(_SR, "MUST NOT")
def test_headers_wait_for_the_first_non_empty_block(server):
    """start_response does not transmit the headers: they go out with the first non-empty block, here
    yielded one pause after start_response returned."""
    first, _, buf = _timed(server, [_sr(), ["lazy"], ["sleep", _PAUSE], ["yield", "a"]], b"a", end=b"a")
    assert first is not None, f"no response: {buf[:200]!r}"
    assert first >= _PAUSE * 0.8, f"headers arrived after {first:.2f}s, before the first block ({_PAUSE}s)"


@spec(_SR, "MUST NOT")
def test_empty_blocks_do_not_trigger_the_headers(server):
    """An empty bytestring is not the first block: headers still wait for the first non-empty one."""
    first, _, buf = _timed(server, [_sr(), ["yield", ""], ["sleep", _PAUSE], ["yield", "a"]], b"a", end=b"a")
    assert first is not None, f"no response: {buf[:200]!r}"
    assert first >= _PAUSE * 0.8, (
        f"headers arrived after {first:.2f}s, right after an empty block and before the first non-empty one ({_PAUSE}s)"
    )


_EMPTY_BODIES = {"empty-blocks": [["yield", ""], ["yield", ""]], "no-blocks": [["return_list", []]]}


@pytest.mark.parametrize("tail", list(_EMPTY_BODIES.values()), ids=list(_EMPTY_BODIES))
@spec(_SR, "DEFINED")
def test_empty_body_still_sends_the_headers(server, tail):
    """An iterable that ends without a non-empty block still gets its status and headers sent, with an
    empty body."""
    _, ex, _ = run_script(
        server, [_sr("203 Gatecheck", ["X-Gatecheck", "empty"]), *tail], timeout=REPLY_TIMEOUT, wait=False
    )
    resp = ex.first
    assert resp.status == 203 and resp.header("x-gatecheck") == "empty" and resp.body == b"", describe(ex)


@spec(_SPEC, "MUST NOT")
def test_start_response_inside_the_first_iteration_is_honoured(server):
    """start_response may be called inside the iterable's first next(): its status and headers are used."""
    _, ex, _ = run_script(
        server,
        [["lazy"], _sr("201 Created", ["X-Lazy", "yes"]), ["yield", "lazy-body"]],
        timeout=REPLY_TIMEOUT,
        wait=False,
    )
    resp = ex.first
    assert resp.status == 201 and resp.header("x-lazy") == "yes", describe(ex)
    assert resp.body == b"lazy-body", describe(ex)


# -- exc_info ----------------------------------------------------------------------------------


@spec(_SR, "SHOULD")
def test_exc_info_before_headers_replaces_status_and_headers(server):
    """start_response(..., exc_info) before anything was sent replaces the stored status and headers (a row of
    dimension 5's table, conformance/spec/observables.py: the status is the one the error handler names)."""
    row = observable_row("test_wsgi_response.py::test_exc_info_before_headers_replaces_status_and_headers")
    token, ex, _ = run_script(server, [list(s) for s in row.steps], timeout=REPLY_TIMEOUT, wait=False)
    resp = ex.first
    assert resp.status in row.allowed and resp.header("x-second") == "2", describe(ex)
    assert resp.header("x-first") is None, f"the first call's headers were kept: {describe(ex)}"
    assert len(resp.header_all("content-type")) == 1, describe(ex)


_LATE_EXC = [_sr(), ["yield", "sent"], ["start_response_exc_info", "500 Internal Server Error"], ["yield", "x"]]


@spec(_SR, "MUST")
def test_exc_info_after_headers_raises(server):
    """start_response(..., exc_info) after the headers were sent raises instead of changing the response."""
    token, ex, _ = run_script(server, _LATE_EXC, timeout=REPLY_TIMEOUT, wait=False)
    calls = _calls(server, token)
    assert len(calls) == 2, f"start_response calls logged: {calls}"
    assert calls[1].get("ok") is False, f"the late start_response(exc_info) returned normally: {describe(ex)}"


@spec(_SR, "SHOULD")
def test_exc_info_after_headers_reraises_the_original_exception(server):
    """The late start_response(..., exc_info) re-raises the exception it was handed."""
    token, _, _ = run_script(server, _LATE_EXC, timeout=REPLY_TIMEOUT, wait=False)
    calls = _calls(server, token)
    assert len(calls) == 2 and calls[1].get("ok") is False, f"start_response did not raise: {calls}"
    error = calls[1]["error"]
    assert error["type"] == "RuntimeError" and error["message"] == _EXC_MARK, f"raised {error} instead"


@spec(_SR, "POLICY")
def test_second_start_response_without_exc_info_raises(server):
    """POLICY (the text calls it "a fatal error" of the application, not what the server does; its example
    gateway raises): calling start_response a second time without exc_info raises."""
    token, ex, _ = run_script(
        server, [_sr("200 OK"), _sr("500 Internal Server Error"), ["yield", "x"]], timeout=REPLY_TIMEOUT, wait=False
    )
    calls = _calls(server, token)
    assert len(calls) == 2, f"start_response calls logged: {calls}"
    assert calls[1].get("ok") is False, f"the second start_response returned normally: {describe(ex)}"


# -- headers the app must not send, or cannot --------------------------------------------------

_HOP_BY_HOP = [
    ("Connection", "close"),
    ("Keep-Alive", "timeout=5"),
    ("Transfer-Encoding", "chunked"),
    ("Upgrade", "gatecheck/1"),
]


@pytest.mark.parametrize("name,value", _HOP_BY_HOP, ids=[h[0].lower() for h in _HOP_BY_HOP])
@spec(_SR, "SHOULD")
def test_hop_by_hop_header_from_the_app_is_an_error(server, name, value):
    """A hop-by-hop header from the app is a fatal error: start_response raises."""
    token, ex, _ = run_script(
        server,
        [_sr("200 OK", [name, value], opts={"reraise": True}), ["yield", "x"]],
        timeout=REPLY_TIMEOUT,
        wait=False,
    )
    calls = _calls(server, token, until=("request.end",))
    assert calls, "start_response was never logged"
    assert calls[0].get("ok") is False, f"start_response accepted {name}: {value}; wire: {describe(ex)}"


_INVALID = {
    "cr-lf-value": ("X-Bad", "a\r\nX-Injected: 1"),
    "lf-value": ("X-Bad", "a\nX-Injected: 1"),
    "colon-in-name": ("X-Bad:Name", "v"),
    "space-in-name": ("X Bad", "v"),
}


@pytest.mark.parametrize("name,value", list(_INVALID.values()), ids=list(_INVALID))
@spec(_SR, "SHOULD")
def test_invalid_header_is_rejected_when_start_response_is_called(server, name, value):
    """The server checks headers when start_response is called, so an invalid one (CR/LF in a value, a
    colon or space in a name) raises while the app can still react."""
    token, ex, _ = run_script(
        server,
        [_sr("200 OK", [name, value], opts={"reraise": True}), ["yield", "x"]],
        timeout=REPLY_TIMEOUT,
        wait=False,
    )
    calls = _calls(server, token, until=("request.end",))
    assert calls and calls[0].get("ok") is False, f"start_response accepted {name!r}: {value!r}; {describe(ex)}"


@pytest.mark.parametrize("name,value", list(_INVALID.values()), ids=list(_INVALID))
@spec("RFC 9110 §2.2", "MUST NOT")
def test_invalid_header_never_splits_the_response(server, name, value):
    """An invalid header from the app (CR/LF in a value, a colon or space in a name) never puts an injected
    field line on the wire, whatever the server does with it.

    Evidence, not absence: the app's log must show its start_response call (the server was handed the
    header); a close before the app ran proves nothing."""
    token, ex, _ = run_script(
        server,
        [_sr("200 OK", [name, value], opts={"reraise": True}), ["yield", "x"]],
        timeout=REPLY_TIMEOUT,
        wait=False,
    )
    assert _calls(server, token, until=("request.end",)), f"no evidence the app ran: {describe(ex)}"
    assert b"\nx-injected" not in ex.raw.lower(), f"the header split the response: {describe(ex)}"


_NON_LATIN1 = {
    "status": (["start_response", "200 O\u20acK", [_OCTETS]]),
    "header-value": _sr("200 OK", ["X-Euro", "caf\u20ac"]),
    "header-name": _sr("200 OK", ["X-\u20ac", "v"]),
}


@pytest.mark.parametrize("sr", list(_NON_LATIN1.values()), ids=list(_NON_LATIN1))
@spec("PEP 3333 §Unicode Issues", "DEFINED")
def test_non_latin1_status_or_header_is_an_error(server, sr):
    """A status or header with a code point above U+00FF is a fatal error: never a normal 200 response,
    never the text encoded some other way on the wire.

    Evidence, not absence: the app's log must show its start_response call (so the server was handed the
    text); a close before the app ran proves nothing."""
    token, ex, _ = run_script(server, [sr + [{"reraise": True}], ["yield", "x"]], timeout=REPLY_TIMEOUT, wait=False)
    assert _calls(server, token, until=("request.end",)), f"no evidence the app ran: {describe(ex)}"
    complete_ok = [r for r in ex.final if r.status == 200]
    assert not complete_ok, f"sent a normal 200 for a non-latin-1 {sr}: {describe(ex)}"
    assert "\u20ac".encode() not in ex.raw, f"the app's text reached the wire as UTF-8: {describe(ex)}"


_WRITE_PAST = [_sr("200 OK", ["Content-Length", "3"]), ["write", "ab"], ["write", "cdef"], ["return_list", []]]


@spec(_CL, "SHOULD")
def test_write_past_content_length_raises(server):
    """write() within the declared Content-Length works; a write() past it raises. The verdict is the app's
    log: what reaches the wire is test_write_past_content_length_is_not_sent's, so bytes past the length that
    do not parse as a response do not fail this check."""
    token, wire = new_token(), "the response was not parsed"
    try:
        wire = describe(run_script(server, _WRITE_PAST, token=token, timeout=REPLY_TIMEOUT, wait=False).exchange)
    except ParseError as exc:
        wire = str(exc)
    writes = named(events_until(server, token, ("request.end",)), "write")
    assert len(writes) == 2, f"write() calls logged: {writes}; {wire}"
    assert writes[0].get("ok"), f"write() within Content-Length failed: {writes[0].get('error')}"
    assert writes[1].get("ok") is False, f"write() past Content-Length returned; {wire}"


@spec(_CL, "SHOULD NOT")
def test_write_past_content_length_is_not_sent(server):
    """Bytes written past the declared Content-Length never reach the client.

    Evidence, not absence: the app's log must show its write() past the length (whatever it returned); a
    close before the app wrote proves nothing."""
    token, ex, _ = run_script(server, _WRITE_PAST, timeout=REPLY_TIMEOUT, wait=False)
    writes = named(events_until(server, token, ("request.end",)), "write")
    assert len(writes) == 2, f"no evidence the app wrote past Content-Length (writes logged: {writes}); {describe(ex)}"
    assert b"def" not in ex.raw, describe(ex)
