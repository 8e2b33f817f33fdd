"""Request smuggling probes against a lone origin server (RFC 9112 §11.2, §6.1, §6.3; http.md §6).

Every probe hides a second, complete request (``GET /ping`` with its own event-log token) where a
parser that disagrees with RFC 9112's framing rules would find it. The outcome that keeps any front-end
safe is: the probe rejected with 4xx, or framed by Transfer-Encoding alone; the connection closed after
the response; at most one response; and the hidden request never reaching the app. The framing and the
close are two obligations (RFC 9112 §6.1: "MAY reject ... or process ... in accordance with the
Transfer-Encoding alone. Regardless, the server MUST close the connection"), so each probe is two checks:
``..._is_rejected_or_te_framed`` judges the first response, ``..._closes_the_connection`` the close, the
absence of a second response and that the hidden request never reached the app.
"""

from __future__ import annotations

import pytest

from gatecheck.conformance.app import new_token
from gatecheck.conformance.helpers.support import needs_pipelining
from gatecheck.conformance.helpers.wire import (
    assert_never_parsed,
    assert_serves,
    deliver,
    describe,
    ends_connection,
    request,
    smuggled_request,
    status_classes,
)
from gatecheck.conformance.spec.markers import needs, spec
from gatecheck.conformance.spec.results import UNSUPPORTED_PREFIX

pytestmark = needs("http1")

_CT = ("Content-Type", "application/octet-stream")


def _probe(server, headers, body: bytes, version: str = "HTTP/1.1") -> bytes:
    return request(server, "POST", "/echo", [_CT] + list(headers), body, version=version, content_length=False)


def _assert_framed_safely(server, data: bytes, *, te_body: bytes | None, statuses=None, mode: str = "whole") -> None:
    """The first response is a 4xx (or one of ``statuses``), or — when ``te_body`` is given — a 2xx echoing
    the TE-decoded body (never the Content-Length-framed one)."""
    ex = deliver(server, data, mode=mode, methods=["POST"])
    assert ex.final, f"no response to the probe: {describe(ex)}"
    first = ex.final[0]
    rejected = first.status in (set(statuses) if statuses else set(range(400, 500)))
    decoded = te_body is not None and 200 <= first.status < 300 and first.body == te_body
    expected = status_classes(statuses) if statuses else "4xx"
    if te_body is not None:
        expected += f" or a 2xx echoing the TE-decoded body {te_body[:40]!r}"
    assert rejected or decoded, f"expected {expected}; {describe(ex)}"
    assert_serves(server)


def _assert_closed_after(server, data: bytes, token: str, mode: str = "whole") -> None:
    """After its one response (any status: judged apart) the connection closes, no second response comes,
    and the hidden request never reaches the app."""
    ex = deliver(server, data, mode=mode, methods=["POST"], wait_close=True)
    assert ex.final, f"no response to the probe, so no close after one can be judged: {describe(ex)}"
    assert len(ex.final) == 1 and not ex.leftover.strip(), f"the hidden request was answered too: {describe(ex)}"
    assert ex.closed, f"the connection stayed open after a smuggling-shaped request: {describe(ex)}"
    assert_never_parsed(server, token)


def _cl_te(server, token: str, te_first: bool) -> bytes:
    body = b"0\r\n\r\n" + smuggled_request(server, token)
    cl, te = ("Content-Length", str(len(body))), ("Transfer-Encoding", "chunked")
    return _probe(server, [te, cl] if te_first else [cl, te], body)


def _te_cl_body(server, token: str) -> tuple:
    """(body, first chunk line length, hidden request): the hidden request is one chunk's data."""
    hidden = smuggled_request(server, token)
    size_line = f"{len(hidden):x}\r\n".encode()
    return size_line + hidden + b"\r\n0\r\n\r\n", len(size_line), hidden


_CL_TE_CASES = {"cl-first": (False, "whole"), "te-first": (True, "whole"), "bytewise": (False, "bytewise")}


@pytest.mark.parametrize("te_first,mode", list(_CL_TE_CASES.values()), ids=list(_CL_TE_CASES))
@spec("RFC 9112 §6.1", "MAY")
def test_cl_te_request_is_rejected_or_te_framed(server, te_first, mode):
    """CL.TE: Content-Length covering ``0\\r\\n\\r\\n`` plus a hidden request, and Transfer-Encoding: chunked →
    a 4xx, or the empty TE-decoded body (Transfer-Encoding overrides Content-Length, RFC 9112 §6.3)."""
    token = new_token()
    _assert_framed_safely(server, _cl_te(server, token, te_first), te_body=b"", mode=mode)


