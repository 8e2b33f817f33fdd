"""ASGI HTTP messages that go wrong: invalid events, app exceptions, apps that never answer, sends after the
client left, and legacy (ASGI 2) apps (ASGI asgi.rst §Error Handling, §Legacy Applications; www.rst §Response
Start, §Disconnected Client, §Spec Versions).

Where the spec is silent the check says POLICY: an app that fails before its headers gets a 5xx, and a
response the app never finished must never look finished to the client (RFC 9112 §8: incomplete messages).
"""

from __future__ import annotations

import base64
import json
import time

import pytest

from gatecheck import fixtures
from gatecheck.conformance.app import new_token, probe, script_request, step, value_of, wait_steps
from gatecheck.conformance.app.private import private_server
from gatecheck.conformance.client.http1 import Connection, ParseError, build_request, exchange
from gatecheck.conformance.spec.markers import interfaces, needs, spec

pytestmark = [interfaces("asgi"), needs("http1")]

_ERR = "ASGI Core §Error Handling"


def _b64(data: bytes) -> dict:
    return {"b64": base64.b64encode(data).decode("ascii")}


def _start(status=200, headers=None, **extra) -> list:
    message = {"type": "http.response.start", "status": status, **extra}
    if headers is not None:
        message["headers"] = headers
    return ["send", message]


def _still_serving(server) -> None:
    resp = exchange(server.address, build_request("GET", "/ping", host=server.authority), timeout=5).first
    assert resp.status == 200 and resp.body == b"ok", "the server no longer answers a plain request"


def _scripted(server, steps, *, close_wait: float = 3.0, version: str = "HTTP/1.1"):
    """Run a script; return (what came back, whether the server closed within ``close_wait`` s after it, events)."""
    token = new_token()
    with Connection(server.address, 6) as conn:
        conn.send(script_request(server, steps, token=token, version=version))
        result = conn.read_responses(1, timeout=3)
        closed = result.closed or (close_wait > 0 and conn.wait_closed(close_wait))
    events = wait_steps(server, token, len(steps), timeout=5)
    return result, closed, events


def _app_log_of(server, steps) -> list:
    """Run a script for its app log alone: the answer is read (bounded) so the app runs with the client still
    there, but what the server sends after a send() raised is not this verdict (a malformed answer is no
    ParseError here)."""
    token = new_token()
    with Connection(server.address, 6) as conn:
        conn.send(script_request(server, steps, token=token))
        try:
            conn.read_responses(1, timeout=3)
        except ParseError:
            pass
    return wait_steps(server, token, len(steps), timeout=5)


# -- invalid events ---------------------------------------------------------------------------------

_VALID_TAIL = [["start", 200, [["content-length", "2"]]], ["body", "ok"]]
_INVALID = {
    # case: (steps, index of the invalid step)
    "unknown-type": ([["send", {"type": "http.response.gatecheck_bogus"}]] + _VALID_TAIL, 0),
    "missing-type": ([["send", {"status": 200, "headers": []}]] + _VALID_TAIL, 0),
    "body-before-start": ([["send", {"type": "http.response.body", "body": _b64(b"x")}]] + _VALID_TAIL, 0),
    "second-start": ([["start", 200, [["content-length", "2"]]], _start(201, [])] + [["body", "ok"]], 1),
    "str-body": ([["start", 200, [["content-length", "2"]]], ["body", "ok", False, {"raw": True}], ["body", "ok"]], 1),
    "str-header-name": ([_start(200, [["x-a", _b64(b"1")]])] + _VALID_TAIL, 0),
    "str-header-value": ([_start(200, [[_b64(b"x-a"), "1"]])] + _VALID_TAIL, 0),
    "str-status": ([_start("200", [])] + _VALID_TAIL, 0),
    "missing-status": ([["send", {"type": "http.response.start", "headers": []}]] + _VALID_TAIL, 0),
}


# an event out of order is a valid dictionary: the text does not call it invalid, the suite reads it so (POLICY)
_OUT_OF_ORDER = ("body-before-start", "second-start")


