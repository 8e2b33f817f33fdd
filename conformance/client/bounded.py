"""The one bounded read: every byte a check reads from a server goes through here, with a deadline and a cap.

A hostile or broken server can go silent, trickle one byte a second, or send an endless header or body.
No check may hang on it or buffer it without limit, so reads are never written as a bare ``recv`` loop:

    buf = bytearray()
    end = read_until(sock, buf, lambda b: b"\\r\\n\\r\\n" in b, deadline=time.monotonic() + 3, cap=1 << 20)
    if end != DONE: ...   # CLOSED, RESET, TIMEOUT or OVERFLOW: what the server did instead

Rules of this module:

1. Every read has a deadline (``time.monotonic()`` seconds) and a cap (bytes in the buffer); passing the cap
   stops reading (``OVERFLOW``) with the bytes so far kept, so a failure message can show them.
2. The end of a read is data (one of :data:`ENDS`), never an exception: the caller judges what it means.
3. Only socket behaviour is handled here; parsing belongs to the protocol clients above.
"""

from __future__ import annotations

import socket
import ssl
import time
from typing import Callable

__all__ = ["DONE", "CLOSED", "RESET", "TIMEOUT", "OVERFLOW", "ENDS", "DEFAULT_CAP", "recv_once", "read_until"]

DONE, CLOSED, RESET, TIMEOUT, OVERFLOW = "done", "closed", "reset", "timeout", "overflow"
#: how a bounded read can end
ENDS = (DONE, CLOSED, RESET, TIMEOUT, OVERFLOW)

#: the cap when a caller names none: far above any response a check expects, far below harm
DEFAULT_CAP = 16 << 20

_CHUNK = 1 << 16


def recv_once(sock, buffer: bytearray, *, deadline: float, cap: int = DEFAULT_CAP) -> str | None:
    """One ``recv`` into ``buffer`` before ``deadline``; None when bytes arrived, else how the read ended."""
    if len(buffer) >= cap:
        return OVERFLOW
    remaining = deadline - time.monotonic()
    if remaining <= 0:
        return TIMEOUT
    try:
        sock.settimeout(remaining)
        chunk = sock.recv(min(_CHUNK, cap - len(buffer)))
    except (socket.timeout, ssl.SSLWantReadError):
        return TIMEOUT
    except (ConnectionResetError, ConnectionAbortedError, BrokenPipeError):
        return RESET
    except ssl.SSLError:
        return RESET
    if not chunk:
        return CLOSED
    buffer += chunk
    return None


def read_until(
    sock, buffer: bytearray, done: Callable[[bytearray], bool], *, deadline: float, cap: int = DEFAULT_CAP
) -> str:
    """Read into ``buffer`` until ``done(buffer)`` holds (``DONE``), or the server closes (``CLOSED``), resets
    (``RESET``), the deadline passes (``TIMEOUT``) or the buffer reaches ``cap`` bytes (``OVERFLOW``)."""
    while not done(buffer):
        end = recv_once(sock, buffer, deadline=deadline, cap=cap)
        if end is not None:
            return DONE if done(buffer) else end
    return DONE
