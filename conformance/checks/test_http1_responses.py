"""What the server puts on the wire for responses (RFC 9110 §6.6.1, §8.6, §9.3.2, §10.1.1, §15; RFC 9112
§4, §6.1): HEAD and no-body statuses, Date and Server, the status-line, versions, 100-continue, Upgrade.

Responses with unusual statuses or headers come from the fixture's ``/script`` route, so the app — not
the server — supplies a body for a 204, its own Date, or a CR/LF in a header value, and the check sees
what the server does with it. Every request the app should answer carries an event-log token, and a pass
needs the app's log showing it ran (its steps, for a script): an answer the app never made is no evidence.
A check judges only its rule: where the server answers the app's unusual response with a status of its own
(a 500 for a 204 with a body), there is no such response to judge, and the check is *not supported*.
"""

from __future__ import annotations

import email.utils
import re
import time

import pytest

from gatecheck.conformance.app import new_token, response_script, script_target, step, wait_steps
from gatecheck.conformance.client.http1 import HEAD_CAP, Connection, parse_head, read_raw
from gatecheck.conformance.helpers.wire import (
    REPLY_TIMEOUT,
    assert_app_ran,
    assert_serves,
    deliver,
    describe,
    held_follow_up,
    request,
    tracked,
)
from gatecheck.conformance.spec.markers import needs, spec
from gatecheck.conformance.spec.results import not_supported
from gatecheck.fixtures import TOKEN_HEADER, payload_bytes

pytestmark = needs("http1")

_IMF_FIXDATE = re.compile(
    r"(Mon|Tue|Wed|Thu|Fri|Sat|Sun), \d{2} (Jan|Feb|Mar|Apr|May|Jun|Jul|Aug|Sep|Oct|Nov|Dec) "
    r"\d{4} \d{2}:\d{2}:\d{2} GMT"
)


def _scripted(server, status: int, headers=(), chunks=(), method: str = "GET", pause: float = 0.0) -> tuple:
    """(request bytes, token) for a script answering ``status`` with ``headers`` and the body ``chunks``."""
    steps = response_script(server.interface, status, headers, chunks, pause)
    token = new_token()
    return request(server, method, script_target(steps), [(TOKEN_HEADER, token)]), token


def _app_answered(server, token: str, what: str = "its response") -> None:
    """The app's log shows the script's first step (its response) ran: the answer can be the app's."""
    ran = step(wait_steps(server, token, 1, timeout=2.0), 0)
    assert ran is not None, f"the app's log shows no step of the script: {what} is not the app's (no evidence)"


def _the_apps_status(resp, status: int, ex) -> None:
    """Where the server answered with a status of its own instead of the app's ``status`` (a 500 for a 204 with
    content), the check's rule has no response to judge: *not supported*."""
    if resp.status != status:
        not_supported(
            f"the server answered {resp.status} to the app's {status} response, so no {status} went out "
            f"to judge (that answer is another rule's): {describe(ex)[:300]}"
        )


def _then_a_get(server, data: bytes, methods=()):
    """``data``'s response, then — once it arrived, so no pipelining is needed — a ``GET /ping`` on the same
    connection: content sent after the first response would come before the GET's response and break it."""
    return deliver(server, data, methods=methods, then=request(server))


def _assert_nothing_after_the_head(ex) -> None:
    """The first response ended at its empty line: the next bytes are the follow-up GET's response, or
    nothing at all when the server closed instead (a server MAY close; stray octets never parse). Where the
    first response ended the connection (the GET is then never sent) and the server has not closed it, no
    bytes may have come; with none, nothing delimits the response: *not supported*."""
    if len(ex.final) == 2:
        assert ex.final[1].body == b"ok", f"the follow-up GET got a corrupted response: {describe(ex)}"
        return
    assert not ex.leftover, f"content after the first response: {describe(ex)}"
    if not ex.closed:
        held_follow_up(ex, "the follow-up GET")
    assert ex.closed, f"the follow-up GET was not answered: {describe(ex)}"


