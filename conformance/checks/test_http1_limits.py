"""Limits, fragmentation and slow clients on the HTTP/1.1 wire (RFC 9112 §2.2, §3, §9.5; RFC 9110 §5.3,
§5.4, §15.5.15; RFC 6585 §5).

A limit is the server's to choose, so a check accepts either the right refusal (414 for the target, 4xx
for the header section) or the request served intact; what it never accepts is a crash, a silent
truncation, or the wrong refusal. After every such input the server must still serve a new connection.
"""

from __future__ import annotations

import time

import pytest

from gatecheck.conformance.app import app_view, decode_probe
from gatecheck.conformance.client.http1 import Connection
from gatecheck.conformance.helpers.wire import (
    REPLY_TIMEOUT,
    assert_app_ran,
    assert_serves,
    deliver,
    describe,
    request,
    tracked,
)
from gatecheck.conformance.spec.markers import needs, spec

pytestmark = needs("http1")


@spec("RFC 9112 §3", "MUST")
def test_overlong_request_target_is_414_or_served(server):
    """A request-target longer than the server will parse (here 128 KiB) → 414; a server that does parse
    it serves the request normally: the app sees the whole target, never a silently truncated one."""
    query = "x=" + "a" * (128 * 1024)
    ex = deliver(server, request(server, target="/probe?" + query), timeout=5.0)
    resp = ex.first
    assert resp.status in (200, 414), describe(ex)
    if resp.status == 200:
        seen = app_view(decode_probe(resp.body))["query"]
        assert seen == query, f"the app saw a query of {len(seen or '')} octets; {len(query)} were sent"
    assert_serves(server)


@spec("RFC 9112 §3", "SHOULD")
def test_request_line_of_8000_octets_is_accepted(server):
    """A request-line of 8000 octets is supported (the RECOMMENDED minimum): the app sees all of it."""
    query = "x=" + "a" * (8000 - len("GET  HTTP/1.1") - len("/probe?x="))
    assert len(f"GET /probe?{query} HTTP/1.1") == 8000
    ex = deliver(server, request(server, target="/probe?" + query))
    assert ex.first.status == 200, describe(ex)
    seen = app_view(decode_probe(ex.first.body))["query"]
    assert seen == query, f"the app saw a query of {len(seen or '')} octets; {len(query)} were sent"


_LARGE_HEADERS = {
    "one-256KiB-field": [("X-Big", "a" * (256 * 1024))],
    "4000-fields": [(f"X-F-{i}", "v" * 48) for i in range(4000)],
}


@pytest.mark.parametrize("headers", list(_LARGE_HEADERS.values()), ids=list(_LARGE_HEADERS))
@spec("RFC 9110 §5.4", "MUST")
def test_oversized_header_section_is_4xx_or_passed_whole(server, headers):
    """A header section larger than the server accepts → a 4xx (431 recommended by RFC 6585 §5), never a
    dropped connection or a silently truncated header set; a server that accepts it hands the app every
    field whole."""
    ex = deliver(server, request(server, "GET", "/probe", headers), timeout=5.0)
    resp = ex.first
    if not 400 <= resp.status < 500:
        assert resp.status == 200, describe(ex)
        seen = dict(app_view(decode_probe(resp.body))["headers"])
        missing = [n for n, v in headers if seen.get(n.lower()) != v]
        assert not missing, f"{len(missing)} of {len(headers)} fields missing or cut, e.g. {missing[:3]}"
    assert_serves(server)


def _full(server, which: str) -> tuple:
    """(request bytes, split offset, expected body, token) for an incomplete-request case."""
    if which == "partial-body":
        data, token = tracked(server, "POST", "/echo", [("Content-Length", "10")], b"helloworld")
        return data, len(data) - 5, b"helloworld", token
    data, token = tracked(server, headers=[("X-Gatecheck", "value")])
    cut = data.index(b"\r\n") + 2 if which == "after-request-line" else data.index(b"X-Gatecheck: va") + 15
    return data, cut, b"ok", token


# RFC 9110 §5.3: a server MUST NOT apply a request before its whole header section arrived; RFC 9112 §6.3:
# Content-Length defines the body length (no keyword: the server waits for that many octets)
_INCOMPLETE = {
    "after-request-line": ("RFC 9110 §5.3", "MUST NOT"),
    "inside-a-field": ("RFC 9110 §5.3", "MUST NOT"),
    "partial-body": ("RFC 9112 §6.3", "DEFINED"),
}


@pytest.mark.parametrize("which", [pytest.param(w, id=w, marks=spec(*c)) for w, c in _INCOMPLETE.items()])
def test_incomplete_request_is_waited_for_not_answered(server, which):
    """A request cut after its request-line, inside a field, or inside its body is waited for: nothing is
    answered and the connection stays open; once the rest arrives it is answered normally."""
    data, cut, expected, token = _full(server, which)
    method = "POST" if which == "partial-body" else "GET"
    with Connection(server.address, REPLY_TIMEOUT) as conn:
        conn.send(data[:cut])
        early = conn.read_responses(1, methods=[method], timeout=0.5)
        assert not early.responses and not early.closed, f"answered an incomplete request: {early.raw[:300]!r}"
        conn.send(data[cut:])
        ex = conn.read_responses(1, methods=[method])
    assert ex.first.status == 200 and ex.first.body == expected, describe(ex)
    assert_app_ran(server, token, what="the request once complete")


@spec("RFC 9112 §2.2", "DEFINED")
def test_request_sent_one_byte_at_a_time_is_parsed_identically(server):
    """A request delivered one octet per write reaches the app exactly as when delivered whole."""
    data = request(server, "GET", "/probe/frag?q=1&r=two", [("X-One", "1"), ("X-Two", "two words")])
    views = []
    for mode in ("whole", "bytewise"):
        ex = deliver(server, data, mode=mode)
        assert ex.first.status == 200, describe(ex)
        view = app_view(decode_probe(ex.first.body))
        views.append((view["path"], view["query"], [(n, v) for n, v in view["headers"] if n.startswith("x-")]))
    assert views[0] == views[1], f"whole: {views[0]}; byte by byte: {views[1]}"


@spec("RFC 9112 §9.5", "POLICY")
def test_slow_header_trickle_does_not_delay_other_clients(server):
    """Suite policy: while one client trickles its header section, other clients are served promptly
    (within 2 s)."""
    with Connection(server.address, REPLY_TIMEOUT) as slow:
        slow.send(b"GET /ping HTTP/1.1\r\nHost: " + server.authority.encode() + b"\r\n")
        for i in range(3):
            slow.send(b"X-Slow-%d: y\r\n" % i)
            started = time.monotonic()
            data, token = tracked(server)
            ex = deliver(server, data, timeout=2.0)
            took = time.monotonic() - started
            assert ex.final and ex.final[0].body == b"ok" and took < 2.0, (
                f"another client waited {took:.1f}s while one trickled headers: {describe(ex)}"
            )
            assert_app_ran(server, token, what="the other client's request")
