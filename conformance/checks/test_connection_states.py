"""Connection states (the positions table is in conformance/spec/dimensions.py).

Request-scoped rules checked wherever a request can stand on an HTTP/1.1 connection: alone, the 2nd or 3rd
of a kept-alive connection, and the 1st, 2nd or 3rd of a pipeline of three. Every response on the
connection is judged, not only the one under test: the ``GET /ping`` requests around it must come back
200 "ok" in order. ``Connection: close`` is put in the request and in the app's response at each position;
a client that half-closes after sending is last.

Not supported, never failed: a server that does not keep connections open (its response does not persist
and it closes, RFC 9112 §9.3; or it closes after as many responses on a connection of ``GET /ping`` only,
whether or not it said close: that omission is another check's obligation) cannot reach a later position,
and one that does not serve pipelined requests (found once per target, ``helpers/support.py``) cannot reach
a pipelined one (RFC 9112 §9.3.2 lets a client pipeline; the suite reports that server's pipelined positions
as not supported). A close the request under test provoked is no such reason: it fails. The client sends
no request after a response that ended the connection (RFC 9112 §9.6).
"""

from __future__ import annotations

import socket

import pytest

from gatecheck.conformance.app import app_view, decode_probe, response_script, script_target
from gatecheck.conformance.client.http1 import Connection, ending_of, persistent
from gatecheck.conformance.helpers.support import body_not_read, needs_pipelining
from gatecheck.conformance.helpers.wire import (
    CLOSE_WAIT,
    REPLY_TIMEOUT,
    assert_never_parsed,
    describe,
    ends_connection,
    request,
    smuggled_request,
)
from gatecheck.conformance.spec.dimensions import PIPELINE, POSITIONS, Position, position_params
from gatecheck.conformance.spec.markers import needs, spec
from gatecheck.conformance.spec.results import UNSUPPORTED_PREFIX
from gatecheck.fixtures import TOKEN_HEADER, payload_bytes

pytestmark = needs("http1")

_BODY = payload_bytes(3000)


def _unsupported(why: str):
    pytest.skip(f"{UNSUPPORTED_PREFIX} {why}")


def _fillers(server, count: int, tokens: bool = False) -> list:
    """``GET /ping`` requests (each with its own event-log token when ``tokens``): (bytes, token)."""
    out = []
    for _ in range(count):
        token = server.new_token() if tokens else None
        out.append((smuggled_request(server, token) if tokens else request(server), token))
    return out


def _place(server, position, target: bytes, tokens: bool = False) -> tuple:
    """The requests of the connection in order, the one under test at ``position.index``: (list of
    (bytes, token or None), methods)."""
    count = PIPELINE if position.pipelined else position.index + 1
    requests = _fillers(server, count, tokens)
    requests[position.index] = (target, None)
    return requests


def _converse(server, position, datas: list, methods: list, wait_close: bool = False):
    """Send ``datas`` on one new connection as the position says (one write, or each after the previous
    response); return (final responses, connection, last exchange). The read stops at a close."""
    conn = Connection(server.address, REPLY_TIMEOUT)
    conn.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    finals = []
    try:
        if position.pipelined:
            conn.send(b"".join(datas))
            ex = conn.read_responses(len(datas), methods=methods)
            finals = ex.final
        else:
            for i, data in enumerate(datas):
                if i and not conn.may_send():  # closed, or the last response ended the connection (§9.6)
                    break
                try:
                    conn.send(data)
                except (BrokenPipeError, ConnectionResetError):
                    if not i:
                        raise
                    conn.closed = True  # the server had closed after the previous response
                    break
                ex = conn.read_responses(1, methods=[methods[i]])
                finals += ex.final
                if not ex.final:
                    break
        if (wait_close or conn.ending) and not conn.closed:  # a response ended it: its close is judged too
            conn.wait_closed(CLOSE_WAIT)
    except BaseException:
        conn.close()
        raise
    return finals, conn, ex


