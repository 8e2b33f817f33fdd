"""One measured oha run against an already started server: the seam the runner and the gate share.

Rules of this module:
- ``measure(srv, route, concurrency, duration)`` is the whole API: it needs only ``srv.url`` and
  ``srv.sample()`` (a ``servers`` handle), runs oha once, and returns a frozen ``LoadRun``. It never starts
  or stops a server and never writes results; callers do.
- oha's CPU time comes from the kernel (``os.wait4`` rusage of the oha process), not from sampling, so it is
  exact; the server's CPU seconds and peak RSS come from sampling its process tree every ``sample_interval``.
- A run is **generator-bound** when oha used at least ``GENERATOR_BOUND_UTIL`` of the CPUs it may run on:
  then the RPS measures oha's ceiling as much as the server's.
- Every wait has a deadline; an oha that overstays is killed by PID (it is our own child: ``generator.py``).
"""

from __future__ import annotations

import tempfile
import time
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Mapping, Protocol, Sequence

from ..plan import RouteSpec
from .generator import run_pinned
from .oha import OhaError, OhaResult, build_argv, find_oha, parse_json
from .pinning import available_cpus

__all__ = [
    "LoadRun",
    "RouteCheckError",
    "measure",
    "check_route",
    "is_generator_bound",
    "run_pinned",
    "server_record",
    "ServerSampler",
    "GENERATOR_BOUND_UTIL",
]

# oha is "the saturated side" when it used this share of its CPUs' time or more.
GENERATOR_BOUND_UTIL = 0.90


class ServerHandle(Protocol):
    """What ``measure`` needs from a started server (``servers.start_server`` returns one)."""

    url: str

    def sample(self) -> Any: ...


class RouteCheckError(RuntimeError):
    """The route does not answer correctly, so loading it would measure nothing useful."""


def is_generator_bound(
    oha_cpu_seconds: float, wall_seconds: float, cpus: int, threshold: float = GENERATOR_BOUND_UTIL
) -> bool:
    """True when oha's CPU time is at least ``threshold`` of ``cpus`` × wall time."""
    if wall_seconds <= 0 or cpus < 1:
        return False
    return oha_cpu_seconds / (wall_seconds * cpus) >= threshold


@dataclass(frozen=True)
class LoadRun:
    """One measured run: oha's counts and latencies plus both sides' resource use."""

    route: str
    method: str
    path: str
    concurrency: int
    http2: bool
    result: OhaResult
    wall: float  # seconds oha ran, start to exit
    server_peak_rss: int  # bytes, whole tree
    server_cpu_seconds: float
    server_processes: int
    oha_cpu_seconds: float
    oha_cpus: tuple[int, ...] | None
    server_cpus: tuple[int, ...] | None = None
    h2_parallel: int = 1
    duration: float | None = None  # planned, seconds
    requests: int | None = None  # planned (fixed-count runs)
    oha_argv: tuple[str, ...] = ()
    started_at: str = ""
    extra: Mapping[str, Any] = field(default_factory=dict)

    @property
    def rps(self) -> float:
        return self.result.rps

    @property
    def oha_util(self) -> float:
        """oha's CPU time over its CPUs' wall time (1.0 = every CPU it may use was busy)."""
        cpus = len(self.oha_cpus) if self.oha_cpus else len(available_cpus())
        return self.oha_cpu_seconds / (self.wall * cpus) if self.wall > 0 else 0.0

    @property
    def server_util(self) -> float:
        cpus = len(self.server_cpus) if self.server_cpus else len(available_cpus())
        return self.server_cpu_seconds / (self.wall * cpus) if self.wall > 0 else 0.0

    @property
    def generator_bound(self) -> bool:
        cpus = len(self.oha_cpus) if self.oha_cpus else len(available_cpus())
        return is_generator_bound(self.oha_cpu_seconds, self.wall, cpus)

    def flags(self) -> list[str]:
        """Why this run should not be read as a clean number (empty when it is clean)."""
        out = []
        if self.result.all_failed:
            out.append("all-failed")
        if self.result.non_2xx:
            out.append("non-2xx")
        if self.result.errors:
            out.append("errors")
        if self.generator_bound:
            out.append("generator-bound")
        return out

    def to_dict(self) -> dict:
        """The run as the flat JSON record ``load.records.results`` stores (latencies in milliseconds)."""
        r = self.result

        def ms(value: float | None) -> float | None:
            return round(value * 1000, 4) if value is not None else None

        return {
            "route": self.route,
            "http_method": self.method,
            "path": self.path,
            "concurrency": self.concurrency,
            "http2": self.http2,
            "h2_parallel": self.h2_parallel,
            "duration": self.duration,
            "requests_planned": self.requests,
            "started_at": self.started_at,
            "elapsed": round(r.elapsed, 6),
            "wall": round(self.wall, 6),
            "ok": r.ok,
            "non_2xx": dict(r.non_2xx),
            "errors": dict(r.errors),
            "aborted": r.aborted,
            "total": r.total,
            "rps": round(r.rps, 3),
            "latency_ms": {
                "avg": ms(r.latency_avg),
                "p50": ms(r.latency_p50),
                "p99": ms(r.latency_p99),
                "max": ms(r.latency_max),
            },
            "bytes_total": r.bytes_total,
            "server": server_record(
                self.server_peak_rss, self.server_cpu_seconds, self.server_processes, self.server_util, self.server_cpus
            ),
            "oha": {
                "cpu_seconds": round(self.oha_cpu_seconds, 4),
                "util": round(self.oha_util, 4),
                "cpus": list(self.oha_cpus) if self.oha_cpus else None,
                "argv": list(self.oha_argv[1:]),  # without the binary's path
            },
            "generator_bound": self.generator_bound,
            "flags": self.flags(),
            **dict(self.extra),
        }


