"""Tests of load/gate/: the pair loop, verdicts, stopping and outputs, with fake servers and runs.

No server or oha is started here: ``run_gate`` takes ``start``/``measure_fn``/``check_fn`` seams
(tests/load/gatefakes.py).
"""

from __future__ import annotations

import json

import pytest

from gatecheck.load import gate
from gatecheck.load.gate import GateError, GateOptions
from gatecheck.load.gate import analysis as gate_analysis
from gatecheck.load.gate import report as gate_report
from gatecheck.load.gate.verdict import Verdict
from gatecheck.load.records.results import SCHEMA_VERSION
from tests.load.gatefakes import CASE, FakeLab, gate_case


def test_options_refuse_fewer_than_eight_pairs_and_unknown_metrics():
    with pytest.raises(ValueError, match="at least 8"):
        GateOptions(cases=(CASE,), pairs=5)
    with pytest.raises(ValueError, match="unknown --fail-on"):
        GateOptions(cases=(CASE,), fail_on=("speed",))


def test_a_ten_percent_slower_head_is_a_regression_and_exits_1(tmp_path):
    lab = FakeLab(head_factor=0.90)
    result = lab.gate(tmp_path)
    d = result.results[0].decisions["rps"]
    assert d.verdict is Verdict.REGRESSION and d.change == pytest.approx(-0.10, abs=0.02)
    assert result.results[0].decisions["cpu"].verdict is Verdict.REGRESSION
    assert result.exit_status == 1


def test_same_install_both_sides_passes_and_stops_once_precise(tmp_path):
    lab = FakeLab(head_factor=1.0, noise=0.005)
    result = lab.gate(tmp_path, pairs=8, max_pairs=30)
    assert result.exit_status == 0
    assert result.results[0].decisions["rps"].verdict is Verdict.NO_CHANGE
    assert result.pairs == 8 and "narrower than the threshold" in result.stopped_because


def test_noisy_runs_go_on_to_max_pairs_and_say_inconclusive(tmp_path):
    lab = FakeLab(head_factor=1.0, noise=0.25)
    result = lab.gate(tmp_path, pairs=8, max_pairs=9, fail_on=("rps",))
    assert result.pairs == 9 and "--max-pairs" in result.stopped_because
    d = result.results[0].decisions["rps"]
    assert d.verdict is Verdict.INCONCLUSIVE and d.more_pairs > 0
    assert result.exit_status == gate.INCONCLUSIVE_STATUS == 3
    assert "❔ **inconclusive**" in gate_report.render_markdown(result)


def test_pairs_are_interleaved_in_random_order_with_fresh_servers_every_pair(tmp_path):
    lab = FakeLab()
    result = lab.gate(tmp_path, pairs=10, max_pairs=10, budget=1e9)
    runs = result.runs
    streamed = [json.loads(line) for line in (tmp_path / "runs.jsonl").read_text().splitlines()]
    assert streamed == json.loads(json.dumps(runs))  # appended as each run finished
    runs = [r for r in runs if r.get("lane") != "count"]  # the timed pairs (the counted lane has its own)
    assert [r["pair"] for r in runs] == [p for p in range(10) for _ in range(2)]
    assert all({runs[2 * p]["side"], runs[2 * p + 1]["side"]} == {"base", "head"} for p in range(10))
    firsts = [runs[2 * p]["side"] for p in range(10)]
    assert 0 < firsts.count("head") < 10  # the order varies from pair to pair
    # 2 route checks + 2 servers per pair, all stopped at the end
    assert len(lab.started) == 2 + 2 * 10
    assert all(s.stopped for s in lab.started)


def test_keeping_servers_running_starts_each_side_once(tmp_path):
    lab = FakeLab()
    lab.gate(tmp_path, pairs=8, max_pairs=8, restart_every=0)
    assert len(lab.started) == 2 + 2
    assert all(s.stopped for s in lab.started)


