"""Tests of benchmarks/gate/experiments/gate_rates.py over stored gates of fake servers (tests/load/gatefakes.py).

The script is the lab's, not the product's (it is not in the wheel): these tests import it from its folder,
which only this module puts on ``sys.path``.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from gatecheck.load.gate import analysis as gate_analysis
from gatecheck.load.gate import report as gate_report
from gatecheck.load.records.results import append_record
from tests.load.gatefakes import CASE, FakeLab, gate_case

EXPERIMENTS = Path(__file__).resolve().parents[3] / "benchmarks" / "gate" / "experiments"


def _gate_rates():
    """benchmarks/gate/experiments/gate_rates.py, imported from its folder."""
    if str(EXPERIMENTS) not in sys.path:
        sys.path.insert(0, str(EXPERIMENTS))
    import gate_rates

    return gate_rates


def test_experiment_replay_reproduces_the_gate_and_its_stopping_rule(tmp_path):
    """benchmarks/gate/experiments/gate_rates.py recomputes stored gates for other pair counts and thresholds."""
    gate_rates = _gate_rates()
    result = FakeLab(head_factor=0.90, noise=0.02).gate(tmp_path, pairs=8, max_pairs=16, budget=1e9)
    doc = json.loads(json.dumps(result.to_dict()))
    res, used, _secs = gate_rates.replay(doc, threshold=0.05, fail_on=["rps"], min_pairs=8, max_pairs=16, resamples=500)
    assert used == result.pairs and res["failed"] is True
    name = CASE.name
    assert res["verdicts"][name]["rps"] == result.results[0].decisions["rps"].verdict.value
    res, used, _ = gate_rates.replay(doc, threshold=0.20, fail_on=["rps"], min_pairs=8, max_pairs=8)
    assert used == 8 and res["failed"] is False  # a 10% slowdown is below a 20% threshold
    assert gate_rates.pooled_ratio([doc], "rps") == pytest.approx(0.90, abs=0.02)


def test_a_gate_stored_before_the_size_rule_had_a_name_replays_under_the_rule_it_ran_with(tmp_path):
    """pairs.json without options.size_by (every gate before 2026-11-28) decided by the point estimate;
    its replay does so too unless told otherwise, and the new default is recorded in new gates."""
    gate_rates = _gate_rates()
    result = FakeLab(head_factor=0.955, noise=0.005).gate(tmp_path, pairs=8, max_pairs=8)
    doc = json.loads(json.dumps(result.to_dict()))
    assert doc["options"]["size_by"] == "interval"
    del doc["options"]["size_by"]
    assert gate_rates._options_from(doc).size_by == "estimate"
    by_estimate, _, _ = gate_rates.replay(doc, threshold=0.05, fail_on=["rps"], min_pairs=8, max_pairs=8, resamples=500)
    by_interval, _, _ = gate_rates.replay(
        doc, threshold=0.05, fail_on=["rps"], min_pairs=8, max_pairs=8, resamples=500, size_by="interval"
    )
    assert by_estimate["failed"] is False and by_interval["failed"] is True  # 4.5% slower, interval past 5%


def test_a_gate_stored_before_alpha_weights_replays_with_equal_shares(tmp_path):
    """pairs.json without options.alpha_weights (every gate before the eighth experiment) split alpha equally;
    its replay does so too, and a replay can ask for another split."""
    gate_rates = _gate_rates()
    result = FakeLab(noise=0.01).gate(tmp_path, pairs=8, max_pairs=8, fail_on=("cpu", "lat"), count_pairs=0)
    doc = json.loads(json.dumps(result.to_dict()))
    assert gate_rates._options_from(doc).alpha_weights == (("cpu", 4.0), ("lat", 1.0), ("count", 1.0))
    del doc["options"]["alpha_weights"]
    old = gate_rates._options_from(doc)
    assert old.alpha_weights == () and old.level("cpu") == pytest.approx(0.975)
    res, _, _ = gate_rates.replay(
        doc,
        threshold=0.05,
        fail_on=["cpu", "lat"],
        min_pairs=8,
        max_pairs=8,
        resamples=200,
        alpha_weights=(("cpu", 9.0), ("lat", 1.0)),
    )
    assert res["failed"] is False


def test_experiment_pack_keeps_every_stored_gate_for_analysis(tmp_path):
    gate_rates = _gate_rates()
    exp = tmp_path / "exp"
    result = FakeLab(head_factor=0.9).gate(tmp_path / "g", pairs=8, max_pairs=8)
    gate_report.write_outputs(result, exp / "10pct-00")
    append_record(
        exp / "gates.jsonl", {"kind": "experiment-gate", "treatment": "10%", "dir": "10pct-00", "seconds": 60.0}
    )
    packed = tmp_path / "gates.jsonl.gz"
    assert gate_rates.main(["pack", str(exp), str(packed)]) == 0
    assert gate_rates.main(["pack", str(exp), str(packed)]) == 2  # never appended to, nor overwritten
    from_dir, from_file = gate_rates._load(exp), gate_rates._load(packed)
    assert list(from_file) == ["10%"] and from_file["10%"][0]["runs"] == from_dir["10%"][0]["runs"]
    assert {r["kind"] for r in from_file["10%"][0]["runs"]} == {"gate-run"}


def test_experiments_packed_before_the_one_record_format_still_load(tmp_path):
    """An unversioned gates.jsonl line whose "kind" is the treatment, its gate a pairs.json of kind
    "gatecheck-gate" with unversioned runs (benchmarks/gate/gate_*, benchmarks/gate/experiments/data)."""
    import gzip

    gate_rates = _gate_rates()
    doc = FakeLab(head_factor=0.9).gate(tmp_path / "g", pairs=8, max_pairs=8).to_dict()
    doc = {
        **doc,
        "schema_version": 1,
        "kind": "gatecheck-gate",
        "runs": [{k: v for k, v in r.items() if k not in ("kind", "schema_version")} for r in doc["runs"]],
    }
    packed = tmp_path / "old.jsonl.gz"
    with gzip.open(packed, "wt") as f:
        f.write(json.dumps({"kind": "aa", "dir": "aa-00", "round": 0, "seconds": 50.0, "pairs": doc}) + "\n")
    (gate,) = gate_rates._load(packed)["aa"]
    assert gate["kind"] == "gate" and gate["_wall"] == 50.0 and len(gate["runs"]) == 16 + 12
    res, used, _ = gate_rates.replay(gate, threshold=0.05, fail_on=["rps"], min_pairs=8, max_pairs=8, resamples=200)
    assert used == 8 and res["failed"] is True


def test_experiment_analysis_says_how_quiet_the_server_cpus_were():
    gate_rates = _gate_rates()
    runs = [{"wall": 2.0, "foreign_cpu_seconds": f, "steal_seconds": 0.0} for f in (0.0, 0.01, 0.02, 0.5)]
    (line,) = [x for x in gate_rates.machine_lines({"aa": [{"runs": runs}]}) if x]
    assert "median 0.8%" in line and "max 25.0%" in line and "1 runs (25%) lost more than 5%" in line
    assert gate_rates.machine_lines({"aa": [{"runs": [{"wall": 2.0}]}]}) == []  # older experiments: nothing


def test_experiment_slowdown_kinds_calibrate_per_gate_and_gates_record_the_load_average():
    gate_rates = _gate_rates()
    assert gate_rates._slowdown("10%=10%") == ("10%", pytest.approx(0.10))
    argv = gate_rates._gate_argv(
        "granian==2.8.7", "granian==2.8.7", gate_rates.Path("o"), 0.0, 7, ["--profile", "smoke"], 0.1
    )
    assert argv[-2:] == ["--head-slowdown", "0.1000"] and "--head-cost" not in argv
    assert len(gate_rates._loadavg()) == 3


def test_experiment_replay_without_the_correction_judges_each_interval_at_the_stored_level(tmp_path, monkeypatch):
    from gatecheck.load.gate import stats

    gate_rates = _gate_rates()
    cases = tuple(gate_case(r) for r in ("json", "b1k", "echo1k", "b10k"))
    doc = json.loads(json.dumps(FakeLab(noise=0.02).gate(tmp_path, cases=cases, pairs=8, max_pairs=8).to_dict()))
    levels = []

    def spy(base, head, statistic, confidence, *rest):
        levels.append(confidence)
        return stats.estimate_ratio(base, head, statistic, confidence, *rest)

    monkeypatch.setattr(gate_analysis, "estimate_ratio", spy)
    gate_rates.replay(doc, threshold=0.05, fail_on=["cpu"], min_pairs=8, max_pairs=8, resamples=200)
    assert levels and all(v == pytest.approx(0.9875) for v in levels)
    levels.clear()
    gate_rates.replay(doc, threshold=0.05, fail_on=["cpu"], min_pairs=8, max_pairs=8, resamples=200, uncorrected=True)
    assert levels and all(v == pytest.approx(0.95) for v in levels)


def test_the_counted_experiment_tool_reports_which_gated_metric_flagged_each_kind(tmp_path, capsys):
    """benchmarks/gate/experiments/count_rates.py: kinds are gate options; analyse counts the gates each gated
    metric failed and pools the counted effect."""
    _gate_rates()
    import count_rates

    assert count_rates._kind("uv-count1%=--target uvicorn:asgi --head-loops 20") == (
        "uv-count1%",
        ["--target", "uvicorn:asgi", "--head-loops", "20"],
    )
    exp = tmp_path / "exp"
    for kind, factor in (("g-aa", 1.0), ("g-count1%", 0.99)):
        result = FakeLab(head_factor=factor, noise=0.002).gate(tmp_path / kind, pairs=8, max_pairs=8)
        gate_report.write_outputs(result, exp / f"{kind}-00")
        append_record(
            exp / "gates.jsonl",
            {
                "kind": "experiment-gate",
                "treatment": kind,
                "dir": f"{kind}-00",
                "seconds": 80.0,
                "loadavg_before": [5, 5, 5],
                "loadavg_after": [6, 6, 6],
            },
        )
    assert count_rates.main(["analyse", str(exp)]) == 0
    table = capsys.readouterr().out
    aa = next(line for line in table.splitlines() if line.startswith("| g-aa |"))
    one = next(line for line in table.splitlines() if line.startswith("| g-count1% |"))
    assert "| 0/1 | 0/1 |" in aa and one.split(" | ")[5:7] == ["1/1", "1/1"], (aa, one)
    assert "1.0" in one.split(" | ")[2]
