"""Helpers for the HTTP/1.1 wire checks: deliver bytes three ways, judge rejections, prove no smuggling.

Rules of this module:

1. It builds on ``conformance/client/http1.py`` (requests from parts, the response parser, ``Connection``) and
   never parses HTTP itself.
2. Every wait is bounded: replies within ``REPLY_TIMEOUT``, a close within ``CLOSE_WAIT``. A server that
   keeps a connection open when it must close costs ``CLOSE_WAIT`` seconds, not a hang.
3. "Rejected" means what RFC 9112 §2.2 and §6.3 ask for: a 4xx response *and* the connection closed.
   "Never parsed" is proven by the fixture event log: the smuggled request carries its own token, and
   any app that sees it writes ``request.start`` under that token; the log is read after a later request was
   served and logged (the barrier of ``app.py`` rule 4), not after a fixed wait.
"""

from __future__ import annotations

import socket
import time

import pytest

from gatecheck.conformance.app import BARRIER_LOG_TIMEOUT, NEVER_GRACE, new_token
from gatecheck.conformance.client.http1 import Connection, Exchange, build_request, persistent
from gatecheck.conformance.spec.results import UNSUPPORTED_PREFIX, not_supported
from gatecheck.fixtures import TOKEN_HEADER

__all__ = [
    "REPLY_TIMEOUT",
    "CLOSE_WAIT",
    "MODES",
    "request",
    "deliver",
    "assert_rejected",
    "assert_refused",
    "assert_closed_after_answer",
    "status_classes",
    "assert_closed",
    "assert_serves",
    "smuggled_request",
    "assert_never_parsed",
    "describe",
    "says_close",
    "ends_connection",
    "assert_answered_in_order",
    "held_follow_up",
    "tracked",
    "assert_app_ran",
]

REPLY_TIMEOUT = 3.0  # seconds for a reply to a small request on a loaded 2-core box
CLOSE_WAIT = 1.5  # seconds a server gets to close after its response

#: how a request's bytes reach the server (h11's tr(): whole, byte by byte, followed by another request)
MODES = ("whole", "bytewise", "pipelined")


def request(
    server, method: str = "GET", target: str = "/ping", headers=(), body: bytes = b"", version: str = "HTTP/1.1", **kw
) -> bytes:
    """``build_request`` with this server's authority as Host."""
    kw.setdefault("host", server.authority)
    return build_request(method, target, headers, body, version=version, **kw)


def tracked(
    server, method: str = "GET", target: str = "/ping", headers=(), body: bytes = b"", version: str = "HTTP/1.1", **kw
) -> tuple:
    """(request bytes, token): ``request`` with an event-log token, so :func:`assert_app_ran` can show that the
    answer is the app's."""
    token = new_token()
    return request(server, method, target, list(headers) + [(TOKEN_HEADER, token)], body, version, **kw), token


def assert_app_ran(server, *tokens: str, what: str = "the request") -> None:
    """The app's own log shows it ran each request (``request.start`` under its token): an answer without it is
    not the app's (a canned answer, a server's own response) and is no evidence."""
    for token in tokens:
        events = server.events(token, timeout=BARRIER_LOG_TIMEOUT)
        assert any(e.get("event") == "request.start" for e in events), (
            f"the app's log shows no run of {what}: the answer is not the app's, so it is no evidence "
            f"(events under its token: {[e.get('event') for e in events][:5]})"
        )


