"""RFC 9112's request grammar as a strict reader: what a byte stream of requests *is*, by the ABNF alone.

The framing mutations (``conformance/spec/framing.py``) are judged against this reader, never against what a
server does: for a stream of bytes (and whether the client then ended its side) it says which requests are
complete (their method, token and body), and whether the stream then ends cleanly, stops at bytes that do not
match the grammar (``INVALID``: the server rejects, RFC 9112 §2.2), or stops at a message not yet complete
(``INCOMPLETE``: §8). Each production is quoted above the code that reads it. The reader takes none of the
robustness exceptions RFC 9112 §2.2 allows (bare LF, leading empty lines, whitespace splitting): the mutations
avoid the places where those would change the reading.

Rules of this module: pure functions of bytes, no I/O; it reads requests only (no responses, no HTTP/2).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

__all__ = ["Message", "Reading", "read_stream", "COMPLETE", "INVALID", "INCOMPLETE", "TCHARS"]

COMPLETE, INVALID, INCOMPLETE = "complete", "invalid", "incomplete"

#: RFC 9110 §5.6.2: tchar = "!" / "#" / "$" / "%" / "&" / "'" / "*" / "+" / "-" / "." / "^" / "_" / "`" / "|"
#: / "~" / DIGIT / ALPHA
TCHARS = frozenset(b"!#$%&'*+-.^_`|~0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz")
_HEX = frozenset(b"0123456789abcdefABCDEF")
_TOKEN_HEADER = b"x-gatecheck-token"


@dataclass(frozen=True)
class Message:
    """One complete request as the grammar reads it."""

    method: bytes
    token: str | None  # its x-gatecheck-token field value, when it has one
    body: bytes
    decoded: bool = False  # (a request that did not complete) its chunk-data had all come: ``body`` is it


@dataclass(frozen=True)
class Reading:
    """The stream as the grammar reads it: the complete requests in order, then how it ends (``COMPLETE``:
    nothing left over; ``INVALID`` or ``INCOMPLETE``: the request after them), and ``why`` for the last two."""

    messages: tuple
    end: str
    why: str = ""
    partial: Message | None = None  # the request that did not complete, when its head did (method, token)


class _Stop(Exception):
    head: Message | None = None


class _Invalid(_Stop):
    pass


class _Incomplete(_Stop):
    pass


def read_stream(data: bytes, eof: bool = False) -> Reading:
    """Read ``data`` as requests, one after the other (``eof``: the client ended its side after them)."""
    messages, pos = [], 0
    while True:
        pos = _empty_lines(data, pos)
        if pos >= len(data):
            break
        try:
            message, pos = _message(data, pos)
        except _Invalid as exc:
            return Reading(tuple(messages), INVALID, str(exc), exc.head)
        except _Incomplete as exc:
            return Reading(tuple(messages), INCOMPLETE, str(exc) + (" (then end of stream)" if eof else ""), exc.head)
        messages.append(message)
    return Reading(tuple(messages), COMPLETE)


def _empty_lines(data: bytes, pos: int) -> int:
    """RFC 9112 §2.2: "a server that is expecting to receive and parse a request-line SHOULD ignore at least one
    empty line (CRLF) received prior to the request-line" (a lone LF being one where a recipient takes LF as a
    line end, which it MAY): such lines, and a CR or LF left at the end of the stream, begin no request."""
    while True:
        if data.startswith(b"\r\n", pos):
            pos += 2
        elif data.startswith(b"\n", pos):
            pos += 1
        elif data[pos:] == b"\r":
            return len(data)
        else:
            return pos


def _line(data: bytes, pos: int, what: str) -> tuple:
    """One line ending in CRLF: (its bytes, the position after the CRLF). A CR must be followed by LF, and a
    LF must follow a CR (no robustness exception taken)."""
    end = data.find(b"\r\n", pos)
    if end < 0:
        stray = data.find(b"\n", pos)
        if stray >= 0:
            raise _Invalid(f"a bare LF in the {what}")
        if data.find(b"\r", pos) >= 0 and data.find(b"\r", pos) < len(data) - 1:
            raise _Invalid(f"a bare CR in the {what}")
        raise _Incomplete(f"the {what} has no CRLF yet")
    line = data[pos:end]
    if b"\n" in line or b"\r" in line:
        raise _Invalid(f"a bare CR or LF in the {what}")
    return line, end + 2


def _token(value: bytes) -> bool:
    return bool(value) and all(b in TCHARS for b in value)


# request-line   = method SP request-target SP HTTP-version
# method         = token
# HTTP-version   = HTTP-name "/" DIGIT "." DIGIT
_VERSION = re.compile(rb"HTTP/[0-9]\.[0-9]")
# origin-form    = absolute-path [ "?" query ]   (the only form the mutations send; VCHAR without SP)
_TARGET = re.compile(rb"/[\x21-\x7e]*")


def _request_line(line: bytes) -> tuple:
    parts = line.split(b" ")
    if len(parts) != 3:
        raise _Invalid(f"the request-line has {len(parts) - 1} SP, not 2")
    method, target, version = parts
    if not _token(method):
        raise _Invalid(f"the method {method!r} is not a token")
    if not _TARGET.fullmatch(target):
        raise _Invalid("the request-target is not an origin-form")
    if not _VERSION.fullmatch(version):
        raise _Invalid(f"the HTTP-version {version!r} does not match")
    if version != b"HTTP/1.1":
        raise _Invalid("only HTTP/1.1 is read here")
    return method


# field-line   = field-name ":" OWS field-value OWS
# field-name   = token
# field-value  = *field-content
# field-content = field-vchar [ 1*( SP / HTAB / field-vchar ) field-vchar ]
# field-vchar  = VCHAR / obs-text
_VALUE = re.compile(rb"[\x21-\x7e\x80-\xff]([\x21-\x7e\x80-\xff \t]*[\x21-\x7e\x80-\xff])?|")


def _field_line(line: bytes, what: str) -> tuple:
    name, colon, rest = line.partition(b":")
    if not colon or not _token(name):
        raise _Invalid(f'a {what} line is not field-name ":" field-value')
    value = rest.strip(b" \t")
    if not _VALUE.fullmatch(value):
        raise _Invalid(f"the {what} {name!r} has a value outside field-content")
    return name.lower(), value


def _fields(data: bytes, pos: int, what: str) -> tuple:
    """*( field-line CRLF ) CRLF: (list of (lower-case name, value), position after the empty line)."""
    fields = []
    while True:
        if data.startswith(b"\r\n", pos):
            return fields, pos + 2
        if len(data) - pos < 2 and data[pos:] in (b"", b"\r"):
            raise _Incomplete(f"the {what} has not ended yet")
        line, pos = _line(data, pos, what)
        if line[:1] in (b" ", b"\t"):
            raise _Invalid(f"obs-fold in the {what}")
        fields.append(_field_line(line, "field" if what == "header section" else "trailer field"))


def _values(fields, name: bytes) -> list:
    """The list elements of every ``name`` field (#element: commas split, OWS and empty elements dropped)."""
    out = []
    for n, value in fields:
        if n == name:
            out += [e.strip(b" \t") for e in value.split(b",") if e.strip(b" \t")]
    return out


def _message(data: bytes, pos: int) -> tuple:
    line, pos = _line(data, pos, "request-line")
    method = _request_line(line)
    fields, pos = _fields(data, pos, "header section")
    hosts = [v for n, v in fields if n == b"host"]
    if len(hosts) != 1:
        raise _Invalid(f"{len(hosts)} Host fields (RFC 9112 §3.2: exactly one)")
    tokens = [v for n, v in fields if n == _TOKEN_HEADER]
    token = tokens[0].decode("latin-1") if len(tokens) == 1 else None
    length = _length(fields)
    try:
        if length is None:
            body, pos = _chunked(data, pos)
        elif len(data) - pos < length:
            raise _Incomplete(f"{len(data) - pos} of {length} octets of the body")
        else:
            body, pos = data[pos : pos + length], pos + length
    except _Stop as exc:  # the head was complete: the app may have been handed it before the body failed
        decoded = getattr(exc, "body", None)
        exc.head = Message(method, token, decoded or b"", decoded is not None)
        raise
    return Message(method, token, body), pos


# RFC 9112 §6.3: a Transfer-Encoding whose final coding is chunked frames the body (Content-Length is not
# sent with it by the mutations); a Transfer-Encoding that does not end in chunked is a 400; a valid
# Content-Length (1*DIGIT; a list of identical values MAY be taken as one) gives the length; else no body.
def _length(fields) -> int | None:
    """The body's length (None: chunked), or _Invalid for framing fields no length can be read from."""
    codings = _values(fields, b"transfer-encoding")
    if any(n == b"transfer-encoding" for n, _ in fields):
        if any(n == b"content-length" for n, _ in fields):
            raise _Invalid("both Transfer-Encoding and Content-Length")
        if not codings or codings[-1].lower() != b"chunked" or len(codings) > 1:
            raise _Invalid("the final transfer coding is not chunked (or not the only one)")
        return None
    lengths = _values(fields, b"content-length")
    if any(n == b"content-length" for n, _ in fields):
        if not lengths or not all(v.isdigit() and v.isascii() for v in lengths) or len(set(map(int, lengths))) > 1:
            raise _Invalid("the Content-Length is not 1*DIGIT (or its values differ)")
        return int(lengths[0])
    return 0


# chunked-body   = *chunk last-chunk trailer-section CRLF
# chunk          = chunk-size [ chunk-ext ] CRLF chunk-data CRLF
# chunk-size     = 1*HEXDIG
# last-chunk     = 1*("0") [ chunk-ext ] CRLF
# chunk-data     = 1*OCTET ; a sequence of chunk-size octets
# chunk-ext      = *( BWS ";" BWS chunk-ext-name [ BWS "=" BWS chunk-ext-val ] )
# chunk-ext-name = token
# chunk-ext-val  = token / quoted-string
# trailer-section = *( field-line CRLF )
_BWS = rb"[ \t]*"
_QUOTED = rb'"(?:[\t \x21\x23-\x5b\x5d-\x7e\x80-\xff]|\\[\t \x21-\x7e\x80-\xff])*"'
_TOK = rb"[!#$%&'*+\-.^_`|~0-9A-Za-z]+"
_EXT = re.compile(
    rb"(?:" + _BWS + rb";" + _BWS + _TOK + rb"(?:" + _BWS + rb"=" + _BWS + rb"(?:" + _TOK + rb"|" + _QUOTED + rb"))?)*"
)


def _chunked(data: bytes, pos: int) -> tuple:
    body = bytearray()
    while True:
        line, pos = _line(data, pos, "chunk-size line")
        digits = len(line) - len(line.lstrip(b"0123456789abcdefABCDEF"))
        size, ext = line[:digits], line[digits:]
        if not size or not _EXT.fullmatch(ext):
            raise _Invalid(f"the chunk line {line[:40]!r} is not chunk-size [ chunk-ext ]")
        length = int(size, 16)
        if length == 0:
            try:
                _, pos = _fields(data, pos, "trailer section")
            except _Invalid as exc:  # the body was decoded whole: the trailer section is what is invalid
                exc.body = bytes(body)
                raise
            return bytes(body), pos
        if len(data) - pos < length:
            raise _Incomplete(f"{len(data) - pos} of {length} octets of chunk-data")
        body += data[pos : pos + length]
        pos += length
        after = data[pos : pos + 2]
        if after != b"\r\n"[: len(after)]:
            raise _Invalid("chunk-data is not followed by CRLF")
        if len(after) < 2:
            raise _Incomplete("the CRLF after chunk-data has not come yet")
        pos += 2
