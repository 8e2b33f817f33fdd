"""A TCP proxy in front of a real server that corrupts one thing the server sends.

    python -m tests.broken.proxy --host H --port P --break NAME -- <server command with @PORT@>

Some wire rules live in the server's protocol layers, out of an app wrapper's reach: the WebSocket
closing handshake, the HTTP/2 connection preface. This proxy starts the real server (its command with
``@PORT@`` replaced by a free loopback port), listens on ``--port`` and relays both ways, rewriting the
server's bytes in exactly the way ``BREAKS[NAME]`` says (``--break none``: a plain relay, the control).

Rules of this module: stdlib only; the child server is started in our process group and stopped with us
(SIGTERM, then SIGKILL after 5 s); every wait is bounded.
"""

from __future__ import annotations

import argparse
import asyncio
import signal
import socket
import struct
import subprocess
import sys
import time

from gatecheck.servers.process import free_port

__all__ = ["BREAKS", "main"]

BREAKS = {
    "ws_close_code_1005": "the server's WebSocket Close frames carry status 1005 (which names the absence of one)",
    "ws_tcp_kept_open": "after the server's WebSocket Close, the client's TCP connection stays open 10 s",
    "h2_push_enabled": "the server's first SETTINGS frame also says SETTINGS_ENABLE_PUSH = 1",
    "h2_preface_not_settings": "a PING frame goes out before the server's SETTINGS",
    "h2_errors_as_no_error": "the error code of the server's RST_STREAM and GOAWAY frames becomes NO_ERROR",
}

_WS_CLOSE = 0x8
_H2_SETTINGS, _H2_PING, _H2_RST_STREAM, _H2_GOAWAY = 0x4, 0x6, 0x3, 0x7


class Rewriter:
    """Server-to-client bytes in, bytes for the client out; ``hold_open`` once the client must not see the
    server's TCP close (ws_tcp_kept_open)."""

    def __init__(self, brk: str):
        self.brk = brk
        self.buf = b""
        self.mode = None  # "http" until a 101, then "ws"; or "h2" from the first byte
        self.first_settings = True
        self.hold_open = False

    def feed(self, data: bytes) -> bytes:
        self.buf += data
        if self.mode is None and len(self.buf) >= 5:
            self.mode = "http" if self.buf.startswith(b"HTTP/") else "h2"
        if self.mode == "http":
            end = self.buf.find(b"\r\n\r\n")
            if end < 0:
                return b""
            head, self.buf = self.buf[: end + 4], self.buf[end + 4 :]
            if head.startswith(b"HTTP/1.1 101"):
                self.mode = "ws"
                return head + self.feed(b"")
            return head + self._pass()
        if self.mode == "ws":
            return self._frames(self._ws_frame)
        if self.mode == "h2":
            return self._frames(self._h2_frame)
        return b""

    def _pass(self) -> bytes:
        out, self.buf = self.buf, b""
        return out

    def _frames(self, one) -> bytes:
        out = b""
        while True:
            frame = one()
            if frame is None:
                return out
            out += frame

    def _ws_frame(self):
        buf = self.buf
        if len(buf) < 2:
            return None
        length, pos = buf[1] & 0x7F, 2
        if length == 126:
            if len(buf) < 4:
                return None
            length, pos = struct.unpack("!H", buf[2:4])[0], 4
        elif length == 127:
            if len(buf) < 10:
                return None
            length, pos = struct.unpack("!Q", buf[2:10])[0], 10
        if len(buf) < pos + length:
            return None
        frame, self.buf = buf[: pos + length], buf[pos + length :]
        if buf[0] & 0x0F != _WS_CLOSE:
            return frame
        if self.brk == "ws_tcp_kept_open":
            self.hold_open = True
        if self.brk == "ws_close_code_1005":
            payload = struct.pack("!H", 1005) + frame[pos + 2 :] if length >= 2 else struct.pack("!H", 1005)
            return bytes([buf[0], len(payload)]) + payload  # a Close payload is at most 125 bytes
        return frame

    def _h2_frame(self):
        buf = self.buf
        if len(buf) < 9:
            return None
        length = int.from_bytes(buf[:3], "big")
        if len(buf) < 9 + length:
            return None
        frame, self.buf = buf[: 9 + length], buf[9 + length :]
        kind, flags = frame[3], frame[4]
        if self.brk == "h2_errors_as_no_error" and kind in (_H2_RST_STREAM, _H2_GOAWAY):
            at = 9 if kind == _H2_RST_STREAM else 13  # RST_STREAM: the code; GOAWAY: after last-stream-id
            return frame[:at] + b"\x00\x00\x00\x00" + frame[at + 4 :]
        if kind != _H2_SETTINGS or flags & 1 or not self.first_settings:
            return frame
        self.first_settings = False
        if self.brk == "h2_push_enabled":
            payload = frame[9:] + struct.pack("!HI", 0x2, 1)
            return len(payload).to_bytes(3, "big") + frame[3:9] + payload
        if self.brk == "h2_preface_not_settings":
            return b"\x00\x00\x08" + bytes([_H2_PING, 0]) + b"\x00\x00\x00\x00" + b"gatechck" + frame
        return frame