@pytest.mark.parametrize("te_first,mode", list(_CL_TE_CASES.values()), ids=list(_CL_TE_CASES))
@spec("RFC 9112 §6.1", "MUST")
def test_cl_te_request_closes_the_connection(server, te_first, mode):
    """CL.TE: after responding, the server closes the connection; the hidden request is never parsed."""
    token = new_token()
    _assert_closed_after(server, _cl_te(server, token, te_first), token, mode=mode)


_TE_CL_CASES = {"te-first": (True, "whole"), "cl-first": (False, "whole"), "bytewise": (True, "bytewise")}


def _te_cl(server, token: str, te_first: bool) -> tuple:
    body, cl_len, hidden = _te_cl_body(server, token)
    cl, te = ("Content-Length", str(cl_len)), ("Transfer-Encoding", "chunked")
    return _probe(server, [te, cl] if te_first else [cl, te], body), hidden


@pytest.mark.parametrize("te_first,mode", list(_TE_CL_CASES.values()), ids=list(_TE_CL_CASES))
@spec("RFC 9112 §6.1", "MAY")
def test_te_cl_request_is_rejected_or_te_framed(server, te_first, mode):
    """TE.CL: Transfer-Encoding: chunked and a Content-Length covering only the first chunk-size line →
    Transfer-Encoding wins (the chunk is body, echoed), or a 4xx."""
    data, hidden = _te_cl(server, new_token(), te_first)
    _assert_framed_safely(server, data, te_body=hidden, mode=mode)


@pytest.mark.parametrize("te_first,mode", list(_TE_CL_CASES.values()), ids=list(_TE_CL_CASES))
@spec("RFC 9112 §6.1", "MUST")
def test_te_cl_request_closes_the_connection(server, te_first, mode):
    """TE.CL: after responding, the server closes the connection; the chunk is never parsed as a request."""
    token = new_token()
    data, _ = _te_cl(server, token, te_first)
    _assert_closed_after(server, data, token, mode=mode)


# (headers replacing "Transfer-Encoding: chunked", allowed statuses, TE-decoding acceptable)
_OBFUSCATED = {
    "xchunked": ([("Transfer-Encoding", "xchunked")], {400, 501}, False),
    "chunked-identity": ([("Transfer-Encoding", "chunked, identity")], {400, 501}, False),
    "chunked-then-x-line": ([("Transfer-Encoding", "chunked"), ("Transfer-Encoding", "x")], {400, 501}, False),
    "space-before-colon": ([("Transfer-Encoding ", "chunked")], {400}, False),
    "vertical-tab": ([("Transfer-Encoding", "\x0bchunked")], {400, 501}, False),
    "obs-fold": ([("Transfer-Encoding", "\r\n chunked")], None, True),
    "nul-suffix": ([("Transfer-Encoding", "chunked\x00")], set(range(400, 500)) | {501}, True),
    "chunked-twice": ([("Transfer-Encoding", "chunked, chunked")], set(range(400, 500)) | {501}, True),
}
_OBFUSCATED_CLAUSE = {
    "xchunked": "RFC 9112 §6.3",
    "chunked-identity": "RFC 9112 §6.3",
    "chunked-then-x-line": "RFC 9112 §6.3",
    "space-before-colon": "RFC 9112 §5.1",
    "vertical-tab": "RFC 9112 §6.3",
    "obs-fold": "RFC 9112 §5.2",
    "nul-suffix": "RFC 9110 §5.5",
    "chunked-twice": "RFC 9112 §6.3",
}
# chunked twice has no rule of its own for the recipient (RFC 9112 §6.1's MUST NOT binds the sender): what
# holds is §6.3's definition, Transfer-Encoding overrides Content-Length
_OBFUSCATED_LEVEL = {name: "DEFINED" if name == "chunked-twice" else "MUST" for name in _OBFUSCATED}
# the close: RFC 9112 §6.1 (a request with both Content-Length and Transfer-Encoding), except where the
# obfuscated name is no Transfer-Encoding field at all: then only §2.2's SHOULD (invalid grammar) asks for it
_OBFUSCATED_CLOSE = {name: ("RFC 9112 §6.1", "MUST") for name in _OBFUSCATED}
_OBFUSCATED_CLOSE["space-before-colon"] = ("RFC 9112 §2.2", "SHOULD")


def _obfuscated(server, token: str, headers) -> tuple:
    body, cl_len, hidden = _te_cl_body(server, token)
    return _probe(server, list(headers) + [("Content-Length", str(cl_len))], body), hidden