def _exchange(server, position, target: bytes, method: str = "GET", *, tokens: bool = False, wait_close: bool = False):
    """Send the connection's requests as the position says; return (final responses, connection, requests).
    Skips as not supported when the position cannot be reached (see the module docstring)."""
    if position.pipelined and position.index:  # the first of a pipeline is reached by any server
        needs_pipelining(server)
    requests = _place(server, position, target, tokens)
    methods = ["GET"] * len(requests)
    methods[position.index] = method
    finals, conn, ex = _converse(server, position, [data for data, _ in requests], methods, wait_close)
    _reachable(server, finals, conn, position, ex, len(requests))
    return finals, conn, requests, ex


def _stops_unprovoked(server, position, answered: int, count: int | None = None) -> bool:
    """Whether the same connection (``count`` requests, default the position's) made of ``GET /ping`` only
    also ends, closed by the server, after ``answered`` responses or fewer: the server's way with
    connections (RFC 9112 §9.5: it MAY close at any time), not something the request under test provoked."""
    count = count or (PIPELINE if position.pipelined else position.index + 1)
    datas = [data for data, _ in _fillers(server, count)]
    finals, conn, _ = _converse(server, position, datas, ["GET"] * len(datas))
    conn.close()
    return len(finals) <= answered and conn.closed


def _reachable(server, finals, conn, position, ex, total: int) -> None:
    """Skip when the server stopped before the position under test for a reason the RFC allows: it closes
    the connection after that many responses whatever the requests (whether or not it said "close", which
    RFC 9112 §9.3 requires of a server without persistent connections: not this check's obligation), or it
    leaves pipelined requests unanswered."""
    if len(finals) > position.index:
        return
    conn.close()
    if finals and ends_connection(finals[-1]):  # the client sends nothing more (RFC 9112 §9.6), closed or not
        _unsupported(
            f"the server ended the connection in response {len(finals)} of {total} "
            f"({ending_of(finals[-1])}): no request reaches position {position.name}"
        )
    if finals and conn.closed and _stops_unprovoked(server, position, len(finals)):
        _unsupported(
            f"the server closes the connection after {len(finals)} of {total} responses (without saying "
            f"close, as on a connection of GET /ping only): no request reaches position {position.name}"
        )
    if position.pipelined and finals and not conn.closed and ex.timed_out:
        _unsupported(
            f"the server answered {len(finals)} of {total} pipelined requests and then neither the "
            "rest nor closed: it does not serve pipelined requests"
        )
    raise AssertionError(
        f"no answer to the request at position {position.name} ({len(finals)} responses): {describe(ex)}"
    )


def _others_answered(finals, position, *, upto: int | None = None) -> None:
    """Every ``GET /ping`` around the request under test came back 200 "ok", in order (up to ``upto``)."""
    for i, resp in enumerate(finals[:upto]):
        if i != position.index:
            assert (resp.status, resp.body) == (200, b"ok"), (
                f"response {i + 1} (GET /ping) was {resp.status} {resp.body[:100]!r}, want 200 'ok'"
            )


def _all_answered(server, finals, conn, position, ex) -> None:
    """Every request got its response; a server may stop early only by ending the connection in a response
    (RFC 9112 §9.3: its close is another check's obligation), or by closing where a connection of ``GET /ping``
    only stops as early (see ``_reachable``)."""
    total = PIPELINE if position.pipelined else position.index + 1
    if len(finals) < total and not ends_connection(finals[-1]):
        assert conn.closed and _stops_unprovoked(server, position, len(finals)), (
            f"{len(finals)} of {total} requests answered, without ending the connection in a response (RFC 9112 "
            f"§9.3) and a close the server makes whatever the requests: {describe(ex)}"
        )
    _others_answered(finals, position)


# -- request-scoped rules at each position -------------------------------------------------------------


@pytest.mark.parametrize("position", position_params())
@spec("RFC 9112 §9.3", "DEFINED")
def test_app_sees_the_request_at_each_position(server, position):
    """The app sees the request's path, query and fields as sent, whatever its place on the connection."""
    target = request(server, "GET", f"/probe/state?q={position.name}", [("X-Position", position.name)])
    finals, conn, _, ex = _exchange(server, position, target)
    conn.close()
    resp = finals[position.index]
    assert resp.status == 200 and resp.header("content-type") == "application/json", (
        f"the probe's answer is not its JSON document: {describe(ex)}"
    )
    view = app_view(decode_probe(resp.body))
    got = (view["path"], view["query"], [v for n, v in view["headers"] if n == "x-position"])
    assert got == ("/probe/state", f"q={position.name}", [position.name]), f"the app saw {got!r}"
    _all_answered(server, finals, conn, position, ex)


