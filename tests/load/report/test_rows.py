"""Which run stands for each table row: best concurrency, median repeat, latest session, per Python."""

from __future__ import annotations

import copy
from pathlib import Path

import pytest

from gatecheck.load.records.results import load_records
from gatecheck.load.report.rows import select_rows, version_key
from gatecheck.load.report.tables import render

DATA = Path(__file__).parent.parent / "data"


@pytest.fixture
def records():
    return load_records([DATA / "sample-smoke.jsonl"])


def test_each_row_shows_its_best_concurrency(records):
    rows = select_rows(records)
    first = rows[0]
    assert first.label == "RSGI get 1KB" and set(first.by_concurrency) == {16, 64}
    assert first.record["rps"] == max(first.by_concurrency.values())


def test_the_latest_session_wins_and_repeats_use_the_median(records):
    run = next(r for r in records if r["kind"] == "run" and r["case"] == "ASGI get 1KB")
    older = dict(copy.deepcopy(run), session="20000101T000000Z-1", rps=1.0)
    repeats = [
        dict(copy.deepcopy(run), session="29990101T000000Z-1", rps=v, repeat=i) for i, v in enumerate((5.0, 9.0, 7.0))
    ]
    rows = select_rows([older] + repeats)
    assert len(rows) == 1 and rows[0].record["rps"] == 7.0 and rows[0].repeats == 3
    assert rows[0].samples == (5.0, 9.0, 7.0)
    assert rows[0].cv == pytest.approx(2.0 / 7.0)  # stdev 2 over mean 7
    text = render([older] + repeats)
    assert "ASGI get 1KB (c64): CV 28.6% over 3 runs, RPS 5 to 9 (unstable: rerun" in text


def test_the_host_probe_s_spread_is_shown_only_when_every_repeat_timed_it(records):
    run = next(r for r in records if r["kind"] == "run" and r["case"] == "ASGI get 1KB")
    repeats = [
        dict(copy.deepcopy(run), session="29990101T000000Z-1", rps=rps, repeat=i, host_speed={"probe_ms": ms})
        for i, (rps, ms) in enumerate(((1000.0, 5.0), (900.0, 6.0), (1000.0, 7.0)))
    ]
    (row,) = select_rows(repeats)
    assert row.speeds == (5.0, 6.0, 7.0) and row.host_cv == pytest.approx(1.0 / 6.0)  # stdev 1 over mean 6
    del repeats[1]["host_speed"]
    (row,) = select_rows(repeats)
    assert row.speeds == () and row.host_cv is None


def test_the_host_probe_times_fixed_work_on_the_cpus_asked():
    import os

    from gatecheck.load.run.host import host_speed

    before = os.sched_getaffinity(0)
    speed = host_speed(sorted(before)[:1], repeats=3)
    assert 0 < speed["probe_ms_min"] <= speed["probe_ms"] < 1000
    assert os.sched_getaffinity(0) == before  # the thread's own CPUs again afterwards


def test_env_columns_split_rows_by_python_version(records):
    runs = [r for r in records if r["kind"] == "run" and r["case"] == "ASGI get 1KB"]
    other = dict(copy.deepcopy(runs[0]), versions={**runs[0]["versions"], "python": "3.9.18"}, session="x")
    rows = select_rows(runs + [other], env_columns=("python",))
    assert sorted(r.env_values for r in rows) == [("3.11",), ("3.9",)]


def test_versions_sort_numerically():
    assert sorted(["3.13", "3.9", "3.10", "x"], key=version_key) == ["3.9", "3.10", "3.13", "x"]
