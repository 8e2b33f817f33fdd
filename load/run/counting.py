"""Counting a server's instructions per request: its whole process tree under valgrind, requests interleaved.

Rules of this module:

1. **Counted, not timed.** A counted server runs under valgrind's callgrind with every child traced
   (``--trace-children=yes``): Python and native code, every thread and process of the tree. It starts
   uninstrumented (``--instr-atstart=no``), so start-up and warm-up cost nothing to count; counting is
   switched on, zeroed and dumped through vgdb around the measured requests only. What a dump holds is
   the instructions (``Ir``) each process executed between the zero and the dump.
2. **The same requests, the same window.** The servers being compared are all up and counting over one
   window, and the client alternates single requests between them in ABBA order on one keep-alive
   connection each: whatever a server does per second of wall time (a timer, a date header) is the same on
   every side, and each server rests while another serves, so each request starts from the same idle state.
   Every request is the same bytes (the route's, with one fixed Host header), the same number per side.
3. ``PYTHONHASHSEED`` is fixed (:data:`COUNT_ENV`), so a dict's or set's order cannot differ between runs.
4. Every vgdb call, connect and read has a deadline; a failure is a :class:`CountError` with its reason,
   never a number. Where valgrind or vgdb is missing, :func:`valgrind_missing` says so in one line.
"""

from __future__ import annotations

import os
import re
import shutil
import socket
import subprocess
import time
from pathlib import Path
from typing import Any, Dict, Iterable, List, Mapping, Optional, Sequence

from .latency import _read_response

__all__ = [
    "COUNT_ENV",
    "CountError",
    "valgrind_missing",
    "callgrind_wrap",
    "parse_totals",
    "read_dump",
    "counting_pids",
    "vgdb",
    "counted_requests",
    "count_batch",
    "count_batches",
    "count_program",
]

#: The environment a counted server gets on top of its own.
COUNT_ENV = {"PYTHONHASHSEED": "0"}
_HOST = "gatecheck"  # one Host header for every side: the request bytes are the same whatever the port
_VGDB_TIMEOUT = 60.0
_READ_TIMEOUT = 60.0  # a request under callgrind takes milliseconds; a busy machine can stretch it a lot


class CountError(RuntimeError):
    """Instructions could not be counted (valgrind or vgdb failed, a dump is missing, a request failed)."""


def valgrind_missing() -> Optional[str]:
    """None when valgrind (with callgrind) and vgdb can run here; otherwise why not, in one line."""
    for tool in ("valgrind", "vgdb"):
        if shutil.which(tool) is None:
            return f"{tool} not found on PATH (Debian/Ubuntu: apt-get install valgrind)"
    try:
        out = subprocess.run(["valgrind", "--tool=callgrind", "--version"], capture_output=True, text=True, timeout=20)
    except (OSError, subprocess.SubprocessError) as exc:
        return f"valgrind does not run: {exc}"
    if out.returncode != 0:
        return f"valgrind --tool=callgrind does not run: {(out.stderr or out.stdout).strip()[-200:]}"
    return None


def callgrind_wrap(out_dir: Path, label: str) -> List[str]:
    """The command a counted server runs under: callgrind, uninstrumented until told, every child traced,
    each process's dumps in ``out_dir/<label>.callgrind.<pid>.<n>`` and valgrind's own messages beside. The paths
    are absolute: the server runs in its staging folder, where a relative ``--out`` names nothing."""
    out_dir = Path(out_dir).absolute()
    out_dir.mkdir(parents=True, exist_ok=True)
    return [
        "valgrind",
        "--tool=callgrind",
        "--instr-atstart=no",
        "--trace-children=yes",
        "--vgdb=yes",
        f"--callgrind-out-file={out_dir / label}.callgrind.%p",
        f"--log-file={out_dir / label}.valgrind.%p.log",
    ]


_EVENTS = re.compile(r"^events:\s*(.+)$", re.M)
_TOTALS = re.compile(r"^(?:summary|totals):\s*(.+)$", re.M)


