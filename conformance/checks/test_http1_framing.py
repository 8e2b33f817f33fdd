"""Request body framing on the HTTP/1.1 wire: Content-Length, Transfer-Encoding and chunked coding.

RFC 9112 §6.3 decides a request body's length: Transfer-Encoding (chunked last) or a valid
Content-Length, else zero; anything else is an unrecoverable framing error answered with 400 and a
close. §7.1 defines chunked coding. Where the text asks for two things (a 400 *and* a close), each is its own
check (``..._is_rejected`` and ``..._closes_the_connection``), so a server that does one is told from one
that does neither. Key cases go out whole, one byte per write and pipelined (h11's
``tr()``; the pipelined variant is *not supported* on a target that does not serve pipelined requests);
after every malformed input the server must still serve a new connection. RFC 9112 §6.3 lets a server answer
``411`` to a body without Content-Length: where it does, the checks that need a chunked body read (or
refused with a 400 for its chunk framing) are *not supported*, as where a WSGI server leaves its app no way to
read one (``helpers/support.py``). A check judges only its rule: a refusal of a valid chunked request with a
trailer section is no trailer merged into the headers.
"""

from __future__ import annotations

import pytest

from gatecheck.conformance.app import app_view, decode_probe, new_token
from gatecheck.conformance.helpers.support import body_not_read, needs_pipelining, refused_for_length
from gatecheck.conformance.helpers.wire import (
    MODES,
    assert_answered_in_order,
    assert_closed_after_answer,
    assert_never_parsed,
    assert_refused,
    assert_rejected,
    assert_serves,
    deliver,
    describe,
    request,
    smuggled_request,
)
from gatecheck.conformance.spec.markers import needs, spec
from gatecheck.conformance.spec.results import not_supported

pytestmark = needs("http1")

_CT = ("Content-Type", "application/octet-stream")


def _post(server, headers, body: bytes, target: str = "/echo") -> bytes:
    return request(server, "POST", target, [_CT] + list(headers), body, content_length=False)


def _chunked(*chunks: bytes, last: bytes = b"0\r\n\r\n") -> bytes:
    return b"".join(f"{len(c):x}\r\n".encode() + c + b"\r\n" for c in chunks) + last


def _refused(server, data: bytes, statuses=None) -> None:
    """The first response is a 4xx (or one of ``statuses``); the close is judged by ``_closed``. A 411 where
    ``statuses`` asks for a 400 for malformed chunk framing: the server never read the framing (RFC 9112 §6.3
    lets it refuse any body without Content-Length), *not supported*."""
    ex = deliver(server, data, methods=["POST"])
    if statuses and 411 not in statuses and ex.final and ex.final[0].status == 411 and b"chunked" in data.lower():
        not_supported(refused_for_length(ex.final[0]))
    assert_refused(ex, statuses)
    assert_serves(server)


def _closed(server, data: bytes) -> None:
    """The server answers (any status; judged by ``_refused``) and then closes the connection."""
    assert_closed_after_answer(deliver(server, data, methods=["POST"], wait_close=True))
    assert_serves(server)


def _echoed(server, data: bytes, expected: bytes, mode: str = "whole") -> None:
    """The request is answered 200 with ``expected`` as the echoed body, and the connection stays in sync (a
    chunked body needs a target whose app can read one; the pipelined mode, one that serves pipelining)."""
    if mode == "pipelined":
        needs_pipelining(server, first_judged=True)
    ex = deliver(server, data, mode=mode, methods=["POST"])
    first = ex.first
    if b"transfer-encoding" in data.lower():
        body_not_read(server, first, expected)  # a 411, or a WSGI app with no way to read it: not supported
    assert first.status == 200 and first.body == expected, f"expected 200 echoing {expected!r}; {describe(ex)}"
    if mode == "pipelined":
        assert_answered_in_order(ex, [expected, b"ok"])


# -- Content-Length ---------------------------------------------------------------------------

_INVALID_CL = {"plus": "+5", "minus": "-5", "hex": "0x5", "decimal": "5.0", "inner-space": "5 5", "empty": ""}


