"""WebSocket broadcast load: the method of the seed's WebSocket table (benchmarks/ws/benchmark.py at 9a20b17).

Rules of this module:
- ``clients`` connections open on the fixture route ``/ws_broadcast``, which sends every message it receives
  to every open connection, the sender's included. When all are open they wait ``settle`` seconds (the seed's
  3 s); then each client sends ``messages`` messages (``msg00000``..., as bytes, the seed's) while it receives
  the ``messages × clients`` messages all clients send.
- The throughputs are the seed's formulas, summed over the clients: send = M / send time, receive = M·N /
  receive time, combined = M·(N+1) / the longer of the two. A row's number (``rps`` in the record, the
  column fidelity ranks by) is the combined throughput, in messages per second, as the seed's table orders.
- The client is its own process (``python -m gatecheck.load.run.wsclient``) on the load generator's CPUs, as
  oha is, with a deadline; it checks every message it receives (one of the messages sent, as bytes), that
  each client got exactly M·N, and, after the run, that each of the M messages reached each client N times
  (a duplicate cannot stand in for a lost message). A client that failed, a wrong or missing message, or a
  deadline passed is a :class:`BroadcastError`, never a number.
"""

from __future__ import annotations

import json
import sys
import time
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import Any, Mapping, Sequence

from ..plan import SETTLE

__all__ = ["BroadcastError", "BroadcastRun", "throughputs", "payloads", "broadcast", "check_broadcast"]


class BroadcastError(RuntimeError):
    """The broadcast run did not complete as the method requires; the message says what went wrong."""


def payloads(messages: int) -> list[bytes]:
    """The messages each client sends: ``msg`` + the index, zero-padded to the count's width (the seed's)."""
    width = len(str(messages))
    return [f"msg{str(i).zfill(width)}".encode("utf-8") for i in range(messages)]


def throughputs(per_client: Sequence[Mapping[str, float]], clients: int, messages: int) -> dict:
    """The seed's throughputs (messages per second), summed over ``per_client`` timings (``send_s``,
    ``recv_s``, ``total_s``: seconds from the start signal until that client's last send, its last receive,
    and both)."""

    def rate(count: float, seconds: float) -> float:
        if seconds <= 0:
            raise BroadcastError(f"a client's timing is {seconds!r} s; cannot compute a throughput")
        return count / seconds

    return {
        "send": sum(rate(messages, c["send_s"]) for c in per_client),
        "recv": sum(rate(messages * clients, c["recv_s"]) for c in per_client),
        "combined": sum(rate(messages * (clients + 1), max(c["send_s"], c["recv_s"])) for c in per_client),
        "all": sum(rate(messages * (clients + 1), c["total_s"]) for c in per_client),
    }


# -- the harness's side: run the client pinned, with a deadline, and record ---------------------------------


@dataclass(frozen=True)
class BroadcastRun:
    """One measured broadcast run: the client's result plus both sides' resource use."""

    route: str
    path: str
    clients: int
    messages: int
    result: Mapping[str, Any]
    wall: float
    server_peak_rss: int
    server_cpu_seconds: float
    server_processes: int
    client_cpu_seconds: float
    client_cpus: tuple[int, ...] | None
    server_cpus: tuple[int, ...] | None = None
    argv: tuple[str, ...] = ()
    started_at: str = ""

    @property
    def rps(self) -> float:
        """The combined throughput (messages per second): the row's number."""
        return float(self.result["throughput"]["combined"])

    @property
    def phase_wall(self) -> float:
        """Seconds of the measured phase (first client's start to last client's end); the settle wait, the
        handshakes and the client's own start-up are outside it (the server is idle in the wait)."""
        return float(self.result.get("phase", {}).get("wall_s") or self.wall)

    @property
    def client_util(self) -> float:
        """The client's CPU over the measured phase, as a share of one CPU: it is one asyncio thread, so 1.0
        is all it can use however many CPUs it may run on."""
        cpu = self.result.get("phase", {}).get("cpu_s")
        if cpu is None:
            return self.client_cpu_seconds / self.wall if self.wall > 0 else 0.0
        return cpu / self.phase_wall if self.phase_wall > 0 else 0.0

    @property
    def server_util(self) -> float:
        """The server tree's CPU seconds of the whole run over its CPUs' time in the measured phase."""
        from .pinning import available_cpus

        cpus = len(self.server_cpus or available_cpus())
        return self.server_cpu_seconds / (self.phase_wall * cpus) if self.phase_wall > 0 else 0.0

    @property
    def generator_bound(self) -> bool:
        from .measure import GENERATOR_BOUND_UTIL

        return self.client_util >= GENERATOR_BOUND_UTIL

    def flags(self) -> list[str]:
        return ["generator-bound"] if self.generator_bound else []

    def to_dict(self) -> dict:
        """The flat record ``load.records`` stores; ``total`` and ``ok`` count the messages received."""
        from .measure import server_record

        received = self.messages * self.clients * self.clients
        th = self.result["throughput"]
        return {
            "route": self.route,
            "path": self.path,
            "concurrency": self.clients,
            "messages_per_client": self.messages,
            "started_at": self.started_at,
            "wall": round(self.wall, 6),
            "elapsed": round(self.phase_wall, 6),
            "ok": received,
            "total": received,
            "non_2xx": {},
            "errors": {},
            "rps": round(self.rps, 3),
            "ws": {
                "send": round(th["send"], 3),
                "recv": round(th["recv"], 3),
                "combined": round(th["combined"], 3),
                "all": round(th["all"], 3),
                "extensions": list(self.result.get("extensions", [])),
                "websockets": self.result.get("websockets"),
                "per_client": [
                    {k: round(v, 6) if isinstance(v, float) else v for k, v in c.items()}
                    for c in self.result.get("per_client", [])
                ],
            },
            "server": server_record(
                self.server_peak_rss, self.server_cpu_seconds, self.server_processes, self.server_util, self.server_cpus
            ),
            "client": {
                "cpu_seconds": round(self.client_cpu_seconds, 4),
                "phase_cpu_seconds": self.result.get("phase", {}).get("cpu_s"),
                "util": round(self.client_util, 4),
                "cpus": list(self.client_cpus) if self.client_cpus else None,
                "argv": list(self.argv[1:]),
            },
            "generator_bound": self.generator_bound,
            "flags": self.flags(),
        }


