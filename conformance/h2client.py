"""A small HTTP/2 client for the checks: cleartext prior knowledge, exact frames, every wait bounded.

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
"""
from __future__ import annotations

import socket
import struct
import time
from dataclasses import dataclass, field
from typing import Callable, Iterable, Optional

import h2.config
import h2.connection
import h2.errors
import h2.events
import h2.exceptions
import h2.settings

__all__ = ["H2Client", "H2Timeout", "StreamState", "Frame", "FRAME_TYPES", "ErrorCodes", "SettingCodes",
           "DATA", "HEADERS", "RST_STREAM", "SETTINGS", "PUSH_PROMISE", "PING", "GOAWAY", "WINDOW_UPDATE"]

ErrorCodes = h2.errors.ErrorCodes
SettingCodes = h2.settings.SettingCodes

DATA, HEADERS, PRIORITY, RST_STREAM, SETTINGS, PUSH_PROMISE, PING, GOAWAY, WINDOW_UPDATE, CONTINUATION = range(10)
FRAME_TYPES = {DATA: "DATA", HEADERS: "HEADERS", PRIORITY: "PRIORITY", RST_STREAM: "RST_STREAM",
               SETTINGS: "SETTINGS", PUSH_PROMISE: "PUSH_PROMISE", PING: "PING", GOAWAY: "GOAWAY",
               WINDOW_UPDATE: "WINDOW_UPDATE", CONTINUATION: "CONTINUATION"}
END_STREAM, ACK, PADDED = 0x1, 0x1, 0x8


class H2Timeout(AssertionError):
    """A wait ran past its deadline (the server did not do what the check waited for)."""