# -- HEAD and responses without content ---------------------------------------------------------

_HEAD_ROUTES = {"payload": "/b1k", "streamed": None}


@pytest.mark.parametrize("route", list(_HEAD_ROUTES.values()), ids=list(_HEAD_ROUTES))
@spec("RFC 9110 §9.3.2", "MUST NOT")
def test_head_response_has_no_content(server, route):
    """A HEAD response carries no content, even when the app produces a body (whole or streamed): the
    next response on the connection parses cleanly."""
    data, token = tracked(server, "HEAD", route) if route else _scripted(server, 200, (), ["hello ", "world"], "HEAD")
    ex = _then_a_get(server, data, methods=["HEAD"])
    assert ex.first.status == 200, describe(ex)
    assert_app_ran(server, token, what="the HEAD request")
    _assert_nothing_after_the_head(ex)


@spec("RFC 9110 §8.6", "MUST NOT")
def test_head_content_length_equals_the_get_length(server):
    """A Content-Length in a HEAD response, if sent, equals the length of the GET response's content.

    Only the head is judged (``_first_head``): content after it is ``test_head_response_has_no_content``'s
    obligation (waitress, cheroot and uWSGI send it, and came out "known" or "fixed" by timing)."""
    data, token = tracked(server, "HEAD", "/b1k")
    head, raw = _first_head(server, data)
    assert head.status == 200, f"HEAD /b1k answered {head.status}: {raw[:400]!r}"
    assert_app_ran(server, token, what="HEAD /b1k")
    values = head.header_all("content-length")
    assert all(v.strip() == "1024" for v in values), f"HEAD /b1k Content-Length {values!r}; GET has 1024"


_NO_CONTENT = {204: "RFC 9110 §15.3.5", 304: "RFC 9110 §15.4.5"}


@pytest.mark.parametrize(
    "status", [pytest.param(s, id=str(s), marks=spec(c, "DEFINED")) for s, c in _NO_CONTENT.items()]
)
def test_no_content_status_has_no_body_even_if_the_app_sends_one(server, status):
    """A 204 or 304 response has no content: a body the app supplies is dropped, and the next response on
    the connection parses cleanly (another status in its place, a server's 500, has no rule here to judge)."""
    data, token = _scripted(server, status, (), ["hello"])
    ex = _then_a_get(server, data)
    _app_answered(server, token)
    _the_apps_status(ex.first, status, ex)
    _assert_nothing_after_the_head(ex)


def _first_head(server, data: bytes) -> tuple:
    """(the parsed head of the first response to ``data`` on a new connection, the raw bytes read). Only the
    head: content a server wrongly sends after it is another check's obligation, and parsing on would make a
    header check's verdict depend on whether that content arrived in the same read."""
    with Connection(server.address, REPLY_TIMEOUT) as conn:
        conn.send(data)
        raw, end = read_raw(conn.sock, lambda buf: b"\r\n\r\n" in buf, timeout=REPLY_TIMEOUT, cap=HEAD_CAP)
    assert b"\r\n\r\n" in raw, f"no complete response head ({end}): {raw[:400]!r}"
    return parse_head(raw[: raw.index(b"\r\n\r\n")]), raw


def _framing_of_a_204(server, name: bytes) -> None:
    data, token = _scripted(server, 204, (), ["hello"])
    resp, raw = _first_head(server, data)
    _app_answered(server, token)
    if resp.status != 204:
        not_supported(
            f"the server answered {resp.status} to the app's 204 response with content: no 204 went out "
            f"to judge: {raw[:300]!r}"
        )
    found = [n for n, _ in resp.headers if n.lower() == name]
    assert not found, f"204 with {found}: {raw[:400]!r}"


@spec("RFC 9110 §8.6", "MUST NOT")
def test_204_has_no_content_length(server):
    """A 204 response carries no Content-Length, even when the app supplied a body."""
    _framing_of_a_204(server, b"content-length")


