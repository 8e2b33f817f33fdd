"""A raw WebSocket client for checks (RFC 6455): exact handshake, exact frames, a timeout on every read.

Rules of this module:

1. Nothing is normalised: the handshake and frames are built from parts (:mod:`conformance.client.wsframes`),
   so a check can send what no polite client would; ``tls=True`` is wss (the socket from ``connect``).
2. Reading is bounded in time and size: every read goes through :mod:`conformance.client.bounded` with the
   connection's deadline; a frame read that times out returns :data:`TIMEOUT`, end of stream (or a reset)
   returns :data:`EOF`. A handshake response head over :data:`HANDSHAKE_CAP`, a frame declaring more than
   :data:`FRAME_CAP`, a message over :data:`FRAME_CAP`, or a connection carrying more than
   :data:`CONNECTION_CAP` bytes or :data:`FRAME_COUNT_CAP` frames raises :class:`WSReadError` naming the cap.
4. Bytes that are not the protocol are a failure, never an absence: a handshake response that is not
   HTTP/1.x, or a frame no server may send (a reserved opcode, a fragmented or oversized control frame, a
   64-bit length with its top bit set), raises :class:`WSReadError` showing the bytes.
3. The client answers nothing by itself (no automatic pong or close reply): a check sees every frame the
   server sent, in order, and decides what to send back.

The handshake response is parsed with :mod:`conformance.client.http1` (a 101 is an interim response there; any
other status is an ordinary response with its own framing).
"""

from __future__ import annotations

import socket
import struct
import time

from gatecheck.conformance.client import bounded
from gatecheck.conformance.client.http1 import Connection, ParseError, parse_responses
from gatecheck.conformance.client.wsframes import (
    CONNECTION_CAP,
    EOF,
    FRAME_CAP,
    FRAME_COUNT_CAP,
    GUID,
    HANDSHAKE_CAP,
    OP_BINARY,
    OP_CLOSE,
    OP_CONT,
    OP_PING,
    OP_PONG,
    OP_TEXT,
    RESERVED_OPCODES,
    TIMEOUT,
    Frame,
    Handshake,
    WSReadError,
    accept_for,
    close_payload,
    encode_frame,
    handshake_request,
    mib,
    new_key,
    parse_close,
    xor,
)

__all__ = [
    "GUID",
    "OP_CONT",
    "OP_TEXT",
    "OP_BINARY",
    "OP_CLOSE",
    "OP_PING",
    "OP_PONG",
    "EOF",
    "TIMEOUT",
    "Frame",
    "WSConnection",
    "Handshake",
    "WSReadError",
    "HANDSHAKE_CAP",
    "FRAME_CAP",
    "CONNECTION_CAP",
    "FRAME_COUNT_CAP",
    "accept_for",
    "new_key",
    "handshake_request",
    "encode_frame",
    "close_payload",
    "parse_close",
    "connect",
]


class WSConnection(Connection):
    """One TCP connection speaking raw WebSocket after the handshake, with a deadline on every read.

    Opening, sending and closing are http1.Connection's; reading is its own (frames, not responses)."""

    def __init__(self, address, timeout: float = 5.0, *, tls: bool = False) -> None:
        # wss (``tls=True``): the same client over a TLS socket (ALPN http/1.1, the suite's test certificate)
        super().__init__(address, timeout, tls=tls)
        self.buffer = bytearray()  # unparsed bytes from the server (bounded by ``buffer_cap``)
        self.buffer_cap = HANDSHAKE_CAP  # FRAME_CAP plus a frame head once the handshake is read
        self.received = 0  # bytes read on this connection (bounded by CONNECTION_CAP)
        self.frame_count = 0  # frames parsed on this connection (bounded by FRAME_COUNT_CAP)
        self.end = ""  # bounded.CLOSED or bounded.RESET once the server ended the connection
        self.handshake: Handshake | None = None
        self.controls: list = []  # control frames read_message() stepped over
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
            raise WSReadError(
                f"read stopped at the {mib(self.buffer_cap)} buffer cap: the server sent that much "
                f"without completing a {'frame' if self.handshake else 'handshake response'}; "
                f"first bytes {bytes(self.buffer[:120])!r}"
            )
        if end in (bounded.CLOSED, bounded.RESET):
            self.closed, self.end = True, end
            return False
        if end == bounded.TIMEOUT:
            return False
        self.received += len(self.buffer) - before
        if self.received > CONNECTION_CAP:
            raise WSReadError(
                f"the server sent more than the {mib(CONNECTION_CAP)} connection cap of the checks' client "
                f"(one WebSocket connection); stopped reading"
            )
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
        if raw[:5] != b"HTTP/"[: len(raw[:5])]:
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
            key, pos = buf[pos : pos + 4], pos + 4
        if len(buf) < pos + n:
            return None
        payload = bytes(buf[pos : pos + n])
        if masked:
            payload = xor(payload, bytes(key))
        self.buffer = buf[pos + n :]
        self.frame_count = getattr(self, "frame_count", 0) + 1
        if self.frame_count > FRAME_COUNT_CAP:
            raise WSReadError(
                f"the server sent more than the {FRAME_COUNT_CAP}-frame connection cap of the checks' client "
                f"(one WebSocket connection); stopped reading"
            )
        return Frame(bool(b0 & 0x80), (b0 >> 4) & 7, b0 & 0xF, masked, payload, length_bytes)

    @staticmethod
    def _check_frame_head(head: bytes, opcode: int, fin: bool, length: int) -> None:
        """Refuse, before reading its payload, a frame no server may send or no check reads (RFC 6455 §5.2,
        §5.5): a reserved opcode, a 64-bit length with the top bit set, a fragmented or over-125-byte
        control frame, or a payload over :data:`FRAME_CAP`."""
        if opcode in RESERVED_OPCODES:
            raise WSReadError(f"the server sent a frame with reserved opcode {opcode:#x}: head {head!r}")
        if length >> 63:
            raise WSReadError(f"the server sent a frame whose 64-bit length has the top bit set: head {head!r}")
        if opcode >= 0x8 and (length > 125 or not fin):
            raise WSReadError(
                f"the server sent a control frame (opcode {opcode:#x}) that is fragmented or over "
                f"125 bytes ({length}): head {head!r}"
            )
        if length > FRAME_CAP:
            raise WSReadError(
                f"the server sent a frame declaring {length} payload bytes, over the "
                f"{mib(FRAME_CAP)} frame cap of the checks' client; head {head!r}"
            )

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
                raise WSReadError(
                    f"a message from the server grew past the {mib(FRAME_CAP)} message cap of "
                    f"the checks' client ({len(parts)} frames); stopped reading"
                )
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


def connect(
    address: tuple, path: str, host: str, *, timeout: float = 5.0, tls: bool = False, **handshake
) -> WSConnection:
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
