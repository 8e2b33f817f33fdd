"""Time on a connection: rules that hold only if the server keeps its timers to what they are for.

A keep-alive timeout closes an *idle* connection: one with a pipelined request still waiting while the app
works on the one before it is not idle. The check starts a private server with its keep-alive timeout set low
through its adapter (``Adapter.ROLES``: uvicorn's ``--timeout-keep-alive``, hypercorn's and gunicorn's
``--keep-alive``, waitress's ``--channel-timeout``, granian's header read timeout; a target without one is
*not supported*), so the rule costs seconds. A request with ``Connection: close`` and bytes behind it, sent in
the same write or while its app still runs, gets its own complete response, and nothing behind it is processed.
"""

from __future__ import annotations

import socket
import time

import pytest

from gatecheck.conformance.app import new_token, response_script, script_target
from gatecheck.conformance.app.private import private_server, with_role
from gatecheck.conformance.client.http1 import Connection
from gatecheck.conformance.helpers.wire import (
    REPLY_TIMEOUT,
    assert_never_parsed,
    describe,
    request,
    says_close,
    smuggled_request,
)
from gatecheck.conformance.spec.markers import needs, spec
from gatecheck.conformance.spec.results import UNSUPPORTED_PREFIX
from gatecheck.fixtures import TOKEN_HEADER

pytestmark = needs("http1")

KEEP_ALIVE = 1  # seconds: the keep-alive timeout the private server gets
SLOW = 2.0  # seconds the first app takes: past the keep-alive timeout


def _slow(server, token: str, seconds: float, body: str = "slow", headers=()) -> bytes:
    steps = [["sleep", seconds]] + response_script(server.interface, 200, [("content-type", "text/plain")], [body])
    return request(server, "GET", script_target(steps), [(TOKEN_HEADER, token), *headers])


def _pipelines(server) -> bool:
    """Whether the server answers both of two pipelined GET /ping (a server that does not is not judged)."""
    with Connection(server.address, REPLY_TIMEOUT) as conn:
        conn.send(request(server) + request(server))
        ex = conn.read_responses(2, methods=["GET", "GET"])
    return len(ex.final) == 2


@spec("RFC 9112 §9.5", "POLICY")
def test_pipelined_request_outliving_the_keep_alive_timeout_is_answered(server):
    """POLICY (the text lets a server close an *inactive* connection after its timeout; a connection with a
    request waiting is not inactive): with a keep-alive timeout of 1 s, a request pipelined behind one whose
    app takes 2 s is answered, in order, and the app's log shows it ran."""
    target = with_role(server, "keep-alive-timeout", str(KEEP_ALIVE))
    with private_server(server, target=target) as priv:
        if not _pipelines(priv):
            pytest.skip(f"{UNSUPPORTED_PREFIX} the server does not answer two pipelined requests")
        first, second = new_token(), new_token()
        with Connection(priv.address, SLOW + REPLY_TIMEOUT + KEEP_ALIVE) as conn:
            conn.send(_slow(priv, first, SLOW) + smuggled_request(priv, second))
            ex = conn.read_responses(2, methods=["GET", "GET"])
        got = [(r.status, r.body) for r in ex.final]
        assert got[:1] == [(200, b"slow")], f"the slow request: {describe(ex)}"
        assert got == [(200, b"slow"), (200, b"ok")], (
            f"the request pipelined behind a {SLOW:.0f} s app, {KEEP_ALIVE} s keep-alive timeout: {describe(ex)}"
        )
        assert priv.events(second, timeout=2.0), "the app's log shows nothing for the pipelined request"


_BEHIND = {"same-write": 0.0, "while-running": 0.2}


def _close_with_bytes_behind(server, delay: float) -> tuple:
    """A Connection: close request (its app takes 0.5 s) and a GET /ping behind it, in the same write or
    ``delay`` seconds later (while the app runs): (exchange, close token, token behind)."""
    token, behind = new_token(), new_token()
    first = _slow(server, token, 0.5, "own", [("Connection", "close")])
    with Connection(server.address, REPLY_TIMEOUT + 1) as conn:
        conn.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        if delay:
            conn.send(first)
            time.sleep(delay)
            try:  # the request after the close is what this check is about (§9.6's "MUST NOT process"): sent past
                conn.sock.sendall(smuggled_request(server, behind))  # the client's guard, which is for other checks
            except OSError:
                pass
        else:
            conn.send(first + smuggled_request(server, behind))
        ex = conn.read_responses(2, methods=["GET", "GET"])
        if not conn.closed:
            conn.wait_closed(1.5)
            ex.closed = conn.closed
    return ex, token, behind


@pytest.mark.parametrize("delay", list(_BEHIND.values()), ids=list(_BEHIND))
@spec("RFC 9112 §9.6", "POLICY")
def test_connection_close_request_with_bytes_behind_it_gets_its_own_response(server, delay):
    """POLICY (the client broke §9.6 by sending more; the request it sent with "close" is still a valid
    request, and §9.6 has the server send its final response before closing): the first response is that
    request's own, complete (200 "own", the app's log shows it ran), whatever came behind it."""
    ex, token, _ = _close_with_bytes_behind(server, delay)
    assert ex.final and (ex.final[0].status, ex.final[0].body) == (200, b"own"), (
        f"the Connection: close request's response: {describe(ex)}"
    )
    assert server.events(token, timeout=2.0), "the app's log shows nothing for the Connection: close request"


@pytest.mark.parametrize("delay", list(_BEHIND.values()), ids=list(_BEHIND))
@spec("RFC 9112 §9.6", "MUST NOT")
def test_bytes_behind_a_connection_close_request_are_not_processed(server, delay):
    """The request behind one with Connection: close (sent with it, or while its app runs) never reaches the
    app, and no response follows the first; the first itself was answered (the app's log shows it)."""
    ex, token, behind = _close_with_bytes_behind(server, delay)
    assert ex.final, f"no response to the Connection: close request: {describe(ex)}"
    assert server.events(token, timeout=2.0), "the app's log shows nothing for the Connection: close request"
    assert len(ex.final) == 1, f"the request behind the close was answered: {describe(ex)}"
    if not says_close(ex.final[0]):
        assert ex.closed, f"neither said close nor closed: {describe(ex)}"
    assert_never_parsed(server, behind)