@spec("RFC 9112 §6.1", "MUST NOT")
def test_204_has_no_transfer_encoding(server):
    """A 204 response carries no Transfer-Encoding, even when the app supplied a body."""
    _framing_of_a_204(server, b"transfer-encoding")


@spec("RFC 9110 §15.2", "MUST NOT")
def test_no_1xx_is_sent_to_an_http10_client(server):
    """No 1xx is sent to an HTTP/1.0 client, even when it sends Expect: 100-continue (which it must
    ignore): only the final response arrives."""
    head = request(server, "POST", "/echo", [("Expect", "100-continue"), ("Content-Length", "5")], version="HTTP/1.0")
    with Connection(server.address, REPLY_TIMEOUT) as conn:
        conn.send(head)
        early = conn.read_responses(1, methods=["POST"], timeout=0.5)
        conn.send(b"hello")
        ex = conn.read_responses(1, methods=["POST"])
    interim = [r.status for r in early.responses + ex.responses if r.interim]
    assert not interim, f"1xx sent to an HTTP/1.0 client: {interim}; got {early.raw[:200] + ex.raw[:200]!r}"
    assert ex.final and ex.final[0].body == b"hello", describe(ex)


# -- Date, Server, status-line, version ---------------------------------------------------------

_DATED = {"app-200": ("/ping", 200), "app-404": ("/no-such-route", 404)}


@pytest.mark.parametrize("target,status", list(_DATED.values()), ids=list(_DATED))
@spec("RFC 9110 §6.6.1", "MUST")
def test_date_is_sent_in_2xx_and_4xx(server, target, status):
    """An origin server with a clock sends Date in 2xx, 3xx and 4xx responses."""
    data, token = tracked(server, target=target)
    ex = deliver(server, data)
    assert ex.first.status == status and ex.first.header("date"), describe(ex)
    assert_app_ran(server, token)


@spec("RFC 9110 §6.6.1", "MUST")
def test_date_is_sent_in_the_servers_own_400(server):
    """The server's own 400 for an unparseable request (Content-Length: x5) carries Date too."""
    ex = deliver(server, request(server, "POST", "/echo", [("Content-Length", "x5")], b"hello"))
    if not 400 <= ex.first.status < 500:  # accepting it is test_invalid_content_length_is_rejected's to judge
        not_supported(
            f"the server did not refuse the request ({ex.first.status}): it sent no 4xx of its own to "
            f"judge; {describe(ex)}"
        )
    assert ex.first.header("date"), describe(ex)
    assert_serves(server)


@spec("RFC 9110 §5.6.7", "MUST")
def test_date_is_an_imf_fixdate(server):
    """Date is generated in IMF-fixdate form, e.g. "Sun, 06 Nov 1994 08:49:37 GMT"."""
    data, token = tracked(server)
    value = deliver(server, data).first.header("date") or ""
    assert _IMF_FIXDATE.fullmatch(value), f"Date: {value!r}"
    assert_app_ran(server, token)


@spec("RFC 9110 §6.6.1", "SHOULD")
def test_date_is_the_time_of_generation(server):
    """Date is the time the response was generated (within a few seconds of the client's clock)."""
    data, token = tracked(server)
    value = deliver(server, data).first.header("date") or ""
    parsed = email.utils.parsedate_to_datetime(value).timestamp() if _IMF_FIXDATE.fullmatch(value) else None
    assert parsed is not None and abs(parsed - time.time()) < 5, f"Date: {value!r} at {time.time():.0f}"
    assert_app_ran(server, token)


_APP_SINGLETONS = {"date": ("Date", "Sun, 06 Nov 1994 08:49:37 GMT"), "server": ("Server", "gatecheck-app")}