def test_head_cost_reaches_only_the_head_server_and_base_runs_the_same_check_idle(tmp_path):
    lab = FakeLab()
    lab.gate(tmp_path, pairs=8, max_pairs=8, head_cost_us=3.5)
    assert {(s.env.get(gate.COST_ENV), s.env.get(gate.COST_EVERY_ENV)) for s in lab.started if s.side == "head"} == {
        ("50.000", "14")
    }  # 50 µs every 14th request: 3.57 µs on average
    bases = [s for s in lab.started if s.side == "base"]
    assert bases and all(s.env == gate.idle_env(3.5) for s in bases)  # the same variables, never due
    assert gate.idle_env(3.5)[gate.COST_EVERY_ENV] == str(gate.NEVER) and gate.idle_env() == {}


def test_head_slowdown_is_calibrated_on_base_s_install_then_burnt_by_head(tmp_path):
    """The fake lab's burn adds exactly itself to 50 µs per request: 10% slower needs 50/9 µs."""
    lab = FakeLab()
    lab.missing = "valgrind not found"  # where the gate cannot count, a slowdown is a burn sized by timing
    result = lab.gate(tmp_path, pairs=8, max_pairs=8, head_slowdown=0.10)
    assert "count" not in result.options.fail_on and "valgrind not found" in result.count_note
    assert result.calibration["cost_us"] == pytest.approx(50 / 9, rel=0.02)
    assert result.head["cost_us"] == result.calibration["cost_us"]
    calibrating = [s for s in lab.started if s.side == "base" and _due(s.env, gate.COST_ENV, gate.COST_EVERY_ENV)]
    assert len(calibrating) == 9  # 3 rounds x 2 trial costs + 3 rounds of the first answer, all on BASE's interpreter
    measured = [s for s in lab.started if s not in calibrating and s.side == "head"]
    assert measured and all(s.env == gate.injected_env(result.head["cost_us"]) for s in measured)


@pytest.mark.parametrize(
    "cost, burst", [(0.5, (50.0, 100)), (1.7, (50.0, 29)), (25.0, (50.0, 2)), (49.9, (50.0, 1)), (80.0, (80.0, 1))]
)
def test_an_average_cost_is_injected_as_bursts_of_50_us(cost, burst):
    assert gate.cost_burst(cost) == burst
    env = gate.injected_env(cost)
    assert env[gate.COST_ENV] == f"{burst[0]:.3f}" and env.get(gate.COST_EVERY_ENV, "1") == str(burst[1])


def test_errors_on_head_leave_the_pair_out_and_fail_the_gate(tmp_path):
    lab = FakeLab(head_errors_in_pair=2)
    result = lab.gate(tmp_path, pairs=8, max_pairs=8)
    r = result.results[0]
    assert r.head_errors == 1 and r.excluded_pairs == 1
    assert r.decisions["rps"].estimate.n == 7
    assert result.exit_status == 1
    assert any("left out" in w for w in r.warnings)
    assert "HEAD has errors" in gate_report.render_markdown(result)


def test_a_head_that_answers_nothing_is_a_harness_error_with_the_log(tmp_path):
    lab = FakeLab(head_dead=True)
    with pytest.raises(GateError, match="no request with 2xx"):
        lab.gate(tmp_path, pairs=8, max_pairs=8)
    assert all(s.stopped for s in lab.started)


def test_analyse_recomputes_a_stored_gate_exactly(tmp_path):
    lab = FakeLab(head_factor=0.95, noise=0.02)
    result = lab.gate(tmp_path, pairs=8, max_pairs=12, budget=1e9)
    again = gate.analyse(json.loads(json.dumps(result.runs)), result.options)
    assert again[0].decisions["rps"] == result.results[0].decisions["rps"]


def test_markdown_summary_has_one_table_per_case_with_every_metric(tmp_path):
    result = FakeLab(head_factor=0.90).gate(tmp_path)
    text = gate_report.render_markdown(result)
    assert text.startswith("## gatecheck gate: granian==1.0 → granian==1.1")
    assert "❌ **regression**" in text
    assert "### json c64 (granian:rsgi:auto)" in text
    assert "| metric | base | head | head/base | interval | verdict |" in text
    assert (
        "| RPS (not gated) |" in text and "| p99 latency (not gated) |" in text and "| server CPU per request |" in text
    )
    assert "❌ regression" in text