def server_record(peak_rss: int, cpu_seconds: float, processes: int, util: float, cpus: Sequence[int] | None) -> dict:
    """The ``server`` part of a run's record (oha runs and WebSocket broadcast runs alike)."""
    return {
        "peak_rss": peak_rss,
        "cpu_seconds": round(cpu_seconds, 4),
        "processes": processes,
        "util": round(util, 4),
        "cpus": list(cpus) if cpus else None,
    }


def _url(srv: ServerHandle, path: str) -> str:
    return srv.url.rstrip("/") + path


def _oha_budget(duration: float | None, requests: int | None, request_timeout: float) -> float:
    """Seconds oha may take before it is killed. Generous: fixed-count runs at a few thousand RPS on a slow
    server can take minutes."""
    if duration is not None:
        return duration + request_timeout + 30.0
    return max(120.0, (requests or 0) / 200.0 + request_timeout)


class ServerSampler:
    """The server tree's resources over a run: the first sample, the last good one, and the peaks."""

    def __init__(self, srv: ServerHandle) -> None:
        self.srv = srv
        self.first = self.last = srv.sample()
        self.peak_rss, self.peak_processes = self.first.rss_bytes, self.first.processes

    def tick(self) -> None:
        try:
            sample = self.srv.sample()
        except Exception:  # the server may be between workers; keep the last good sample
            return
        self.last = sample
        self.peak_rss = max(self.peak_rss, sample.rss_bytes)
        self.peak_processes = max(self.peak_processes, sample.processes)

    @property
    def cpu_seconds(self) -> float:
        return max(0.0, self.last.cpu_seconds - self.first.cpu_seconds)


