"""A load generator's process (oha, or the WebSocket broadcast client): started pinned to its CPUs, polled to a
deadline, killed by PID when anything goes wrong (it is our own child, never left running), its CPU time from the
kernel (``os.wait4`` rusage). ``measure`` re-exports :func:`run_pinned`."""

from __future__ import annotations

import os
import signal
import subprocess
import tempfile
import time
from typing import Sequence

from .oha import OhaError

__all__ = ["run_pinned"]


def run_pinned(
    argv: Sequence[str],
    cpus: Sequence[int] | None,
    deadline: float,
    on_tick=None,
    tick: float = 0.2,
    error: type = OhaError,
    name: str = "oha",
) -> tuple[str, str, int, float, float]:
    """Run a load generator (oha, or the WebSocket broadcast client) on ``cpus``; return (stdout, stderr, exit
    code, wall seconds, CPU seconds). ``on_tick`` runs while it runs; past ``deadline`` it is killed and
    ``error`` raised."""
    cpu_set = set(cpus) if cpus else None
    stops = {signal.SIGINT, signal.SIGTERM}

    def pin() -> None:  # runs in the child before exec
        signal.pthread_sigmask(signal.SIG_UNBLOCK, stops)
        if cpu_set:
            os.sched_setaffinity(0, cpu_set)

    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        started = time.monotonic()
        # Ctrl-C is held back while the generator is being spawned: an interrupt inside Popen would lose its
        # pid, and it would outlive us unreaped. Released below, inside the try whose finally kills oha.
        mask = signal.pthread_sigmask(signal.SIG_BLOCK, stops)
        try:
            proc = subprocess.Popen(list(argv), stdout=out, stderr=err, stdin=subprocess.DEVNULL, preexec_fn=pin)
        except BaseException:
            signal.pthread_sigmask(signal.SIG_SETMASK, mask)
            raise
        reaped = False
        try:
            signal.pthread_sigmask(signal.SIG_SETMASK, mask)
            status, rusage = _wait_reaped(proc, argv, started, deadline, on_tick, tick, error, name)
            reaped = True
        finally:
            if not reaped:  # an error, the deadline or Ctrl-C: never leave oha running
                try:
                    os.kill(proc.pid, signal.SIGKILL)
                    os.waitpid(proc.pid, 0)
                except (ProcessLookupError, ChildProcessError):
                    pass
                proc.returncode = -9
        wall = time.monotonic() - started
        code = os.waitstatus_to_exitcode(status) if hasattr(os, "waitstatus_to_exitcode") else (status >> 8)
        proc.returncode = code  # reaped by wait4; keep Popen from waiting again
        out.seek(0)
        err.seek(0)
        cpu = rusage.ru_utime + rusage.ru_stime
        return out.read().decode("utf-8", "replace"), err.read().decode("utf-8", "replace"), code, wall, cpu


def _wait_reaped(
    proc: subprocess.Popen,
    argv: Sequence[str],
    started: float,
    deadline: float,
    on_tick,
    tick: float,
    error: type,
    name: str,
) -> tuple:
    """Poll the generator until it has ended and is reaped: (its wait status, its rusage). ``on_tick`` runs every
    ``tick`` seconds meanwhile; past ``deadline`` ``error`` is raised (the caller kills it)."""
    next_tick = started
    while True:
        pid, status, rusage = os.wait4(proc.pid, os.WNOHANG)
        if pid:  # wait4 with WNOHANG returns status 0 while oha runs: only a pid says it ended
            return status, rusage
        now = time.monotonic()
        if now > deadline:
            raise error(f"{name} did not finish before its deadline; killed it: {' '.join(argv)}")
        if on_tick and now >= next_tick:
            on_tick()
            next_tick = now + tick
        time.sleep(0.02)