@pytest.mark.parametrize(
    "case",
    [
        pytest.param(c, marks=spec(_ERR + " (out of order)", "POLICY") if c in _OUT_OF_ORDER else spec(_ERR, "SHOULD"))
        for c in _INVALID
    ],
)
def test_invalid_event_raises_from_send(server, case):
    """send() raises for an invalid event: unknown or missing type or key, str where bytes are required (SHOULD);
    POLICY for events sent out of order (a body before the start, a second start). The verdict is the app's
    log: a malformed answer after the raise (gunicorn 27 sends the body with no status-line) is not this
    check's failure."""
    steps, bad = _INVALID[case]
    events = _app_log_of(server, steps)
    found = step(events, bad)
    assert found is not None, f"the invalid send never returned (events: {[e['event'] for e in events]})"
    assert found["ok"] is False, f"send({steps[bad][1]!r}) was accepted without an error"


_INJECT = {
    "value-crlf": (b"x-a", b"a\r\nx-injected: 1"),
    "value-lf": (b"x-a", b"a\nx-injected: 1"),
    "value-cr": (b"x-a", b"a\rx-injected: 1"),
    "value-nul": (b"x-a", b"a\x00x-injected"),
    "name-crlf": (b"x-a\r\nx-injected", b"1"),
    "name-colon": (b"x-injected: 1\r\nx-a", b"1"),
}


def _inject_steps(case: str) -> list:
    name, value = _INJECT[case]
    return [_start(200, [[_b64(name), _b64(value)], [_b64(b"content-length"), _b64(b"2")]]), ["body", "ok"]]


@pytest.mark.parametrize("case", list(_INJECT))
@spec("RFC 9110 §2.2", "MUST NOT")
def test_header_with_cr_lf_or_nul_never_reaches_the_wire(server, case):
    """A response header name or value with CR, LF or NUL never produces an injected field or a raw control byte.

    Evidence, not absence: either a well-formed response (parsed strictly: a bare CR, LF or NUL in the head
    fails it) with no x-injected field, or the app's log shows the send with the header returned (it ran)
    and the server then closed the connection without a response. Silence, garbage, or a close before the
    app's send ran fail."""
    result, closed, events = _scripted(server, _inject_steps(case), close_wait=0)
    raw = result.raw + (result.leftover or b"")
    head = raw.split(b"\r\n\r\n", 1)[0]
    assert b"\nx-injected" not in head.lower() and b"\rx-injected" not in head.lower(), (
        f"the app's CR/LF reached the wire as a header line: {head[:300]!r}"
    )
    assert b"\x00" not in head, f"a NUL byte reached the response head: {head[:300]!r}"
    if result.final:
        assert not result.first.header_all("x-injected"), f"an injected field reached the wire: {head[:300]!r}"
        assert step(events, 0) is not None, (
            f"a response the app's log never shows it made (its start never ran): no evidence: {head[:300]!r}"
        )
        return
    assert step(events, 0) is not None and closed, (
        f"no response, and no evidence the server refused the header (the app's send logged: "
        f"{step(events, 0) is not None}, closed: {closed}): {raw[:300]!r}"
    )


@pytest.mark.parametrize("case", list(_INJECT))
@spec(_ERR + " (unsendable header)", "POLICY")
def test_header_with_cr_lf_or_nul_makes_send_raise(server, case):
    """POLICY (the text's invalid events are unknown types, missing keys and wrong Python types; a header of
    valid bytes the wire cannot carry is the suite's reading of "invalid"): send() raises for a response header
    whose name or value contains CR, LF or NUL."""
    _, _, events = _scripted(server, _inject_steps(case), close_wait=0)
    found = step(events, 0)
    assert found is not None, "the send never returned"
    assert found["ok"] is False, "http.response.start with a CR/LF/NUL header was accepted"


# -- app exceptions and apps that never answer --------------------------------------------------------


@spec(_ERR, "POLICY")
def test_exception_before_start_is_answered_with_5xx(server):
    """POLICY (the spec is silent on the status): an app raising before http.response.start gets a 5xx response."""
    result, _, _ = _scripted(server, [["raise", "gatecheck: before start"]], close_wait=0)
    assert result.final, f"the connection closed without a response: {result.raw[:200]!r}"
    assert 500 <= result.first.status <= 599, result.first.status
    _still_serving(server)


@spec(_ERR, "MUST")
def test_exception_before_start_ends_the_connection(server):
    """An app instance that raises is terminated together with its connection (the server closes it)."""
    _, closed, _ = _scripted(server, [["raise", "gatecheck: before start"]], close_wait=1.5)
    assert closed, "the connection stayed open 1.5 s after the app raised"
    _still_serving(server)


