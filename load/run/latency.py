"""The gate's low-concurrency latency run: one request at a time, BASE and HEAD interleaved request by request.

Rules of this module:

1. **Interleaved per request.** Both servers of a pair are up; one connection to each; requests go
   BASE, HEAD, HEAD, BASE, BASE, HEAD, ... (ABBA blocks, so neither side is always first), one at a
   time. On a shared machine a second of heavy load raises latency on both sides alike, and the
   ratio of the two sides' means cancels it; runs seconds apart (one per side) do not: measured on
   this project's busy machine, one-side-then-the-other runs of 1 s gave HEAD/BASE mean-latency
   ratios from 0.71 to 2.4 for the same treatment (benchmarks/gate/README.md, fourth experiment).
2. **One at a time**: the servers are never saturated, so every microsecond a request waits (a sleep,
   a lost ``TCP_NODELAY``, a lock held across an await) is latency, whether or not it costs CPU.
3. HTTP/1.1 keep-alive with Content-Length or chunked answers, which is what the fixture routes send;
   every read has a deadline and a size cap. A failed request (refused, reset, timeout, status not
   2xx, short body) counts as an error and its connection is reopened; latencies count only answers.
4. The client runs in the gate's process, pinned for the run to the CPUs oha would use.
"""

from __future__ import annotations

import os
import socket
import statistics
import time
from typing import Any, Dict, List, Optional, Sequence, Tuple
from urllib.parse import urlsplit

__all__ = ["interleaved_latency", "request_bytes", "summarise"]

_MAX_RESPONSE = 8 * 1024 * 1024
_TIMEOUT = 5.0


def request_bytes(route: Any, host: str) -> bytes:
    """The raw HTTP/1.1 request for ``route`` (a :class:`load.plan.routes.RouteSpec`), keep-alive."""
    body = b""
    if route.body_size:
        pattern = b"gatecheck-body-0123456789abcdef\n"  # the bytes RouteSpec.body_file writes for oha
        body = (pattern * (route.body_size // len(pattern) + 1))[: route.body_size]
    head = f"{route.method} {route.path} HTTP/1.1\r\nHost: {host}\r\nUser-Agent: gatecheck-gate\r\n"
    if route.method != "GET":
        head += f"Content-Length: {len(body)}\r\n"
    return head.encode("ascii") + b"\r\n" + body


def _read_response(sock: socket.socket, deadline: float) -> int:
    """Read one response; return its status. Raises OSError on a timeout, a close or an oversized answer."""
    buf = b""
    while b"\r\n\r\n" not in buf:
        buf += _recv(sock, deadline, len(buf))
    head, _, rest = buf.partition(b"\r\n\r\n")
    lines = head.split(b"\r\n")
    status = int(lines[0].split()[1])
    fields = {k.strip().lower(): v.strip() for k, _, v in (line.partition(b":") for line in lines[1:])}
    if b"content-length" in fields:
        need = int(fields[b"content-length"])
        while len(rest) < need:
            rest += _recv(sock, deadline, len(rest))
    elif fields.get(b"transfer-encoding", b"").lower() == b"chunked":
        while not rest.endswith(b"0\r\n\r\n"):  # the fixture bodies hold no CR or LF
            rest += _recv(sock, deadline, len(rest))
    return status


def _recv(sock: socket.socket, deadline: float, have: int) -> bytes:
    left = deadline - time.monotonic()
    if left <= 0 or have > _MAX_RESPONSE:
        raise OSError("no complete answer in time" if left <= 0 else "answer too large")
    sock.settimeout(left)
    data = sock.recv(65536)
    if not data:
        raise OSError("connection closed")
    return data


def _connect(url: str) -> Tuple[socket.socket, str]:
    parts = urlsplit(url)
    sock = socket.create_connection((parts.hostname, parts.port), timeout=_TIMEOUT)
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    return sock, parts.netloc


def interleaved_latency(
    urls: Dict[str, str], route: Any, duration: float, cpus: Optional[Sequence[int]] = None
) -> Dict[str, Dict[str, Any]]:
    """Alternate single requests between the servers of ``urls`` (side -> base URL) for ``duration``
    seconds (rule 1) and return :func:`summarise` per side."""
    sides = list(urls)
    conns: Dict[str, Optional[Tuple[socket.socket, bytes]]] = {}
    lat: Dict[str, List[float]] = {s: [] for s in sides}
    errors: Dict[str, int] = {s: 0 for s in sides}
    statuses: Dict[str, Dict[int, int]] = {s: {} for s in sides}
    old = os.sched_getaffinity(0) if cpus and hasattr(os, "sched_setaffinity") else None
    if old is not None:
        os.sched_setaffinity(0, set(cpus))
    try:
        end = time.monotonic() + duration
        block = sides + sides[::-1]  # ABBA
        while time.monotonic() < end:
            for side in block:
                _one(side, urls[side], route, conns, lat, errors, statuses)
    finally:
        for c in conns.values():
            if c is not None:
                c[0].close()
        if old is not None:
            os.sched_setaffinity(0, old)
    return {s: summarise(lat[s], errors[s], statuses[s]) for s in sides}


def _one(
    side: str,
    url: str,
    route: Any,
    conns: Dict[str, Any],
    lat: Dict[str, List[float]],
    errors: Dict[str, int],
    statuses: Dict[str, Dict[int, int]],
) -> None:
    """One request on ``side``'s connection (opened, or reopened after a failure, outside the timing)."""
    try:
        if conns.get(side) is None:
            sock, host = _connect(url)
            conns[side] = (sock, request_bytes(route, host))
        sock, raw = conns[side]
        t0 = time.perf_counter()
        sock.sendall(raw)
        status = _read_response(sock, time.monotonic() + _TIMEOUT)
        took = time.perf_counter() - t0
    except (OSError, ValueError, IndexError):
        errors[side] += 1
        if conns.get(side) is not None:
            conns[side][0].close()
        conns[side] = None
        return
    if 200 <= status < 300:
        lat[side].append(took)
    else:
        statuses[side][status] = statuses[side].get(status, 0) + 1


def summarise(latencies: Sequence[float], errors: int = 0, non_2xx: Optional[Dict[int, int]] = None) -> Dict[str, Any]:
    """The record the gate keeps per side (latencies in ms): count, errors, mean, median, p99."""
    ms = lambda v: round(v * 1000, 5)
    xs = sorted(latencies)
    out: Dict[str, Any] = {
        "concurrency": 1,
        "interleaved": True,
        "ok": len(xs),
        "errors": {"failed": errors} if errors else {},
        "non_2xx": {str(k): v for k, v in (non_2xx or {}).items()},
    }
    if xs:
        out.update(
            avg_ms=ms(statistics.fmean(xs)),
            p50_ms=ms(statistics.median(xs)),
            p99_ms=ms(xs[min(len(xs) - 1, int(0.99 * len(xs)))]),
        )
    return out