def measure(
    srv: ServerHandle,
    route: RouteSpec,
    concurrency: int,
    duration: float | None = None,
    *,
    requests: int | None = None,
    http2: bool = False,
    h2_parallel: int = 1,
    oha_cpus: Sequence[int] | None = None,
    server_cpus: Sequence[int] | None = None,
    oha: Path | str | None = None,
    request_timeout: float = 10.0,
    workdir: Path | None = None,
    sample_interval: float = 0.2,
) -> LoadRun:
    """Load ``srv`` on ``route`` with ``concurrency`` connections for ``duration`` s (or ``requests``).

    ``oha_cpus`` pins oha (its worker threads = that many CPUs); ``server_cpus`` is only recorded (the
    server was pinned when started). Raises OhaError if oha fails to run or prints no JSON; a run where
    every request failed is returned, with ``result.all_failed`` set, for the caller to refuse.
    """
    route = route.resolve()
    argv = build_argv(
        Path(oha) if oha else find_oha(),
        _url(srv, route.path),
        concurrency=concurrency,
        duration=duration,
        requests=requests,
        http2=http2,
        h2_parallel=h2_parallel,
        method=route.method,
        body_file=route.body_file(workdir or Path(tempfile.gettempdir()) / "gatecheck-bodies"),
        worker_threads=len(oha_cpus) if oha_cpus else len(available_cpus()),
        request_timeout=request_timeout,
    )
    budget = _oha_budget(duration, requests, request_timeout)
    result, wall, oha_cpu, sampler, started_at = _run_oha(srv, argv, oha_cpus, budget, sample_interval)
    return LoadRun(
        route=route.name,
        method=route.method,
        path=route.path,
        concurrency=concurrency,
        http2=http2,
        h2_parallel=h2_parallel,
        result=result,
        wall=wall,
        server_peak_rss=sampler.peak_rss,
        server_cpu_seconds=sampler.cpu_seconds,
        server_processes=sampler.peak_processes,
        oha_cpu_seconds=oha_cpu,
        oha_cpus=tuple(oha_cpus) if oha_cpus else None,
        server_cpus=tuple(server_cpus) if server_cpus else None,
        duration=duration,
        requests=requests,
        oha_argv=tuple(argv),
        started_at=started_at,
    )


def _run_oha(
    srv: ServerHandle, argv: Sequence[str], oha_cpus: Sequence[int] | None, budget: float, sample_interval: float
) -> tuple:
    """Run oha with the server sampled meanwhile: (its parsed result, wall seconds, oha's CPU seconds, the
    sampler, when it started). Raises OhaError when oha fails or prints no JSON."""
    sampler = ServerSampler(srv)
    started_at = datetime.now(timezone.utc).isoformat(timespec="seconds")
    stdout, stderr, code, wall, oha_cpu = run_pinned(
        argv, oha_cpus, time.monotonic() + budget, sampler.tick, sample_interval
    )
    sampler.tick()
    if code != 0 or not stdout.strip():
        raise OhaError(
            f"oha exited {code} without a result: {stderr.strip()[-800:] or '(no stderr)'}\n  command: {' '.join(argv)}"
        )
    return parse_json(stdout), wall, oha_cpu, sampler, started_at


def check_route(
    srv: ServerHandle,
    route: RouteSpec,
    *,
    http2: bool = False,
    oha: Path | str | None = None,
    workdir: Path | None = None,
    count: int = 3,
) -> None:
    """Send ``count`` requests one by one; raise RouteCheckError unless all got the expected status and size.

    Over HTTP/1 each request has its own connection: the check asks whether the route is served, not
    whether the server keeps connections (uWSGI's HTTP router closes each one after its response without
    saying "close", and oha's next request on it fails as "connection closed before message completed")."""
    route = route.resolve()
    binary = Path(oha) if oha else find_oha()
    body_dir = workdir or Path(tempfile.gettempdir()) / "gatecheck-bodies"
    argv = build_argv(
        binary,
        _url(srv, route.path),
        concurrency=1,
        requests=count,
        http2=http2,
        method=route.method,
        body_file=route.body_file(body_dir),
        worker_threads=1,
        request_timeout=10.0,
        keepalive=False,
    )
    stdout, stderr, code, _wall, _cpu = run_pinned(argv, None, time.monotonic() + 60.0)
    if code != 0 or not stdout.strip():
        raise OhaError(f"oha exited {code} during the route check: {stderr.strip()[-800:]}")
    result = parse_json(stdout)
    where = f"{route.method} {route.path}"
    if result.errors:
        raise RouteCheckError(
            f"{where}: requests failed before any load ({_fmt(result.errors)}); is the server up and the route served?"
        )
    wanted = str(route.expect_status)
    if result.non_2xx or result.ok != count and wanted.startswith("2"):
        raise RouteCheckError(
            f"{where}: expected status {wanted} for all {count} requests, got "
            f"{_fmt(result.non_2xx) or 'other 2xx'}; does the fixture app serve this route?"
        )
    if route.expect_size is not None and result.size_per_request != route.expect_size:
        raise RouteCheckError(
            f"{where}: expected a {route.expect_size}-byte body, got {result.size_per_request} bytes per response"
        )


def _fmt(counts: Mapping[str, int]) -> str:
    return ", ".join(f"{k}: {v}" for k, v in sorted(counts.items()))
