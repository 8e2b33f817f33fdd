"""load/latency.py against real granian servers: single requests alternating between two servers."""

from __future__ import annotations

import pytest

from gatecheck.load.gate import DELAY_ENV, DELAY_EVERY_ENV
from gatecheck.load.plan.routes import route
from gatecheck.load.run.latency import interleaved_latency, request_bytes, summarise
from gatecheck.servers import start_server


def test_request_bytes_carry_the_route_s_method_path_and_body():
    assert (
        request_bytes(route("json"), "h:1") == b"GET /json HTTP/1.1\r\nHost: h:1\r\nUser-Agent: gatecheck-gate\r\n\r\n"
    )
    raw = request_bytes(route("echo1k"), "h:1")
    assert raw.startswith(b"POST /echo HTTP/1.1\r\n") and b"Content-Length: 1024\r\n" in raw
    assert len(raw.split(b"\r\n\r\n", 1)[1]) == 1024


def test_summarise_counts_answers_and_errors_apart():
    s = summarise([0.001, 0.002, 0.003], errors=2, non_2xx={500: 1})
    assert (s["ok"], s["errors"], s["non_2xx"], s["avg_ms"], s["p50_ms"]) == (3, {"failed": 2}, {"500": 1}, 2.0, 2.0)
    assert "avg_ms" not in summarise([])


@pytest.mark.parametrize("route_name", ["json", "echo1k", "echo_iter1k"])
def test_interleaved_run_alternates_and_sees_a_wait_only_on_the_waiting_side(route_name, tmp_path):
    """HEAD waits 20 ms on every 4th request: its mean latency rises by about 5 ms, BASE's does not."""
    app = "gatecheck.fixtures.apps.rsgi:app"
    with (
        start_server("granian:rsgi", app=app, log_dir=tmp_path / "b") as base,
        start_server(
            "granian:rsgi", app=app, log_dir=tmp_path / "h", env={DELAY_ENV: "20000", DELAY_EVERY_ENV: "4"}
        ) as head,
    ):
        res = interleaved_latency({"base": base.url, "head": head.url}, route(route_name), 0.6)
    b, h = res["base"], res["head"]
    assert b["errors"] == h["errors"] == {} and b["non_2xx"] == h["non_2xx"] == {}
    assert b["ok"] >= 8 and abs(b["ok"] - h["ok"]) <= 2  # ABBA blocks: the same count each, give or take a block
    assert h["avg_ms"] - b["avg_ms"] >= 3.0
    assert h["p99_ms"] >= 20.0


def test_a_closed_port_is_counted_as_errors_not_answers():
    res = interleaved_latency({"base": "http://127.0.0.1:9", "head": "http://127.0.0.1:9"}, route("json"), 0.2)
    assert res["base"]["ok"] == 0 and res["base"]["errors"]["failed"] > 0
