"""A small HTTP/2 client for the checks: prior knowledge (or ALPN h2 with ``tls=True``), exact frames, every
wait bounded.

    with H2Client(server.address, authority=server.authority) as c:
        sid = c.request("POST", "/echo", body=b"abc")
        resp = c.response(sid)            # status, headers, body, trailers, reset code

Rules of this module:

1. Every socket operation has a timeout and every wait a deadline; a wait that runs out raises
   :class:`H2Timeout` naming what it waited for and what had arrived, never blocks.
2. The client sends what the check says and no more: outbound headers are neither validated nor
   normalised (a check can send ``Connection`` or an upper-case name), inbound headers are not
   validated either (the checks assert on what the server sent, with a readable message).
3. Flow control: with ``auto_window=True`` (the default) every received DATA byte is handed back at
   once, so the server is never held up by the client. With ``auto_window=False`` the check grants
   window itself (:meth:`grant`) and can watch the server stay inside it.
4. Besides h2's events, every incoming frame is also recorded from the raw bytes (:class:`Frame`:
   type, flags, stream, length, and the payload of control frames), so a check can see what h2's
   state machine would hide - e.g. DATA after a GOAWAY, or a frame's exact size. When h2 refuses
   the server's input (``h2_error``), the raw record goes on.
5. Every read goes through :mod:`conformance.client.bounded` (a deadline and a cap) and the connection as a whole
   is capped: more than :data:`CONNECTION_CAP` bytes or :data:`FRAME_COUNT_CAP` frames, more than
   :data:`STREAM_DATA_CAP` DATA bytes on one stream, or a header block
   (HEADERS + CONTINUATION) over :data:`HEADER_BLOCK_CAP`, raises :class:`H2ReadError` naming the cap.
6. Bytes that are not HTTP/2 are a failure, never an absence: the server's first frame must be a
   SETTINGS frame (RFC 9113 §3.4), or :class:`H2ReadError` shows the bytes that came instead. A wait
   for the server's SETTINGS, response headers or data that ends with the connection closed raises.
"""

from __future__ import annotations

import socket
import time
from typing import Callable, Iterable, Optional

import h2.config
import h2.connection
import h2.events
import h2.exceptions
import h2.settings

from gatecheck.conformance.client import bounded
from gatecheck.conformance.client.connect import connect
from gatecheck.conformance.client.h2frames import (
    CONNECTION_CAP,
    DATA,
    FRAME_COUNT_CAP,
    FRAME_TYPES,
    GOAWAY,
    HEADER_BLOCK_CAP,
    HEADERS,
    PING,
    PUSH_PROMISE,
    RST_STREAM,
    SETTINGS,
    STREAM_DATA_CAP,
    WINDOW_UPDATE,
    ErrorCodes,
    Frame,
    H2ReadError,
    RawFrames,
    SettingCodes,
    StreamState,
)
from gatecheck.conformance.client.h2waits import H2Waits

__all__ = [
    "H2Client",
    "H2Timeout",
    "H2ReadError",
    "CONNECTION_CAP",
    "FRAME_COUNT_CAP",
    "HEADER_BLOCK_CAP",
    "STREAM_DATA_CAP",
    "StreamState",
    "Frame",
    "FRAME_TYPES",
    "ErrorCodes",
    "SettingCodes",
    "DATA",
    "HEADERS",
    "RST_STREAM",
    "SETTINGS",
    "PUSH_PROMISE",
    "PING",
    "GOAWAY",
    "WINDOW_UPDATE",
    "REFUSED_OUTCOMES",
    "is_refusal",
]

#: how a server may refuse a malformed request: a stream error, a connection error (RFC 9113 §5.4.1
#: lets an endpoint treat any stream error as one), or an HTTP error response first (§8.1.1).
REFUSED_OUTCOMES = ("reset:PROTOCOL_ERROR", "goaway:PROTOCOL_ERROR")


def is_refusal(result: str) -> bool:
    """``result`` (``H2Client.stream_error_or_status``) is a refusal: a PROTOCOL_ERROR reset or GOAWAY, or a 4xx."""
    return result in REFUSED_OUTCOMES or result.startswith("status:4")


#: a partial frame can never exceed this (a frame's length field has 24 bits)
_PARTIAL_CAP = 9 + (1 << 24) + (1 << 16)


class H2Timeout(AssertionError):
    """A wait ran past its deadline (the server did not do what the check waited for)."""