async def _relay(reader, writer, rewrite=None) -> bool:
    """Copy until EOF; returns whether the far side is to be held open (ws_tcp_kept_open)."""
    try:
        while True:
            data = await reader.read(65536)
            if not data:
                break
            writer.write(rewrite.feed(data) if rewrite else data)
            await writer.drain()
    except (ConnectionError, OSError):
        pass
    return bool(rewrite and rewrite.hold_open)


async def _connection(client_reader, client_writer, inner_port: int, brk: str) -> None:
    try:
        server_reader, server_writer = await asyncio.wait_for(asyncio.open_connection("127.0.0.1", inner_port), 5.0)
    except (OSError, asyncio.TimeoutError):
        client_writer.close()
        return
    upstream = asyncio.ensure_future(_relay(client_reader, server_writer))
    hold = await _relay(server_reader, client_writer, Rewriter(brk))
    if hold:
        await asyncio.sleep(10.0)
    for writer in (client_writer, server_writer):
        writer.close()
    upstream.cancel()


def _wait_listening(host: str, port: int, child, timeout: float = 30.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if child.poll() is not None:
            raise SystemExit(f"the server exited with {child.returncode} before it listened")
        try:
            socket.create_connection((host, port), timeout=0.5).close()
            return
        except OSError:
            time.sleep(0.05)
    raise SystemExit(f"the server did not listen on {host}:{port} within {timeout:.0f} s")


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tests.broken.proxy", description=__doc__.split("\n")[0])
    parser.add_argument("--host", default="127.0.0.1", help="address to listen on (loopback)")
    parser.add_argument("--port", type=int, required=True, help="port to listen on")
    parser.add_argument(
        "--break",
        dest="brk",
        default="none",
        choices=["none"] + sorted(BREAKS),
        metavar="NAME",
        help="what to corrupt ('none': relay unchanged): " + ", ".join(sorted(BREAKS)),
    )
    parser.add_argument("command", nargs=argparse.REMAINDER, help="-- the server command, with @PORT@")
    args = parser.parse_args(argv)
    command = [a for a in args.command if a != "--"]
    inner = free_port("127.0.0.1")
    child = subprocess.Popen([a.replace("@PORT@", str(inner)) for a in command], stdin=subprocess.DEVNULL)
    try:
        _wait_listening("127.0.0.1", inner, child)

        async def serve():
            stop = asyncio.Event()
            asyncio.get_running_loop().add_signal_handler(signal.SIGTERM, stop.set)
            listener = await asyncio.start_server(lambda r, w: _connection(r, w, inner, args.brk), args.host, args.port)
            print(f"gatecheck-proxy {args.host}:{args.port} -> {inner} break={args.brk}", flush=True)
            async with listener:
                await stop.wait()

        asyncio.run(serve())
    except KeyboardInterrupt:
        pass
    finally:
        child.terminate()
        try:
            child.wait(5)
        except subprocess.TimeoutExpired:
            child.kill()
            child.wait()
    return 0


if __name__ == "__main__":
    sys.exit(main())