@pytest.mark.parametrize("value", list(_INVALID_CL.values()), ids=list(_INVALID_CL))
@spec("RFC 9112 §6.3", "MUST")
def test_invalid_content_length_is_rejected(server, value):
    """A Content-Length that is not 1*DIGIT is an unrecoverable framing error: answered 400."""
    _refused(server, _post(server, [("Content-Length", value)], b"hello"), {400})


@pytest.mark.parametrize("value", list(_INVALID_CL.values()), ids=list(_INVALID_CL))
@spec("RFC 9112 §6.3", "MUST")
def test_invalid_content_length_closes_the_connection(server, value):
    """After answering a request whose Content-Length is not 1*DIGIT, the server closes the connection."""
    _closed(server, _post(server, [("Content-Length", value)], b"hello"))


@spec("RFC 9110 §8.6", "MUST")
def test_content_length_overflow_does_not_wrap(server):
    """A Content-Length of 2**64 + 5 is never read as 5: no integer overflow or precision loss."""
    data = _post(server, [("Content-Length", str(2**64 + 5))], b"hello")
    ex = deliver(server, data, methods=["POST"], timeout=2.0)
    for resp in ex.final:
        assert resp.body != b"hello", f"a 2**64+5 length was read as 5: {describe(ex)}"
    assert_serves(server)


_DIFFERING = {"two-lines": [("Content-Length", "5"), ("Content-Length", "6")], "list": [("Content-Length", "5, 6")]}
_IDENTICAL = {"two-lines": [("Content-Length", "5"), ("Content-Length", "5")], "list": [("Content-Length", "5, 5")]}


@pytest.mark.parametrize("headers", list(_DIFFERING.values()), ids=list(_DIFFERING))
@spec("RFC 9112 §6.3", "MUST")
def test_differing_content_lengths_are_rejected(server, headers):
    """Two different Content-Length values (two lines or one list) → 400."""
    _refused(server, _post(server, headers, b"hello!"), {400})


@pytest.mark.parametrize("headers", list(_DIFFERING.values()), ids=list(_DIFFERING))
@spec("RFC 9112 §6.3", "MUST")
def test_differing_content_lengths_close_the_connection(server, headers):
    """After answering a request with two different Content-Length values, the server closes the connection."""
    _closed(server, _post(server, headers, b"hello!"))


@pytest.mark.parametrize("headers", list(_IDENTICAL.values()), ids=list(_IDENTICAL))
@spec("RFC 9110 §8.6", "MAY")
def test_identical_content_lengths_are_one_value_or_rejected(server, headers):
    """Identical Content-Length values may be taken as that one value, or rejected with 400 and a close."""
    ex = deliver(
        server, _post(server, headers, b"hello"), methods=["POST"], wait_close="if-refused", then=request(server)
    )
    if ex.final and ex.final[0].status == 400:
        assert_rejected(ex, {400})
    else:
        assert ex.final and ex.final[0].status == 200, f"expected 400 or the 5-byte echo; {describe(ex)}"
        assert_answered_in_order(ex, [b"hello", b"ok"])  # the GET sent after it parses: framed as 5 octets
    assert_serves(server)


# -- Transfer-Encoding ------------------------------------------------------------------------

_NOT_FINAL = {
    "chunked-gzip": [("Transfer-Encoding", "chunked, gzip")],
    "chunked-then-gzip-line": [("Transfer-Encoding", "chunked"), ("Transfer-Encoding", "gzip")],
    "gzip": [("Transfer-Encoding", "gzip")],
    "xchunked": [("Transfer-Encoding", "xchunked")],
    "identity": [("Transfer-Encoding", "identity")],
}


@pytest.mark.parametrize("headers", list(_NOT_FINAL.values()), ids=list(_NOT_FINAL))
@spec("RFC 9112 §6.3", "MUST")
def test_transfer_coding_not_ending_in_chunked_is_rejected(server, headers):
    """Transfer-Encoding whose final coding is not chunked → 400; an unknown coding may get 501 (§6.1)."""
    _refused(server, _post(server, headers, _chunked(b"hello")), {400, 501})


