"""Byte classes everywhere a field crosses the gateway (tables in conformance/spec/dimensions.py).

Request field values and names over HTTP/1.1, HTTP/2 and the WebSocket handshake, and the fields an app
hands over for its response. Each class has one verdict from its sentence (``KEEP``, ``REJECT_OR_SP``,
``REJECT_OR_KEEP``, ``REJECT``). Octets that must be kept go out together in one message; octets that may
be refused go out one per connection, and every one of them must get an answer the verdict accepts.

Evidence: a kept value is what the app saw, through every accessor of its interface (the RSGI headers
object's ``get``/``get_all``/``[]``/``items``/``keys``/``values``/``len``/``iter`` must agree); a rejection
is a response (400, or 4xx where the sentence says only "reject"), on HTTP/2 a stream or connection error
too, with the app's log empty for the refused requests; silence or a close is never a pass.
"""

from __future__ import annotations

import json

import pytest

from gatecheck.conformance.app import (
    app_view,
    decode_probe,
    h2_never_logged,
    response_script,
    script_target,
    wait_steps,
)
from gatecheck.conformance.client.h2 import H2Client
from gatecheck.conformance.client.h2 import is_refusal as refused
from gatecheck.conformance.client.http1 import ParseError
from gatecheck.conformance.client.ws import OP_TEXT, connect
from gatecheck.conformance.helpers.wire import assert_serves, deliver, describe, request
from gatecheck.conformance.spec.dimensions import (
    APP_NAME_CLASSES,
    APP_VALUE_CLASSES,
    H1_NAME_CLASSES,
    H1_VALUE_CLASSES,
    H2_NAME_CLASSES,
    H2_VALUE_CLASSES,
    KEEP,
    REJECT,
    REJECT_OR_KEEP,
    REJECT_OR_SP,
    byte_params,
    show,
)
from gatecheck.conformance.spec.markers import interfaces, needs
from gatecheck.fixtures import TOKEN_HEADER, typed

_NAME = "x-bc"
_GIVE_UP = 2  # unanswered requests after which a class stops (each costs a reply timeout)


def _text(value) -> str:
    return value.decode("latin-1") if isinstance(value, bytes) else value


def _value(octets: bytes) -> bytes:
    return b"a" + octets + b"z"


def _app_values(doc: dict, name: str) -> list:
    """The values of ``name`` the app saw (latin-1 str), after checking that every accessor of the
    interface agrees (RSGI: the headers object's methods; ASGI and WSGI have one accessor each)."""
    values = [v for n, v in app_view(doc)["headers"] if n == name]
    if doc["interface"] == "rsgi":
        _rsgi_accessors_agree(doc["headers"], name, values)
        values = [_rsgi_octets(v) for v in values]
    return values


def _rsgi_octets(value: str) -> str:
    """RSGI leaves the str's encoding open: a value decoded as UTF-8 (surrogateescape for what is not) is
    mapped back to its octets, so either lossless decoding passes; latin-1 values stay as they are."""
    if all(ord(c) < 0x100 for c in value):
        return value
    return value.encode("utf-8", "surrogateescape").decode("latin-1")


def _ok(result: dict):
    assert "value" in result, f"the accessor raised {result.get('error')}"
    return typed.decode(result["value"])


def _rsgi_accessors_agree(headers: dict, name: str, values: list) -> None:
    items, keys, vals = _ok(headers["items"]), _ok(headers["keys"]), _ok(headers["values"])
    assert list(keys) == list(_ok(headers["iter"])), f"keys() {keys!r} differ from iter() {_ok(headers['iter'])!r}"
    assert _ok(headers["len"]) == len(keys), f"len() {_ok(headers['len'])} but keys() {keys!r}"
    assert [v for _, v in items] == list(vals), f"values() {vals!r} differ from items() {items!r}"
    if not values:
        return
    per = headers["per_name"].get(name)
    assert per is not None, f"{name} is in items() but not in keys(): {keys!r}"
    seen = {"get": _ok(per["get"]), "[]": _ok(per["getitem"]), "get_all": _ok(per["get_all"])}
    assert seen["get"] == seen["[]"] == values[0] and list(seen["get_all"]) == values, (
        f"the accessors disagree on {name}: items() {values!r}, {seen!r}"
    )


def _judge(verdict: str, status: int, seen: list | None, sent: bytes, reject=(400,)) -> str | None:
    """None when the answer is one the verdict accepts; else what happened, in words."""
    kept, spaced = [sent.decode("latin-1")], ["a" + " " * (len(sent) - 2) + "z"]
    if status in reject and verdict != KEEP:
        return None
    if status == 200 and seen is not None:
        if seen == kept and verdict in (KEEP, REJECT_OR_KEEP):
            return None
        if seen == spaced and verdict == REJECT_OR_SP:
            return None
        return f"served; the app saw {seen!r}"
    return f"answered {status}"