@dataclass
class Frame:
    """One frame as it came off the wire (payload kept only for control frames)."""

    type: int
    flags: int
    stream_id: int
    length: int
    t: float
    payload: bytes = b""

    @property
    def name(self) -> str:
        return FRAME_TYPES.get(self.type, f"UNKNOWN({self.type})")

    @property
    def data_length(self) -> int:
        """Flow-controlled length of a DATA frame (the whole payload, padding included)."""
        return self.length

    def goaway(self) -> tuple:
        """(last_stream_id, error_code, debug data) of a GOAWAY frame."""
        last, code = struct.unpack(">II", self.payload[:8])
        return last & 0x7FFFFFFF, code, self.payload[8:]

    def error_code(self) -> int:
        return struct.unpack(">I", self.payload[:4])[0]

    def settings(self) -> dict:
        return {ident: value for ident, value in struct.iter_unpack(">HI", self.payload[: len(self.payload) // 6 * 6])}

    def window_increment(self) -> int:
        return struct.unpack(">I", self.payload[:4])[0] & 0x7FFFFFFF

    def __repr__(self) -> str:
        return f"{self.name}(stream={self.stream_id}, flags={self.flags:#x}, len={self.length})"


@dataclass
class StreamState:
    """What the server sent on one stream."""

    stream_id: int
    headers: list = field(default_factory=list)        # final response header block, pseudo-headers included
    informational: list = field(default_factory=list)  # 1xx header blocks
    data: bytearray = field(default_factory=bytearray)
    trailers: Optional[list] = None
    ended: bool = False
    reset_code: Optional[int] = None                   # the server's RST_STREAM error code
    pushes: list = field(default_factory=list)         # PushedStreamReceived events on this stream

    @property
    def status(self) -> Optional[int]:
        for name, value in self.headers:
            if name == b":status":
                return int(value)
        return None

    @property
    def body(self) -> bytes:
        return bytes(self.data)

    def header(self, name: bytes) -> list:
        return [v for n, v in self.headers if n == name]

    @property
    def done(self) -> bool:
        return self.ended or self.reset_code is not None

    def describe(self) -> str:
        if self.reset_code is not None:
            return f"stream {self.stream_id} reset by the server ({_code_name(self.reset_code)})"
        return (f"stream {self.stream_id}: status {self.status}, {len(self.data)} body bytes, "
                f"ended={self.ended}, headers={self.headers[:12]!r}")


def _code_name(code: int) -> str:
    try:
        return ErrorCodes(code).name
    except ValueError:
        return f"error code {code}"


class H2Client:
    """One HTTP/2 connection with prior knowledge. Not thread-safe; use one per check."""

    def __init__(self, address: tuple, *, authority: str | None = None, timeout: float = 5.0,
                 settings: dict | None = None, auto_window: bool = True, connect: bool = True,
                 preface: bool = True) -> None:
        self.address = address
        self.authority = authority or f"{address[0]}:{address[1]}"
        self.timeout = timeout
        self.auto_window = auto_window
        config = h2.config.H2Configuration(client_side=True, header_encoding=None,
                                           validate_outbound_headers=False, normalize_outbound_headers=False,
                                           validate_inbound_headers=False, normalize_inbound_headers=False)
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
        self.goaways: list = []           # ConnectionTerminated events
        self.h2_error: Optional[BaseException] = None
        self.closed = False               # the server closed (or reset) the TCP connection
        self._raw = bytearray()
        self._block = None
        self.sock: Optional[socket.socket] = None
        if connect:
            self.connect(preface=preface)

    # -- connection ------------------------------------------------------------------------------

    def connect(self, *, preface: bool = True) -> None:
        self.sock = socket.create_connection(self.address, timeout=self.timeout)
        self.sock.settimeout(self.timeout)
        # Small frames (WINDOW_UPDATE, PING ACK) must not wait for Nagle's algorithm.
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
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

    def request_headers(self, method: str, path: str, headers: Iterable = (), *, scheme: str = "http",
                        authority: str | None = None) -> list:
        """The header list of an ordinary request: pseudo-headers first, then ``headers``."""
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

    def request(self, method: str, path: str, headers: Iterable = (), body: bytes = b"", *,
                end_stream: bool = True, raw_headers: list | None = None, timeout: float | None = None) -> int:
        """Open a stream and send one request; with ``end_stream=False`` the body stays open."""
        sid = self.new_stream()
        block = raw_headers if raw_headers is not None else self.request_headers(method, path, headers)
        self.send_headers(sid, block, end_stream=end_stream and not body)
        if body:
            self.send_body(sid, body, end_stream=end_stream, timeout=timeout)
        return sid

    def send_body(self, stream_id: int, data: bytes, *, end_stream: bool = True, chunk: int | None = None,
                  timeout: float | None = None) -> None:
        """Send ``data`` as DATA frames, waiting for window when the server's windows are exhausted."""
        self.send_interleaved({stream_id: data}, end_stream=end_stream, chunk=chunk, timeout=timeout)

    def send_interleaved(self, bodies: dict, *, end_stream: bool = True, chunk: int | None = None,
                         timeout: float | None = None) -> None:
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
                    raise AssertionError(f"cannot send the body of stream {sid}: "
                                         f"{self.streams[sid].describe()}")
                window = self.conn.local_flow_control_window(sid)
                size = min(window, self.conn.max_outbound_frame_size, len(view) - sent[sid], chunk or 1 << 30)
                if size <= 0:
                    continue
                last = sent[sid] + size >= len(view)
                self.conn.send_data(sid, view[sent[sid]:sent[sid] + size].tobytes(), end_stream=end_stream and last)
                sent[sid] += size
                progressed = True
            self.flush()
            if not progressed:
                self.pump(lambda: any(self.conn.local_flow_control_window(s) > 0 for s in views if sent[s] < len(views[s])),
                          deadline - time.monotonic(), what="flow-control window from the server")
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
                raise H2Timeout(f"no {what or 'expected event'} within {timeout or self.timeout:.1f} s; "
                                f"last frames: {self.frames[-8:]!r}")
            self.read_once(min(remaining, self.timeout))

    def read_once(self, timeout: float) -> bool:
        """One recv() with a timeout; False if nothing arrived. Processes what came."""
        if self.closed or self.sock is None:
            return False
        self.sock.settimeout(max(timeout, 0.001))
        try:
            data = self.sock.recv(1 << 16)
        except socket.timeout:
            return False
        except OSError:
            self.closed = True
            return False
        if not data:
            self.closed = True
            return False
        self.feed(data)
        return True

    def idle(self, seconds: float) -> None:
        """Read whatever arrives for ``seconds`` (to watch the server do - or not do - something)."""
        deadline = time.monotonic() + seconds
        while not self.closed and time.monotonic() < deadline:
            self.read_once(deadline - time.monotonic())

    def feed(self, data: bytes) -> None:
        """Split what arrived into frames; hand each to h2 (or, once h2 refused one, to the raw path)."""
        now = time.monotonic()
        buf = self._raw
        buf += data
        pos = 0
        while len(buf) - pos >= 9:
            length = int.from_bytes(buf[pos:pos + 3], "big")
            if len(buf) - pos < 9 + length:
                break
            chunk = bytes(buf[pos:pos + 9 + length])
            pos += 9 + length
            ftype, flags = chunk[3], chunk[4]
            sid = int.from_bytes(chunk[5:9], "big") & 0x7FFFFFFF
            keep = chunk[9:] if ftype not in (DATA, HEADERS, CONTINUATION) else b""
            frame = Frame(ftype, flags, sid, length, now, keep)
            self.frames.append(frame)
            if self.h2_error is None:
                try:
                    events = self.conn.receive_data(chunk)
                except h2.exceptions.H2Error as exc:
                    self.h2_error = exc
                else:
                    for event in events:
                        self._handle(event)
                    continue
            self._raw_frame(frame, chunk[9:])
        del buf[:pos]
        try:
            self.flush()
        except OSError:
            pass

    # -- the raw path: h2 refuses frames after a GOAWAY; a graceful shutdown still sends them ---

    def _raw_frame(self, frame: Frame, payload: bytes) -> None:
        ftype, flags, sid = frame.type, frame.flags, frame.stream_id
        state = self.streams.setdefault(sid, StreamState(sid)) if sid else None
        if ftype == PING and not flags & ACK:
            self._send_frame(PING, ACK, 0, payload)
        elif ftype == SETTINGS and not flags & ACK:
            self._send_frame(SETTINGS, ACK, 0, b"")
            for ident, value in frame.settings().items():
                self.remote_settings[ident] = value
        elif ftype == SETTINGS:
            self.settings_acked += 1
        elif ftype == GOAWAY:
            event = h2.events.ConnectionTerminated()
            event.last_stream_id, event.error_code, event.additional_data = frame.goaway()
            self.goaways.append(event)
        elif ftype == RST_STREAM and state is not None:
            state.reset_code = frame.error_code()
        elif ftype == DATA and state is not None:
            state.data += _unpad(payload, flags)
            if self.auto_window and len(payload):
                increment = struct.pack(">I", len(payload))
                self._send_frame(WINDOW_UPDATE, 0, 0, increment)
                if not flags & END_STREAM:
                    self._send_frame(WINDOW_UPDATE, 0, sid, increment)
            if flags & END_STREAM:
                state.ended = True
        elif ftype in (HEADERS, CONTINUATION) and state is not None:
            block = payload
            if ftype == HEADERS:
                block = _unpad(payload, flags)
                if flags & 0x20:  # PRIORITY
                    block = block[5:]
                self._block = (sid, bytearray(block), bool(flags & END_STREAM))
            elif self._block and self._block[0] == sid:
                self._block[1].extend(block)
            if flags & 0x4 and self._block:  # END_HEADERS
                _, whole, ended = self._block
                self._block = None
                headers = [(bytes(n), bytes(v)) for n, v in self.conn.decoder.decode(bytes(whole), raw=True)]
                status = dict(headers).get(b":status", b"")
                if state.headers:
                    state.trailers = headers
                elif status.startswith(b"1"):
                    state.informational.append(headers)
                else:
                    state.headers = headers
                if ended:
                    state.ended = True

    def _send_frame(self, ftype: int, flags: int, stream_id: int, payload: bytes) -> None:
        header = len(payload).to_bytes(3, "big") + bytes([ftype, flags]) + stream_id.to_bytes(4, "big")
        try:
            self.sock.sendall(header + payload)
        except OSError:
            self.closed = True

    def _handle(self, event) -> None:
        self.events.append(event)
        sid = getattr(event, "stream_id", None)
        state = self.streams.setdefault(sid, StreamState(sid)) if sid else None
        if isinstance(event, h2.events.InformationalResponseReceived):
            state.informational.append(list(event.headers))
        elif isinstance(event, h2.events.ResponseReceived):
            state.headers = list(event.headers)
        elif isinstance(event, h2.events.TrailersReceived):
            state.trailers = list(event.headers)
        elif isinstance(event, h2.events.DataReceived):
            state.data += event.data
            if self.auto_window and event.flow_controlled_length:
                self.conn.acknowledge_received_data(event.flow_controlled_length, sid)
                # h2 batches stream-level updates; hand everything back at once so nothing stalls.
                self._top_up(sid)
        elif isinstance(event, h2.events.StreamEnded):
            state.ended = True
        elif isinstance(event, h2.events.StreamReset):
            if event.remote_reset:
                state.reset_code = int(event.error_code)
        elif isinstance(event, h2.events.PushedStreamReceived):
            self.streams.setdefault(event.parent_stream_id, StreamState(event.parent_stream_id)).pushes.append(event)
            self.streams.setdefault(event.pushed_stream_id, StreamState(event.pushed_stream_id))
        elif isinstance(event, h2.events.RemoteSettingsChanged):
            for code, change in event.changed_settings.items():
                self.remote_settings[int(code)] = change.new_value
        elif isinstance(event, h2.events.SettingsAcknowledged):
            self.settings_acked += 1
        elif isinstance(event, h2.events.ConnectionTerminated):
            self.goaways.append(event)

    def _top_up(self, sid: int) -> None:
        try:
            conn_gap = 65535 - self.conn.inbound_flow_control_window
            if conn_gap > 0:
                self.conn.increment_flow_control_window(conn_gap)
            stream = self.conn._get_stream_by_id(sid)
            gap = self.conn.local_settings.initial_window_size - stream.inbound_flow_control_window
            if gap > 0 and not stream.closed:
                self.conn.increment_flow_control_window(gap, stream_id=sid)
        except (h2.exceptions.H2Error, KeyError):
            pass

    # -- waiting for outcomes --------------------------------------------------------------------

    def response(self, stream_id: int, timeout: float | None = None) -> StreamState:
        """Wait until the stream ends or is reset (or the connection goes); return its state."""
        state = self.streams.setdefault(stream_id, StreamState(stream_id))
        self.pump(lambda: state.done or self.refused(stream_id), timeout, what=f"end of stream {stream_id}")
        if not state.done and self.closed:
            raise AssertionError(f"the server closed the connection before stream {stream_id} ended "
                                 f"({len(state.data)} body bytes); frames: {self.frames[-8:]!r}")
        return state

    def refused(self, stream_id: int) -> bool:
        """True when a GOAWAY says the server will not process ``stream_id``."""
        return any(stream_id > g.last_stream_id for g in self.goaways)

    def wait_headers(self, stream_id: int, timeout: float | None = None) -> StreamState:
        state = self.streams.setdefault(stream_id, StreamState(stream_id))
        self.pump(lambda: bool(state.headers) or state.done, timeout, what=f"response headers on stream {stream_id}")
        return state

    def wait_data(self, stream_id: int, size: int = 1, timeout: float | None = None) -> StreamState:
        state = self.streams.setdefault(stream_id, StreamState(stream_id))
        self.pump(lambda: len(state.data) >= size or state.done, timeout,
                  what=f"{size} body bytes on stream {stream_id}")
        return state

    def wait_settings(self, timeout: float | None = None) -> None:
        """Wait for the server's SETTINGS and its ACK of ours."""
        self.pump(lambda: any(f.type == SETTINGS and not f.flags & ACK for f in self.frames)
                  and self.settings_acked > 0, timeout, what="server SETTINGS and SETTINGS ACK")

    def stream_error_or_status(self, stream_id: int, timeout: float | None = None) -> str:
        """How a request ended, in words: 'reset:PROTOCOL_ERROR', 'status:400', 'goaway:PROTOCOL_ERROR' …"""
        state = self.streams.setdefault(stream_id, StreamState(stream_id))
        self.pump(lambda: state.done or bool(self.goaways), timeout, what=f"outcome of stream {stream_id}")
        if state.reset_code is not None and not state.headers:
            return f"reset:{_code_name(state.reset_code)}"
        if state.headers:
            return f"status:{state.status}"
        if self.goaways:
            return f"goaway:{_code_name(int(self.goaways[-1].error_code))}"
        return "closed"

    def frames_on(self, stream_id: int, ftype: int | None = None) -> list:
        return [f for f in self.frames if f.stream_id == stream_id and (ftype is None or f.type == ftype)]


def _unpad(payload: bytes, flags: int) -> bytes:
    if flags & PADDED and payload:
        return payload[1:len(payload) - payload[0]]
    return payload


def _b(value) -> bytes:
    if isinstance(value, (bytes, bytearray)):
        return bytes(value)
    return str(value).encode("latin-1")
