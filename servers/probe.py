"""Readiness probes: one real HTTP round trip, with a timeout on every socket operation.

A probe returns True when the server answered the request with any HTTP status line (a 404 still proves
the server is up and parsing HTTP); it returns False or raises OSError otherwise.
"""
from __future__ import annotations

import socket

__all__ = ["http1_probe", "h2_probe", "PROBE_PATH"]

PROBE_PATH = "/ping"


def http1_probe(host: str, port: int, timeout: float) -> bool:
    with socket.create_connection((host, port), timeout=timeout) as sock:
        sock.settimeout(timeout)
        sock.sendall(
            f"GET {PROBE_PATH} HTTP/1.1\r\nHost: {host}:{port}\r\nConnection: close\r\n\r\n".encode()
        )
        data = b""
        while b"\r\n" not in data and len(data) < 4096:
            chunk = sock.recv(4096)
            if not chunk:
                break
            data += chunk
    return data.startswith(b"HTTP/1.")


def h2_probe(host: str, port: int, timeout: float) -> bool:
    """HTTP/2 with prior knowledge: GET /ping and wait for the response HEADERS."""
    import h2.config
    import h2.connection
    import h2.events

    with socket.create_connection((host, port), timeout=timeout) as sock:
        sock.settimeout(timeout)
        conn = h2.connection.H2Connection(h2.config.H2Configuration(client_side=True))
        conn.initiate_connection()
        conn.send_headers(
            1,
            [(":method", "GET"), (":path", PROBE_PATH), (":scheme", "http"), (":authority", f"{host}:{port}")],
            end_stream=True,
        )
        sock.sendall(conn.data_to_send())
        for _ in range(64):
            data = sock.recv(65536)
            if not data:
                return False
            for event in conn.receive_data(data):
                if isinstance(event, h2.events.ResponseReceived):
                    return True
                if isinstance(event, (h2.events.StreamReset, h2.events.ConnectionTerminated)):
                    return False
            pending = conn.data_to_send()
            if pending:
                sock.sendall(pending)
    return False
