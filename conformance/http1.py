"""A raw HTTP/1.x client for checks: exact bytes out, parsed responses back, a timeout on every read.

Checks need to send what no polite client would (bare CR, duplicate Content-Length, obs-fold) and to see
exactly what came back, including whether the server closed the connection. So this module builds
requests from parts (``build_request``) and parses responses from raw bytes (``parse_responses``) with the
framing rules of RFC 9112 §6.3: no body for HEAD/1xx/204/304, chunked, Content-Length, or close-delimited.
"""
from __future__ import annotations

import socket
import time
from dataclasses import dataclass, field

__all__ = ["Response", "Exchange", "build_request", "parse_responses", "exchange", "Connection", "ParseError"]


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
    only when ``closed`` is true."""
    responses = []
    pos = 0
    methods = list(methods)
    final_index = 0
    while pos < len(data):
        end = data.find(b"\r\n\r\n", pos)
        if end < 0:
            break
        head = data[pos:end]
        lines = head.split(b"\r\n")
        status_line = lines[0]
        parts = status_line.split(b" ", 2)
        if len(parts) < 2 or not parts[0].startswith(b"HTTP/") or not parts[1].isdigit() or len(parts[1]) != 3:
            raise ParseError(f"bad status line {status_line[:100]!r}")
        version, status = parts[0].decode("latin-1"), int(parts[1])
        reason = parts[2].decode("latin-1") if len(parts) > 2 else ""
        headers = []
        for line in lines[1:]:
            name, sep, value = line.partition(b":")
            if not sep:
                raise ParseError(f"bad header line {line[:100]!r}")
            headers.append((name, value.strip(b" \t")))
        resp = Response(version, status, reason, headers, raw_head=head)
        body_start = end + 4
        method = methods[final_index] if final_index < len(methods) else "GET"
        if 100 <= status < 200:
            resp.framing = "none"
            responses.append(resp)
            pos = body_start
            continue
        te = b",".join(v for k, v in headers if k.lower() == b"transfer-encoding").lower()
        cls = [v for k, v in headers if k.lower() == b"content-length"]
        if method == "HEAD" or status in (204, 304):
            resp.framing = "none"
            pos = body_start
        elif te:
            if not te.replace(b" ", b"").endswith(b"chunked"):
                raise ParseError(f"response transfer-encoding {te!r} does not end in chunked")
            parsed = _parse_chunked(data, body_start)
            if parsed is None:
                break
            resp.body, resp.trailers, pos = parsed
            resp.framing = "chunked"
        elif cls:
            values = {v.strip() for v in b",".join(cls).split(b",")}
            if len(values) != 1 or not next(iter(values)).isdigit():
                raise ParseError(f"bad response content-length {cls!r}")
            length = int(next(iter(values)))
            if len(data) - body_start < length:
                break
            resp.body = data[body_start:body_start + length]
            resp.framing = "length"
            pos = body_start + length
        else:
            if not closed:
                break
            resp.body = data[body_start:]
            resp.framing = "close"
            pos = len(data)
        responses.append(resp)
        final_index += 1
    return responses, data[pos:]


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
                name, _, value = line.partition(b":")
                trailers.append((name, value.strip()))
        if len(data) < pos + size + 2:
            return None
        body += data[pos:pos + size]
        if data[pos + size:pos + size + 2] != b"\r\n":
            raise ParseError("chunk data not followed by CRLF")
        pos += size + 2


class Connection:
    """One TCP connection with a deadline on every operation; reads until responses are complete."""

    def __init__(self, address: tuple, timeout: float = 5.0) -> None:
        self.timeout = timeout
        self.sock = socket.create_connection(address, timeout=timeout)
        self.sock.settimeout(timeout)
        self.buffer = b""
        self.closed = False

    def send(self, data: bytes) -> None:
        self.sock.sendall(data)

    def read_responses(self, count: int = 1, methods=(), timeout: float | None = None) -> Exchange:
        """Read until ``count`` final responses are complete, the server closes, or the timeout passes."""
        deadline = time.monotonic() + (timeout if timeout is not None else self.timeout)
        timed_out = False
        while True:
            responses, leftover = parse_responses(self.buffer, methods=methods, closed=self.closed)
            if sum(1 for r in responses if not r.interim) >= count or self.closed:
                break
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                timed_out = True
                break
            self.sock.settimeout(remaining)
            try:
                chunk = self.sock.recv(65536)
            except socket.timeout:
                timed_out = True
                break
            except ConnectionResetError:
                self.closed = True
                continue
            if not chunk:
                self.closed = True
            self.buffer += chunk
        responses, leftover = parse_responses(self.buffer, methods=methods, closed=self.closed)
        raw = self.buffer
        consumed = len(self.buffer) - len(leftover)
        self.buffer = self.buffer[consumed:]
        return Exchange(responses, self.closed, leftover, timed_out, raw)

    def wait_closed(self, timeout: float = 2.0) -> bool:
        """True if the server closes the connection (EOF or reset) within ``timeout``; extra bytes are kept."""
        deadline = time.monotonic() + timeout
        while not self.closed:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                return False
            self.sock.settimeout(remaining)
            try:
                chunk = self.sock.recv(65536)
            except socket.timeout:
                return False
            except ConnectionResetError:
                self.closed = True
                break
            if not chunk:
                self.closed = True
            self.buffer += chunk
        return True

    def close(self) -> None:
        try:
            self.sock.close()
        except OSError:
            pass

    def __enter__(self) -> Connection:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def exchange(address: tuple, data: bytes, *, count: int = 1, methods=(), timeout: float = 5.0,
             shut_write: bool = False) -> Exchange:
    """Open a connection, send ``data``, read ``count`` responses (or until close/timeout), close."""
    with Connection(address, timeout) as conn:
        conn.send(data)
        if shut_write:
            conn.sock.shutdown(socket.SHUT_WR)
        return conn.read_responses(count, methods=methods)
