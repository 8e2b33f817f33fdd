"""RSGI 1.6 response methods (RSGI §HTTP protocol interface; RFC 9110 §9.3.2 for HEAD).

``response_empty/str/bytes/file/file_range/stream`` send the app's int status, every header tuple
(repeated names included, in order) and the exact body, which the protocol leaves unframed for the server
to frame validly; HEAD never carries a body whichever method answers it. The spec is silent on misuse — a
second response call, an empty or inverted range, a range past EOF, a missing file, an app that raises or
returns without responding — so those checks are POLICY and ask only for a well-formed wire, an error
rather than a fake success, and no hang. The app side is the fixture's ``/script`` RSGI interpreter.

Application shapes (the table is in conformance/spec/dimensions.py): the status and the
headers are checked through every response method.
"""

from __future__ import annotations

import base64

import pytest

from gatecheck import fixtures
from gatecheck.conformance.app import events_until, new_token, ping, run_script, script_request, step
from gatecheck.conformance.client.connect import connect
from gatecheck.conformance.client.http1 import read_raw
from gatecheck.conformance.helpers.wire import REPLY_TIMEOUT, assert_answered_in_order, describe, held_follow_up
from gatecheck.conformance.spec.dimensions import RSGI_METHODS, rsgi_steps
from gatecheck.conformance.spec.markers import interfaces, needs, spec

pytestmark = [interfaces("rsgi"), needs("http1")]

_PROTO = "RSGI §HTTP protocol interface"
_PLAIN = [["content-type", "text/plain"]]
_OK = ["response_bytes", 200, [["content-type", "text/plain"], ["content-length", "2"]], "ok"]
_SMALL = (fixtures.STATIC_DIR / fixtures.STATIC_SMALL).read_bytes()


# -- response methods --------------------------------------------------------------------------


def _no_stray_bytes(ex) -> None:
    """The request sent after the response is answered, or (the response ended the connection) nothing follows it."""
    if len(ex.final) > 1:
        assert ex.final[1].body == b"ok", f"stray bytes after the response: {describe(ex)}"
    assert not ex.leftover, f"stray bytes after the response: {describe(ex)}"


@pytest.mark.parametrize("status", [204, 200])
@spec(_PROTO, "DEFINED")
def test_response_empty_sends_the_status_without_body(server, status):
    """``response_empty(status, headers)`` sends that status and the app's headers with no body."""
    _, ex, _ = run_script(
        server, [["response_empty", status, [["x-empty", "yes"]]]], then=(ping(server),), timeout=REPLY_TIMEOUT
    )
    resp = ex.first
    assert resp.status == status and resp.header("x-empty") == "yes" and resp.body == b"", describe(ex)
    _no_stray_bytes(ex)


@spec("RFC 9110 §8.6 / RFC 9112 §6.1", "MUST NOT")
def test_response_empty_204_has_no_length_or_transfer_encoding(server):
    """A 204 sent through ``response_empty`` carries neither Content-Length nor Transfer-Encoding."""
    _, ex, _ = run_script(server, [["response_empty", 204, [["x-empty", "yes"]]]], timeout=REPLY_TIMEOUT)
    resp = ex.first
    assert resp.status == 204, describe(ex)
    assert not resp.header_all("content-length") and not resp.header_all("transfer-encoding"), describe(ex)


@spec(_PROTO, "DEFINED")
def test_response_bytes_sends_status_headers_and_exact_body(server):
    """``response_bytes`` sends the app's status, headers and the exact bytes (NUL, 0xFF, CR LF included)."""
    body = b"\x00\x01\r\n\xff0\r\n\r\nend"
    b64 = {"b64": base64.b64encode(body).decode()}
    _, ex, _ = run_script(
        server, [["response_bytes", 202, [["x-a", "1"]], b64]], then=(ping(server),), timeout=REPLY_TIMEOUT
    )
    resp = ex.first
    assert resp.status == 202 and resp.header("x-a") == "1" and resp.body == body, describe(ex)
    _no_stray_bytes(ex)


@spec(_PROTO + " (str encoding)", "POLICY")
def test_response_str_is_sent_utf8_encoded(server):
    """``response_str`` sends the text UTF-8 encoded. (The spec names no encoding; UTF-8 is the suite's
    reading.)"""
    text = "h\u00e9llo \u20ac \U0001f600"
    _, ex, _ = run_script(
        server, [["response_str", 201, [["content-type", "text/plain; charset=utf-8"]], text]], timeout=REPLY_TIMEOUT
    )
    assert ex.first.status == 201 and ex.first.body == text.encode("utf-8"), describe(ex)


_REPEATED = [["set-cookie", "a=1"], ["x-other", "o"], ["set-cookie", "b=2"]]