class H2Client(H2Waits, RawFrames):
    """One HTTP/2 connection with prior knowledge. Not thread-safe; use one per check."""

    def __init__(
        self,
        address: tuple,
        *,
        authority: str | None = None,
        timeout: float = 5.0,
        settings: dict | None = None,
        auto_window: bool = True,
        connect: bool = True,
        preface: bool = True,
        tls: bool = False,
    ) -> None:
        self.address = getattr(address, "address", address)
        self.tls = tls  # over TLS with ALPN h2; requests then carry :scheme https
        self.info = None  # the TLS handshake's HandshakeInfo
        self.authority = authority or getattr(address, "authority", None) or f"{self.address[0]}:{self.address[1]}"
        self.timeout = timeout
        self.auto_window = auto_window
        config = h2.config.H2Configuration(
            client_side=True,
            header_encoding=None,
            validate_outbound_headers=False,
            normalize_outbound_headers=False,
            validate_inbound_headers=False,
            normalize_inbound_headers=False,
        )
        self.conn = h2.connection.H2Connection(config=config)
        # Push is off unless a check turns it on: a server must not push to this client (RFC 9113 §8.4).
        values = {SettingCodes.ENABLE_PUSH: 0}
        values.update(settings or {})
        self.conn.local_settings = h2.settings.Settings(client=True, initial_values=values)
        self.streams: dict = {}
        self.events: list = []
        self.frames: list = []
        self.remote_settings: dict = {}
        self.settings_acked = 0
        self.goaways: list = []  # ConnectionTerminated events
        self.h2_error: Optional[BaseException] = None
        self.closed = False  # the server closed (or reset) the TCP connection
        self.end = ""  # bounded.CLOSED or bounded.RESET: how the server ended it
        self.received = 0  # bytes read on this connection (bounded by CONNECTION_CAP)
        self._block_bytes = 0  # bytes of the header block being received (HEADER_BLOCK_CAP)
        self._data_bytes: dict = {}  # stream -> DATA bytes received (STREAM_DATA_CAP)
        self._raw = bytearray()
        self._block = None
        self.sock: Optional[socket.socket] = None
        if connect:
            self.connect(preface=preface)

    # -- connection ------------------------------------------------------------------------------

    def connect(self, *, preface: bool = True) -> None:
        # Small frames (WINDOW_UPDATE, PING ACK) must not wait for Nagle's algorithm.
        self.sock = connect(self.address, tls=self.tls, alpn=["h2"], timeout=self.timeout, nodelay=True)
        self.info = getattr(self.sock, "info", None)
        if self.tls and self.info.alpn != "h2":
            self.close()
            raise AssertionError(f"ALPN h2 offered alone, the server negotiated {self.info.describe()}")
        if preface:
            self.conn.initiate_connection()
            self.flush()

    def close(self) -> None:
        if self.sock is not None:
            try:
                self.sock.close()
            finally:
                self.sock = None

    def __enter__(self) -> H2Client:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def flush(self) -> None:
        data = self.conn.data_to_send()
        if data:
            self.send_raw(data)

    def send_raw(self, data: bytes) -> None:
        """Write bytes as they are (after anything h2 has queued)."""
        pending = self.conn.data_to_send()
        try:
            self.sock.sendall(pending + data)
        except OSError:
            self.closed = True
            raise

    # -- sending ---------------------------------------------------------------------------------

    def request_headers(
        self, method: str, path: str, headers: Iterable = (), *, scheme: str | None = None, authority: str | None = None
    ) -> list:
        """The header list of an ordinary request: pseudo-headers first, then ``headers``; ``scheme``
        defaults to the connection's (https over TLS, else http)."""
        scheme = scheme or ("https" if self.tls else "http")
        out = [(b":method", _b(method)), (b":scheme", _b(scheme))]
        if authority != "":
            out.append((b":authority", _b(authority or self.authority)))
        out.append((b":path", _b(path)))
        return out + [(_b(n), _b(v)) for n, v in headers]

    def new_stream(self) -> int:
        return self.conn.get_next_available_stream_id()

    def send_headers(self, stream_id: int, headers: list, *, end_stream: bool = False) -> None:
        self.conn.send_headers(stream_id, [(_b(n), _b(v)) for n, v in headers], end_stream=end_stream)
        self.streams.setdefault(stream_id, StreamState(stream_id))
        self.flush()

    def request(
        self,
        method: str,
        path: str,
        headers: Iterable = (),
        body: bytes = b"",
        *,
        end_stream: bool = True,
        raw_headers: list | None = None,
        timeout: float | None = None,
    ) -> int:
        """Open a stream and send one request; with ``end_stream=False`` the body stays open."""
        sid = self.new_stream()
        block = raw_headers if raw_headers is not None else self.request_headers(method, path, headers)
        self.send_headers(sid, block, end_stream=end_stream and not body)
        if body:
            self.send_body(sid, body, end_stream=end_stream, timeout=timeout)
        return sid

    def send_body(
        self,
        stream_id: int,
        data: bytes,
        *,
        end_stream: bool = True,
        chunk: int | None = None,
        timeout: float | None = None,
    ) -> None:
        """Send ``data`` as DATA frames, waiting for window when the server's windows are exhausted."""
        self.send_interleaved({stream_id: data}, end_stream=end_stream, chunk=chunk, timeout=timeout)

    def send_interleaved(
        self, bodies: dict, *, end_stream: bool = True, chunk: int | None = None, timeout: float | None = None
    ) -> None:
        """Send several streams' bodies round-robin, ``chunk`` bytes at a time, within flow control."""
        deadline = time.monotonic() + (timeout or self.timeout * 4)
        views = {sid: memoryview(data) for sid, data in bodies.items()}
        sent = {sid: 0 for sid in bodies}
        while any(sent[sid] < len(views[sid]) for sid in views):
            progressed = False
            for sid, view in views.items():
                if sent[sid] >= len(view):
                    continue
                if self.streams.get(sid) and self.streams[sid].done:
                    raise AssertionError(f"cannot send the body of stream {sid}: {self.streams[sid].describe()}")
                window = self.conn.local_flow_control_window(sid)
                size = min(window, self.conn.max_outbound_frame_size, len(view) - sent[sid], chunk or 1 << 30)
                if size <= 0:
                    continue
                last = sent[sid] + size >= len(view)
                self.conn.send_data(sid, view[sent[sid] : sent[sid] + size].tobytes(), end_stream=end_stream and last)
                sent[sid] += size
                progressed = True
            self.flush()
            if not progressed:
                self.pump(
                    lambda: any(self.conn.local_flow_control_window(s) > 0 for s in views if sent[s] < len(views[s])),
                    deadline - time.monotonic(),
                    what="flow-control window from the server",
                )
                if self.closed:  # pump returns on a close: the window will never come
                    raise AssertionError(
                        f"the server ended the connection ({self.end or 'closed'}) with "
                        f"{sum(sent.values())} of {sum(map(len, views.values()))} body bytes sent"
                    )
        if end_stream:
            for sid, view in views.items():
                if len(view) == 0:
                    self.end_stream(sid)

    def end_stream(self, stream_id: int) -> None:
        self.conn.end_stream(stream_id)
        self.flush()

    def reset(self, stream_id: int, code: int = ErrorCodes.CANCEL) -> None:
        self.conn.reset_stream(stream_id, error_code=code)
        self.flush()

    def ping(self, payload: bytes = b"gatechck") -> None:
        self.conn.ping(payload)
        self.flush()

    def grant(self, increment: int, stream_id: int | None = None) -> None:
        """Send WINDOW_UPDATE (connection-level when ``stream_id`` is None)."""
        self.conn.increment_flow_control_window(increment, stream_id=stream_id)
        self.flush()

    def update_settings(self, values: dict) -> None:
        self.conn.update_settings(values)
        self.flush()

    # -- receiving -------------------------------------------------------------------------------

    def pump(self, until: Callable[[], bool], timeout: float | None = None, *, what: str = "") -> None:
        """Read and process frames until ``until()`` is true; H2Timeout after ``timeout`` seconds.
        Returns early (without raising) when the server closes the connection."""
        deadline = time.monotonic() + (self.timeout if timeout is None else timeout)
        while not until():
            if self.closed:
                return
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise H2Timeout(
                    f"no {what or 'expected event'} within {timeout or self.timeout:.1f} s; "
                    f"last frames: {self.frames[-8:]!r}"
                )
            self.read_once(min(remaining, self.timeout))

    def read_once(self, timeout: float) -> bool:
        """One bounded recv within ``timeout``; False if nothing arrived. Processes what came."""
        if self.closed or self.sock is None:
            return False
        before = len(self._raw)
        end = bounded.recv_once(self.sock, self._raw, deadline=time.monotonic() + max(timeout, 0.001), cap=_PARTIAL_CAP)
        if end in (bounded.CLOSED, bounded.RESET):
            self.closed, self.end = True, end
            self._check_preface(closing=True)
            return False
        if end is not None:  # TIMEOUT (OVERFLOW cannot happen: a frame is smaller than the cap)
            return False
        self._count(len(self._raw) - before)
        self._process()
        return True

    def idle(self, seconds: float) -> None:
        """Read whatever arrives for ``seconds`` (to watch the server do - or not do - something)."""
        deadline = time.monotonic() + seconds
        while not self.closed and time.monotonic() < deadline:
            self.read_once(deadline - time.monotonic())

    def feed(self, data: bytes) -> None:
        """Take bytes as if they had arrived from the server (``read_once`` reads them itself)."""
        self._raw += data
        self._count(len(data))
        self._process()


def _b(value) -> bytes:
    if isinstance(value, (bytes, bytearray)):
        return bytes(value)
    return str(value).encode("latin-1")
