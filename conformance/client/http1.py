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
3. The client keeps the client's rules it does not test (RFC 9112 §9.3, §9.6): once a final response says the
   connection will not persist (:func:`persistent`), or the client itself sent the "close" option, a
   ``Connection`` sends no further request on it (:class:`AfterClose`); a check whose rule is what a server
   does with requests sent after a close sends them in the same write as the close, on purpose.
"""

from __future__ import annotations

import re
import socket
import time

from gatecheck.conformance.client import bounded
from gatecheck.conformance.client.connect import connect
from gatecheck.conformance.client.http1parse import (
    HEAD_CAP,
    Exchange,
    ParseError,
    Response,
    answered,
    broken_start,
    parse_from,
    parse_head,
    parse_responses,
)
from gatecheck.conformance.spec.results import CheckError

__all__ = [
    "Response",
    "Exchange",
    "build_request",
    "parse_responses",
    "parse_head",
    "broken_start",
    "answered",
    "exchange",
    "Connection",
    "ParseError",
    "Overflow",
    "HEAD_CAP",
    "read_raw",
    "persistent",
    "ending_of",
    "AfterClose",
    "request_closes",
]


def build_request(
    method: str = "GET",
    target: str = "/",
    headers=(),
    body: bytes = b"",
    version: str = "HTTP/1.1",
    host: str | None = "127.0.0.1",
    content_length: bool = True,
) -> bytes:
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


def persistent(resp: Response, *, framing: bool = True) -> bool:
    """Whether the connection persists after the final response ``resp`` (RFC 9112 §9.3): not when it carries
    the "close" option; an HTTP/1.1 response persists; an HTTP/1.0 one only with the "keep-alive" option;
    a close-delimited body ends the connection whatever the fields say (``framing=False``: what the status-line
    and fields alone announce)."""
    options = resp.connection_options()
    if "close" in options or (framing and resp.framing == "close"):
        return False
    if resp.version == "HTTP/1.0":
        return "keep-alive" in options
    return True


def ending_of(resp: Response) -> str:
    """Why ``resp`` ends its connection, for messages ("" when it persists)."""
    if persistent(resp):
        return ""
    said = ", ".join(resp.header_all("connection")) or "none"
    return (
        f"the {resp.status} response ({resp.version}, Connection: {said}"
        f"{', close-delimited' if resp.framing == 'close' else ''}) does not persist (RFC 9112 §9.3)"
    )


_CLOSE_OPTION = re.compile(rb"\r\nconnection:[^\r\n]*\bclose\b", re.IGNORECASE)
_KEEP_ALIVE = re.compile(rb"\r\nconnection:[^\r\n]*\bkeep-alive\b", re.IGNORECASE)


def request_closes(data: bytes) -> bool:
    """Whether the request (head) in ``data`` ends its connection from the client's side: it carries the
    "close" option, or it is HTTP/1.0 without "keep-alive" (RFC 9112 §9.3, §9.6)."""
    head = data.split(b"\r\n\r\n", 1)[0]
    line = head.split(b"\r\n", 1)[0]
    if _CLOSE_OPTION.search(head):
        return True
    return line.endswith(b" HTTP/1.0") and not _KEEP_ALIVE.search(head)


class AfterClose(CheckError):
    """A check asked the client to send a request on a connection that a response (or its own request) ended:
    the harness's mistake, never the server's (RFC 9112 §9.6: "A client that receives a "close" connection
    option MUST cease sending requests on that connection")."""


class Overflow(AssertionError):
    """The server sent more than a read's cap: a check failure that names the cap (never unbounded memory)."""

    @classmethod
    def of(cls, buffer: bytearray, cap: int, doing: str) -> "Overflow":
        """The failure for a read that passed ``cap`` while ``doing``; ``buffer`` is cut in place to the bytes
        the message shows, so no copy of the rest outlives the read."""
        _cut(buffer)
        return cls(
            f"the server sent more than the client's cap of {cap} bytes while {doing}; "
            f"the first bytes: {bytes(buffer[:300])!r}"
        )


def _cut(buffer: bytearray) -> bytearray:
    """``buffer`` cut (in place) to the bytes a failure message shows, once the read is over."""
    del buffer[_SHOWN:]
    return buffer


_SHOWN = 400


def read_raw(sock, done=lambda buf: False, *, timeout: float, cap: int = bounded.DEFAULT_CAP) -> tuple:
    """Raw bytes from ``sock`` until ``done(buffer)`` holds, the server closes or resets, or ``timeout``
    seconds pass: (bytes, how the read ended, one of :data:`bounded.ENDS`). The one bounded read for checks
    that need bytes rather than responses (arrival times, a first byte before leaving); passing ``cap``
    raises :class:`Overflow`."""
    buf = bytearray()
    end = bounded.read_until(sock, buf, done, deadline=time.monotonic() + timeout, cap=cap)
    if end == bounded.OVERFLOW:
        raise Overflow.of(buf, cap, "reading raw bytes")
    return bytes(buf), end


class Connection:
    """One TCP connection with a deadline on every operation; reads until responses are complete.

    ``tls=True``: the same connection over TLS (ALPN ``http/1.1``), opened by :func:`connect.connect`.
    Every read goes through :func:`conformance.client.bounded.recv_once`: a deadline and a cap of ``cap`` bytes
    buffered; passing the cap raises :class:`Overflow` (a check failure naming the cap)."""

    def __init__(
        self, address, timeout: float = 5.0, cap: int = bounded.DEFAULT_CAP, *, tls: bool = False, alpn=("http/1.1",)
    ) -> None:
        self.timeout = timeout
        self.cap = cap
        self.sock = connect(address, tls=tls, alpn=alpn, timeout=timeout)
        self.info = getattr(self.sock, "info", None)  # the TLS handshake's HandshakeInfo (None in cleartext)
        self.buffer = b""
        self.closed = False
        self.ending = ""  # why no further request may be sent here (rule 3), "" while one may

    def send(self, data: bytes, *, continuation: bool = False) -> None:
        """Send ``data``: requests, or bytes of one already begun (``continuation``: its body after a 100). Bytes
        that start a request (a request-line) on a connection that ended raise :class:`AfterClose` (rule 3)."""
        if self.ending and not continuation and _REQUEST_LINE.search(data):
            raise AfterClose(
                f"the harness would send a request on a connection that ended: {self.ending}; "
                f"it sends none (RFC 9112 §9.6): {data[:120]!r}"
            )
        self.sock.sendall(data)
        if not continuation and _closes(data):
            self.ending = "the client's own request ended the connection (Connection: close, or HTTP/1.0)"

    def may_send(self) -> bool:
        """Whether a further request may be sent here: nothing ended the connection (rule 3), and it is open."""
        return not self.ending and not self.closed

    def _note_endings(self, responses) -> None:
        for resp in responses:
            if not resp.interim and not self.ending and not persistent(resp):
                self.ending = ending_of(resp)

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
        buf = bytearray(self.buffer)  # one growing buffer per read: no copy of it per chunk
        try:
            while True:
                responses, pos, error = self._parse(buf, methods)
                if error or sum(1 for r in responses if not r.interim) >= count or self.closed:
                    break
                switched = bool(responses) and responses[-1].status == 101
                end = None if switched else self._recv(buf, deadline)
                if end == bounded.OVERFLOW:
                    raise Overflow.of(buf, self.cap, "reading a response")
                if switched or end == bounded.TIMEOUT:
                    timed_out = not switched
                    break
            if not error:
                responses, pos, error = self._parse(buf, methods)
            if error:
                _cut(buf)
                raise ParseError(error)
            self._note_endings(responses)
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
            return (*parse_from(buf, methods, self.closed), None)
        except ParseError as exc:
            return (
                [],
                0,
                (f"the server sent bytes that are not a valid HTTP/1.x response: {exc}; got {bytes(buf[:400])!r}"),
            )

    def wait_closed(self, timeout: float = 2.0) -> bool:
        """True if the server closes the connection (EOF or reset) within ``timeout``; extra bytes are kept
        (up to the cap: more raises :class:`Overflow`)."""
        deadline = time.monotonic() + timeout
        buf = bytearray(self.buffer)
        try:
            while not self.closed:
                end = self._recv(buf, deadline)
                if end == bounded.OVERFLOW:
                    raise Overflow.of(buf, self.cap, "waiting for the connection to close")
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


_REQUEST_LINE = re.compile(rb"(?m)^[A-Z]+ [^\r\n ]+ HTTP/\d\.\d\r$")


def _closes(data: bytes) -> bool:
    """Whether any request head in ``data`` ends its connection from the client's side (:func:`request_closes`);
    bytes with no request line (the body of a request already begun) say nothing."""
    return any(request_closes(data[m.start() :]) for m in _REQUEST_LINE.finditer(data))


def exchange(
    address,
    data: bytes,
    *,
    count: int = 1,
    methods=(),
    timeout: float = 5.0,
    shut_write: bool = False,
    tls: bool = False,
) -> Exchange:
    """Open a connection (``tls``: over TLS), send ``data``, read ``count`` responses (or until
    close/timeout), close."""
    with Connection(address, timeout, tls=tls) as conn:
        conn.send(data)
        if shut_write:
            conn.sock.shutdown(socket.SHUT_WR)
        return conn.read_responses(count, methods=methods)
