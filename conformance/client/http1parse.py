"""Parsing HTTP/1.x responses from raw bytes, strictly (RFC 9112 §4-§6.3): the half of the raw client that
needs no socket. ``conformance.client.http1`` re-exports it.

Rules of this module: a response that breaks the grammar raises ``ParseError`` with its bytes, and a check fails
on it; it is never read leniently into a pass. Framing follows RFC 9112 §6.3: no body for HEAD/1xx/204/304,
chunked, Content-Length, or close-delimited.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

__all__ = [
    "Response",
    "Exchange",
    "parse_responses",
    "parse_from",
    "parse_head",
    "broken_start",
    "answered",
    "ParseError",
    "HEAD_CAP",
]


#: the longest response head the client reads before calling it a failure (servers cap request heads lower)
HEAD_CAP = 1 << 20


class ParseError(ValueError):
    """The server's bytes are not a valid HTTP/1.x response (itself a finding for most checks)."""


@dataclass
class Response:
    version: str
    status: int
    reason: str
    headers: list = field(default_factory=list)  # [(name bytes, value bytes)] as received
    body: bytes = b""
    trailers: list = field(default_factory=list)
    framing: str = ""  # "length", "chunked", "close", "none"
    raw_head: bytes = b""

    def header(self, name: str) -> str | None:
        values = self.header_all(name)
        return values[0] if values else None

    def header_all(self, name: str) -> list:
        key = name.lower().encode()
        return [v.decode("latin-1") for k, v in self.headers if k.lower() == key]

    def connection_options(self) -> list:
        """The Connection field's options, lower-case, in order (every field line, comma-separated)."""
        return [o.strip().lower() for v in self.header_all("connection") for o in v.split(",") if o.strip()]

    @property
    def interim(self) -> bool:
        return 100 <= self.status < 200


@dataclass
class Exchange:
    """What came back on one connection: the complete responses, leftover bytes, and whether it closed."""

    responses: list
    closed: bool
    leftover: bytes = b""
    timed_out: bool = False
    raw: bytes = b""
    held: str = ""  # why a follow-up request was not sent on this connection (the client's rules: RFC 9112 §9.6)

    @property
    def final(self) -> list:
        return [r for r in self.responses if not r.interim]

    @property
    def first(self) -> Response:
        if not self.final:
            raise AssertionError(f"no complete response; got {self.raw[:300]!r} (closed={self.closed})")
        return self.final[0]


def parse_responses(data: bytes, *, methods=(), closed: bool = True) -> tuple:
    """Parse as many complete responses as ``data`` holds. ``methods`` lists the request methods in order
    (a HEAD response has no body). Returns (responses, leftover bytes). A close-delimited body is complete
    only when ``closed`` is true. Bytes that cannot begin a response, or a head that breaks the grammar of
    RFC 9112 §4-§5, raise :class:`ParseError` at once (see :func:`parse_head`)."""
    responses, pos = parse_from(data, methods, closed)
    return responses, bytes(data[pos:])


def parse_from(data, methods, closed: bool) -> tuple:
    """(complete responses, position after them) in ``data`` (bytes or a bytearray, never copied whole)."""
    responses = []
    pos = 0
    methods = list(methods)
    final_index = 0
    while pos < len(data):
        _check_start(bytes(data[pos : pos + 5]))
        end = data.find(b"\r\n\r\n", pos)
        if end < 0:
            if len(data) - pos > HEAD_CAP:
                raise ParseError(f"a response head longer than the client's cap of {HEAD_CAP} bytes")
            break
        resp = parse_head(bytes(data[pos:end]))
        start, body_start = pos, end + 4
        method = methods[final_index] if final_index < len(methods) else "GET"
        if resp.interim:
            resp.framing = "none"
            responses.append(resp)
            pos = body_start
            if resp.status == 101:
                break  # RFC 9110 §15.2.2: the bytes after a 101's head belong to the new protocol
            continue
        pos = _parse_body(resp, data, body_start, method, closed)
        if pos is None:
            pos = start
            break
        responses.append(resp)
        final_index += 1
    return responses, pos


def _check_start(first: bytes) -> None:
    """Every response begins with "HTTP/": anything else is not a response, however few bytes came."""
    if not b"HTTP/".startswith(first[:5]):
        raise ParseError(f"bytes that do not begin a response: {first!r}")


_STATUS_LINE = re.compile(rb"(HTTP/[0-9]\.[0-9]) ([0-9]{3}) ([\t \x21-\x7e\x80-\xff]*)")
_TOKEN = re.compile(rb"[!#$%&'*+.^_`|~0-9A-Za-z-]+")
_FIELD_VALUE = re.compile(rb"[\t \x21-\x7e\x80-\xff]*")


def _first_final(data):
    """(head, position after it) of the first final response in ``data`` (or of a 101), None while its head is
    incomplete; a head up to it that breaks the grammar of RFC 9112 §4-§5 raises :class:`ParseError`."""
    pos = 0
    while True:
        _check_start(bytes(data[pos : pos + 5]))
        end = data.find(b"\r\n\r\n", pos)
        if end < 0:
            return None
        resp = parse_head(bytes(data[pos:end]))
        if not resp.interim or resp.status == 101:
            return resp, end + 4
        pos = end + 4


