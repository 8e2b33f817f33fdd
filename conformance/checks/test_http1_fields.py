"""Request-line and header fields on the HTTP/1.1 wire (RFC 9112 §2.2, §3, §5; RFC 9110 §5).

Where the RFC allows "reject with 400 or repair" (obs-fold, bare CR, NUL), a repair is verified in what
the app was handed (the probe route); a rejection must be a 400. After every malformed input the server
must still serve a new connection. Where the text asks for a 400 *and* a close, each is its own check.
"""

from __future__ import annotations

import re

import pytest

from gatecheck.conformance.app import app_view, decode_probe
from gatecheck.conformance.helpers.wire import (
    assert_app_ran,
    assert_closed_after_answer,
    assert_refused,
    assert_serves,
    deliver,
    describe,
    request,
    tracked,
)
from gatecheck.conformance.spec.markers import needs, spec

pytestmark = needs("http1")


def _status(server, data: bytes, *, wait_close: bool = False):
    ex = deliver(server, data, wait_close=wait_close)
    return ex, ex.first


def _must_400(server, data: bytes) -> None:
    ex, resp = _status(server, data)
    assert resp.status == 400, f"expected 400; {describe(ex)}"
    assert_serves(server)


def _probe_or_400(server, data: bytes):
    """None when the server answered 400; else what the app saw (the probe answered 200)."""
    ex, resp = _status(server, data)
    assert resp.status in (200, 400), f"expected 400 or the probe's 200; {describe(ex)}"
    assert_serves(server)
    return None if resp.status == 400 else app_view(decode_probe(resp.body))


def _refused(server, data: bytes, statuses=(400,)) -> None:
    """The first response is one of ``statuses``; the close is judged by ``_closed``."""
    assert_refused(deliver(server, data), statuses)
    assert_serves(server)


def _closed(server, data: bytes) -> None:
    """The server answers (any status; judged by ``_refused``) and then closes the connection."""
    assert_closed_after_answer(deliver(server, data, wait_close=True))
    assert_serves(server)


def _values(view: dict, name: str) -> list:
    return [v for n, v in view["headers"] if n == name]


# -- Host -------------------------------------------------------------------------------------


@spec("RFC 9112 §3.2", "MUST")
def test_http11_request_without_host_is_rejected(server):
    """An HTTP/1.1 request lacking a Host header field → 400."""
    _must_400(server, request(server, host=None))


_TWO_HOSTS = {"same-value": ("{a}", "{a}"), "different-values": ("{a}", "other.example")}


@pytest.mark.parametrize("first,second", list(_TWO_HOSTS.values()), ids=list(_TWO_HOSTS))
@spec("RFC 9112 §3.2", "MUST")
def test_request_with_two_host_lines_is_rejected(server, first, second):
    """An HTTP/1.1 request with more than one Host field line → 400."""
    a = server.authority
    _must_400(server, request(server, headers=[("Host", first.format(a=a)), ("Host", second.format(a=a))]))


_BAD_HOSTS = {"inner-space": "exa mple", "userinfo": "user@example", "non-numeric-port": "example:http"}


@pytest.mark.parametrize("host", list(_BAD_HOSTS.values()), ids=list(_BAD_HOSTS))
@spec("RFC 9112 §3.2", "MUST")
def test_request_with_invalid_host_is_rejected(server, host):
    """A Host value that is not uri-host [":" port] → 400."""
    _must_400(server, request(server, host=host))


@spec("RFC 9112 §3.2", "DEFINED")
def test_http10_request_without_host_is_served(server):
    """HTTP/1.0 requests may omit Host: they are served normally (the app's log shows it ran)."""
    data, token = tracked(server, version="HTTP/1.0", host=None)
    ex, resp = _status(server, data)
    assert resp.status == 200 and resp.body == b"ok", describe(ex)
    assert_app_ran(server, token)