@pytest.mark.parametrize(
    "headers,statuses,te_ok",
    [
        pytest.param(*case, id=name, marks=spec(_OBFUSCATED_CLAUSE[name], _OBFUSCATED_LEVEL[name]))
        for name, case in _OBFUSCATED.items()
    ],
)
def test_obfuscated_transfer_encoding_never_falls_back_to_content_length(server, headers, statuses, te_ok):
    """TE.TE: an obfuscated Transfer-Encoding next to a short Content-Length is rejected (an unknown or
    non-final coding: 400/501 [§6.3, §6.1]; space before the colon: 400 [§5.1]) or — where the obfuscation
    has a valid reading (obs-fold unfolded [§5.2]; NUL replaced by SP or the message rejected, 4xx/501
    [9110 §5.5, 9112 §6.1]; chunked twice: 4xx/501 or decoded once) — framed as chunked; never framed by
    Content-Length. The close after it is ``test_obfuscated_transfer_encoding_closes_the_connection``."""
    data, hidden = _obfuscated(server, new_token(), headers)
    _assert_framed_safely(server, data, te_body=hidden if te_ok else None, statuses=statuses)


@pytest.mark.parametrize(
    "headers",
    [pytest.param(case[0], id=name, marks=spec(*_OBFUSCATED_CLOSE[name])) for name, case in _OBFUSCATED.items()],
)
def test_obfuscated_transfer_encoding_closes_the_connection(server, headers):
    """TE.TE: after responding to a request with an obfuscated Transfer-Encoding and a Content-Length, the
    server closes the connection; the chunk is never parsed as a request."""
    token = new_token()
    data, _ = _obfuscated(server, token, headers)
    _assert_closed_after(server, data, token)


_HTTP10_TE = {"te-only": False, "te-and-cl": True}


@pytest.mark.parametrize("with_cl", list(_HTTP10_TE.values()), ids=list(_HTTP10_TE))
@spec("RFC 9112 §6.1", "MUST")
def test_http10_request_with_transfer_encoding_is_faulty_and_closed(server, with_cl):
    """An HTTP/1.0 request with Transfer-Encoding has faulty framing: handled at most once, then the
    connection closes (even with keep-alive asked for); the bytes after it are never a request."""
    token = new_token()
    body = b"0\r\n\r\n" + smuggled_request(server, token)
    headers = [("Connection", "keep-alive"), ("Transfer-Encoding", "chunked")]
    if with_cl:
        headers.append(("Content-Length", str(len(body))))
    data = _probe(server, headers, body, version="HTTP/1.0")
    ex = deliver(server, data, methods=["POST"], wait_close=True)
    assert len(ex.final) <= 1 and not ex.leftover.strip(), (
        f"more than one response to one HTTP/1.0 request: {describe(ex)}"
    )
    assert ex.closed, f"the connection stayed open after HTTP/1.0 with Transfer-Encoding: {describe(ex)}"
    assert_never_parsed(server, token)


def _garbage_after_a_request(server, token: str):
    """A valid request then an invalid one in one write. None when the server does not persist connections
    (it answered the first with Connection: close and closed, never reading the garbage); else the exchange.
    A server that answers the first and then neither the garbage nor closes does not serve pipelined
    requests: not supported."""
    needs_pipelining(server)
    data = request(server) + b"GARBAGE\r\n\r\n" + smuggled_request(server, token)
    ex = deliver(server, data, count=2, methods=["GET", "GET"], wait_close=True)
    assert ex.final and ex.final[0].status == 200 and ex.final[0].body == b"ok", describe(ex)
    if len(ex.final) == 1 and ends_connection(ex.final[0]) and ex.closed:
        return None
    if len(ex.final) == 1 and not ex.closed and not ex.leftover.strip():
        pytest.skip(
            f"{UNSUPPORTED_PREFIX} the server answered the first of two pipelined requests and then "
            "neither answered the second nor closed: it does not serve pipelined requests"
        )
    return ex


@spec("RFC 9112 §2.2", "SHOULD")
def test_garbage_after_a_pipelined_request_is_rejected(server):
    """A valid request followed by an invalid one in the same write: the first response is intact and the
    second is 400 (a server without persistent connections may instead close after the first, saying so)."""
    ex = _garbage_after_a_request(server, new_token())
    if ex is not None:
        assert len(ex.final) == 2 and ex.final[1].status == 400, f"expected a 400 for the garbage: {describe(ex)}"
    assert_serves(server)


@spec("RFC 9112 §2.2", "SHOULD")
def test_garbage_after_a_pipelined_request_closes_the_connection(server):
    """After answering the garbage that followed a valid request, the server closes the connection, and a
    request after the garbage is never parsed."""
    token = new_token()
    ex = _garbage_after_a_request(server, token)
    if ex is not None:
        assert ex.closed and not ex.leftover.strip(), f"expected a close after answering the garbage: {describe(ex)}"
        assert_never_parsed(server, token)
    else:
        assert_serves(server)