def deliver(
    server,
    data: bytes,
    *,
    mode: str = "whole",
    count: int = 1,
    methods=(),
    timeout: float = REPLY_TIMEOUT,
    wait_close=False,
    shut_write: bool = False,
    then: bytes = b"",
) -> Exchange:
    """Send ``data`` on a new connection and read up to ``count`` final responses.

    ``mode``: "whole" (one write), "bytewise" (one byte per write, Nagle off, a pause between writes)
    or "pipelined" (``data`` then a ``GET /ping`` in the same write; one more response is read).
    ``then`` is sent after the first response arrived (on the same connection), unless that response ended
    the connection (RFC 9112 §9.3: the client sends nothing more, §9.6; ``held`` says why, and the close is
    waited for, so ``leftover`` holds whatever came after the response). ``wait_close`` waits
    up to ``CLOSE_WAIT`` for the server to close after the responses, so ``closed`` is meaningful;
    ``"if-refused"`` waits only when a first response came and is not a 2xx (a check that needs a refusal
    fails on a 2xx or on silence anyway, so it need not spend the wait). Bytes that arrive while waiting
    for the close end up in ``leftover``."""
    if mode not in MODES:
        raise ValueError(f"mode must be one of {MODES}, got {mode!r}")
    if mode == "pipelined":
        data += request(server)
        count += 1
        methods = list(methods) + ["GET"]
    with Connection(server.address, timeout) as conn:
        conn.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        try:
            if mode == "bytewise":
                for i in range(len(data)):
                    conn.send(data[i : i + 1])
                    time.sleep(0.001)
            else:
                conn.send(data)
            if shut_write:
                conn.sock.shutdown(socket.SHUT_WR)
        except OSError:
            pass  # the server may close early (e.g. on a rejected request); read what it sent
        result = _read(conn, count, methods)
        if then:
            result = _follow_up(conn, result, then)
        if wait_close == "if-refused":
            wait_close = bool(result.final) and not 200 <= result.final[0].status < 300
        if wait_close and not result.closed:
            conn.wait_closed(CLOSE_WAIT)
            result.closed = conn.closed
            result.leftover = conn.buffer
        return result


def _follow_up(conn: Connection, result: Exchange, then: bytes) -> Exchange:
    """``then`` sent once ``result``'s response came, and its response read; or, where the client's rules hold
    it back, ``result`` with ``held`` set and the close waited for."""
    if result.final and conn.may_send():
        try:
            conn.send(then)
        except OSError:
            pass
        more = _read(conn, 1, ["GET"])
        return Exchange(
            result.responses + more.responses, more.closed, more.leftover, more.timed_out, result.raw + more.raw
        )
    held = conn.ending or ("the server closed the connection" if conn.closed else "no response to the first request")
    before = len(conn.buffer)
    if conn.ending and not conn.closed:
        conn.wait_closed(CLOSE_WAIT)
    return Exchange(
        result.responses,
        conn.closed,
        conn.buffer,
        result.timed_out,
        result.raw + conn.buffer[before:],
        held=f"the follow-up request was not sent: {held}",
    )


def held_follow_up(ex: Exchange, what: str = "the follow-up request") -> None:
    """Where the check's evidence is the follow-up's response and the client's rules held it back (the first
    response ended the connection): *not supported*, unless bytes came after the first response (judged by the
    caller before this)."""
    if ex.held and len(ex.final) < 2:
        not_supported(f"{what} could not be sent on the connection: {ex.held.split(': ', 1)[-1]}")


def _read(conn: Connection, count: int, methods) -> Exchange:
    """``read_responses``: bounded, and unparseable bytes raise a failure that shows them."""
    return conn.read_responses(count, methods=methods)


def describe(ex: Exchange) -> str:
    """One line for failure messages: what came back and whether the connection closed."""
    state = "closed" if ex.closed else ("timed out, open" if ex.timed_out else "open")
    return f"got {ex.raw[:400]!r} ({state})"


def assert_rejected(ex: Exchange, statuses=None) -> None:
    """A 4xx (or one of ``statuses``) as the first final response, and the connection closed after it."""
    allowed = set(statuses) if statuses else set(range(400, 500))
    assert ex.final, f"expected a {_what(statuses)} response; no response: {describe(ex)}"
    first = ex.final[0]
    assert first.status in allowed, f"expected {_what(statuses)}, {describe(ex)}"
    assert ex.closed, f"a {first.status} was sent but the connection stayed open: {describe(ex)}"


def _what(statuses) -> str:
    return status_classes(statuses) if statuses else "4xx"


def status_classes(statuses) -> str:
    """Statuses named by class where a whole class is allowed: {400..499, 505} → "4xx/505"."""
    statuses, parts = set(statuses), []
    for hundred in range(100, 600, 100):
        whole = set(range(hundred, hundred + 100))
        if whole <= statuses:
            parts.append(f"{hundred // 100}xx")
            statuses -= whole
    return "/".join(parts + [str(s) for s in sorted(statuses)])