@pytest.mark.parametrize("method", RSGI_METHODS)
@spec(_PROTO, "DEFINED")
def test_repeated_header_names_are_all_sent_in_order(server, method):
    """Every header tuple the app passes is sent, a repeated name such as set-cookie once per tuple, in order,
    whichever response method sends them."""
    _, ex, _ = run_script(server, rsgi_steps(method, 200, _REPEATED), timeout=REPLY_TIMEOUT)
    assert ex.first.status == 200, describe(ex)
    assert ex.first.header_all("set-cookie") == ["a=1", "b=2"], describe(ex)
    assert ex.first.header("x-other") == "o", describe(ex)


@pytest.mark.parametrize("status", [200, 201, 299, 404, 418, 503])
@pytest.mark.parametrize("method", RSGI_METHODS)
@spec(_PROTO, "DEFINED")
def test_response_status_is_sent_as_given(server, method, status):
    """The int status passed to a response method is the status code on the wire, whichever method."""
    _, ex, _ = run_script(server, rsgi_steps(method, status, _PLAIN), timeout=REPLY_TIMEOUT)
    assert ex.first.status == status, describe(ex)


@spec(_PROTO + " (1.1)", "DEFINED")
def test_stream_sends_every_chunk_in_order(server):
    """``response_stream`` then ``send_bytes``/``send_str`` calls deliver every chunk, in order."""
    steps = [
        ["stream", 200, _PLAIN],
        ["send_bytes", "one,"],
        ["send_str", "tw\u00f6,"],
        ["send_bytes", ""],
        ["send_bytes", "three"],
    ]
    _, ex, _ = run_script(server, steps, then=(ping(server),), timeout=REPLY_TIMEOUT)
    assert ex.first.body == "one,tw\u00f6,three".encode(), describe(ex)
    if len(ex.final) == 2:
        assert ex.final[1].body == b"ok", describe(ex)


# -- files -------------------------------------------------------------------------------------


def _refused(ex, events, index: int) -> bool:
    """The response call raised, or the server answered an error status."""
    call = step(events, index)
    raised = call is not None and not call.get("ok")
    return raised or (bool(ex.final) and ex.final[0].status >= 400)


_BAD_RANGES = {"inverted": (10, 5), "empty": (5, 5)}


@pytest.mark.parametrize("start,end", list(_BAD_RANGES.values()), ids=list(_BAD_RANGES))
@spec(_PROTO + " (1.6, invalid range)", "POLICY")
def test_response_file_range_refuses_an_empty_or_inverted_range(server, start, end):
    """``response_file_range`` with start >= end raises or answers an error; it never sends file bytes as
    a success, and never hangs. (Unspecified; suite policy.)"""
    steps = [["response_file_range", 206, _PLAIN, fixtures.STATIC_SMALL, start, end]]
    _, ex, events = run_script(server, steps, timeout=REPLY_TIMEOUT)
    assert ex.final, f"no response within {REPLY_TIMEOUT}s: {describe(ex)}"
    assert _refused(ex, events, 0), f"range [{start}, {end}) was answered as a success: {describe(ex)}"


@spec(_PROTO + " (1.6, range beyond EOF)", "POLICY")
def test_response_file_range_beyond_eof_never_sends_more_than_the_file(server):
    """A range reaching past the end of the file is refused, or sends exactly the bytes up to EOF, validly
    framed; no hang. (Unspecified; suite policy.)"""
    start = len(_SMALL) - 10
    steps = [["response_file_range", 206, _PLAIN, fixtures.STATIC_SMALL, start, start + 100]]
    _, ex, events = run_script(server, steps, then=(ping(server),), timeout=REPLY_TIMEOUT)
    assert ex.final, f"no response within {REPLY_TIMEOUT}s: {describe(ex)}"
    if not _refused(ex, events, 0):
        assert ex.final[0].body == _SMALL[start:], describe(ex)
        assert len(ex.final) == 2 and ex.final[1].body == b"ok", describe(ex)


_MISSING = {
    "response_file": [["response_file", 200, _PLAIN, {"missing": "file.txt"}]],
    "response_file_range": [["response_file_range", 206, _PLAIN, {"missing": "range.txt"}, 0, 5]],
}


@pytest.mark.parametrize("steps", list(_MISSING.values()), ids=list(_MISSING))
@spec(_PROTO + " (missing file)", "POLICY")
def test_missing_file_is_an_error_not_a_hang(server, steps):
    """A file response for a path that does not exist raises or answers an error status — promptly, never
    a success, never a hang. (Unspecified; suite policy.)"""
    _, ex, events = run_script(server, steps, timeout=REPLY_TIMEOUT)
    assert ex.final, f"no response within {REPLY_TIMEOUT}s: {describe(ex)}"
    assert _refused(ex, events, 0), f"a missing file was answered as a success: {describe(ex)}"


# -- HEAD --------------------------------------------------------------------------------------