@spec("RFC 9112 §3.2.2", "MUST")
def test_absolute_form_target_is_accepted_as_its_origin_form(server):
    """An absolute-form target is accepted; the app sees the same path and query as for the origin form."""
    data = request(server, target=f"http://{server.authority}/probe?x=1", host="ignored.example")
    ex, resp = _status(server, data)
    assert resp.status == 200, describe(ex)
    view = app_view(decode_probe(resp.body))
    assert (view["path"], view["query"]) == ("/probe", "x=1"), view


# -- field syntax -----------------------------------------------------------------------------


@pytest.mark.parametrize("ws", [" ", "\t"], ids=["space", "tab"])
@spec("RFC 9112 §5.1", "MUST")
def test_whitespace_between_field_name_and_colon_is_rejected(server, ws):
    """No whitespace is allowed between a field name and its colon → 400."""
    _must_400(server, request(server, headers=[("X-Gatecheck" + ws, "v")]))


@spec("RFC 9112 §5.2", "MUST")
def test_obs_fold_is_rejected_or_replaced_with_space(server):
    """A folded field value is rejected with 400, or each fold is replaced by SP before the app sees it."""
    view = _probe_or_400(server, request(server, "GET", "/probe", [("X-Folded", "a\r\n b")]))
    if view is not None:
        values = _values(view, "x-folded")
        assert len(values) == 1 and re.fullmatch(r"a +b", values[0]), f"the app saw x-folded = {values!r}"


_BARE_CR = {"inside-value": ([("X-Cr", "a\rb")], "a b"), "as-line-end": ([("X-Cr", "a\rX-Hidden: h")], "a X-Hidden: h")}


@pytest.mark.parametrize("headers,repaired", list(_BARE_CR.values()), ids=list(_BARE_CR))
@spec("RFC 9112 §2.2", "MUST")
def test_bare_cr_in_a_field_is_rejected_or_replaced_with_space(server, headers, repaired):
    """A bare CR is invalid: the message is rejected (400) or the CR becomes SP — never a line end."""
    view = _probe_or_400(server, request(server, "GET", "/probe", headers))
    if view is not None:
        assert _values(view, "x-cr") == [repaired] and not _values(view, "x-hidden"), view["headers"]


@spec("RFC 9112 §2.2", "MUST")
def test_bare_cr_in_the_request_line_is_rejected(server):
    """A bare CR inside the request-target is invalid; replaced by SP it leaves whitespace inside the target,
    an invalid request-line either way → 4xx. (A CR in place of the SP before the version would become a valid
    line when replaced, so the CR sits inside the target: "GET /probe?x=a\\rb HTTP/1.1".)"""
    ex, resp = _status(server, b"GET /probe?x=a\rb HTTP/1.1\r\nHost: " + server.authority.encode() + b"\r\n\r\n")
    assert 400 <= resp.status < 500, f"expected 4xx; {describe(ex)}"
    assert_serves(server)


@spec("RFC 9110 §5.5", "MUST")
def test_nul_in_a_field_value_is_rejected_or_replaced_with_space(server):
    """A NUL in a field value: the message is rejected (400) or the NUL is replaced by SP."""
    view = _probe_or_400(server, request(server, "GET", "/probe", [("X-Nul", "a\x00b")]))
    if view is not None:
        assert _values(view, "x-nul") == ["a b"], view["headers"]


_BAD_NAMES = {"brackets": b"X-Invalid[]", "non-ascii": b"X-\xc4", "empty": b""}


@pytest.mark.parametrize("name", list(_BAD_NAMES.values()), ids=list(_BAD_NAMES))
@spec("RFC 9112 §2.2", "SHOULD")
def test_field_name_that_is_not_a_token_is_rejected(server, name):
    """A field name with non-token octets (brackets, non-ASCII, empty) does not match the grammar → 400."""
    _refused(server, request(server, headers=[(name, b"v")]))


@pytest.mark.parametrize("name", list(_BAD_NAMES.values()), ids=list(_BAD_NAMES))
@spec("RFC 9112 §2.2", "SHOULD")
def test_field_name_that_is_not_a_token_closes_the_connection(server, name):
    """After answering a request with a field name that is not a token, the server closes the connection."""
    _closed(server, request(server, headers=[(name, b"v")]))