_FRAMINGS = {"content-length": False, "chunked": True}


@pytest.mark.parametrize("framing", list(_FRAMINGS))
@pytest.mark.parametrize("position", position_params())
@spec("RFC 9112 §6.3", "DEFINED")
def test_request_body_is_read_at_each_position(server, position, framing):
    """A posted body (Content-Length or chunked) is read whole by the app (``/echo`` returns it byte for
    byte) at each place on the connection, and the requests after it are framed from its end."""
    if _FRAMINGS[framing]:
        body = b"%x\r\n%s\r\n0\r\n\r\n" % (len(_BODY), _BODY)
        target = request(server, "POST", "/echo", [("Transfer-Encoding", "chunked")], body)
    else:
        target = request(server, "POST", "/echo", body=_BODY)
    finals, conn, _, ex = _exchange(server, position, target, "POST")
    conn.close()
    resp = finals[position.index]
    if _FRAMINGS[framing]:
        body_not_read(server, resp, _BODY)  # a 411, or a WSGI app with no way to read it: not supported
    assert resp.status == 200 and resp.body == _BODY, (
        f"/echo answered {resp.status} with {len(resp.body)} bytes, want the {len(_BODY)} sent: {describe(ex)}"
    )
    _all_answered(server, finals, conn, position, ex)


@pytest.mark.parametrize("position", position_params())
@spec("RFC 9112 §9.3", "DEFINED")
def test_streamed_response_is_delimited_at_each_position(server, position):
    """A response the app streams without a length (``/echo_iter``) is self-delimited (chunked) wherever it
    stands, so the responses after it parse; close-delimited only when the server then closes and said so."""
    target = request(server, "POST", "/echo_iter", body=_BODY)
    finals, conn, _, ex = _exchange(server, position, target, "POST")
    if finals and ends_connection(finals[-1]) and not conn.closed:
        conn.wait_closed(CLOSE_WAIT)  # only a response that ended the connection is waited for (18 × 1.5 s otherwise)
    conn.close()
    resp = finals[position.index]
    assert resp.status == 200 and resp.body == _BODY, (
        f"/echo_iter answered {resp.status} with {len(resp.body)} bytes ({resp.framing}): {describe(ex)}"
    )
    if resp.framing == "close":
        assert not persistent(resp, framing=False) and ex.closed, (
            f"a close-delimited response that does not announce the end of the connection: {describe(ex)}"
        )
    _all_answered(server, finals, conn, position, ex)


# -- Connection: close in the request and in the response, at each position ----------------------------


def _close_target(server, who: str, token: str) -> bytes:
    if who == "request":
        return request(server, headers=[("Connection", "close"), (TOKEN_HEADER, token)])
    steps = response_script(server.interface, 200, [("connection", "close"), ("content-type", "text/plain")], ["ok"])
    return request(server, "GET", script_target(steps), [(TOKEN_HEADER, token)])


@pytest.mark.parametrize("position", position_params())
@spec("RFC 9112 §9.6", "MUST")
def test_connection_close_request_is_answered_then_closed_at_each_position(server, position):
    """A request with Connection: close, at each place on the connection, is answered (200 "ok", every
    response before it too) and then the server closes the connection. Where requests were pipelined behind
    it the client broke §9.6 ("MUST NOT send further requests"), so that response's status is not judged:
    any final response (a 2xx one only with the app's log showing it ran the request), then the close."""
    token = server.new_token()
    finals, conn, _, ex = _exchange(server, position, _close_target(server, "request", token), wait_close=True)
    conn.close()
    _others_answered(finals, position, upto=position.index)
    resp = finals[position.index]
    if 200 <= resp.status < 300:
        assert server.events(token, timeout=2.0), "a 2xx the app's log never shows it made: no evidence"
    if not (position.pipelined and position.index < PIPELINE - 1):
        assert (resp.status, resp.body) == (200, b"ok"), (
            f"the Connection: close request got {resp.status}: {describe(ex)}"
        )
    assert conn.closed, f"the connection stayed open after the response to Connection: close: {describe(ex)}"