def parse_totals(text: str) -> Dict[str, int]:
    """Event name -> total from a callgrind (or cachegrind) output file: its ``events:`` line and its
    ``summary:`` (or ``totals:``) line. Raises CountError when either is missing or they disagree."""
    events, totals = _EVENTS.search(text), _TOTALS.search(text)
    if not events or not totals:
        raise CountError("not a callgrind/cachegrind output: no 'events:' or 'summary:' line")
    names, values = events.group(1).split(), totals.group(1).split()
    if len(values) > len(names) or not values:
        raise CountError(f"summary has {len(values)} values for {len(names)} events")
    try:
        counts = [int(v) for v in values]
    except ValueError as exc:
        raise CountError(f"summary is not numbers: {totals.group(1)!r}") from exc
    return dict(zip(names, counts + [0] * (len(names) - len(counts))))


def read_dump(out_dir: Path, label: str, pid: int, part: int, timeout: float = 10.0) -> int:
    """Instructions of ``pid`` in its ``part``-th dump (callgrind numbers dumps from 1 per process)."""
    path = out_dir / f"{label}.callgrind.{pid}.{part}"
    deadline = time.monotonic() + timeout
    while True:  # the file is complete once its summary line is written, which vgdb waits for
        try:
            return parse_totals(path.read_text(encoding="utf-8", errors="replace"))["Ir"]
        except (OSError, CountError, KeyError) as exc:
            if time.monotonic() > deadline:
                raise CountError(f"no complete dump {path.name}: {exc}") from None
            time.sleep(0.05)


def counting_pids(pid: int) -> List[int]:
    """``pid`` and its descendants that run under callgrind (the processes vgdb can reach)."""
    import psutil

    try:
        procs = [psutil.Process(pid)] + psutil.Process(pid).children(recursive=True)
    except psutil.Error as exc:
        raise CountError(f"the counted server {pid} is gone: {exc}") from None
    out = []
    for p in procs:
        try:
            if "callgrind" in os.path.basename(os.readlink(f"/proc/{p.pid}/exe")):
                out.append(p.pid)
        except OSError:
            continue
    if not out:
        raise CountError(f"no process of the tree of {pid} runs under callgrind")
    return out