_RAISED = {
    # case: steps whose app raises with the response unfinished
    "after-start-length": [["start", 200, [["content-length", "10"]]], ["raise", "gatecheck"]],
    "after-start-chunked": [["start", 200], ["raise", "gatecheck"]],
    "mid-body-length": [["start", 200, [["content-length", "10"]]], ["body", "part", True], ["raise", "gatecheck"]],
    "mid-body-chunked": [["start", 200], ["body", "part", True], ["raise", "gatecheck"]],
}
_RETURNED = {
    # case: steps whose app returns with the response unfinished
    "after-start": [["start", 200], ["return"]],
    "mid-body-length": [["start", 200, [["content-length", "10"]]], ["body", "part", True], ["return"]],
    "mid-body-chunked": [["start", 200], ["body", "part", True], ["return"]],
}


def _no_complete_success(result) -> None:
    complete_ok = [r for r in result.final if 200 <= r.status < 300]
    assert not complete_ok, (
        f"the client got a complete {complete_ok[0].status} response ({complete_ok[0].framing} framing, "
        f"body {complete_ok[0].body!r}): the truncation is undetectable"
    )


@pytest.fixture(scope="module")
def raised_server(server):
    """A private server (same target) for the checks whose app raises mid-response, shared by them: such an
    exception can leave the session server damaged for every later check (daphne 4.2: its handler raises
    "HTTP response has already been started" inside the loop that reaps finished apps, and that loop never
    runs again, so no later app's exception or return is acted on, WebSocket ones included)."""
    with private_server(server) as priv:
        yield priv


@pytest.mark.parametrize("case", list(_RAISED))
@spec(_ERR, "MUST")
def test_exception_after_start_ends_the_connection_detectably(raised_server, case):
    """An app raising after http.response.start: the server closes its connection."""
    _, closed, _ = _scripted(raised_server, _RAISED[case], close_wait=1.5)
    assert closed, "the connection stayed open 1.5 s after the app raised"
    _still_serving(raised_server)


@pytest.mark.parametrize("case", list(_RAISED))
@spec("RFC 9112 §8 via ASGI Core §Error Handling", "POLICY")
def test_exception_after_start_never_looks_complete(raised_server, case):
    """POLICY (no text says how the truncation shows): the response of an app that raised after
    http.response.start never reaches the client as a complete 2xx response.
    The app's log must show its http.response.start was accepted: a close before the app ran proves nothing.
    Whether the connection then closes is the check above's verdict, not this one's: no wait for it here."""
    result, _, events = _scripted(raised_server, _RAISED[case], close_wait=0)
    started = step(events, 0)
    assert started and started.get("ok"), f"no evidence the app started its response: {result.raw[:200]!r}"
    _no_complete_success(result)


@pytest.mark.parametrize("case", list(_RETURNED))
@spec("ASGI WWW §Response Start / RFC 9112 §8", "POLICY")
def test_app_returning_mid_response_is_never_a_complete_response(server, case):
    """POLICY (the spec is silent): a response the app returned from unfinished never looks complete, and ends.
    The app's log must show its http.response.start was accepted: a close before the app ran proves nothing."""
    token = new_token()
    with Connection(server.address, 6) as conn:
        conn.send(script_request(server, _RETURNED[case], token=token))
        result = conn.read_responses(1, timeout=3)
        failed = any(r.status >= 500 for r in result.final)
        closed = failed or conn.wait_closed(3.0)
    started = step(wait_steps(server, token, len(_RETURNED[case]), timeout=3), 0)
    assert started and started.get("ok"), f"no evidence the app started its response: {result.raw[:200]!r}"
    _no_complete_success(result)
    assert closed, "neither a 5xx nor a close within 3 s: the client waits for the rest forever"


@pytest.mark.parametrize("case", ["no-steps", "after-receive"])
@spec("ASGI WWW §Response Start", "POLICY")
def test_app_returning_without_a_response_gets_5xx(server, case):
    """POLICY (the spec is silent): an app that returns without sending http.response.start gets a 5xx, never a hang."""
    steps = [] if case == "no-steps" else [["receive_all"]]
    result, closed, _ = _scripted(server, steps, close_wait=0)
    assert result.final or closed, "no response and no close within 3 s: the client hangs"
    assert result.final, f"the connection closed without any response: {result.raw[:200]!r}"
    assert 500 <= result.first.status <= 599, result.first.status


