"""HTTP/2 frames as the checks see them: frame records, per-stream state, and the raw path.

Rules of this module:

1. A :class:`Frame` is what came off the wire: type, flags, stream, length, arrival time, and the
   payload of control frames (DATA/HEADERS payloads are not kept; their effect is in :class:`StreamState`).
2. The raw path (:class:`RawFrames`) handles frames after the h2 library refused one. h2 closes its
   state machine on GOAWAY, but a graceful shutdown keeps answering in-flight streams after its first
   GOAWAY (RFC 9113 §6.8); the raw path decodes those (with h2's own HPACK decoder, so the header
   table stays in step), answers PING and SETTINGS, and keeps handing window back.
"""

from __future__ import annotations

import struct
import time
from dataclasses import dataclass, field
from typing import Optional

import h2.errors
import h2.events
import h2.exceptions
import h2.settings

__all__ = [
    "Frame",
    "StreamState",
    "RawFrames",
    "H2ReadError",
    "CONNECTION_CAP",
    "FRAME_COUNT_CAP",
    "HEADER_BLOCK_CAP",
    "STREAM_DATA_CAP",
    "FRAME_TYPES",
    "ErrorCodes",
    "SettingCodes",
    "code_name",
    "unpad",
    "DATA",
    "HEADERS",
    "PRIORITY",
    "RST_STREAM",
    "SETTINGS",
    "PUSH_PROMISE",
    "PING",
    "GOAWAY",
    "WINDOW_UPDATE",
    "CONTINUATION",
    "END_STREAM",
    "ACK",
    "PADDED",
]

ErrorCodes = h2.errors.ErrorCodes
SettingCodes = h2.settings.SettingCodes

#: the most bytes, and frames, one connection may carry to a check (the biggest exchange is a 10 MiB body)
CONNECTION_CAP = 64 << 20
FRAME_COUNT_CAP = 100_000
#: the most DATA bytes one stream may carry to a check (the biggest body a check reads is 10 MiB)
STREAM_DATA_CAP = 16 << 20
#: the largest header block (a HEADERS frame and its CONTINUATION frames) a check reads
HEADER_BLOCK_CAP = 1 << 20


class H2ReadError(AssertionError):
    """The server sent what no check can judge: bytes that are not HTTP/2, or more than a cap."""


def _mib(n: int) -> str:
    return f"{n / (1 << 20):g} MiB"


DATA, HEADERS, PRIORITY, RST_STREAM, SETTINGS, PUSH_PROMISE, PING, GOAWAY, WINDOW_UPDATE, CONTINUATION = range(10)
FRAME_TYPES = {
    DATA: "DATA",
    HEADERS: "HEADERS",
    PRIORITY: "PRIORITY",
    RST_STREAM: "RST_STREAM",
    SETTINGS: "SETTINGS",
    PUSH_PROMISE: "PUSH_PROMISE",
    PING: "PING",
    GOAWAY: "GOAWAY",
    WINDOW_UPDATE: "WINDOW_UPDATE",
    CONTINUATION: "CONTINUATION",
}
END_STREAM, ACK, PADDED = 0x1, 0x1, 0x8


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
    headers: list = field(default_factory=list)  # final response header block, pseudo-headers included
    informational: list = field(default_factory=list)  # 1xx header blocks
    data: bytearray = field(default_factory=bytearray)
    trailers: Optional[list] = None
    ended: bool = False
    reset_code: Optional[int] = None  # the server's RST_STREAM error code
    pushes: list = field(default_factory=list)  # PushedStreamReceived events on this stream

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
            return f"stream {self.stream_id} reset by the server ({code_name(self.reset_code)})"
        return (
            f"stream {self.stream_id}: status {self.status}, {len(self.data)} body bytes, "
            f"ended={self.ended}, headers={self.headers[:12]!r}"
        )


def code_name(code: int) -> str:
    try:
        return ErrorCodes(code).name
    except ValueError:
        return f"error code {code}"


def unpad(payload: bytes, flags: int) -> bytes:
    if flags & PADDED and payload:
        return payload[1 : len(payload) - payload[0]]
    return payload


