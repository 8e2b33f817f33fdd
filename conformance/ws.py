"""A raw WebSocket client for checks (RFC 6455): exact handshake, exact frames, a timeout on every read.

Rules of this module:

1. Nothing is normalised: the handshake is built from parts (any key, version, subprotocol list or extra
   header, or none of them) and frames from fields (FIN, RSV bits, opcode, MASK and key, payload, and the
   length encoding), so a check can send what no polite client would.
2. Reading is bounded in time and size: every read goes through :mod:`conformance.bounded` with the
   connection's deadline; a frame read that times out returns :data:`TIMEOUT`, end of stream (or a reset)
   returns :data:`EOF`. A handshake response head over :data:`HANDSHAKE_CAP`, a frame declaring more than
   :data:`FRAME_CAP`, a message over :data:`FRAME_CAP`, or a connection carrying more than
   :data:`CONNECTION_CAP` bytes or :data:`FRAME_COUNT_CAP` frames raises :class:`WSReadError` naming the cap.
4. Bytes that are not the protocol are a failure, never an absence: a handshake response that is not
   HTTP/1.x, or a frame no server may send (a reserved opcode, a fragmented or oversized control frame, a
   64-bit length with its top bit set), raises :class:`WSReadError` showing the bytes.
3. The client answers nothing by itself (no automatic pong or close reply): a check sees every frame the
   server sent, in order, and decides what to send back.

The handshake response is parsed with :mod:`conformance.http1` (a 101 is an interim response there; any
other status is an ordinary response with its own framing).
"""
from __future__ import annotations

import base64
import hashlib
import os
import socket
import struct
import time
from dataclasses import dataclass

from . import bounded
from .http1 import Connection, ParseError, Response, parse_responses

__all__ = ["GUID", "OP_CONT", "OP_TEXT", "OP_BINARY", "OP_CLOSE", "OP_PING", "OP_PONG", "EOF", "TIMEOUT",
           "Frame", "WSConnection", "Handshake", "WSReadError", "HANDSHAKE_CAP", "FRAME_CAP", "CONNECTION_CAP",
           "FRAME_COUNT_CAP", "accept_for", "new_key", "handshake_request", "encode_frame",
           "close_payload", "parse_close", "connect"]

GUID = b"258EAFA5-E914-47DA-95CA-C5AB0DC85B11"
OP_CONT, OP_TEXT, OP_BINARY, OP_CLOSE, OP_PING, OP_PONG = 0x0, 0x1, 0x2, 0x8, 0x9, 0xA
EOF = "eof"          # the server closed (or reset) the TCP connection
TIMEOUT = "timeout"  # nothing (complete) arrived before the deadline

#: the most bytes a handshake response may take before its head (or, for an error, its body) is complete
HANDSHAKE_CAP = 1 << 20
#: the largest frame payload, and message, a check reads (the biggest the checks send is 1 MiB)
FRAME_CAP = 16 << 20
#: the most bytes, and frames, one connection may carry to a check
CONNECTION_CAP = 64 << 20
FRAME_COUNT_CAP = 100_000

_RESERVED_OPCODES = frozenset(range(0x3, 0x8)) | frozenset(range(0xB, 0x10))


class WSReadError(AssertionError):
    """The server sent what no check can judge: bytes that are not the protocol, or more than a cap."""


def _mib(n: int) -> str:
    return f"{n / (1 << 20):g} MiB"


def new_key() -> str:
    """A fresh, valid Sec-WebSocket-Key: base64 of 16 random bytes."""
    return base64.b64encode(os.urandom(16)).decode("ascii")


def accept_for(key: str | bytes) -> str:
    """Sec-WebSocket-Accept for ``key`` as sent (RFC 6455 §4.2.2 step 5.4): base64(SHA-1(key + GUID))."""
    raw = key if isinstance(key, bytes) else key.encode("latin-1")
    return base64.b64encode(hashlib.sha1(raw + GUID).digest()).decode("ascii")


def _b(value) -> bytes:
    return value if isinstance(value, bytes) else str(value).encode("latin-1")


