"""A tiny stdlib PNG reader for the matrix's screenshot test: 8-bit greyscale, RGB, grey+alpha or RGBA, not
interlaced (what headless Chromium writes). ``read_png`` returns the size and the pixels as RGB tuples."""

from __future__ import annotations

import struct
import zlib
from pathlib import Path

__all__ = ["read_png", "Image"]

_SIGNATURE = b"\x89PNG\r\n\x1a\n"
_CHANNELS = {0: 1, 2: 3, 4: 2, 6: 4}  # colour type → samples per pixel


class Image:
    def __init__(self, width: int, height: int, channels: int, rows: list) -> None:
        self.width, self.height, self.channels, self.rows = width, height, channels, rows

    def pixels(self, step: int = 1):
        """RGB tuples, every ``step``-th pixel of every ``step``-th row."""
        c = self.channels
        for row in self.rows[::step]:
            for x in range(0, self.width, step):
                p = row[x * c : (x + 1) * c]
                yield (p[0], p[0], p[0]) if c < 3 else (p[0], p[1], p[2])


def _chunks(data: bytes):
    pos = len(_SIGNATURE)
    while pos + 8 <= len(data):
        length, kind = struct.unpack(">I4s", data[pos : pos + 8])
        yield kind, data[pos + 8 : pos + 8 + length]
        pos += 12 + length


def _paeth(a: int, b: int, c: int) -> int:
    p = a + b - c
    pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
    return a if pa <= pb and pa <= pc else (b if pb <= pc else c)


def _unfilter(kind: int, line: bytearray, prior: bytes, bpp: int) -> bytearray:
    if kind == 0:
        return line
    if kind == 2:
        return bytearray((x + y) & 0xFF for x, y in zip(line, prior))
    for i in range(len(line)):
        left = line[i - bpp] if i >= bpp else 0
        if kind == 1:
            line[i] = (line[i] + left) & 0xFF
        elif kind == 3:
            line[i] = (line[i] + ((left + prior[i]) >> 1)) & 0xFF
        else:
            up_left = prior[i - bpp] if i >= bpp else 0
            line[i] = (line[i] + _paeth(left, prior[i], up_left)) & 0xFF
    return line


def read_png(path: Path) -> Image:
    data = Path(path).read_bytes()
    if not data.startswith(_SIGNATURE):
        raise ValueError(f"{path}: not a PNG file")
    header, idat = None, b""
    for kind, body in _chunks(data):
        if kind == b"IHDR":
            header = struct.unpack(">IIBBBBB", body)
        elif kind == b"IDAT":
            idat += body
    width, height, depth, colour, _, _, interlace = header
    if depth != 8 or colour not in _CHANNELS or interlace:
        raise ValueError(f"{path}: unsupported PNG (depth {depth}, colour type {colour}, interlace {interlace})")
    channels = _CHANNELS[colour]
    raw, stride = zlib.decompress(idat), width * channels
    rows, prior = [], bytes(stride)
    for y in range(height):
        start = y * (stride + 1)
        line = _unfilter(raw[start], bytearray(raw[start + 1 : start + 1 + stride]), prior, channels)
        rows.append(bytes(line))
        prior = rows[-1]
    return Image(width, height, channels, rows)
