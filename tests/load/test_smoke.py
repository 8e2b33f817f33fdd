"""End to end, for real: a Granian server, real oha, the smoke profile in quick mode, then the report.

Skips (saying why) when oha or granian is not installed; ``python -m gatecheck.load run ...`` builds oha once.
"""

from __future__ import annotations

import importlib.util

import pytest

from gatecheck.load.run.oha import OhaNotFound, find_oha


def _oha_or_skip():
    try:
        return find_oha(build=False)
    except OhaNotFound as exc:
        pytest.skip(f"oha is not available: {exc}")


@pytest.mark.skipif(importlib.util.find_spec("granian") is None, reason="granian is not installed")
def test_the_smoke_profile_runs_for_real_and_renders(tmp_path):
    """Every case is measured with 2xx responses only, recorded, pinned, and rendered; no server outlives it."""
    oha = _oha_or_skip()
    from gatecheck.load.plan.profile import load_profile
    from gatecheck.load.records.results import load_records
    from gatecheck.load.report.tables import write_report
    from gatecheck.load.run.options import RunOptions
    from gatecheck.load.run.pinning import available_cpus, split_cpus
    from gatecheck.load.run.runner import run_profile
    from gatecheck.servers import Target, live_pids

    lines = []
    opts = RunOptions(
        profile=load_profile("smoke"),
        target=Target("granian"),
        out_dir=tmp_path,
        quick=0.1,
        oha=oha,
        pinning=split_cpus(available_cpus()),
    )
    summary = run_profile(opts, log=lines.append)
    assert summary.failures == 0, "\n".join(lines)
    records = load_records([summary.results])
    runs = [r for r in records if r["kind"] == "run"]
    assert len(runs) == sum(len(c.concurrency) for c in opts.profile.cases)
    for run in runs:
        assert run["ok"] > 0 and run["rps"] > 0 and run["errors"] == {} and run["non_2xx"] == {}
        assert run["server"]["peak_rss"] > 0 and run["server"]["cpu_seconds"] > 0 and run["oha"]["cpu_seconds"] > 0
        assert run["versions"]["granian"] and run["versions"]["oha"]
        assert run["pinning"] == opts.pinning.to_dict()
    assert any(line.startswith("[1/") and "left" in line for line in lines)  # progress with time left
    assert live_pids() == []
    report = write_report([summary.results], tmp_path).read_text()
    assert "| RSGI get 1KB (c" in report and "| WSGI get 1KB (c64) |" in report
