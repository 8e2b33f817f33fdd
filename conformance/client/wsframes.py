"""WebSocket bytes from fields and back (RFC 6455): the opening handshake, frames, close payloads.

Nothing here is normalised, so a check can build what no polite client would (any key, version or
header; any FIN, RSV, opcode, mask and length encoding). Reading frames off a connection is
:mod:`conformance.client.ws`'s.
"""

from __future__ import annotations

import base64
import hashlib
import os
import struct
from dataclasses import dataclass

from gatecheck.conformance.client.http1 import Response

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
    "xor",
]

GUID = b"258EAFA5-E914-47DA-95CA-C5AB0DC85B11"
OP_CONT, OP_TEXT, OP_BINARY, OP_CLOSE, OP_PING, OP_PONG = 0x0, 0x1, 0x2, 0x8, 0x9, 0xA
EOF = "eof"  # the server closed (or reset) the TCP connection
TIMEOUT = "timeout"  # nothing (complete) arrived before the deadline

#: the most bytes a handshake response may take before its head (or, for an error, its body) is complete
HANDSHAKE_CAP = 1 << 20
#: the largest frame payload, and message, a check reads (the biggest the checks send is 1 MiB)
FRAME_CAP = 16 << 20
#: the most bytes, and frames, one connection may carry to a check
CONNECTION_CAP = 64 << 20
FRAME_COUNT_CAP = 100_000

RESERVED_OPCODES = frozenset(range(0x3, 0x8)) | frozenset(range(0xB, 0x10))


class WSReadError(AssertionError):
    """The server sent what no check can judge: bytes that are not the protocol, or more than a cap."""


def mib(n: int) -> str:
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


def handshake_request(
    path: str,
    host: str,
    *,
    key: str | None = "",
    version: str | None = "13",
    protocols=(),
    headers=(),
    method: str = "GET",
    http_version: str = "HTTP/1.1",
    upgrade: str | None = "websocket",
    connection: str | None = "Upgrade",
) -> tuple:
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


def encode_frame(
    opcode: int,
    payload: bytes = b"",
    *,
    fin: bool = True,
    rsv: int = 0,
    mask: bool = True,
    mask_key: bytes | None = None,
    length: int | None = None,
) -> bytes:
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
    return bytes(head) + key + xor(payload, key)


def xor(data: bytes, key: bytes) -> bytes:
    if not data:
        return b""
    repeated = (key * (len(data) // 4 + 1))[: len(data)]
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
    length_bytes: int  # 0, 2 or 8: how the length was encoded (0 = in the 7-bit field)

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
        return (
            f"Frame(op={self.opcode:#x}, fin={int(self.fin)}, rsv={self.rsv}, masked={self.masked}, "
            f"len={len(self.payload)}, payload={body!r})"
        )


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