def handshake_request(path: str, host: str, *, key: str | None = "", version: str | None = "13",
                      protocols=(), headers=(), method: str = "GET", http_version: str = "HTTP/1.1",
                      upgrade: str | None = "websocket", connection: str | None = "Upgrade") -> tuple:
    """The opening handshake as bytes, and the key used. ``key=""`` draws a fresh key; ``None`` omits
    the header (as do ``version``, ``upgrade`` and ``connection`` = None). ``protocols`` is one
    Sec-WebSocket-Protocol header (comma-joined) when given as a list of str; pass raw headers in
    ``headers`` to split it."""
    if key == "":
        key = new_key()
    lines = [f"{method} {path} {http_version}".encode("latin-1"), b"Host: " + _b(host)]
    if upgrade is not None:
        lines.append(b"Upgrade: " + _b(upgrade))
    if connection is not None:
        lines.append(b"Connection: " + _b(connection))
    if key is not None:
        lines.append(b"Sec-WebSocket-Key: " + _b(key))
    if version is not None:
        lines.append(b"Sec-WebSocket-Version: " + _b(version))
    if protocols:
        lines.append(b"Sec-WebSocket-Protocol: " + _b(", ".join(protocols)))
    for name, value in headers:
        lines.append(_b(name) + b": " + _b(value))
    return b"\r\n".join(lines) + b"\r\n\r\n", key


def encode_frame(opcode: int, payload: bytes = b"", *, fin: bool = True, rsv: int = 0, mask: bool = True,
                 mask_key: bytes | None = None, length: int | None = None) -> bytes:
    """One frame from its fields. ``rsv`` is the 3-bit RSV1..RSV3 value (4 = RSV1, 2 = RSV2, 1 = RSV3);
    ``length`` overrides the declared payload length (for lying frames); the minimal length encoding is
    used."""
    declared = len(payload) if length is None else length
    head = bytearray([(0x80 if fin else 0) | ((rsv & 7) << 4) | (opcode & 0xF)])
    mask_bit = 0x80 if mask else 0
    if declared < 126:
        head.append(mask_bit | declared)
    elif declared < 65536:
        head.append(mask_bit | 126)
        head += struct.pack("!H", declared)
    else:
        head.append(mask_bit | 127)
        head += struct.pack("!Q", declared)
    if not mask:
        return bytes(head) + payload
    key = mask_key if mask_key is not None else os.urandom(4)
    return bytes(head) + key + _xor(payload, key)