def broken_start(data) -> bool:
    """Whether ``data`` (the bytes come so far) can no longer begin valid responses: they do not begin
    with "HTTP/", or a complete head in them, up to the first final one, breaks the grammar of RFC 9112
    §4-§5. A read may stop there (the verdict is decided) instead of waiting for the server's close."""
    try:
        _first_final(data)
    except ParseError:
        return True
    return False


def answered(data, method: str = "GET") -> bool:
    """Whether a read of ``data`` (the bytes come so far, for one request of ``method``) may stop: they can no
    longer begin valid responses (:func:`broken_start`), or a final response is complete by its framing. A server
    that keeps the connection open after its answer then costs no read deadline. Cheap on a growing buffer: a
    chunked body is parsed only when the bytes end as a last chunk could (CRLF CRLF)."""
    try:
        found = _first_final(data)
        if found is None:
            return False
        resp, body_start = found
        if resp.status == 101:
            return True
        if (
            method == "HEAD"
            or resp.status in (204, 304)
            or any(k.lower() == b"content-length" for k, _ in resp.headers)
            or data.endswith(b"\r\n\r\n")
        ):
            return _parse_body(resp, data, body_start, method, closed=False) is not None
        return False
    except ParseError:
        return True


def parse_head(head: bytes) -> Response:
    """A response head (without its final CRLF CRLF), parsed by the grammar of RFC 9112 §4 and §5:
    ``status-line = HTTP-version SP status-code SP [reason-phrase]``, each field line
    ``field-name ":" OWS field-value OWS`` with a token name, no whitespace before the colon, and a value of
    VCHAR / obs-text / SP / HTAB only (so no bare CR, LF or NUL).

    obs-fold is refused too: RFC 9112 §5.2 lets a user agent unfold it, but its first sentence binds the server
    ("A sender MUST NOT generate a message that includes line folding"), so a folded response line is a
    server's violation that a check reports, not something a checking client should smooth over."""
    lines = head.split(b"\r\n")
    match = _STATUS_LINE.fullmatch(lines[0])
    if not match:
        raise ParseError(f"bad status line {lines[0][:100]!r} (RFC 9112 §4: HTTP-version SP 3DIGIT SP reason)")
    headers = [_field_line(line) for line in lines[1:]]
    version, status, reason = match.groups()
    return Response(version.decode("latin-1"), int(status), reason.decode("latin-1"), headers, raw_head=head)


def _field_line(line: bytes) -> tuple:
    """(name, value) of one field line (a header or a trailer), or ParseError naming the rule it breaks."""
    if line[:1] in (b" ", b"\t"):
        raise ParseError(
            f"obs-fold (a line folded onto the previous field) {line[:100]!r}: "
            "RFC 9112 §5.2, a sender MUST NOT generate it"
        )
    name, sep, value = line.partition(b":")
    if not sep or not _TOKEN.fullmatch(name):
        raise ParseError(f"bad field line {line[:100]!r} (RFC 9112 §5: a token, then ':' with no whitespace before it)")
    value = value.strip(b" \t")
    if not _FIELD_VALUE.fullmatch(value):
        raise ParseError(f"bad field value in {line[:100]!r} (RFC 9110 §5.5: CR, LF, NUL and other CTLs are invalid)")
    return name, value


def _parse_body(resp: Response, data: bytes, body_start: int, method: str, closed: bool) -> int | None:
    """Frame the body of a final response by RFC 9112 §6.3; the position after it, or None if incomplete."""
    headers = resp.headers
    te = b",".join(v for k, v in headers if k.lower() == b"transfer-encoding").lower()
    cls = [v for k, v in headers if k.lower() == b"content-length"]
    if method == "HEAD" or resp.status in (204, 304):
        resp.framing = "none"
        return body_start
    if te:
        if not te.replace(b" ", b"").endswith(b"chunked"):
            raise ParseError(f"response transfer-encoding {te!r} does not end in chunked")
        parsed = _parse_chunked(data, body_start)
        if parsed is None:
            return None
        resp.body, resp.trailers, pos = parsed
        resp.framing = "chunked"
        return pos
    if cls:
        values = {v.strip() for v in b",".join(cls).split(b",")}
        if len(values) != 1 or not next(iter(values)).isdigit():
            raise ParseError(f"bad response content-length {cls!r}")
        length = int(next(iter(values)))
        if len(data) - body_start < length:
            return None
        resp.body = bytes(data[body_start : body_start + length])
        resp.framing = "length"
        return body_start + length
    if not closed:
        return None
    resp.body = bytes(data[body_start:])
    resp.framing = "close"
    return len(data)


def _parse_chunked(data: bytes, pos: int):
    body = bytearray()
    while True:
        eol = data.find(b"\r\n", pos)
        if eol < 0:
            return None
        size_text = data[pos:eol].split(b";", 1)[0].strip()
        try:
            size = int(size_text, 16)
        except ValueError:
            raise ParseError(f"bad chunk size line {data[pos:eol][:50]!r}") from None
        pos = eol + 2
        if size == 0:
            trailers = []
            while True:
                eol = data.find(b"\r\n", pos)
                if eol < 0:
                    return None
                line = data[pos:eol]
                pos = eol + 2
                if not line:
                    return bytes(body), trailers, pos
                trailers.append(_field_line(bytes(line)))
        if len(data) < pos + size + 2:
            return None
        body += data[pos : pos + size]
        if data[pos + size : pos + size + 2] != b"\r\n":
            raise ParseError("chunk data not followed by CRLF")
        pos += size + 2