def test_outputs_are_written_once_with_a_schema_version(tmp_path):
    result = FakeLab().gate(tmp_path / "work", pairs=8, max_pairs=8)
    paths = gate_report.write_outputs(result, tmp_path / "out", storage=tmp_path / "storage")
    doc = json.loads(paths["pairs"].read_text())
    assert doc["schema_version"] == SCHEMA_VERSION and doc["kind"] == "gate"
    assert {(r["kind"], r["schema_version"]) for r in doc["runs"]} == {("gate-run", SCHEMA_VERSION)}
    assert len(doc["runs"]) == 16 + 12 and doc["options"]["seed"] == 1  # 8 timed pairs, 6 counted ones
    base = json.loads(paths["benchmark_base"].read_text())
    assert base["benchmarks"][0]["name"] == "gate[json c64 (granian:rsgi:auto)]"
    assert base["benchmarks"][0]["stats"]["rounds"] == 8
    assert paths["storage_head"].name == "0002_gate_head.json"
    with pytest.raises(FileExistsError):
        gate_report.write_outputs(result, tmp_path / "out")


def test_tree_cpu_ns_counts_this_process_in_nanoseconds():
    import os
    import time

    before = gate.tree_cpu_ns(os.getpid())
    if before is None:
        pytest.skip("no /proc schedstat here")
    cpu0 = time.process_time()
    while time.process_time() - cpu0 < 0.05:  # burn 50 ms of CPU, however busy the machine is
        pass
    spent = gate.tree_cpu_ns(os.getpid()) - before
    assert spent / 1e9 == pytest.approx(time.process_time() - cpu0, abs=0.02)
    assert gate.tree_cpu_ns(None) is None


def test_cpu_metric_prefers_nanosecond_counters():
    run = {"ok": 1000, "server": {"cpu_seconds": 0.05}, "server_cpu_ns": 31_000_000}
    assert gate_analysis._metric_value(run, "cpu") == pytest.approx(31.0)
    del run["server_cpu_ns"]
    assert gate_analysis._metric_value(run, "cpu") == pytest.approx(50.0)


def test_every_interval_of_a_multi_case_gate_is_at_the_family_wise_level(tmp_path):
    """4 cases x 1 gated metric: each interval at 1 - 0.05/4, so the gate as a whole holds at 95%."""
    cases = tuple(gate_case(r) for r in ("json", "b1k", "echo1k", "b10k"))
    result = FakeLab(noise=0.02).gate(tmp_path, cases=cases, pairs=8, max_pairs=8, fail_on=("cpu",))
    assert result.options.comparisons == 4
    for r in result.results:
        for d in r.decisions.values():
            assert d.estimate.confidence == pytest.approx(0.9875)
            assert "98.75% interval" in d.reason
    assert (
        "cpu at 98.75%, so that all 4 gated comparisons hold together at 95% (Bonferroni, equal shares); "
        "the ungated at 98.75%"
    ) in gate_report.render_markdown(result)


def test_by_default_cpu_gets_four_sixths_of_alpha_latency_and_the_count_one_sixth_each(tmp_path):
    """Weighted Bonferroni: 0.05 split 4:1:1 over cpu, lat and count; the ungated metrics at the equal share."""
    result = FakeLab(noise=0.01).gate(tmp_path, pairs=8, max_pairs=8)
    opts = result.options
    assert (opts.level("cpu"), opts.level("lat"), opts.level("count"), opts.level("rps")) == pytest.approx(
        (1 - 0.05 * 4 / 6, 1 - 0.05 / 6, 1 - 0.05 / 6, 1 - 0.05 / 3)
    )
    d = result.results[0].decisions
    assert d["count"].estimate.confidence == pytest.approx(1 - 0.05 / 6)
    assert d["count"].estimate.statistic == "geomean-t"
    assert (
        "so that all 3 gated comparisons hold together at 95% (Bonferroni, weighted 4:1:1"
        in gate_report.render_markdown(result)
    )