def _reject_statuses(cls) -> tuple:
    """A MUST sentence says "reject" (any 4xx); the SHOULD of RFC 9112 §2.2 says "respond with a 400"."""
    return tuple(range(400, 500)) if cls.level == "MUST" else (400,)


def _each_octet(cls, ask) -> None:
    """``ask(octets)`` → None or a problem, for the whole class at once (``batch``) or one octet at a time;
    fails listing every octet whose answer the verdict does not accept."""
    problems, silent = [], 0
    for octets in [cls.octets] if cls.batch else [bytes([o]) for o in cls.octets]:
        problem = ask(octets)
        if problem:
            problems.append(f"{show(octets[0]) if len(octets) == 1 else cls.name}: {problem}")
            silent += "no response" in problem or "timed out" in problem
            if silent >= _GIVE_UP:
                problems.append(f"(stopped after {_GIVE_UP} unanswered requests)")
                break
    assert not problems, f"{len(problems)} of {len(cls.octets)} octets ({cls.verdict}): " + "; ".join(problems[:12])


# -- request field values and names, HTTP/1.1 ----------------------------------------------------------


def _h1_ask(server, headers, verdict: str, sent: bytes, reject) -> str | None:
    name = _text(headers[-1][0]).lower()
    try:
        ex = deliver(server, request(server, "GET", "/probe/bytes", headers))
    except ParseError as exc:
        return f"not a valid response: {exc}"
    if not ex.final:
        return f"no response: {describe(ex)}"
    resp = ex.final[0]
    seen = _app_values(decode_probe(resp.body), name) if resp.status == 200 else None
    return _judge(verdict, resp.status, seen, sent, reject)


@needs("http1")
@pytest.mark.parametrize("cls", byte_params(H1_VALUE_CLASSES))
def test_request_field_value_octets_over_http1(server, cls):
    """Each octet class inside a request field value over HTTP/1.1 gets its sentence's answer: kept byte for
    byte (HTAB, obs-text), rejected or replaced by SP (NUL, CR), rejected or kept (other CTLs)."""
    reject = _reject_statuses(cls)
    _each_octet(cls, lambda o: _h1_ask(server, [(_NAME, _value(o))], cls.verdict, _value(o), reject))
    assert_serves(server)


@needs("http1")
@pytest.mark.parametrize("cls", byte_params(H1_NAME_CLASSES))
def test_request_field_name_octets_over_http1(server, cls):
    """A request field name with a non-token octet (each of the class, one request each) is answered 400."""
    _each_octet(cls, lambda o: _h1_ask(server, [(b"x-b" + o + b"c", b"v")], REJECT, b"", (400,)))
    assert_serves(server)


# -- request field values and names, HTTP/2 ------------------------------------------------------------


def _h2_ask(server, headers, verdict: str, sent: bytes, reject) -> str | None:
    name = _text(headers[-1][0]).lower()
    with H2Client(server.address, authority=server.authority) as client:
        sid = client.request("GET", "/probe/bytes", headers)
        result = client.stream_error_or_status(sid)
        state = client.streams[sid]
        if result == "status:200" and not state.done:
            state = client.response(sid)
    if result == "status:200":
        return _judge(verdict, 200, _app_values(json.loads(state.body), name), sent)
    if verdict != KEEP and (refused(result) and (not result.startswith("status:") or int(result[7:]) in reject)):
        return None
    return f"answered {result}"


def _h2_refusals_never_reached_the_app(server, token: str, cls) -> None:
    if cls.verdict == REJECT:
        events = h2_never_logged(server, token)
        assert not events, f"a refused request reached the app: {[e.get('path') for e in events][:5]}"


@needs("h2c")
@pytest.mark.parametrize("cls", byte_params(H2_VALUE_CLASSES))
def test_request_field_value_octets_over_http2(server, cls):
    """Each octet class inside a request field value over HTTP/2: kept (HTAB, obs-text), malformed (NUL, CR,
    LF: a stream or connection error, or a 4xx, and never the app), refused or kept (other CTLs)."""
    token = server.new_token()
    reject = _reject_statuses(cls)
    _each_octet(
        cls, lambda o: _h2_ask(server, [(TOKEN_HEADER, token), (_NAME, _value(o))], cls.verdict, _value(o), reject)
    )
    _h2_refusals_never_reached_the_app(server, token, cls)


