"""A raw HTTP/1.x client for checks: exact bytes out, parsed responses back, a deadline and a cap on every read.

Checks need to send what no polite client would (bare CR, duplicate Content-Length, obs-fold) and to see
exactly what came back, including whether the server closed the connection. So this module builds
requests from parts (``build_request``) and parses responses from raw bytes (``parse_responses``) with the
framing rules of RFC 9112 §6.3: no body for HEAD/1xx/204/304, chunked, Content-Length, or close-delimited.

Rules of this module:

1. The parser is strict (``parse_head``): a response that breaks the grammar of RFC 9112 §4-§5 raises
   ``ParseError`` with its bytes, and a check fails on it; it is never read leniently into a pass.
2. Every read goes through ``conformance.client.bounded`` (deadline and cap); passing the cap raises ``Overflow``,
   a failure naming the cap. ``read_raw`` is the one loop for checks that need bytes, not responses.
"""
from __future__ import annotations

import re
import socket
import time
from dataclasses import dataclass, field

from gatecheck.conformance.client import bounded
from gatecheck.conformance.client.connect import connect

__all__ = ["Response", "Exchange", "build_request", "parse_responses", "parse_head", "broken_start", "exchange",
           "Connection", "ParseError", "Overflow", "HEAD_CAP", "read_raw"]


#: the longest response head the client reads before calling it a failure (servers cap request heads lower)
HEAD_CAP = 1 << 20


class ParseError(ValueError):
    """The server's bytes are not a valid HTTP/1.x response (itself a finding for most checks)."""


@dataclass
class Response:
    version: str
    status: int
    reason: str
    headers: list = field(default_factory=list)   # [(name bytes, value bytes)] as received
    body: bytes = b""
    trailers: list = field(default_factory=list)
    framing: str = ""                              # "length", "chunked", "close", "none"
    raw_head: bytes = b""

    def header(self, name: str) -> str | None:
        values = self.header_all(name)
        return values[0] if values else None

    def header_all(self, name: str) -> list:
        key = name.lower().encode()
        return [v.decode("latin-1") for k, v in self.headers if k.lower() == key]

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

    @property
    def final(self) -> list:
        return [r for r in self.responses if not r.interim]

    @property
    def first(self) -> Response:
        if not self.final:
            raise AssertionError(f"no complete response; got {self.raw[:300]!r} (closed={self.closed})")
        return self.final[0]


def build_request(method: str = "GET", target: str = "/", headers=(), body: bytes = b"",
                  version: str = "HTTP/1.1", host: str | None = "127.0.0.1", content_length: bool = True) -> bytes:
    """A request from parts. ``headers`` is a list of (name, value) str or bytes, sent in order as given;
    Host and Content-Length are added only when absent (and when ``host``/``content_length`` allow)."""
    lines = [f"{method} {target} {version}".encode("latin-1")]
    names = {(_b(n)).lower() for n, _ in headers}
    if host is not None and b"host" not in names:
        lines.append(b"Host: " + host.encode("latin-1"))
    for name, value in headers:
        lines.append(_b(name) + b": " + _b(value))
    if content_length and body and b"content-length" not in names and b"transfer-encoding" not in names:
        lines.append(b"Content-Length: " + str(len(body)).encode())
    return b"\r\n".join(lines) + b"\r\n\r\n" + body


def _b(value) -> bytes:
    return value if isinstance(value, bytes) else str(value).encode("latin-1")


def parse_responses(data: bytes, *, methods=(), closed: bool = True) -> tuple:
    """Parse as many complete responses as ``data`` holds. ``methods`` lists the request methods in order
    (a HEAD response has no body). Returns (responses, leftover bytes). A close-delimited body is complete
    only when ``closed`` is true. Bytes that cannot begin a response, or a head that breaks the grammar of
    RFC 9112 §4-§5, raise :class:`ParseError` at once (see :func:`parse_head`)."""
    responses, pos = _parse_from(data, methods, closed)
    return responses, bytes(data[pos:])