@pytest.mark.parametrize("name,value", list(_APP_SINGLETONS.values()), ids=list(_APP_SINGLETONS))
@spec("RFC 9110 §5.3", "MUST NOT")
def test_app_supplied_date_or_server_is_not_duplicated(server, name, value):
    """When the app supplies Date or Server, the response still has exactly one such field line."""
    data, token = _scripted(server, 200, [(name.lower(), value)], ["ok"])
    ex = deliver(server, data)
    _app_answered(server, token, f"the response with the app's {name}")
    lines = ex.first.header_all(name)
    assert len(lines) == 1, f"{len(lines)} {name} lines {lines!r}: {describe(ex)}"


@pytest.mark.parametrize("status", [200, 299], ids=["registered", "unregistered"])
@spec("RFC 9112 §4", "MUST")
def test_status_line_has_sp_after_the_code(server, status):
    """The status-line is HTTP-version SP 3DIGIT SP reason, with the second SP even for an empty reason."""
    data, token = _scripted(server, status, (), ["x"])
    ex = deliver(server, data)
    _app_answered(server, token, f"the {status} response")
    line = ex.first.raw_head.split(b"\r\n", 1)[0]
    # HTTP-version is 1*DIGIT "." 1*DIGIT here: which version the server answers is test_response_version_*'s rule
    assert re.fullmatch(rb"HTTP/[0-9]\.[0-9] %d [\t -~\x80-\xff]*" % status, line), f"status-line {line!r}"


_VERSIONS = {"http-1.0": "HTTP/1.0", "http-1.2": "HTTP/1.2"}


@pytest.mark.parametrize("version", list(_VERSIONS.values()), ids=list(_VERSIONS))
@spec("RFC 9110 §6.2", "SHOULD")
def test_response_version_is_http11_for_http1x_requests(server, version):
    """An HTTP/1.0 request is answered with "HTTP/1.1"; an HTTP/1.2 request is processed as 1.1."""
    data, token = tracked(server, version=version)
    ex = deliver(server, data)
    assert ex.first.status == 200 and ex.first.version == "HTTP/1.1", describe(ex)
    assert_app_ran(server, token)


@spec("RFC 9112 §6.1", "MUST NOT")
def test_streamed_response_to_http10_is_not_chunked(server):
    """A response without Content-Length to an HTTP/1.0 request uses no Transfer-Encoding; it is
    close-delimited (or length-delimited), and the content arrives whole."""
    body = payload_bytes(3000)
    ex = deliver(server, request(server, "POST", "/echo_iter", body=body, version="HTTP/1.0"), methods=["POST"])
    resp = ex.first
    assert not resp.header_all("transfer-encoding"), f"Transfer-Encoding sent to HTTP/1.0: {describe(ex)}"
    assert resp.body == body, f"{len(resp.body)} of {len(body)} octets came back: {describe(ex)}"


# -- Expect and Upgrade -------------------------------------------------------------------------


@spec("RFC 9110 §10.1.1", "MUST")
def test_expect_100_continue_gets_100_or_a_final_status_before_the_body(server):
    """With Expect: 100-continue, the server sends 100 (or a final status) without waiting for the content;
    after a 100 it sends the final response once the content arrives. A final 2xx before the content is the
    app's answer only when the app's log shows it ran (a server's own refusal, a 4xx or 5xx, needs no app)."""
    head, token = tracked(
        server, "POST", "/echo", [("Expect", "100-continue"), ("Content-Length", "5")], content_length=False
    )
    with Connection(server.address, REPLY_TIMEOUT) as conn:
        conn.send(head)
        early = conn.read_first(["POST"], REPLY_TIMEOUT)
        got = [r.status for r in early.responses]
        assert got, f"nothing within {REPLY_TIMEOUT}s of an Expect: 100-continue head: {early.raw[:200]!r}"
        assert early.final or got[0] == 100, f"expected 100 Continue or a final status, got {got}"
    if early.final and 200 <= early.final[0].status < 300:
        assert_app_ran(server, token, what="the request whose final 2xx came before its content")


