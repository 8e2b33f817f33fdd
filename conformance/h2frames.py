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
from dataclasses import dataclass, field
from typing import Optional

import h2.errors
import h2.events
import h2.settings

__all__ = ["Frame", "StreamState", "RawFrames", "FRAME_TYPES", "ErrorCodes", "SettingCodes", "code_name", "unpad",
           "DATA", "HEADERS", "PRIORITY", "RST_STREAM", "SETTINGS", "PUSH_PROMISE", "PING", "GOAWAY",
           "WINDOW_UPDATE", "CONTINUATION", "END_STREAM", "ACK", "PADDED"]

ErrorCodes = h2.errors.ErrorCodes
SettingCodes = h2.settings.SettingCodes

DATA, HEADERS, PRIORITY, RST_STREAM, SETTINGS, PUSH_PROMISE, PING, GOAWAY, WINDOW_UPDATE, CONTINUATION = range(10)
FRAME_TYPES = {DATA: "DATA", HEADERS: "HEADERS", PRIORITY: "PRIORITY", RST_STREAM: "RST_STREAM",
               SETTINGS: "SETTINGS", PUSH_PROMISE: "PUSH_PROMISE", PING: "PING", GOAWAY: "GOAWAY",
               WINDOW_UPDATE: "WINDOW_UPDATE", CONTINUATION: "CONTINUATION"}
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
            return f"stream {self.stream_id} reset by the server ({code_name(self.reset_code)})"
        return (f"stream {self.stream_id}: status {self.status}, {len(self.data)} body bytes, "
                f"ended={self.ended}, headers={self.headers[:12]!r}")


def code_name(code: int) -> str:
    try:
        return ErrorCodes(code).name
    except ValueError:
        return f"error code {code}"


def unpad(payload: bytes, flags: int) -> bytes:
    if flags & PADDED and payload:
        return payload[1:len(payload) - payload[0]]
    return payload


class RawFrames:
    """The raw path of :class:`conformance.h2client.H2Client` (needs ``streams``, ``goaways``,
    ``remote_settings``, ``settings_acked``, ``auto_window``, ``conn``, ``sock``, ``closed``, ``_block``)."""

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