@pytest.mark.parametrize("headers", list(_NOT_FINAL.values()), ids=list(_NOT_FINAL))
@spec("RFC 9112 §6.3", "MUST")
def test_transfer_coding_not_ending_in_chunked_closes_the_connection(server, headers):
    """After answering a request whose final transfer coding is not chunked, the server closes the connection."""
    _closed(server, _post(server, headers, _chunked(b"hello")))


# value, (clause, level): coding names are case-insensitive by definition (RFC 9112 §7, no keyword); empty
# list elements MUST be ignored (RFC 9110 §5.6.1.2)
_CHUNKED_SPELLINGS = {
    "mixed-case": ("cHuNkEd", ("RFC 9112 §7", "DEFINED")),
    "leading-empty-element": (", chunked", ("RFC 9110 §5.6.1.2", "MUST")),
    "trailing-empty-element": ("chunked,", ("RFC 9110 §5.6.1.2", "MUST")),
}


@pytest.mark.parametrize(
    "value", [pytest.param(v, id=name, marks=spec(*clause)) for name, (v, clause) in _CHUNKED_SPELLINGS.items()]
)
def test_chunked_is_recognised_case_insensitively_and_with_empty_list_elements(server, value):
    """Coding names are case-insensitive (RFC 9112 §7) and empty list elements are ignored."""
    _echoed(server, _post(server, [("Transfer-Encoding", value)], _chunked(b"hel", b"lo")), b"hello")


# -- chunked coding ---------------------------------------------------------------------------

_GOOD_CHUNKED = {
    "several-chunks": (_chunked(b"abc", b"defghij", b"kl"), b"abcdefghijkl"),
    "one-byte-chunks": (_chunked(*[bytes([c]) for c in b"hello world"]), b"hello world"),
    "upper-hex-leading-zeros": (
        b"000A\r\n0123456789\r\n1F\r\n" + b"x" * 31 + b"\r\n000\r\n\r\n",
        b"0123456789" + b"x" * 31,
    ),
}


@pytest.mark.parametrize("body,expected", list(_GOOD_CHUNKED.values()), ids=list(_GOOD_CHUNKED))
@spec("RFC 9112 §7.1", "MUST")
def test_chunked_body_is_decoded_exactly(server, body, expected):
    """A chunked body is de-chunked exactly: many chunks, 1-byte chunks, upper-case hex, leading zeros."""
    _echoed(server, _post(server, [("Transfer-Encoding", "chunked")], body), expected)


_EXTENSIONS = {
    "token": b"5;name=value\r\nhello\r\n0;last=1\r\n\r\n",
    "quoted-string": b'5;n="a;b=\\"c\\""\r\nhello\r\n0\r\n\r\n',
    "whitespace-around": b"5 ; n = v\r\nhello\r\n0\r\n\r\n",
}


@pytest.mark.parametrize("body", list(_EXTENSIONS.values()), ids=list(_EXTENSIONS))
@spec("RFC 9112 §7.1.1", "MUST")
def test_chunk_extensions_are_ignored(server, body):
    """Unrecognised chunk extensions (token or quoted values, with BWS) are ignored, not part of the data."""
    _echoed(server, _post(server, [("Transfer-Encoding", "chunked")], body), b"hello")


@spec("RFC 9112 §7.1.1", "POLICY")
def test_oversized_chunk_extension_is_answered_with_4xx(server):
    """POLICY (the RFC says a server "ought to" limit the chunk-extension length and answer 4xx: not a BCP 14
    keyword): 256 KiB of extension on one chunk, past any reasonable limit, gets a 4xx."""
    body = b"5;x=" + b"a" * (256 * 1024) + b"\r\nhello\r\n0\r\n\r\n"
    _refused(server, _post(server, [("Transfer-Encoding", "chunked")], body))


