"""The off-CPU wait the gate's ``--head-delay`` injects (GATECHECK_DELAY_US / GATECHECK_DELAY_EVERY),
against real granian servers: the N-th request waits at least that long, and the wait burns no CPU; and the
CPU cost, burnt as bursts on every N-th request (GATECHECK_COST_US / GATECHECK_COST_EVERY)."""

from __future__ import annotations

import http.client
import time

import pytest

from gatecheck.fixtures import payloads
from gatecheck.load.gate import COST_ENV, COST_EVERY_ENV, DELAY_ENV, DELAY_EVERY_ENV, tree_cpu_ns
from gatecheck.servers import start_server

WAIT_MS = 80


def _timed_json_requests(interface: str, env: dict, count: int, log_dir, per_request_cpu: bool = False) -> tuple:
    """``count`` GET /json on one connection to a granian server of ``interface`` started with ``env``:
    (milliseconds each took, milliseconds of server CPU over them), or with ``per_request_cpu`` the server's
    CPU milliseconds of each request (CPU time does not grow while a loaded machine keeps the server waiting)."""
    with start_server(
        f"granian:{interface}", app=f"gatecheck.fixtures.apps.{interface}:app", log_dir=log_dir, env=env
    ) as srv:
        host, port = srv.url.split("//", 1)[1].rstrip("/").rsplit(":", 1)
        conn = http.client.HTTPConnection(host, int(port), timeout=10)
        cpu0 = tree_cpu_ns(srv.pid)
        took, cpu = [], []
        for _ in range(count):
            t, before = time.perf_counter(), tree_cpu_ns(srv.pid)
            conn.request("GET", "/json")
            resp = conn.getresponse()
            assert resp.status == 200 and resp.read() == payloads.JSON_BODY
            took.append((time.perf_counter() - t) * 1000)
            cpu.append((tree_cpu_ns(srv.pid) - before) / 1e6)
        cpu_ms = (tree_cpu_ns(srv.pid) - cpu0) / 1e6
        conn.close()
    return (took, cpu) if per_request_cpu else (took, cpu_ms)


def test_parse_every_and_delay_due_count_per_process(monkeypatch):
    assert [payloads.parse_every(v) for v in (None, "", "3", "0", "-2", "x")] == [1, 1, 3, 1, 1, 1]
    monkeypatch.setattr(payloads, "DELAY_EVERY", 3)
    monkeypatch.setattr(payloads, "_delay_count", 0)
    assert [payloads.delay_due() for _ in range(7)] == [False, False, True, False, False, True, False]


@pytest.mark.parametrize("interface", ["rsgi", "asgi", "wsgi"])
def test_every_second_request_waits_without_burning_cpu(interface, tmp_path):
    took, cpu_ms = _timed_json_requests(interface, {DELAY_ENV: str(WAIT_MS * 1000), DELAY_EVERY_ENV: "2"}, 4, tmp_path)
    # the server's readiness probe was /ping (no wait, not counted): /json requests 2 and 4 wait
    assert took[1] >= WAIT_MS and took[3] >= WAIT_MS, took
    assert cpu_ms < WAIT_MS, f"the two waits burnt {cpu_ms:.0f} ms of CPU"


def test_cost_due_counts_per_process(monkeypatch):
    monkeypatch.setattr(payloads, "COST_EVERY", 3)
    monkeypatch.setattr(payloads, "_cost_count", 0)
    assert [payloads.cost_due() for _ in range(7)] == [False, False, True, False, False, True, False]


BURST_MS = 60


@pytest.mark.parametrize("interface", ["rsgi", "asgi", "wsgi"])
def test_every_third_request_burns_the_cost_on_the_cpu(interface, tmp_path):
    """GATECHECK_COST_US on every GATECHECK_COST_EVERY-th request (the gate's bursts): that request takes
    the burn's time, busy on the CPU; the others neither. The burn loops until its wall-clock deadline, so on a
    loaded machine it gets less than its time in CPU: the bursts are told apart by CPU an order of magnitude
    above any other request's, not by an absolute amount."""
    took, cpu = _timed_json_requests(
        interface, {COST_ENV: str(BURST_MS * 1000), COST_EVERY_ENV: "3"}, 6, tmp_path, per_request_cpu=True
    )
    assert took[2] >= BURST_MS and took[5] >= BURST_MS, took
    quiet = max(ms for i, ms in enumerate(cpu) if i not in (2, 5))
    assert quiet < BURST_MS / 4 and min(cpu[2], cpu[5]) > 10 * quiet, f"server CPU per request (ms): {cpu}"
