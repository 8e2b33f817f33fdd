"""Connection management on the HTTP/1.x wire: keep-alive, Connection: close, HTTP/1.0, pipelining
(RFC 9112 §9.3, §9.3.2, §9.6).

Every request carries an event-log token and a pass needs the app's log showing it ran it: a server's canned
answer says nothing of how the server handles the app's responses on the connection. Whether a response lets
the connection persist is read as RFC 9112 §9.3 says (``client.http1.persistent``): the "close" option, or an
HTTP/1.0 response without "keep-alive"; the client sends nothing after a response that ends it (§9.6)."""

from __future__ import annotations

import pytest

from gatecheck.conformance.app import new_token
from gatecheck.conformance.client.http1 import persistent
from gatecheck.conformance.helpers.wire import (
    REPLY_TIMEOUT,
    assert_answered_in_order,
    assert_app_ran,
    assert_closed,
    assert_never_parsed,
    deliver,
    describe,
    request,
    says_close,
    smuggled_request,
    tracked,
)
from gatecheck.conformance.spec.markers import needs, spec
from gatecheck.fixtures import JSON_BODY, TOKEN_HEADER, payload_bytes

pytestmark = needs("http1")

_B1K = payload_bytes(1024)


@spec("RFC 9112 §9.3", "SHOULD")
def test_two_sequential_requests_share_one_connection(server):
    """HTTP/1.1 connections persist by default: a second request on the same connection is answered."""
    (first, one), (second, two) = tracked(server), tracked(server, target="/b1k")
    ex = deliver(server, first, then=second)
    assert [r.status for r in ex.final] == [200, 200], (
        f"{ex.held or 'the second request was not answered'}: {describe(ex)}"
    )
    assert ex.final[0].body == b"ok" and ex.final[1].body == _B1K, describe(ex)
    assert_app_ran(server, one, two, what="the two requests")


_CLOSE_TOKENS = {"lower": "close", "capitalised": "Close", "in-a-list": "keep-alive, close"}


@pytest.mark.parametrize("value", list(_CLOSE_TOKENS.values()), ids=list(_CLOSE_TOKENS))
@spec("RFC 9112 §9.6", "MUST")
def test_connection_close_request_is_answered_then_closed(server, value):
    """A request with the "close" connection option (any case, any list position) gets its response, and
    then the server closes the connection."""
    data, token = tracked(server, headers=[("Connection", value)])
    ex = deliver(server, data, wait_close=True)
    assert ex.first.status == 200 and ex.first.body == b"ok", describe(ex)
    assert_app_ran(server, token)
    assert_closed(ex)


@spec("RFC 9112 §9.6", "SHOULD")
def test_connection_close_request_gets_connection_close_in_response(server):
    """The response to a request with Connection: close carries the "close" connection option."""
    data, token = tracked(server, headers=[("Connection", "close")])
    ex = deliver(server, data)
    assert_app_ran(server, token)
    assert says_close(ex.first), describe(ex)


@spec("RFC 9112 §9.3", "MUST")
def test_server_that_closes_after_its_response_says_close(server):
    """A server that does not support persistent connections says so in its response: the "close" option.

    A plain HTTP/1.1 ``GET /ping`` (no Connection field: persistent by default) on a new connection; once its
    response is read, a second ``GET /ping`` on the same connection. A server that answers it keeps
    connections persistent: the rule is not applicable (never a pass). A server that closes instead, unasked,
    after the first response of a fresh connection with a request pending, does not keep connections
    persistent (there is nothing else it could be answering, and no idle time passed), so its first response
    must have carried "close" — or be an HTTP/1.0 response without "keep-alive", which says the same (RFC 9112
    §9.3: the connection "will close after the current response"). A response that announced the end gets no
    second request (§9.6): the close that follows is then judged as announced."""
    (first, token), (second, _) = tracked(server), tracked(server)
    ex = deliver(server, first, then=second)
    assert ex.final and ex.first.status == 200 and ex.first.body == b"ok", describe(ex)
    assert_app_ran(server, token)
    if len(ex.final) > 1:
        pytest.skip(
            f"not applicable: a second request on the connection was answered {ex.final[1].status} (the "
            "server keeps it persistent)"
        )
    if not ex.closed:
        pytest.skip(
            f"not applicable: the connection stayed open {REPLY_TIMEOUT:.0f} s after the response, with a "
            "second request unanswered (it was not closed: nothing to say close about)"
        )
    assert not persistent(ex.first, framing=False), (
        "the server closed the connection after its first response, with a second request pending and unanswered, "
        f'without the "close" connection option: {describe(ex)}'
    )