_BAD_SIZES = {
    "hex-prefix": b"0x5",
    "plus": b"+5",
    "empty": b"",
    "non-hex": b"5g",
    "trailing-space": b"5 ",
    "leading-space": b" 5",
}


@pytest.mark.parametrize("size", list(_BAD_SIZES.values()), ids=list(_BAD_SIZES))
@spec("RFC 9112 §2.2", "SHOULD")
def test_invalid_chunk_size_is_rejected(server, size):
    """A chunk-size that is not 1*HEXDIG (prefix, sign, empty, non-hex, stray space) does not match the
    grammar (RFC 9112 §7.1) → 400."""
    body = size + b"\r\nhello\r\n0\r\n\r\n"
    _refused(server, _post(server, [("Transfer-Encoding", "chunked")], body), {400})


@pytest.mark.parametrize("size", list(_BAD_SIZES.values()), ids=list(_BAD_SIZES))
@spec("RFC 9112 §2.2", "SHOULD")
def test_invalid_chunk_size_closes_the_connection(server, size):
    """After answering a request with an invalid chunk-size, the server closes the connection."""
    body = size + b"\r\nhello\r\n0\r\n\r\n"
    _closed(server, _post(server, [("Transfer-Encoding", "chunked")], body))


@spec("RFC 9112 §7.1", "MUST")
def test_chunk_size_overflow_does_not_wrap(server):
    """A chunk-size of 2**64 + 5 is never read as 5: no integer overflow when parsing hex numerals."""
    body = f"{2**64 + 5:x}".encode() + b"\r\nhello\r\n0\r\n\r\n"
    ex = deliver(server, _post(server, [("Transfer-Encoding", "chunked")], body), methods=["POST"], timeout=2.0)
    for resp in ex.final:
        assert resp.body != b"hello", f"a 2**64+5 chunk-size was read as 5: {describe(ex)}"
    assert_serves(server)


_BAD_DATA_END = {"missing-crlf": b"5\r\nhello0\r\n\r\n", "extra-octet": b"5\r\nhelloX\r\n0\r\n\r\n"}


@pytest.mark.parametrize("body", list(_BAD_DATA_END.values()), ids=list(_BAD_DATA_END))
@spec("RFC 9112 §2.2", "SHOULD")
def test_chunk_data_not_followed_by_crlf_is_rejected(server, body):
    """chunk-data is followed by exactly CRLF (RFC 9112 §7.1); a missing CRLF or extra octets → 400."""
    _refused(server, _post(server, [("Transfer-Encoding", "chunked")], body), {400})


@pytest.mark.parametrize("body", list(_BAD_DATA_END.values()), ids=list(_BAD_DATA_END))
@spec("RFC 9112 §2.2", "SHOULD")
def test_chunk_data_not_followed_by_crlf_closes_the_connection(server, body):
    """After answering a request whose chunk-data is not followed by CRLF, the server closes the connection."""
    _closed(server, _post(server, [("Transfer-Encoding", "chunked")], body))


_BARE_LF = {
    "after-size": b"5\nhello\r\n0\r\n\r\n",
    "after-data": b"5\r\nhello\n0\r\n\r\n",
    "last-chunk": b"5\r\nhello\r\n0\n\n",
}


@pytest.mark.parametrize("body", list(_BARE_LF.values()), ids=list(_BARE_LF))
@spec("RFC 9112 §2.2", "SHOULD")
def test_bare_lf_in_chunked_framing_is_rejected(server, body):
    """The bare-LF leniency of RFC 9112 §2.2 covers the start-line and fields only; a bare LF in a
    chunk line does not match the grammar (RFC 9112 §7.1) → 400."""
    _refused(server, _post(server, [("Transfer-Encoding", "chunked")], body), {400})


@pytest.mark.parametrize("body", list(_BARE_LF.values()), ids=list(_BARE_LF))
@spec("RFC 9112 §2.2", "SHOULD")
def test_bare_lf_in_chunked_framing_closes_the_connection(server, body):
    """After answering a request with a bare LF in its chunked framing, the server closes the connection."""
    _closed(server, _post(server, [("Transfer-Encoding", "chunked")], body))