@pytest.mark.parametrize("position", position_params())
@spec("RFC 9112 §9.6", "MUST")
def test_connection_close_from_the_app_closes_at_each_position(server, position):
    """A response carrying the app's Connection: close, at each place on the connection, is followed by the
    server closing it; a server that drops the app's field instead keeps serving (every later response is
    judged). WSGI forbids hop-by-hop fields to apps, so any status counts; the framing must hold."""
    token = server.new_token()
    finals, conn, _, ex = _exchange(server, position, _close_target(server, "response", token), wait_close=True)
    conn.close()
    _others_answered(finals, position, upto=position.index)
    resp = finals[position.index]
    assert server.events(token, timeout=2.0), "the app's log never showed the request: no evidence"
    if ends_connection(resp):
        assert conn.closed, f"the server ended the connection in its response and kept it open: {describe(ex)}"
        assert len(finals) == position.index + 1, f"requests after the close were answered: {describe(ex)}"
    else:
        _all_answered(server, finals, conn, position, ex)


_AFTER = [p for p in POSITIONS if p.pipelined and p.index < PIPELINE - 1]


@pytest.mark.parametrize("who", ["request", "response"])
@pytest.mark.parametrize("position", position_params(_AFTER))
@spec("RFC 9112 §9.6", "MUST NOT")
def test_requests_pipelined_after_a_close_are_not_processed(server, position, who):
    """Requests pipelined behind one whose request or response carried Connection: close are never
    processed: the app's log shows the close request and none of those after it (each carries a token)."""
    token = server.new_token()
    finals, conn, requests, ex = _exchange(
        server, position, _close_target(server, who, token), tokens=True, wait_close=True
    )
    conn.close()
    assert server.events(token, timeout=2.0), "the app's log never showed the close request: no evidence"
    resp = finals[position.index]
    if who == "response" and not ends_connection(resp):
        _unsupported("the server did not send the app's Connection: close; nothing after it is to be refused")
    assert len(finals) == position.index + 1, (
        f"{len(finals)} responses, the requests after the close answered: {describe(ex)}"
    )
    for _, later in requests[position.index + 1 :]:
        assert_never_parsed(server, later)


# -- a client that half-closes after sending -----------------------------------------------------------

#: the first request takes the app 100 ms (``/io100``), so the half-close surely arrives while it is handled
_HALF_CLOSE = {
    "get": (["GET"], lambda s: request(s, target="/io100"), [payload_bytes(10)]),
    "pipelined-two": (["GET", "GET"], lambda s: request(s, target="/io100") + request(s), [payload_bytes(10), b"ok"]),
}


@pytest.mark.parametrize("case", list(_HALF_CLOSE))
@spec("RFC 9112 §9.6", "POLICY")
def test_half_closed_client_gets_its_responses(server, case):
    """POLICY: a client that shuts down its sending side (TCP half-close) after a complete request still
    reads; the server answers every complete request it received (the connection then ends)."""
    methods, build, bodies = _HALF_CLOSE[case]
    if len(bodies) > 1:
        needs_pipelining(server)
    with Connection(server.address, REPLY_TIMEOUT) as conn:
        conn.send(build(server))
        conn.sock.shutdown(socket.SHUT_WR)
        ex = conn.read_responses(len(bodies), methods=methods)
    got = [(r.status, r.body) for r in ex.final]
    if 0 < len(got) < len(bodies) and got == [(200, b) for b in bodies[: len(got)]]:
        said = ends_connection(ex.final[-1])
        stops = ex.closed and (said or _stops_unprovoked(server, Position("pipelined", 0, True), len(got), len(bodies)))
        if stops or (not ex.closed and ex.timed_out):
            how = (
                ("closed saying close" if said else "closed, as it does without a half-close")
                if ex.closed
                else "stopped"
            )
            _unsupported(
                f"the server answered {len(got)} of {len(bodies)} pipelined requests and then {how}: "
                "it does not serve pipelined requests"
            )
    assert got == [(200, b) for b in bodies], f"want {len(bodies)} response(s) 200 with the bodies: {describe(ex)}"