def _parse_from(data, methods, closed: bool) -> tuple:
    """(complete responses, position after them) in ``data`` (bytes or a bytearray, never copied whole)."""
    responses = []
    pos = 0
    methods = list(methods)
    final_index = 0
    while pos < len(data):
        _check_start(bytes(data[pos:pos + 5]))
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
                break   # RFC 9110 §15.2.2: the bytes after a 101's head belong to the new protocol
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


def broken_start(data) -> bool:
    """Whether ``data`` (the bytes come so far) can no longer begin valid responses: they do not begin
    with "HTTP/", or a complete head in them, up to the first final one, breaks the grammar of RFC 9112
    §4-§5. A read may stop there (the verdict is decided) instead of waiting for the server's close."""
    pos = 0
    while True:
        try:
            _check_start(bytes(data[pos:pos + 5]))
            end = data.find(b"\r\n\r\n", pos)
            if end < 0:
                return False
            resp = parse_head(bytes(data[pos:end]))
        except ParseError:
            return True
        if not resp.interim or resp.status == 101:
            return False
        pos = end + 4


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
        raise ParseError(f"obs-fold (a line folded onto the previous field) {line[:100]!r}: "
                         "RFC 9112 §5.2, a sender MUST NOT generate it")
    name, sep, value = line.partition(b":")
    if not sep or not _TOKEN.fullmatch(name):
        raise ParseError(f"bad field line {line[:100]!r} (RFC 9112 §5: a token, then ':' with no "
                         "whitespace before it)")
    value = value.strip(b" \t")
    if not _FIELD_VALUE.fullmatch(value):
        raise ParseError(f"bad field value in {line[:100]!r} (RFC 9110 §5.5: CR, LF, NUL and other CTLs "
                         "are invalid)")
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
        resp.body = bytes(data[body_start:body_start + length])
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
        body += data[pos:pos + size]
        if data[pos + size:pos + size + 2] != b"\r\n":
            raise ParseError("chunk data not followed by CRLF")
        pos += size + 2


class Overflow(AssertionError):
    """The server sent more than a read's cap: a check failure that names the cap (never unbounded memory)."""


def _cut(buffer: bytearray) -> bytearray:
    """``buffer`` cut (in place) to the bytes a failure message shows, once the read is over."""
    del buffer[_SHOWN:]
    return buffer


_SHOWN = 400


def _overflow(buffer, cap: int, doing: str) -> Overflow:
    return Overflow(f"the server sent more than the client's cap of {cap} bytes while {doing}; "
                    f"the first bytes: {bytes(buffer[:300])!r}")


def read_raw(sock, done=lambda buf: False, *, timeout: float, cap: int = bounded.DEFAULT_CAP) -> tuple:
    """Raw bytes from ``sock`` until ``done(buffer)`` holds, the server closes or resets, or ``timeout``
    seconds pass: (bytes, how the read ended, one of :data:`bounded.ENDS`). The one bounded read for checks
    that need bytes rather than responses (arrival times, a first byte before leaving); passing ``cap``
    raises :class:`Overflow`."""
    buf = bytearray()
    end = bounded.read_until(sock, buf, done, deadline=time.monotonic() + timeout, cap=cap)
    if end == bounded.OVERFLOW:
        raise _overflow(_cut(buf), cap, "reading raw bytes")
    return bytes(buf), end