@spec("RFC 9112 §7.1.2", "MUST NOT")
def test_request_trailers_are_not_merged_into_headers(server):
    """A trailer field without a definition allowing it is not merged into the headers the app sees. A server
    that refuses the request instead (a 400 or 411) hands the app nothing, merged or not: *not supported* (its
    chunked decoding is judged by the framing checks)."""
    body = b"5\r\nhello\r\n0\r\nX-Gatecheck-Trailer: late\r\n\r\n"
    ex = deliver(server, _post(server, [("Transfer-Encoding", "chunked")], body, "/probe"), methods=["POST"])
    resp = ex.first
    if 400 <= resp.status < 500:
        not_supported(
            f"the server refused the chunked request with a trailer section ({resp.status}): no trailer "
            f"reached the app to be merged or not"
        )
    assert resp.status == 200, describe(ex)
    view = app_view(decode_probe(resp.body))
    names = [name for name, _ in view["headers"]]
    assert "x-gatecheck-trailer" not in names, f"the trailer was merged into the headers: {view['headers']}"


# -- bodies and the connection ----------------------------------------------------------------


@pytest.mark.parametrize("mode", MODES)
@spec("RFC 9112 §6.3", "DEFINED")
def test_content_length_body_is_framed_exactly(server, mode):
    """A Content-Length body is exactly that many octets, whole, byte by byte or followed by a request."""
    body = b"hello\r\n\r\nGET / HTTP/1.1\r\n"
    _echoed(server, _post(server, [("Content-Length", str(len(body)))], body), body, mode)


@pytest.mark.parametrize("mode", MODES)
@spec("RFC 9112 §7.1", "MUST")
def test_chunked_body_with_extension_and_trailer_is_framed_exactly(server, mode):
    """A chunked body with an extension and a trailer is decoded and ends at the final CRLF, whole, byte by
    byte or followed by a request."""
    body = b"3;ext=1\r\nabc\r\n4\r\n\r\n\r\n\r\n0\r\nX-Trailer: t\r\n\r\n"
    _echoed(server, _post(server, [("Transfer-Encoding", "chunked")], body), b"abc\r\n\r\n", mode)


@spec("RFC 9112 §6.3", "DEFINED")
def test_request_without_length_has_an_empty_body(server):
    """A request with neither Content-Length nor Transfer-Encoding has no body: what follows is the next request."""
    data = _post(server, [], b"") + request(server)
    ex = deliver(server, data, count=2, methods=["POST", "GET"])
    assert ex.final and ex.final[0].status == 200, describe(ex)
    assert_answered_in_order(ex, [b"", b"ok"])


@spec("RFC 9112 §6.3", "MUST")
def test_incomplete_content_length_body_closes_the_connection(server):
    """When the client ends its side before Content-Length octets arrived, the message is incomplete and
    the server closes the connection."""
    data = _post(server, [("Content-Length", "10")], b"hello")
    ex = deliver(server, data, methods=["POST"], shut_write=True, wait_close=True)
    assert ex.closed, f"the connection stayed open after an incomplete body and EOF: {describe(ex)}"
    assert_serves(server)


@spec("RFC 9112 §9.3", "MUST")
def test_unread_body_does_not_desynchronise_the_connection(server):
    """A body the app never reads (POST /ping → 405) is discarded or the connection closed; its bytes are
    never parsed as the next request."""
    token = new_token()
    smuggled = smuggled_request(server, token)
    data = _post(server, [("Content-Length", str(len(smuggled)))], smuggled, "/ping") + request(server)
    ex = deliver(server, data, count=2, methods=["POST", "GET"])
    assert ex.final and ex.final[0].status == 405, describe(ex)
    assert len(ex.final) == 2 or ex.closed, (
        f"the next request was neither answered nor the connection closed: {describe(ex)}"
    )
    if len(ex.final) == 2:
        assert ex.final[1].status == 200 and ex.final[1].body == b"ok", describe(ex)
    assert_never_parsed(server, token)