class RawFrames:
    """The inbound side of :class:`conformance.client.h2.H2Client`: what arrived split into frames, the server's
    first frame checked, h2's events into :class:`StreamState`, the caps on what arrives, and the raw path (needs
    ``streams``, ``goaways``, ``remote_settings``, ``settings_acked``, ``auto_window``, ``conn``, ``sock``,
    ``closed``, ``_block``, ``_raw``, ``frames``, ``received``, ``h2_error``)."""

    def _count(self, size: int) -> None:
        self.received += size
        if self.received > CONNECTION_CAP:
            raise H2ReadError(
                f"the server sent more than the {_mib(CONNECTION_CAP)} connection cap of the checks' client "
                f"(one HTTP/2 connection); stopped reading (last frames {self.frames[-8:]!r})"
            )

    def _check_preface(self, *, closing: bool = False) -> None:
        """The server's first frame is SETTINGS without ACK on stream 0 (RFC 9113 §3.4); any other first
        bytes (HTTP/1.x, garbage, a truncated frame before a close) are not HTTP/2."""
        if self.frames:
            return
        head = bytes(self._raw[:9])
        if len(head) < 9 and not (closing and head):
            return
        ok = (
            len(head) == 9
            and head[3] == SETTINGS
            and not head[4] & ACK
            and head[5:9] == b"\0\0\0\0"
            and int.from_bytes(head[:3], "big") % 6 == 0
        )
        if not ok:
            raise H2ReadError(
                f"the server's first bytes are not an HTTP/2 SETTINGS frame (RFC 9113 §3.4): {bytes(self._raw[:120])!r}"
            )

    def _process(self) -> None:
        """Split what arrived into frames; hand each to h2 (or, once h2 refused one, to the raw path)."""
        self._check_preface()
        now = time.monotonic()
        buf = self._raw
        pos = 0
        while len(buf) - pos >= 9:
            length = int.from_bytes(buf[pos : pos + 3], "big")
            if len(buf) - pos < 9 + length:
                break
            chunk = bytes(buf[pos : pos + 9 + length])
            pos += 9 + length
            ftype, flags = chunk[3], chunk[4]
            sid = int.from_bytes(chunk[5:9], "big") & 0x7FFFFFFF
            keep = chunk[9:] if ftype not in (DATA, HEADERS, CONTINUATION) else b""
            frame = Frame(ftype, flags, sid, length, now, keep)
            self._bound_frames(frame)
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
            state.data += unpad(payload, flags)
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
                block = unpad(payload, flags)
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

    def _bound_frames(self, frame: Frame) -> None:
        """Stop at FRAME_COUNT_CAP frames on the connection, STREAM_DATA_CAP DATA bytes on one stream and
        HEADER_BLOCK_CAP bytes in one header block."""
        if len(self.frames) >= FRAME_COUNT_CAP:
            raise H2ReadError(
                f"the server sent more than the {FRAME_COUNT_CAP}-frame connection cap of the checks' client "
                f"(one HTTP/2 connection); stopped reading (last frames {self.frames[-8:]!r})"
            )
        if frame.type == DATA:
            got = self._data_bytes[frame.stream_id] = self._data_bytes.get(frame.stream_id, 0) + frame.length
            if got > STREAM_DATA_CAP:
                raise H2ReadError(
                    f"stream {frame.stream_id} passed the {_mib(STREAM_DATA_CAP)} per-stream DATA cap "
                    f"of the checks' client; stopped reading"
                )
        if frame.type in (HEADERS, PUSH_PROMISE, CONTINUATION):
            self._block_bytes = frame.length if frame.type != CONTINUATION else self._block_bytes + frame.length
            if self._block_bytes > HEADER_BLOCK_CAP:
                raise H2ReadError(
                    f"a header block from the server passed the {_mib(HEADER_BLOCK_CAP)} header "
                    f"block cap (stream {frame.stream_id}); stopped reading"
                )
            if frame.flags & 0x4:  # END_HEADERS
                self._block_bytes = 0

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