_HEAD = {
    "response_bytes": [["response_bytes", 200, _PLAIN, "body"]],
    "response_str": [["response_str", 200, _PLAIN, "body"]],
    "response_empty": [["response_empty", 200, _PLAIN]],
    "response_file": [["response_file", 200, _PLAIN, fixtures.STATIC_SMALL]],
    "response_file_range": [["response_file_range", 206, _PLAIN, fixtures.STATIC_SMALL, 0, 10]],
    "response_stream": [["stream", 200, _PLAIN], ["send_bytes", "body"], ["send_str", "more"]],
}


@pytest.mark.parametrize("steps", list(_HEAD.values()), ids=list(_HEAD))
@spec("RFC 9110 §9.3.2", "MUST NOT")
def test_head_is_answered_without_body_by_every_response_method(server, steps):
    """A HEAD request answered through any response method carries no body bytes: the response to the request
    sent after it parses cleanly."""
    _, ex, _ = run_script(server, steps, method="HEAD", then=(ping(server),), timeout=REPLY_TIMEOUT)
    assert ex.final and ex.final[0].body == b"", describe(ex)
    assert not ex.leftover, f"bytes after the HEAD response: {describe(ex)}"
    assert_answered_in_order(ex, [b"", b"ok"])


# -- misbehaving apps --------------------------------------------------------------------------


@spec(_PROTO + " (app error)", "POLICY")
def test_app_raising_before_responding_gets_a_server_error(server):
    """An app that raises before calling a response method gets a 5xx for the client, and the server goes
    on serving. (Unspecified; suite policy.)"""
    _, ex, _ = run_script(server, [["raise", "before responding"]], timeout=REPLY_TIMEOUT)
    assert ex.final and 500 <= ex.first.status < 600, describe(ex)
    _, after, _ = run_script(server, [_OK], timeout=REPLY_TIMEOUT)
    assert after.first.body == b"ok", describe(after)


@spec(_PROTO + " (no response)", "POLICY")
def test_app_returning_without_responding_gets_a_server_error(server):
    """An app that returns without calling any response method gets a 5xx for the client, not a hang.
    (Unspecified; suite policy.)"""
    _, ex, _ = run_script(server, [["log", "returns without responding"]], timeout=REPLY_TIMEOUT)
    assert ex.final and 500 <= ex.first.status < 600, describe(ex)


_SECOND = {
    "bytes-after-bytes": [
        ["response_bytes", 200, [["content-length", "5"]], "first"],
        ["response_bytes", 500, [["content-length", "6"]], "second"],
    ],
    "bytes-after-stream": [
        ["stream", 200, _PLAIN],
        ["send_bytes", "first"],
        ["response_bytes", 500, [["content-length", "6"]], "second"],
        ["send_bytes", "-more"],
    ],
}


@pytest.mark.parametrize("steps", list(_SECOND.values()), ids=list(_SECOND))
@spec(_PROTO + " (second response)", "POLICY")
def test_second_response_call_does_not_corrupt_the_wire(server, steps):
    """A second response method call after a response started is ignored or raises: the wire carries one
    well-formed response for the request, and the next request on the connection is answered. (Suite policy.)"""
    _, ex, _ = run_script(server, steps, then=(ping(server),), timeout=REPLY_TIMEOUT)
    first = ex.first
    assert first.status == 200 and first.body.startswith(b"first"), describe(ex)
    assert b"second" not in ex.raw, f"the second response reached the wire: {describe(ex)}"
    if len(ex.final) == 2:
        assert ex.final[1].body == b"ok", describe(ex)
    else:
        if not ex.closed and not ex.leftover:
            held_follow_up(ex, "the next request")
        assert ex.closed, describe(ex)


@spec(_PROTO + " (1.1, send after disconnect)", "POLICY")
def test_stream_send_after_the_client_left_never_blocks_the_app(server):
    """Once the client has left, ``transport.send_bytes`` returns or raises promptly, so an app that keeps
    streaming is never blocked: 30 sends of 20 kB finish within a few seconds. (Unspecified; suite policy.)"""
    token = new_token()
    steps = [
        ["stream", 200, _PLAIN],
        ["send_bytes", "first"],
        ["sleep", 0.3],
        ["repeat", 30, [["send_bytes", {"size": 20000}]]],
    ]
    with connect(server, timeout=REPLY_TIMEOUT) as sock:
        sock.sendall(script_request(server, steps, token=token))
        read_raw(sock, bool, timeout=REPLY_TIMEOUT, cap=4096)  # the first bytes, then leave
    events = events_until(server, token, ("script.end", "request.end"), timeout=5.0)
    sends = [e for e in events if e.get("event") == "step" and e.get("op") == "send_bytes"]
    assert any(e["event"] in ("script.end", "request.end") for e in events), (
        f"the app was still blocked 5s after the client left, after {len(sends)} of 31 sends"
    )
    assert len(sends) == 31, f"{len(sends)} of 31 send_bytes steps ran"