# -- sends after the client left (spec_version) --------------------------------------------------------


def _spec_version(server) -> tuple:
    text = value_of(probe(server)["scope"])["asgi"].get("spec_version", "2.0")
    return tuple(int(p) for p in text.split("."))


_AFTER_LEFT = {
    # case: (steps, steps done before the client leaves, index of the send made after http.disconnect)
    "start-after-disconnect": ([["receive_all"], ["wait_disconnect", 10], ["start", 200]], 1, 2),
    "body-after-disconnect": (
        [
            ["receive_all"],
            ["start", 200],
            ["body", "a", True],
            ["wait_disconnect", 10],
            ["sleep", 0.2],
            ["body", "b", True],
        ],
        3,
        5,
    ),
}


def _send_after_leaving(server, case: str):
    steps, ready, index = _AFTER_LEFT[case]
    token = new_token()
    conn = Connection(server.address, 5)
    try:
        conn.send(script_request(server, steps, token=token))
        wait_steps(server, token, ready, timeout=5)
        time.sleep(0.2)
    finally:
        conn.close()
    events = wait_steps(server, token, len(steps), timeout=8)
    waited = step(events, steps.index(["wait_disconnect", 10]))
    assert waited is not None and waited["ok"], f"http.disconnect never reached the app: {waited}"
    found = step(events, index)
    assert found is not None, "the send after http.disconnect never returned"
    return found


@pytest.mark.parametrize("case", list(_AFTER_LEFT))
@spec("ASGI WWW §Disconnected Client (spec_version 2.4)", "SHOULD")
def test_send_after_disconnect_raises_oserror_from_2_4(server, case):
    """With spec_version 2.4 or later, send() after the client disconnected raises an OSError subclass."""
    if _spec_version(server) < (2, 4):
        pytest.skip("the server advertises spec_version < 2.4: the OSError rule does not apply")
    found = _send_after_leaving(server, case)
    assert found["ok"] is False, "send() after http.disconnect returned normally"
    assert found["error"]["is_oserror"], f"send() raised {found['error']['type']}, not an OSError subclass"


@pytest.mark.parametrize("case", list(_AFTER_LEFT))
@spec("ASGI Core §Error Handling (spec_version < 2.4)", "SHOULD")
def test_send_after_disconnect_is_a_no_op_before_2_4(server, case):
    """With spec_version below 2.4, send() after the client disconnected is a silent no-op."""
    if _spec_version(server) >= (2, 4):
        pytest.skip("the server advertises spec_version >= 2.4: send() is expected to raise")
    found = _send_after_leaving(server, case)
    assert found["ok"], f"send() after http.disconnect raised {found.get('error')}"


@spec("ASGI Core §Error Handling / ASGI WWW §Disconnected Client", "MUST")
def test_server_error_escaping_the_app_does_not_break_the_server(server):
    """An exception send() raised after the client left, re-raised by the app, is caught: the server keeps serving."""
    steps = [["receive_all"], ["wait_disconnect", 10], ["start", 200, None, None, {"reraise": True}]]
    token = new_token()
    conn = Connection(server.address, 5)
    try:
        conn.send(script_request(server, steps, token=token))
        wait_steps(server, token, 1, timeout=5)
        time.sleep(0.2)
    finally:
        conn.close()
    events = wait_steps(server, token, 3, timeout=8)
    found = step(events, 2)
    if found is None or found["ok"]:
        pytest.skip("send() after http.disconnect did not raise here: nothing escapes the app")
    time.sleep(0.3)
    _still_serving(server)


# -- legacy applications --------------------------------------------------------------------------------


@spec("ASGI Core §Legacy Applications", "SHOULD")
def test_legacy_double_callable_app_is_served(server):
    """An ASGI 2 app (a class called with the scope, then awaited with receive and send) is served."""
    with private_server(server, app=fixtures.LEGACY_ASGI_APP) as priv:
        ping = exchange(priv.address, build_request("GET", "/ping", host=priv.authority)).first
        assert ping.status == 200 and ping.body == b"ok"
        echo = exchange(
            priv.address, build_request("POST", "/echo", body=b"legacy", host=priv.authority), methods=["POST"]
        ).first
        assert echo.status == 200 and echo.body == b"legacy"
        doc = json.loads(exchange(priv.address, build_request("GET", "/probe", host=priv.authority)).first.body)
        assert value_of(doc["scope"])["type"] == "http"
