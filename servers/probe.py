"""Readiness probes: one real HTTP round trip, with a timeout on every socket operation.

A probe returns True when the server answered the request with any HTTP status line (a 404 still proves
the server is up and parsing HTTP); it returns False or raises OSError otherwise.

With ``tls=True`` the probe speaks TLS, offering ALPN ``http/1.1`` (HTTP/1 probe) or ``h2`` (HTTP/2 probe).
It does not verify the server's certificate: readiness is about the server answering, and the checks
that care about the certificate verify it themselves.
"""

from __future__ import annotations

import socket
import ssl
from contextlib import contextmanager
from functools import partial

__all__ = ["http1_probe", "h2_probe", "probe_for", "PROBE_PATH"]

PROBE_PATH = "/ping"


def probe_for(http2: bool, tls: bool = False):
    """The probe for a listener: ``probe(host, port, timeout) -> bool``."""
    return partial(h2_probe if http2 else http1_probe, tls=tls)


@contextmanager
def _connect(host: str, port: int, timeout: float, tls: bool, alpn: str):
    with socket.create_connection((host, port), timeout=timeout) as raw:
        raw.settimeout(timeout)
        if not tls:
            yield raw
            return
        ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
        ctx.check_hostname = False
        ctx.verify_mode = ssl.CERT_NONE
        ctx.set_alpn_protocols([alpn])
        with ctx.wrap_socket(raw, server_hostname=host) as sock:
            sock.settimeout(timeout)
            yield sock


def http1_probe(host: str, port: int, timeout: float, tls: bool = False) -> bool:
    with _connect(host, port, timeout, tls, "http/1.1") as sock:
        sock.sendall(f"GET {PROBE_PATH} HTTP/1.1\r\nHost: {host}:{port}\r\nConnection: close\r\n\r\n".encode())
        data = b""
        while b"\r\n" not in data and len(data) < 4096:
            chunk = sock.recv(4096)
            if not chunk:
                break
            data += chunk
    return data.startswith(b"HTTP/1.")


def h2_probe(host: str, port: int, timeout: float, tls: bool = False) -> bool:
    """HTTP/2 (prior knowledge, or ALPN h2 over TLS): GET /ping and wait for the response HEADERS.

    The request is built with the h2 library, but the reply is read as raw frames: readiness only needs
    "a HEADERS frame came back on stream 1", and a server that breaks an HTTP/2 rule (which the h2 library
    would raise on) must still count as up, so the checks can report the rule it breaks."""
    import h2.config
    import h2.connection

    with _connect(host, port, timeout, tls, "h2") as sock:
        conn = h2.connection.H2Connection(h2.config.H2Configuration(client_side=True))
        conn.initiate_connection()
        conn.send_headers(
            1,
            [
                (":method", "GET"),
                (":path", PROBE_PATH),
                (":scheme", "https" if tls else "http"),
                (":authority", f"{host}:{port}"),
            ],
            end_stream=True,
        )
        sock.sendall(conn.data_to_send())
        buffer = b""
        for _ in range(64):
            data = sock.recv(65536)
            if not data:
                return False
            buffer += data
            while len(buffer) >= 9:
                length = int.from_bytes(buffer[:3], "big")
                frame_type, stream_id = buffer[3], int.from_bytes(buffer[5:9], "big") & 0x7FFFFFFF
                if len(buffer) < 9 + length:
                    break
                buffer = buffer[9 + length :]
                if frame_type == 0x1 and stream_id == 1:  # HEADERS: the response started
                    return True
                if frame_type == 0x7 or (frame_type == 0x3 and stream_id == 1):  # GOAWAY, RST_STREAM
                    return False
    return False