def test_without_counting_cpu_gets_four_fifths_of_alpha_and_latency_one_fifth(tmp_path):
    """Where valgrind cannot count: the timed metrics' levels as before the counted metric, 96% and 99%; the
    ungated metrics are shown at the equal share (97.5%); two cases halve every share."""
    lab = FakeLab(noise=0.01)
    lab.missing = "valgrind not found on PATH"
    result = lab.gate(tmp_path, pairs=8, max_pairs=8)
    assert lab.lane_specs == [] and result.options.fail_on == ("cpu", "lat")
    opts = result.options
    assert (opts.level("cpu"), opts.level("lat"), opts.level("rps")) == pytest.approx((0.96, 0.99, 0.975))
    d = result.results[0].decisions
    assert d["cpu"].estimate.confidence == pytest.approx(0.96) and d["lat"].estimate.confidence == pytest.approx(0.99)
    assert (
        "cpu at 96%, lat at 99%, so that all 2 gated comparisons hold together at 95% (Bonferroni, weighted 4:1"
        in gate_report.render_markdown(result)
    )
    two = GateOptions(cases=(CASE, gate_case("b1k")), fail_on=("cpu", "lat"))
    assert (two.level("cpu"), two.level("lat")) == pytest.approx((0.98, 0.995))
    assert GateOptions(cases=(CASE,), alpha_weights=(), fail_on=("cpu", "lat")).level("cpu") == pytest.approx(0.975)
    with pytest.raises(ValueError, match="alpha weights"):
        GateOptions(cases=(CASE,), alpha_weights=(("speed", 1.0),))
    with pytest.raises(ValueError, match="> 0"):
        GateOptions(cases=(CASE,), alpha_weights=(("cpu", 0.0),))


def test_by_default_both_cpu_and_low_concurrency_latency_are_gated_and_counted_in_the_family():
    """m = cases x gated metrics: one case gated on cpu, lat and count is three comparisons."""
    opts = GateOptions(cases=(CASE,))
    assert opts.fail_on == ("cpu", "lat", "count") and opts.comparisons == 3
    assert opts.interval_confidence == pytest.approx(1 - 0.05 / 3)
    two = GateOptions(cases=(CASE, gate_case("b1k")), fail_on=("cpu", "lat"))
    assert two.comparisons == 4 and two.interval_confidence == pytest.approx(0.9875)
    with pytest.raises(ValueError, match="low-concurrency run"):
        GateOptions(cases=(CASE,), latency_duration=0)
    assert GateOptions(cases=(CASE,), latency_duration=0, fail_on=("cpu",)).comparisons == 1


def test_every_pair_measures_both_sides_at_low_concurrency_after_their_main_runs(tmp_path):
    lab = FakeLab(noise=0.005)
    result = lab.gate(tmp_path, pairs=8, max_pairs=8)
    assert len(lab.latency_runs) == 16 and sorted(lab.latency_runs) == ["base"] * 8 + ["head"] * 8
    timed = [r for r in result.runs if r.get("lane") != "count"]
    assert all(r["low_latency"]["concurrency"] == 1 and r["low_latency"]["avg_ms"] > 0 for r in timed)
    # each pair's latency run takes both servers at once, in the pair's order
    assert lab.latency_runs == [r["side"] for r in timed]
    r = result.results[0]
    assert r.decisions["lat"].verdict is Verdict.NO_CHANGE and r.decisions["lat50"] is not None
    text = gate_report.render_markdown(result)
    assert "| mean latency at c1 |" in text and "| median latency at c1 (not gated) |" in text
    assert "1 s of single requests alternating between BASE and HEAD" in text


def test_a_wait_that_costs_no_cpu_fails_the_gate_on_latency_alone(tmp_path):
    """HEAD waits 2 ms on every 10th request: +200 µs of mean latency on 200 µs, no CPU, no RPS change."""
    lab = FakeLab()
    result = lab.gate(tmp_path, pairs=8, max_pairs=8, head_delay_us=2000.0, head_delay_every=10)
    r = result.results[0]
    assert r.decisions["cpu"].verdict is Verdict.NO_CHANGE
    assert r.decisions["lat"].verdict is Verdict.REGRESSION and r.decisions["lat"].estimate.ratio == pytest.approx(
        2.0, rel=0.05
    )
    assert result.exit_status == 1
    heads = [s for s in lab.started if s.side == "head"]
    assert {(s.env[gate.DELAY_ENV], s.env[gate.DELAY_EVERY_ENV]) for s in heads} == {("2000.000", "10")}
    assert all(s.env == gate.idle_env(delay=(2000.0, 10)) for s in lab.started if s.side == "base")
    assert "injected wait of 2000 µs without CPU on every 10th request" in gate_report.render_markdown(result)
    # the same gate judged on CPU alone does not see it
    assert gate.analyse(result.runs, dataclasses_replace(result.options, fail_on=("cpu",)))[0].failed(("cpu",)) is False