def vgdb(pids: Iterable[int], command: str, timeout: float = _VGDB_TIMEOUT) -> None:
    """Send a callgrind monitor command (``instrumentation on``, ``zero``, ``dump``) to every process at once;
    returns when each has carried it out. vgdb wakes a process blocked in a system call with ptrace, so it
    needs the right to trace it (root, or ``kernel.yama.ptrace_scope`` 0)."""
    procs = {
        pid: subprocess.Popen(
            ["vgdb", f"--pid={pid}", *command.split()], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE
        )
        for pid in pids
    }
    deadline = time.monotonic() + timeout
    failed = []
    for pid, proc in procs.items():
        try:
            _, err = proc.communicate(timeout=max(0.1, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.communicate()
            failed.append(f"{pid}: no answer in {timeout:.0f} s (may vgdb ptrace it?)")
            continue
        if proc.returncode != 0:
            failed.append(f"{pid}: {err.decode(errors='replace').strip().splitlines()[-1:]}")
    if failed:
        raise CountError(f"vgdb {command!r} failed for " + "; ".join(failed))


def _request(route: Any) -> bytes:
    from .latency import request_bytes

    return request_bytes(route, _HOST)


class _Conn:
    """One keep-alive connection to one server: the same request, one at a time, every read bounded."""

    def __init__(self, url: str) -> None:
        from urllib.parse import urlsplit

        parts = urlsplit(url)
        self.sock = socket.create_connection((parts.hostname, parts.port), timeout=_READ_TIMEOUT)
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

    def one(self, raw: bytes) -> int:
        self.sock.sendall(raw)
        return _read_response(self.sock, time.monotonic() + _READ_TIMEOUT)

    def close(self) -> None:
        self.sock.close()


def counted_requests(conns: Mapping[str, _Conn], raw: bytes, per_side: int, pause: float = 0.0) -> Dict[str, int]:
    """``per_side`` requests on each connection, alternating ABBA, ``pause`` s after each answer; side -> how
    many answered 2xx."""
    sides = list(conns)
    ok = {s: 0 for s in sides}
    for i in range(per_side):
        for side in sides if i % 2 == 0 else sides[::-1]:  # A B, B A, A B, ...
            if 200 <= conns[side].one(raw) < 300:
                ok[side] += 1
            if pause:
                time.sleep(pause)
    return ok


def count_batches(
    servers: Mapping[str, Any],
    route: Any,
    *,
    requests: int,
    warmup: int,
    out_dir: Path,
    labels: Mapping[str, str],
    orders: Sequence[Sequence[str]],
    pause: float = 0.0,
) -> List[Dict[str, Dict[str, Any]]]:
    """Counted batches over servers already started under :func:`callgrind_wrap` (side -> handle with ``url``
    and ``pid``; ``labels[side]`` the label it was wrapped with): ``warmup`` uncounted requests per side, then
    counting switched on, and per batch (``orders[i]``: which side the client asks first) a zero, ``requests``
    per side interleaved, and a dump. One connection per side throughout.

    Returns one dict per batch: side -> ``{"instructions", "requests", "instructions_per_request", "processes",
    "seconds"}``, ``processes`` each counted pid's instructions. CountError when a request fails or a dump is
    missing (an OSError of the sockets becomes one too)."""
    raw = _request(route)
    conns: Dict[str, _Conn] = {}
    out: List[Dict[str, Dict[str, Any]]] = []
    try:
        for side, srv in servers.items():
            conns[side] = _Conn(srv.url)
        if warmup:
            counted_requests(conns, raw, warmup)
        pids = {side: counting_pids(srv.pid) for side, srv in servers.items()}
        every = [p for ps in pids.values() for p in ps]
        vgdb(every, "instrumentation on")
        for part, order in enumerate(orders, start=1):
            vgdb(every, "zero")
            t0 = time.monotonic()
            ok = counted_requests({side: conns[side] for side in order}, raw, requests, pause)
            seconds = time.monotonic() - t0
            vgdb(every, "dump")
            bad = {s: n for s, n in ok.items() if n != requests}
            if bad:
                raise CountError(f"counted requests not all answered 2xx: {bad} of {requests} per side")
            out.append(
                {side: _side_counts(out_dir, labels[side], ps, part, requests, seconds) for side, ps in pids.items()}
            )
    except OSError as exc:
        raise CountError(f"a counted request failed: {exc}") from None
    finally:
        for c in conns.values():
            c.close()
    return out


def _side_counts(
    out_dir: Path, label: str, pids: Sequence[int], part: int, requests: int, seconds: float
) -> Dict[str, Any]:
    per = {str(p): read_dump(out_dir, label, p, part) for p in pids}
    total = sum(per.values())
    return {
        "instructions": total,
        "requests": requests,
        "instructions_per_request": total / requests,
        "processes": per,
        "seconds": round(seconds, 3),
    }


def count_batch(
    servers: Mapping[str, Any],
    route: Any,
    *,
    requests: int,
    warmup: int,
    out_dir: Path,
    labels: Mapping[str, str],
    pause: float = 0.0,
) -> Dict[str, Dict[str, Any]]:
    """One batch of :func:`count_batches`, the client asking the sides in the order ``servers`` has them."""
    return count_batches(
        servers,
        route,
        requests=requests,
        warmup=warmup,
        out_dir=out_dir,
        labels=labels,
        orders=[list(servers)],
        pause=pause,
    )[0]


def count_program(
    python: str, code: str, args: Sequence[str], out_dir: Path, label: str, timeout: float = 300.0
) -> int:
    """Instructions of ``python -c code *args`` under callgrind, start to exit (for sizing a counted loop:
    two runs of one program that differ only in an argument differ only by what that argument does)."""
    out_dir.mkdir(parents=True, exist_ok=True)
    out = out_dir / f"{label}.callgrind.out"
    argv = [
        "valgrind",
        "--tool=callgrind",
        f"--callgrind-out-file={out}",
        f"--log-file={out}.log",
        python,
        "-c",
        code,
        *args,
    ]
    try:
        proc = subprocess.run(argv, env={**os.environ, **COUNT_ENV}, capture_output=True, timeout=timeout)
    except (OSError, subprocess.SubprocessError) as exc:
        raise CountError(f"counting {label} failed: {exc}") from None
    if proc.returncode != 0:
        raise CountError(f"counting {label} failed: {proc.stderr.decode(errors='replace').strip()[-300:]}")
    return parse_totals(out.read_text(encoding="utf-8", errors="replace"))["Ir"]