def _ws_url(srv: Any, path: str) -> str:
    base = str(srv.url).rstrip("/")
    if base.startswith("https://"):
        return "wss://" + base[len("https://") :] + path
    return "ws://" + base.split("://", 1)[-1] + path


def _client_argv(python: str, url: str, clients: int, messages: int, settle: float, timeout: float) -> list[str]:
    return [
        python,
        "-m",
        "gatecheck.load.run.wsclient",
        url,
        "--clients",
        str(clients),
        "--messages",
        str(messages),
        "--settle",
        f"{settle:g}",
        "--timeout",
        f"{timeout:g}",
    ]


def _client_result(stdout: str, stderr: str, code: int) -> tuple[dict, str]:
    """The client program's JSON result and, when it did not complete, why (its own error line, else the tail
    of its stderr); the reason is empty for a complete result."""
    try:
        result = json.loads(stdout.strip().splitlines()[-1]) if stdout.strip() else {}
    except ValueError:
        result = {}
    if code == 0 and "throughput" in result:
        return result, ""
    return result, str(result.get("error") or stderr.strip()[-800:] or "(no output)")


def _budget(clients: int, messages: int, settle: float) -> float:
    """Seconds a run may take: generous (a slow server at 20,000 messages a second still finishes)."""
    return settle + 30.0 + messages * clients * clients / 20_000.0


def broadcast(
    srv: Any,
    route: Any,
    clients: int,
    messages: int,
    *,
    client_cpus: Sequence[int] | None = None,
    server_cpus: Sequence[int] | None = None,
    settle: float = SETTLE,
    timeout: float | None = None,
    sample_interval: float = 0.2,
) -> BroadcastRun:
    """One broadcast run against ``srv``'s ``route`` (``/ws_broadcast``): BroadcastError unless it completed
    within ``timeout`` seconds (default: generous for the message count)."""
    from .generator import run_pinned
    from .measure import ServerSampler

    timeout = timeout or _budget(clients, messages, settle)
    argv = _client_argv(sys.executable, _ws_url(srv, route.path), clients, messages, settle, timeout)
    sampler = ServerSampler(srv)
    started_at = datetime.now(timezone.utc).isoformat(timespec="seconds")
    stdout, stderr, code, wall, cpu = run_pinned(
        argv,
        client_cpus,
        time.monotonic() + timeout + 15.0,
        sampler.tick,
        sample_interval,
        error=BroadcastError,
        name="the broadcast client",
    )
    sampler.tick()
    result, reason = _client_result(stdout, stderr, code)
    if reason:
        raise BroadcastError(f"broadcast with {clients} clients × {messages} messages failed: {reason}")
    return BroadcastRun(
        route=route.name,
        path=route.path,
        clients=clients,
        messages=messages,
        result=result,
        wall=wall,
        server_peak_rss=sampler.peak_rss,
        server_cpu_seconds=sampler.cpu_seconds,
        server_processes=sampler.peak_processes,
        client_cpu_seconds=cpu,
        client_cpus=tuple(client_cpus) if client_cpus else None,
        server_cpus=tuple(server_cpus) if server_cpus else None,
        argv=tuple(argv),
        started_at=started_at,
    )


def check_broadcast(srv: Any, route: Any, *, timeout: float = 20.0) -> None:
    """Before any load: two clients, three messages each, without the settle wait; BroadcastError unless each
    got all six within ``timeout`` seconds (the route is served and broadcasts to every connection)."""
    from .generator import run_pinned

    argv = _client_argv(sys.executable, _ws_url(srv, route.path), 2, 3, 0.0, timeout)
    stdout, stderr, code, _wall, _cpu = run_pinned(
        argv, None, time.monotonic() + timeout + 15.0, error=BroadcastError, name="the broadcast check"
    )
    _result, reason = _client_result(stdout, stderr, code)
    if reason:
        raise BroadcastError(
            f"WebSocket {route.path}: the broadcast check failed before any load: {reason}; "
            f"does the server speak WebSocket on this target (ws=on) and the app serve the route?"
        )