def _xor(data: bytes, key: bytes) -> bytes:
    if not data:
        return b""
    repeated = (key * (len(data) // 4 + 1))[:len(data)]
    return (int.from_bytes(data, "big") ^ int.from_bytes(repeated, "big")).to_bytes(len(data), "big")


def close_payload(code: int | None = None, reason: str | bytes = b"") -> bytes:
    """Close frame payload: empty, or the 16-bit code followed by the (UTF-8) reason."""
    if code is None:
        return b""
    raw = reason.encode("utf-8") if isinstance(reason, str) else reason
    return struct.pack("!H", code) + raw


def parse_close(payload: bytes) -> tuple:
    """(code or None, reason bytes) of a close payload; a 1-byte payload gives (-1, payload)."""
    if not payload:
        return None, b""
    if len(payload) == 1:
        return -1, payload
    return struct.unpack("!H", payload[:2])[0], payload[2:]


@dataclass
class Frame:
    fin: bool
    rsv: int
    opcode: int
    masked: bool
    payload: bytes
    length_bytes: int      # 0, 2 or 8: how the length was encoded (0 = in the 7-bit field)

    @property
    def close_code(self):
        return parse_close(self.payload)[0] if self.opcode == OP_CLOSE else None

    @property
    def close_reason(self) -> bytes:
        return parse_close(self.payload)[1] if self.opcode == OP_CLOSE else b""

    def minimal_length(self) -> bool:
        """True if the payload length used the shortest encoding (RFC 6455 §5.2)."""
        n = len(self.payload)
        return self.length_bytes == (0 if n < 126 else 2 if n < 65536 else 8)

    def __repr__(self) -> str:
        body = self.payload if len(self.payload) <= 40 else self.payload[:40] + b"..."
        return (f"Frame(op={self.opcode:#x}, fin={int(self.fin)}, rsv={self.rsv}, masked={self.masked}, "
                f"len={len(self.payload)}, payload={body!r})")


@dataclass
class Handshake:
    """What came back for an opening handshake: the response, the key sent, and the raw bytes."""

    response: Response | None
    key: str | None
    raw: bytes
    closed: bool

    @property
    def status(self):
        return self.response.status if self.response is not None else None

    def header(self, name: str):
        return self.response.header(name) if self.response is not None else None

    def header_all(self, name: str) -> list:
        return self.response.header_all(name) if self.response is not None else []


class WSConnection(Connection):
    """One TCP connection speaking raw WebSocket after the handshake, with a deadline on every read.

    Opening, sending and closing are http1.Connection's; reading is its own (frames, not responses)."""

    def __init__(self, address: tuple, timeout: float = 5.0, *, tls: bool = False) -> None:
        super().__init__(address, timeout)
        if tls:  # wss: the same client over a TLS socket (ALPN http/1.1, the suite's test certificate)
            from .tlsclient import tls_context

            try:
                self.sock = tls_context(["http/1.1"]).wrap_socket(self.sock, server_hostname=address[0])
            except BaseException:
                self.close()
                raise
            self.sock.settimeout(timeout)
        self.buffer = bytearray()        # unparsed bytes from the server (bounded by ``buffer_cap``)
        self.buffer_cap = HANDSHAKE_CAP  # FRAME_CAP plus a frame head once the handshake is read
        self.received = 0                # bytes read on this connection (bounded by CONNECTION_CAP)
        self.frame_count = 0             # frames parsed on this connection (bounded by FRAME_COUNT_CAP)
        self.end = ""                    # bounded.CLOSED or bounded.RESET once the server ended the connection
        self.handshake: Handshake | None = None
        self.controls: list = []     # control frames read_message() stepped over
        self.data_frames: list = []  # data frames read_message() consumed

    # -- bytes ------------------------------------------------------------------------------------

    def try_send(self, data: bytes) -> bool:
        """Send, reporting False instead of raising when the server already closed the connection."""
        try:
            self.sock.sendall(data)
            return True
        except OSError:
            return False

    def _fill(self, deadline: float) -> bool:
        """Read more bytes into the buffer (bounded); False on timeout or EOF (``closed`` tells which)."""
        if self.closed:
            return False
        before = len(self.buffer)
        end = bounded.recv_once(self.sock, self.buffer, deadline=deadline, cap=self.buffer_cap)
        if end == bounded.OVERFLOW:
            raise WSReadError(f"read stopped at the {_mib(self.buffer_cap)} buffer cap: the server sent that much "
                              f"without completing a {'frame' if self.handshake else 'handshake response'}; "
                              f"first bytes {bytes(self.buffer[:120])!r}")
        if end in (bounded.CLOSED, bounded.RESET):
            self.closed, self.end = True, end
            return False
        if end == bounded.TIMEOUT:
            return False
        self.received += len(self.buffer) - before
        if self.received > CONNECTION_CAP:
            raise WSReadError(f"the server sent more than the {_mib(CONNECTION_CAP)} connection cap of the checks' client "
                              f"(one WebSocket connection); stopped reading")
        return True

    # -- handshake --------------------------------------------------------------------------------

    def open(self, request: bytes, key: str | None, timeout: float | None = None) -> Handshake:
        """Send a handshake request and read the response head (a 101, or a whole error response)."""
        self.send(request)
        return self.read_handshake(key, timeout)

    def read_handshake(self, key: str | None, timeout: float | None = None) -> Handshake:
        """Read the response to the opening handshake: a 101 head (the bytes after it stay in the buffer
        as frames) or a whole final response. Silence until the deadline, or a close before any byte,
        gives a Handshake without a response; bytes that are not an HTTP/1.x response raise WSReadError."""
        deadline = time.monotonic() + (self.timeout if timeout is None else timeout)
        while True:
            resp = self._handshake_response(key)
            if resp is not None:
                return resp
            if not self._fill(deadline) and (self.closed or time.monotonic() >= deadline):
                resp = self._handshake_response(key, final=True)
                if resp is not None:
                    return resp
                self.handshake = Handshake(None, key, bytes(self.buffer), self.closed)
                return self.handshake

    def _handshake_response(self, key: str | None, *, final: bool = False) -> Handshake | None:
        """The Handshake once the buffer holds a complete final (or 101) response; None while it may
        still come. ``final``: nothing more will arrive, so a partial response is malformed."""
        raw = bytes(self.buffer)
        if raw[:5] != b"HTTP/"[:len(raw[:5])]:
            raise WSReadError(f"the handshake response is not HTTP/1.x: {raw[:300]!r}")
        try:
            responses, _ = parse_responses(raw, closed=self.closed)
        except ParseError as exc:
            raise WSReadError(f"malformed handshake response ({exc}): {raw[:300]!r}") from None
        finals = [r for r in responses if r.status == 101 or not r.interim]
        if finals:
            resp = finals[0]
            if resp.status == 101:
                end = raw.find(resp.raw_head) + len(resp.raw_head) + 4
                raw, self.buffer = raw[:end], self.buffer[end:]
                self.buffer_cap = FRAME_CAP + 14  # the largest frame a check reads, with its head
            self.handshake = Handshake(resp, key, raw, self.closed)
            return self.handshake
        if final and self.closed and raw:
            raise WSReadError(f"the connection closed inside the handshake response: {raw[:300]!r}")
        return None

    # -- frames -----------------------------------------------------------------------------------

    def send_frame(self, opcode: int, payload: bytes = b"", **fields) -> bool:
        return self.try_send(encode_frame(opcode, payload, **fields))

    def send_text(self, text: str) -> bool:
        return self.send_frame(OP_TEXT, text.encode("utf-8"))

    def send_binary(self, data: bytes) -> bool:
        return self.send_frame(OP_BINARY, data)

    def send_close(self, code: int | None = 1000, reason: str | bytes = b"") -> bool:
        return self.send_frame(OP_CLOSE, close_payload(code, reason))

    def _parse_frame(self):
        buf = self.buffer
        if len(buf) < 2:
            return None
        b0, b1 = buf[0], buf[1]
        n, pos, length_bytes = b1 & 0x7F, 2, 0
        if n == 126:
            if len(buf) < 4:
                return None
            n, pos, length_bytes = struct.unpack("!H", buf[2:4])[0], 4, 2
        elif n == 127:
            if len(buf) < 10:
                return None
            n, pos, length_bytes = struct.unpack("!Q", buf[2:10])[0], 10, 8
        self._check_frame_head(bytes(buf[:pos]), b0 & 0xF, bool(b0 & 0x80), n)
        masked = bool(b1 & 0x80)
        key = b""
        if masked:
            if len(buf) < pos + 4:
                return None
            key, pos = buf[pos:pos + 4], pos + 4
        if len(buf) < pos + n:
            return None
        payload = bytes(buf[pos:pos + n])
        if masked:
            payload = _xor(payload, bytes(key))
        self.buffer = buf[pos + n:]
        self.frame_count = getattr(self, "frame_count", 0) + 1
        if self.frame_count > FRAME_COUNT_CAP:
            raise WSReadError(f"the server sent more than the {FRAME_COUNT_CAP}-frame connection cap of the checks' client "
                              f"(one WebSocket connection); stopped reading")
        return Frame(bool(b0 & 0x80), (b0 >> 4) & 7, b0 & 0xF, masked, payload, length_bytes)

    @staticmethod
    def _check_frame_head(head: bytes, opcode: int, fin: bool, length: int) -> None:
        """Refuse, before reading its payload, a frame no server may send or no check reads (RFC 6455 §5.2,
        §5.5): a reserved opcode, a 64-bit length with the top bit set, a fragmented or over-125-byte
        control frame, or a payload over :data:`FRAME_CAP`."""
        if opcode in _RESERVED_OPCODES:
            raise WSReadError(f"the server sent a frame with reserved opcode {opcode:#x}: head {head!r}")
        if length >> 63:
            raise WSReadError(f"the server sent a frame whose 64-bit length has the top bit set: head {head!r}")
        if opcode >= 0x8 and (length > 125 or not fin):
            raise WSReadError(f"the server sent a control frame (opcode {opcode:#x}) that is fragmented or over "
                              f"125 bytes ({length}): head {head!r}")
        if length > FRAME_CAP:
            raise WSReadError(f"the server sent a frame declaring {length} payload bytes, over the "
                              f"{_mib(FRAME_CAP)} frame cap of the checks' client; head {head!r}")

    def read_frame(self, timeout: float | None = None):
        """The next frame, or :data:`EOF` / :data:`TIMEOUT`."""
        deadline = time.monotonic() + (self.timeout if timeout is None else timeout)
        while True:
            frame = self._parse_frame()
            if frame is not None:
                return frame
            if not self._fill(deadline):
                return EOF if self.closed else TIMEOUT

    def read_frames_until_close(self, timeout: float | None = None) -> tuple:
        """Read frames until a Close frame, EOF or the deadline. Returns (frames before, close frame or
        None, end) where end is "close", :data:`EOF` or :data:`TIMEOUT`."""
        deadline = time.monotonic() + (self.timeout if timeout is None else timeout)
        frames = []
        while True:
            frame = self.read_frame(max(0.0, deadline - time.monotonic()))
            if frame in (EOF, TIMEOUT):
                return frames, None, frame
            if frame.opcode == OP_CLOSE:
                return frames, frame, "close"
            frames.append(frame)

    def read_message(self, timeout: float | None = None):
        """The next data message as (opcode, payload) with fragments joined; control frames met on the
        way are collected in ``self.controls``. Returns EOF/TIMEOUT, or the Close frame if one comes."""
        deadline = time.monotonic() + (self.timeout if timeout is None else timeout)
        opcode, parts = None, []
        while True:
            frame = self.read_frame(max(0.0, deadline - time.monotonic()))
            if frame in (EOF, TIMEOUT):
                return frame
            if frame.opcode == OP_CLOSE:
                return frame
            if frame.opcode >= 0x8:
                self.controls.append(frame)
                continue
            if opcode is None:
                opcode = frame.opcode
            parts.append(frame.payload)
            if sum(map(len, parts)) > FRAME_CAP:
                raise WSReadError(f"a message from the server grew past the {_mib(FRAME_CAP)} message cap of "
                                  f"the checks' client ({len(parts)} frames); stopped reading")
            self.data_frames.append(frame)
            if frame.fin:
                return opcode, b"".join(parts)

    def wait_closed(self, timeout: float = 2.0) -> bool:
        """True if the server closes the TCP connection within ``timeout`` (bytes read are kept)."""
        deadline = time.monotonic() + timeout
        while not self.closed:
            if not self._fill(deadline) and not self.closed:
                return False
        return True

    def abort(self) -> None:
        """Drop the TCP connection with a reset (SO_LINGER 0), no Close frame."""
        try:
            self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        except OSError:
            pass
        self.close()


def connect(address: tuple, path: str, host: str, *, timeout: float = 5.0, tls: bool = False,
            **handshake) -> WSConnection:
    """Open a connection (``tls=True``: wss) and perform the handshake (see :func:`handshake_request` for
    the options). The connection is returned whatever the outcome; ``conn.handshake`` says what came back."""
    conn = WSConnection(address, timeout, tls=tls)
    request, key = handshake_request(path, host, **handshake)
    try:
        conn.open(request, key)
    except BaseException:
        conn.close()
        raise
    return conn