class Connection:
    """One TCP connection with a deadline on every operation; reads until responses are complete.

    ``tls=True``: the same connection over TLS (ALPN ``http/1.1``), opened by :func:`connect.connect`.
    Every read goes through :func:`conformance.client.bounded.recv_once`: a deadline and a cap of ``cap`` bytes
    buffered; passing the cap raises :class:`Overflow` (a check failure naming the cap)."""

    def __init__(self, address, timeout: float = 5.0, cap: int = bounded.DEFAULT_CAP, *, tls: bool = False,
                 alpn=("http/1.1",)) -> None:
        self.timeout = timeout
        self.cap = cap
        self.sock = connect(address, tls=tls, alpn=alpn, timeout=timeout)
        self.info = getattr(self.sock, "info", None)   # the TLS handshake's HandshakeInfo (None in cleartext)
        self.buffer = b""
        self.closed = False

    def send(self, data: bytes) -> None:
        self.sock.sendall(data)

    # On an overflow or unparseable bytes the buffer is cut to what the message shows before raising: a
    # failed check's traceback (kept by pytest with its frames) must not keep megabytes alive.

    def _recv(self, buf: bytearray, deadline: float) -> str | None:
        """One bounded read into ``buf``: None when bytes came, else how it ended (EOF and reset set ``closed``)."""
        end = bounded.recv_once(self.sock, buf, deadline=deadline, cap=self.cap)
        if end in (bounded.CLOSED, bounded.RESET):
            self.closed = True
        return end

    def read_responses(self, count: int = 1, methods=(), timeout: float | None = None) -> Exchange:
        """Read until ``count`` final responses are complete, the server closes, or the timeout passes.
        Bytes that are not a valid response raise :class:`ParseError` showing them."""
        deadline = time.monotonic() + (timeout if timeout is not None else self.timeout)
        timed_out = False
        buf = bytearray(self.buffer)   # one growing buffer per read: no copy of it per chunk
        try:
            while True:
                responses, pos, error = self._parse(buf, methods)
                if error or sum(1 for r in responses if not r.interim) >= count or self.closed:
                    break
                switched = bool(responses) and responses[-1].status == 101
                end = None if switched else self._recv(buf, deadline)
                if end == bounded.OVERFLOW:
                    raise _overflow(_cut(buf), self.cap, "reading a response")
                if switched or end == bounded.TIMEOUT:
                    timed_out = not switched
                    break
            if not error:
                responses, pos, error = self._parse(buf, methods)
            if error:
                _cut(buf)
                raise ParseError(error)
        finally:
            self.buffer = bytes(buf)
        raw, self.buffer = self.buffer, self.buffer[pos:]
        return Exchange(responses, self.closed, self.buffer, timed_out, raw)

    def read_first(self, methods=(), timeout: float | None = None) -> Exchange:
        """Read until the first response of any kind (interim or final) arrives, the server closes, or
        ``timeout`` passes; ``read_responses`` alone would wait past a 1xx for a final response."""
        deadline = time.monotonic() + (timeout if timeout is not None else self.timeout)
        while True:
            remaining = deadline - time.monotonic()
            ex = self.read_responses(1, methods=methods, timeout=max(0.01, min(0.1, remaining)))
            if ex.responses or ex.closed or remaining <= 0:
                return ex

    def _parse(self, buf: bytearray, methods) -> tuple:
        """(responses, position after them, None), or ([], 0, what is wrong with the bytes)."""
        try:
            return (*_parse_from(buf, methods, self.closed), None)
        except ParseError as exc:
            return [], 0, (f"the server sent bytes that are not a valid HTTP/1.x response: {exc}; "
                           f"got {bytes(buf[:400])!r}")

    def wait_closed(self, timeout: float = 2.0) -> bool:
        """True if the server closes the connection (EOF or reset) within ``timeout``; extra bytes are kept
        (up to the cap: more raises :class:`Overflow`)."""
        deadline = time.monotonic() + timeout
        buf = bytearray(self.buffer)
        try:
            while not self.closed:
                end = self._recv(buf, deadline)
                if end == bounded.OVERFLOW:
                    raise _overflow(_cut(buf), self.cap, "waiting for the connection to close")
                if end == bounded.TIMEOUT:
                    return False
            return True
        finally:
            self.buffer = bytes(buf)

    def close(self) -> None:
        try:
            self.sock.close()
        except OSError:
            pass

    def __enter__(self) -> Connection:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def exchange(address, data: bytes, *, count: int = 1, methods=(), timeout: float = 5.0,
             shut_write: bool = False, tls: bool = False) -> Exchange:
    """Open a connection (``tls``: over TLS), send ``data``, read ``count`` responses (or until
    close/timeout), close."""
    with Connection(address, timeout, tls=tls) as conn:
        conn.send(data)
        if shut_write:
            conn.sock.shutdown(socket.SHUT_WR)
        return conn.read_responses(count, methods=methods)