@spec("RFC 9112 §2.2", "MUST")
def test_whitespace_line_after_request_line_is_rejected_or_ignored(server):
    """A whitespace-prefixed line right after the request-line: the message is rejected (400), or that
    line is ignored (it never becomes a field)."""
    data = (f"GET /probe HTTP/1.1\r\n X-Leading: x\r\nHost: {server.authority}\r\n\r\n").encode()
    view = _probe_or_400(server, data)
    if view is not None:
        assert not _values(view, "x-leading"), f"the whitespace-prefixed line became a field: {view['headers']}"


# -- request-line -----------------------------------------------------------------------------


@spec("RFC 9112 §2.2", "SHOULD")
def test_empty_line_before_request_line_is_ignored(server):
    """At least one empty line (CRLF) received before the request-line is ignored."""
    data, token = tracked(server)
    ex, resp = _status(server, b"\r\n" + data)
    assert resp.status == 200 and resp.body == b"ok", describe(ex)
    assert_app_ran(server, token)


_BAD_VERSIONS = {"lower-case": b"http/1.1", "missing": b""}


def _with_version(server, version: bytes) -> bytes:
    line = b"GET /ping" + (b" " + version if version else b"")
    return line + b"\r\nHost: " + server.authority.encode() + b"\r\n\r\n"


@pytest.mark.parametrize("version", list(_BAD_VERSIONS.values()), ids=list(_BAD_VERSIONS))
@spec("RFC 9112 §2.2", "SHOULD")
def test_invalid_version_is_rejected(server, version):
    """A mis-cased or missing HTTP-version (RFC 9112 §2.3: case-sensitive "HTTP/" DIGIT "." DIGIT) does not
    match the grammar → 400."""
    _refused(server, _with_version(server, version))


@pytest.mark.parametrize("version", list(_BAD_VERSIONS.values()), ids=list(_BAD_VERSIONS))
@spec("RFC 9112 §2.2", "SHOULD")
def test_invalid_version_closes_the_connection(server, version):
    """After answering a request with a mis-cased or missing HTTP-version, the server closes the connection."""
    _closed(server, _with_version(server, version))


@spec("RFC 9110 §6.2", "INFO")
def test_unsupported_major_version_is_505_or_served(server):
    """INFO (RFC 9110 §6.2: a server *can* send 505 to refuse a major version; nothing requires it):
    ``HTTP/9.9`` is well-formed, so it is refused with 505 or served (as the highest version the server
    conforms to, RFC 9110 §6.2's SHOULD); anything else is shown apart, never failing a run."""
    ex = deliver(server, _with_version(server, b"HTTP/9.9"))
    assert ex.final, f"no response to a well-formed HTTP/9.9 request: {describe(ex)}"
    first = ex.final[0]
    served = first.status == 200 and first.body == b"ok"
    assert first.status == 505 or served, f"expected 505 or the request served (200 'ok'); {describe(ex)}"
    assert_serves(server)


@spec("RFC 9112 §3.1", "DEFINED")
def test_method_is_case_sensitive(server):
    """The method token is case-sensitive: "get" is not GET (so /ping, GET/HEAD only, does not answer 200)."""
    ex, resp = _status(server, request(server, method="get"))
    assert resp.status != 200, f"'get' was treated as GET: {describe(ex)}"


@spec("RFC 9112 §3.2", "SHOULD")
def test_whitespace_inside_request_target_is_rejected(server):
    """A request-target containing whitespace is an invalid request-line → 400 (or a 301 redirect to a
    corrected target, which RFC 9112 §3.2 also allows)."""
    _refused(server, request(server, target="/pi ng"), (400, 301))


@spec("RFC 9112 §2.2", "SHOULD")
def test_whitespace_inside_request_target_closes_the_connection(server):
    """After answering a request-line with whitespace inside its target, the server closes the connection."""
    _closed(server, request(server, target="/pi ng"))