@needs("h2c")
@pytest.mark.parametrize("cls", byte_params(H2_NAME_CLASSES))
def test_request_field_name_octets_over_http2(server, cls):
    """A request field name with a prohibited or non-token octet (each of the class, one request each) is
    malformed: a stream or connection error, or a 4xx, and the app never sees the request."""
    token = server.new_token()
    _each_octet(
        cls,
        lambda o: _h2_ask(
            server, [(TOKEN_HEADER, token), (b"x-b" + o + b"c", b"v")], REJECT, b"", tuple(range(400, 500))
        ),
    )
    _h2_refusals_never_reached_the_app(server, token, cls)


# -- the WebSocket opening handshake -------------------------------------------------------------------


def _ws_ask(server, value: bytes, verdict: str, reject) -> str | None:
    conn = connect(server.address, "/ws_probe", server.authority, headers=[(_NAME, value)])
    try:
        status = conn.handshake.status
        if status is None:
            return f"no response to the handshake: {conn.handshake.raw[:200]!r}"
        if status != 101:
            if status in reject and verdict != KEEP:
                return None
            return f"handshake answered {status}: {conn.handshake.raw[:200]!r}"
        got = conn.read_message()
    finally:
        conn.close()
    assert isinstance(got, tuple) and got[0] == OP_TEXT, f"101, then no probe document: {got!r}"
    return _judge(verdict, 200, _app_values(json.loads(got[1]), _NAME), value)


@interfaces("asgi", "rsgi")
@needs("websockets")
@pytest.mark.parametrize("cls", byte_params(H1_VALUE_CLASSES))
def test_websocket_handshake_field_value_octets(server, cls):
    """The same octet classes in a field of a WebSocket opening handshake: kept (HTAB, obs-text) in what the
    app's scope shows, rejected or replaced by SP (NUL, CR), rejected or kept (other CTLs)."""
    reject = _reject_statuses(cls)
    _each_octet(cls, lambda o: _ws_ask(server, _value(o), cls.verdict, reject))


# -- fields the app hands over for its response --------------------------------------------------------


def _app_ask(server, name: bytes, value: bytes, verdict: str) -> str | None:
    """The app answers 200 with the field ``name: value``; what reached the wire, judged."""
    token = server.new_token()
    field = (name.decode("latin-1"), value.decode("latin-1"))
    steps = response_script(server.interface, 200, [field, ("content-type", "text/plain")], ["ok"])
    try:
        ex = deliver(server, request(server, "GET", script_target(steps), [(TOKEN_HEADER, token)]))
    except ParseError as exc:
        return f"reached the wire: {exc}"
    if not ex.final:
        ran = wait_steps(server, token, 1, timeout=2.0)
        if verdict == REJECT and ex.closed and any(e.get("event") == "step" for e in ran):
            return None  # the app handed the field over and the server closed without sending it
        return f"no response: {describe(ex)}"
    if not any(e.get("event") == "step" for e in wait_steps(server, token, 1, timeout=2.0)):
        return f"answered, but the app's log shows no step: no evidence it ran: {describe(ex)}"
    got = [v.encode("latin-1") for v in ex.final[0].header_all(field[0])]
    if verdict == KEEP:
        wanted = [[value]] + ([[field[1].encode("utf-8")]] if server.interface == "rsgi" else [])
        return None if got in wanted else f"the response carried {got!r}, want one of {wanted!r}"
    injected = [n for n, _ in ex.final[0].headers if n.lower().startswith(b"x-b") and n.lower() != b"x-bc"]
    # strictly parsed, so no CTL reached the head; a colon in a name would make a field of another name
    return f"the response carried the field(s) {injected!r}: {describe(ex)}" if injected else None


@needs("http1")
@pytest.mark.parametrize("cls", byte_params(APP_VALUE_CLASSES))
def test_app_field_value_octets_on_the_wire(server, cls):
    """A response field value from the app (ASGI bytes, RSGI and WSGI latin-1 str): HTAB and obs-text reach
    the wire byte for byte; NUL, CR, LF and the other CTLs never reach it (the field or the response is
    refused, or the octet replaced)."""
    _each_octet(cls, lambda o: _app_ask(server, b"x-bc", _value(o), cls.verdict))


@needs("http1")
@pytest.mark.parametrize("cls", byte_params(APP_NAME_CLASSES))
def test_app_field_name_octets_never_reach_the_wire(server, cls):
    """A response field name from the app with a non-token octet never reaches the wire (the field or the
    response is refused)."""
    _each_octet(cls, lambda o: _app_ask(server, b"x-b" + o + b"c", b"v", REJECT))
