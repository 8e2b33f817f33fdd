"""Loopback ports for servers: a free one from the kernel, and whether one is free now.

A port the kernel gives may be taken by another process before the server binds it; the launcher retries
on a bind failure (``launcher.start_server``), so nothing here holds a port.
"""

from __future__ import annotations

import socket

__all__ = ["free_port", "port_is_free"]


def port_is_free(host: str, port: int) -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        try:
            sock.bind((host, port))
        except OSError:
            return False
    return True


def free_port(host: str = "127.0.0.1") -> int:
    """A port the kernel considers free right now (a race with other processes is possible; the
    launcher retries on a bind failure)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind((host, 0))
        return sock.getsockname()[1]