def assert_refused(ex: Exchange, statuses=None) -> None:
    """The first final response is a 4xx (or one of ``statuses``); whether the connection closed is judged
    apart (``assert_closed_after_answer``), so a server that does one is told from one that does neither."""
    allowed = set(statuses) if statuses else set(range(400, 500))
    assert ex.final, f"expected a {_what(statuses)} response; no response: {describe(ex)}"
    assert ex.final[0].status in allowed, f"expected a {_what(statuses)} response; {describe(ex)}"


def assert_closed_after_answer(ex: Exchange) -> None:
    """A final response came (any status: the status is judged apart) and the server then closed the
    connection (``deliver(..., wait_close=True)``). Silence and a close is no evidence of a deliberate close."""
    assert ex.final, f"no response, so no close after one can be judged: {describe(ex)}"
    assert ex.closed, f"the connection stayed open after the {ex.final[0].status} response: {describe(ex)}"


def assert_closed(ex: Exchange) -> None:
    assert ex.closed, f"the connection must be closed after this response: {describe(ex)}"


def assert_serves(server) -> None:
    """The server still answers a normal request on a new connection, and the app logged it: so a check's
    "never parsed" (nothing logged under a smuggled token) stands on a log that works."""
    token = new_token()
    ex = deliver(server, smuggled_request(server, token))
    assert ex.final and ex.final[0].status == 200 and ex.final[0].body == b"ok", (
        f"after the previous input, a plain GET /ping on a new connection {describe(ex)}"
    )
    assert server.events(token, timeout=BARRIER_LOG_TIMEOUT), "the app's event log shows nothing for a served request"


def smuggled_request(server, token: str) -> bytes:
    """A complete GET whose arrival at the app is logged under ``token``."""
    return request(server, "GET", "/ping", [(TOKEN_HEADER, token)])


def assert_never_parsed(server, token: str) -> None:
    """The app never saw a request carrying ``token``: its log is read after a barrier (``app.py`` rule 4), a
    later request on a new connection served and logged (``assert_serves``), and ``NEVER_GRACE`` more."""
    assert_serves(server)
    events = server.events(token, timeout=NEVER_GRACE)
    seen = [(e.get("event"), e.get("path")) for e in events][:5]
    assert not events, f"the smuggled request reached the app as a request of its own: {seen}"


def says_close(resp) -> bool:
    """The response carries the "close" connection option (the field itself: the rule of checks about the
    option; whether the connection persists is :func:`ends_connection`)."""
    return "close" in resp.connection_options()


def ends_connection(resp) -> bool:
    """The connection does not persist after ``resp`` (RFC 9112 §9.3: "close", or HTTP/1.0 without keep-alive)."""
    return not persistent(resp)


def assert_answered_in_order(ex: Exchange, bodies) -> None:
    """Requests (pipelined, or each sent after the previous response) are answered in request order with these
    ``bodies``. A server that does not keep
    connections (its response does not persist and it closes, RFC 9112 §9.3) may stop early: what it did
    answer must be the first requests, in order; the rest were never processed and the client retries them."""
    bodies = list(bodies)
    got = [r.body for r in ex.final]
    assert got == bodies[: len(got)], f"responses out of order or wrong: {describe(ex)}"
    if len(got) < len(bodies):
        if ex.held and not ex.closed and not ex.leftover:
            held_follow_up(ex, "the request after the response")
        if ex.final and not ex.closed and not ex.leftover and ex.timed_out:
            pytest.skip(
                f"{UNSUPPORTED_PREFIX} the server answered {len(got)} of {len(bodies)} pipelined requests "
                "and then neither answered the rest nor closed: it does not serve pipelined requests"
            )
        assert ex.final and ends_connection(ex.final[-1]) and ex.closed, (
            f"{len(got)} of {len(bodies)} pipelined requests answered, without Connection: close and a close: "
            f"{describe(ex)}"
        )