def _due(env, name, every) -> bool:
    """The server burns or waits now and then: the variable is set with a period it reaches (not idle_env's)."""
    return name in env and env.get(every) != str(gate.NEVER)


def dataclasses_replace(obj, **kw):
    import dataclasses

    return dataclasses.replace(obj, **kw)


def test_head_delay_percentage_is_calibrated_on_base_s_install_then_waited_by_head(tmp_path):
    """The fake lab's wait adds exactly its mean to 200 µs: +10% needs 2 ms on every 100th request."""
    lab = FakeLab(noise=0.0)
    result = lab.gate(tmp_path, pairs=8, max_pairs=8, head_delay_increase=0.10)
    calib = result.calibration["delay"]
    assert calib["nominal_every"] == 100 and calib["every"] == 100 and calib["wait_us"] == 2000.0
    assert (result.head["delay_us"], result.head["delay_every"]) == (2000.0, 100)
    assert result.results[0].decisions["lat"].estimate.ratio == pytest.approx(1.10, rel=0.01)
    probes = [s for s in lab.started if s.side == "base" and _due(s.env, gate.DELAY_ENV, gate.DELAY_EVERY_ENV)]
    assert len(probes) == 6  # 3 rounds of the nominal period + 3 of the corrected one, on BASE's interpreter


def test_a_low_concurrency_run_with_errors_leaves_its_pair_out():
    base = {
        "case": CASE.name,
        "pair": 0,
        "side": "base",
        "rps": 100.0,
        "ok": 200,
        "errors": {},
        "non_2xx": {},
        "low_latency": {"ok": 50, "errors": {}, "non_2xx": {}, "avg_ms": 0.2, "p50_ms": 0.2},
    }
    head = dict(base, side="head", low_latency=dict(base["low_latency"], errors={"reset": 1}))
    assert gate_analysis._clean(base) and not gate_analysis._clean(head)


def test_the_budget_holds_the_last_pair_and_the_verdicts_analysis(tmp_path, monkeypatch):
    """A simulated clock: each measured run takes 2 s, each analysis 3 s. No pair starts unless it and the
    analysis after it end inside the budget; the last analysis is the verdict's, not made twice."""
    from gatecheck.load.gate import running

    now = [0.0]
    analyses = []
    real = running.analyse

    def slow_analysis(runs, opts, **kw):
        analyses.append(len(runs))
        now[0] += 3.0
        return real(runs, opts, **kw)

    lab = FakeLab(noise=0.2)  # wide intervals: only the budget stops it
    measure = lab.measure

    def timed(*a, **kw):
        now[0] += 2.0
        return measure(*a, **kw)

    monkeypatch.setattr(running, "analyse", slow_analysis)
    monkeypatch.setattr(lab, "measure", timed)
    o = dict(cases=(CASE,), seed=1, resamples=200, pairs=8, max_pairs=24, budget=110.0, count_pairs=0)
    result = running.run_gate(
        GateOptions(**o),
        base_python="/base/python",
        head_python="/head/python",
        out_dir=tmp_path,
        start=lab.start,
        measure_fn=lab.measure,
        route_fn=lambda n: n,
        check_fn=lambda *a, **k: None,
        latency_fn=lab.latency,
        log=lambda s: None,
        clock=lambda: now[0],
    )
    assert result.stopped_because == "time budget of 110 s reached"
    assert result.seconds <= 110.0, result.seconds
    assert len(analyses) == len(set(analyses)) == result.pairs - 7  # one per pair from the 8th, none repeated