@spec("RFC 9110 §10.1.1", "MUST")
def test_final_response_follows_a_100_continue(server):
    """A server that sent 100 (Continue) sends the final response once the content arrives (a server that
    answered with a final status before the content has no such obligation: not applicable)."""
    head = request(server, "POST", "/echo", [("Expect", "100-continue"), ("Content-Length", "5")])
    with Connection(server.address, REPLY_TIMEOUT) as conn:
        conn.send(head)
        early = conn.read_first(["POST"], REPLY_TIMEOUT)
        got = [r.status for r in early.responses]
        if early.final or not got or got[0] != 100:
            pytest.skip(f"not applicable: no 100 (Continue) was sent (got {got or 'nothing'})")
        conn.send(b"hello")
        ex = conn.read_responses(1, methods=["POST"])
    assert ex.final and ex.final[0].status == 200 and ex.final[0].body == b"hello", describe(ex)


@spec("RFC 9110 §10.1.1", "MAY")
def test_unknown_expectation_is_417_or_ignored(server):
    """An expectation other than 100-continue may be answered 417, or the request processed normally."""
    ex = deliver(
        server, request(server, "POST", "/echo", [("Expect", "gatecheck-unknown")], b"hello"), methods=["POST"]
    )
    resp = ex.first
    assert resp.status == 417 or (resp.status == 200 and resp.body == b"hello"), describe(ex)


@spec("RFC 9110 §7.8", "MAY")
def test_upgrade_to_an_unknown_protocol_is_ignored(server):
    """An Upgrade to a protocol the server does not speak is ignored: the normal response, never 101."""
    data, token = tracked(server, headers=[("Connection", "Upgrade"), ("Upgrade", "gatecheck/1")])
    ex = deliver(server, data)
    assert ex.first.status == 200 and ex.first.body == b"ok", describe(ex)
    assert_app_ran(server, token)


@spec("RFC 9110 §7.8", "MUST")
def test_upgrade_in_an_http10_request_is_ignored(server):
    """Upgrade in an HTTP/1.0 request is ignored: a complete WebSocket handshake over HTTP/1.0 gets no 101, and
    the request is handed to the app as the plain HTTP request it is (the app's log shows it)."""
    headers = [
        ("Connection", "Upgrade"),
        ("Upgrade", "websocket"),
        ("Sec-WebSocket-Version", "13"),
        ("Sec-WebSocket-Key", "dGhlIHNhbXBsZSBub25jZQ=="),
    ]
    data, token = tracked(server, target="/ws_echo", headers=headers, version="HTTP/1.0")
    ex = deliver(server, data, timeout=1.5)
    assert ex.responses and all(r.status != 101 for r in ex.responses), describe(ex)
    assert_app_ran(server, token, what="the HTTP/1.0 request with Upgrade")


@spec("RFC 9110 §2.2", "MUST NOT")
def test_cr_lf_in_an_app_header_value_never_splits_the_response(server):
    """A CR LF inside a header value supplied by the app never reaches the wire as a line break (the server
    refuses the header or the response; it never emits an injected field).

    Evidence, not absence: either a well-formed response (parsed strictly, so a bare CR or LF in a field
    fails it) without an X-Injected field, or the app's log shows it handed over the header (the step ran)
    and the server then closed the connection without a response. Silence, garbage, or a close before the
    app ran fail."""
    token = new_token()
    steps = response_script(server.interface, 200, [("x-split", "a\r\nX-Injected: yes")], ["ok"])
    ex = deliver(server, request(server, "GET", script_target(steps), [(TOKEN_HEADER, token)]))
    assert b"\nx-injected" not in ex.raw.lower(), f"the app's CR LF split the header section: {describe(ex)}"
    ran = step(wait_steps(server, token, 1, timeout=2.0), 0)
    if ex.final:
        assert not ex.first.header_all("x-injected"), f"an injected field reached the wire: {describe(ex)}"
        assert ran, f"a response the app's log never shows it made (its step never ran): no evidence: {describe(ex)}"
        return
    assert ran and ex.closed, (
        f"no response, and no evidence the server refused the header (app step logged: {bool(ran)}): {describe(ex)}"
    )
