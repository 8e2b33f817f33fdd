"""The measured run: generator-bound flag, flags, the record layout."""

from __future__ import annotations

from pathlib import Path

import pytest

from gatecheck.load.run.measure import LoadRun, is_generator_bound
from gatecheck.load.run.oha import parse_json

DATA = Path(__file__).parent.parent / "data"


def run_from(name: str, *, oha_cpu: float, wall: float, oha_cpus=(1,), server_cpus=(0,)) -> LoadRun:
    result = parse_json((DATA / f"oha-1.16.0-{name}.json").read_text())
    return LoadRun(
        route="b1k",
        method="GET",
        path="/b1k",
        concurrency=16,
        http2=False,
        result=result,
        wall=wall,
        server_peak_rss=50 << 20,
        server_cpu_seconds=0.9 * wall,
        server_processes=2,
        oha_cpu_seconds=oha_cpu,
        oha_cpus=oha_cpus,
        server_cpus=server_cpus,
        duration=1.0,
    )


@pytest.mark.parametrize(
    "cpu, wall, cpus, bound",
    [(0.95, 1.0, 1, True), (0.89, 1.0, 1, False), (1.9, 1.0, 2, True), (1.0, 1.0, 2, False), (1.0, 0.0, 1, False)],
)
def test_generator_bound_means_oha_used_90_percent_of_its_cpus(cpu, wall, cpus, bound):
    assert is_generator_bound(cpu, wall, cpus) is bound


def test_a_saturated_oha_flags_the_run():
    run = run_from("success", oha_cpu=0.98, wall=1.0)
    assert run.generator_bound and run.flags() == ["generator-bound"]
    assert run.oha_util == pytest.approx(0.98)


def test_a_clean_run_has_no_flags_and_a_flat_record():
    run = run_from("success", oha_cpu=0.5, wall=1.0)
    assert run.flags() == []
    record = run.to_dict()
    assert record["rps"] == pytest.approx(run.result.ok / run.result.elapsed, rel=1e-6)
    assert record["latency_ms"]["p99"] == pytest.approx(run.result.latency_p99 * 1000, abs=1e-4)
    assert record["server"]["cpus"] == [0] and record["oha"]["cpus"] == [1]
    assert record["server"]["peak_rss"] == 50 << 20
    assert record["generator_bound"] is False
    assert record["http_method"] == "GET"


def test_errors_and_non_2xx_are_flags_and_all_failed_is_first():
    assert run_from("server-died", oha_cpu=0.1, wall=3.0).flags() == ["errors"]
    assert run_from("non2xx", oha_cpu=0.1, wall=1.0).flags() == ["all-failed", "non-2xx"]
    assert run_from("refused", oha_cpu=0.1, wall=1.0).flags() == ["all-failed", "errors"]


def _children() -> set:
    import psutil

    return {p.pid for p in psutil.Process().children() if p.status() != psutil.STATUS_ZOMBIE}


def test_the_load_generator_is_killed_at_its_deadline():
    """A run past its deadline kills the generator (wait4 with WNOHANG returns status 0 while it runs)."""
    import time

    import pytest

    from gatecheck.load.run.measure import run_pinned
    from gatecheck.load.run.oha import OhaError

    before = _children()
    with pytest.raises(OhaError, match="deadline"):
        run_pinned(["sleep", "30"], None, time.monotonic() + 0.3)
    assert _children() == before


def test_the_load_generator_is_killed_when_interrupted():
    import os
    import signal
    import threading
    import time

    import pytest

    from gatecheck.load.run.measure import run_pinned

    before = _children()
    # Python leaves SIGINT ignored when it starts with it ignored (a background job of a shell without job
    # control, as `cmd &` in a script): give this process the default handler for the test's duration
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        timer = threading.Timer(0.3, lambda: os.kill(os.getpid(), signal.SIGINT))
        timer.start()
        with pytest.raises(KeyboardInterrupt):
            run_pinned(["sleep", "30"], None, time.monotonic() + 60)
        timer.join()
    finally:
        signal.signal(signal.SIGINT, previous)
    assert _children() == before