@spec("RFC 9112 §9.6", "MUST NOT")
def test_request_pipelined_after_connection_close_is_not_processed(server):
    """After a request with Connection: close, a request pipelined behind it is never processed.

    Evidence, not absence: the server MUST answer the first request before it closes (§9.6), so exactly one
    well-formed final response must come back (its status is not judged: the client broke the rule by
    pipelining), then the close, with no further bytes; the app's log must show the first request (so the
    log works) and never the second. Silence, garbage or a close without the first answer fail."""
    first, token = new_token(), new_token()
    data = request(server, headers=[("Connection", "close"), (TOKEN_HEADER, first)]) + smuggled_request(server, token)
    ex = deliver(server, data, methods=["GET"], wait_close=True)
    assert len(ex.final) == 1, f"expected the first request's response and nothing more: {describe(ex)}"
    assert not ex.leftover.strip(), f"the request after Connection: close was answered: {describe(ex)}"
    assert_closed(ex)
    assert server.events(first, timeout=2.0), "the app's log never showed the first request: no evidence"
    assert_never_parsed(server, token)


@spec("RFC 9112 §9.3", "DEFINED")
def test_http10_request_without_keep_alive_is_closed_after_response(server):
    """An HTTP/1.0 request without the keep-alive option: the connection closes after the response."""
    data, token = tracked(server, version="HTTP/1.0")
    ex = deliver(server, data, wait_close=True)
    assert ex.first.status == 200 and ex.first.body == b"ok", describe(ex)
    assert_app_ran(server, token)
    assert_closed(ex)


@spec("RFC 9112 §9.3", "DEFINED")
def test_http10_keep_alive_is_honoured_with_a_delimited_response_or_closed(server):
    """An HTTP/1.0 request with Connection: keep-alive either gets a close after its response, or a
    length-delimited response (never chunked) and a second request answered on the same connection."""
    first, token = tracked(server, version="HTTP/1.0", headers=[("Connection", "keep-alive")])
    second = request(server, target="/b1k", version="HTTP/1.0", headers=[("Connection", "keep-alive")])
    ex = deliver(server, first, then=second)
    resp = ex.first
    assert resp.status == 200 and resp.body == b"ok", describe(ex)
    assert_app_ran(server, token)
    if len(ex.final) == 1:
        assert_closed(ex)
    else:
        assert resp.framing == "length", f"a kept-alive HTTP/1.0 response must be length-delimited: {describe(ex)}"
        assert ex.final[1].status == 200 and ex.final[1].body == _B1K, describe(ex)


_PIPELINES = {
    "one-write": ("whole", [("/b1k", _B1K), ("/ping", b"ok"), ("/json", JSON_BODY)]),
    "byte-by-byte": ("bytewise", [("/b1k", _B1K), ("/ping", b"ok"), ("/json", JSON_BODY)]),
    "slow-first": ("whole", [("/io100", payload_bytes(10)), ("/ping", b"ok"), ("/b1k", _B1K)]),
}


@pytest.mark.parametrize("mode,routes", list(_PIPELINES.values()), ids=list(_PIPELINES))
@spec("RFC 9112 §9.3.2", "MUST")
def test_pipelined_requests_are_answered_completely_and_in_order(server, mode, routes):
    """Requests pipelined on one connection (in one write, byte by byte, or behind a slow one) are
    answered, each response complete, in request order (a server without persistent connections may
    answer the first and close, saying so)."""
    data = b"".join(request(server, target=path) for path, _ in routes)
    ex = deliver(server, data, mode=mode, count=len(routes), methods=["GET"] * len(routes))
    assert_answered_in_order(ex, [body for _, body in routes])


@spec("RFC 9112 §9.3.2", "MUST")
def test_pipelined_posts_keep_their_own_bodies(server):
    """Pipelined requests with bodies are framed one after the other: each echo returns its own body."""
    bodies = [b"first body", b"", b"x" * 5000]
    data = b"".join(request(server, "POST", "/echo", [("Content-Length", str(len(b)))], b) for b in bodies)
    ex = deliver(server, data, count=3, methods=["POST"] * 3)
    assert_answered_in_order(ex, bodies)
