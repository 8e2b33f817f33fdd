"""The machine a run is measured on: its identity, how busy it was and how fast it ran fixed work just before.

Rules of this module:
- Each function reads the machine once and returns a plain dict for the records (``environment`` once per
  session, ``host_load`` and ``host_speed`` before each measured run); nothing here writes a file.
- What is read is shown beside the numbers, never used to correct them (``host_speed`` says why).
"""

from __future__ import annotations

import os
import platform
import socket
import statistics
import sys
import time
from typing import Optional, Sequence

__all__ = ["environment", "host_load", "host_speed"]


def _cpu_model() -> str:
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as fh:
            for line in fh:
                if line.lower().startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine() or "unknown"


def _os_name() -> str:
    try:
        with open("/etc/os-release", encoding="utf-8") as fh:
            for line in fh:
                if line.startswith("PRETTY_NAME="):
                    return line.split("=", 1)[1].strip().strip('"')
    except OSError:
        pass
    return platform.system()


def environment() -> dict:
    """The machine a run was measured on (the same for every record of a session)."""
    try:
        available = len(os.sched_getaffinity(0))
    except AttributeError:  # pragma: no cover
        available = os.cpu_count() or 1
    return {
        "cpu_model": _cpu_model(),
        "cpu_count": os.cpu_count() or 1,
        "cpus_available": available,
        "kernel": platform.release(),
        "os": _os_name(),
        "hostname": socket.gethostname(),
        "harness_python": ".".join(map(str, sys.version_info[:3])),
    }


def host_load() -> dict:
    """How busy the machine was just before a run: 1-minute load average and CPU pressure (PSI, % of
    the last 10 s some task waited for a CPU). On a shared machine this explains outliers."""
    load: dict = {}
    try:
        load["loadavg1"] = round(os.getloadavg()[0], 2)
    except OSError:  # pragma: no cover
        pass
    try:
        with open("/proc/pressure/cpu", encoding="utf-8") as fh:
            first = fh.readline().split()
        load["cpu_pressure_avg10"] = float(dict(kv.split("=") for kv in first[1:])["avg10"])
    except (OSError, KeyError, ValueError, IndexError):
        pass
    return load


#: the fixed work of :func:`host_speed`: pure interpreter work, about 10 ms on this project's machine
_PROBE_LOOPS = 100_000


def _probe_once() -> float:
    start = time.perf_counter()
    total = 0
    for i in range(_PROBE_LOOPS):
        total += i * i % 7
    return (time.perf_counter() - start) * 1000.0


def host_speed(cpus: Optional[Sequence[int]] = None, repeats: int = 9) -> dict:
    """How fast the machine ran fixed work just before a run: the median and the least of ``repeats``
    timings (ms) of the same interpreter loop, on ``cpus`` (the server's, idle then). The server of a
    CPU-bound row uses its core fully in every run, so its RPS moves with the core's speed; when the
    host under a VM slows down (another tenant, a lower clock), this moves with it: the report shows its
    spread over a row's repeats beside the row's (``load.report.rows.Row.host_cv``). A timing of some 10 ms
    before a 10 s run does not say the speed over the run: scaling each repeat's RPS by it did not narrow
    the spread (measured: benchmarks/load/probe-*), so it is shown, not used to correct."""
    previous = None
    if cpus and hasattr(os, "sched_setaffinity"):
        try:
            previous = os.sched_getaffinity(0)
            os.sched_setaffinity(0, set(cpus))  # this thread only
        except OSError:
            previous = None
    try:
        times = sorted(_probe_once() for _ in range(repeats))
    finally:
        if previous is not None:
            os.sched_setaffinity(0, previous)
    return {"probe_ms": round(statistics.median(times), 4), "probe_ms_min": round(times[0], 4)}
