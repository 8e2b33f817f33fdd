"""Tests of load/gate/: the pair loop, verdicts, stopping, outputs and CLI, with fake servers and runs.

No server or oha is started here: ``run_gate`` takes ``start``/``measure_fn``/``check_fn`` seams.
"""

from __future__ import annotations

import argparse
import json
import random
from dataclasses import dataclass, field
from types import SimpleNamespace

import pytest

from gatecheck.load import gate
from gatecheck.load.gate import GateCase, GateError, GateOptions, run_gate
from gatecheck.load.gate import analysis as gate_analysis
from gatecheck.load.gate import cli as gate_cli
from gatecheck.load.gate import report as gate_report
from gatecheck.load.pipeline import setup_for
from gatecheck.load.stats import Verdict
from gatecheck.servers import Target

def gate_case(route: str, target: str = "granian:rsgi:auto", concurrency: int = 64) -> GateCase:
    return GateCase(setup_for(Target.parse(target)), route, concurrency)


CASE = gate_case("json")


@dataclass
class FakeServer:
    side: str
    env: dict
    stopped: bool = False
    versions: dict = field(default_factory=lambda: {"granian": "9.9.9", "python": "3.11.7"})

    def stop(self):
        self.stopped = True

    def log_tail(self, lines=40):
        return "fake log"

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.stop()


class FakeRun:
    def __init__(self, rps, p99_ms, cpu_us, errors=0, all_failed=False, duration=2.0, concurrency=64, mean_us=None):
        ok = 0 if all_failed else int(rps * duration)
        self.rps = 0.0 if all_failed else rps
        self.concurrency = concurrency
        self.server_cpu_seconds = cpu_us * ok / 1e6
        mean = (mean_us or concurrency / rps * 1e6) / 1e6
        self.result = SimpleNamespace(all_failed=all_failed, ok=ok, rps=self.rps, errors={}, non_2xx={},
                                      latency_avg=mean, latency_p50=mean * 0.9, latency_p99=p99_ms / 1e3)
        self._d = {"rps": self.rps, "ok": ok, "errors": {"connection reset": errors} if errors else {},
                   "non_2xx": {}, "latency_ms": {"p99": p99_ms},
                   "server": {"cpu_seconds": self.server_cpu_seconds}, "generator_bound": False}

    def to_dict(self):
        return dict(self._d)


class FakeLab:
    """Servers whose RPS is ``level`` (× ``head_factor`` on HEAD), with seeded noise and shared drift."""

    def __init__(self, head_factor=1.0, noise=0.01, seed=0, head_errors_in_pair=None, head_dead=False):
        self.head_factor = head_factor
        self.latency_runs = []
        self.noise = noise
        self.rng = random.Random(seed)
        self.started = []
        self.measured = []
        self.head_errors_in_pair = head_errors_in_pair
        self.head_dead = head_dead
        self.machine = 1.0

    def start(self, target, *, app, log_dir, env, cpus, python):
        srv = FakeServer("head" if python == "/head/python" else "base", env)
        self.started.append(srv)
        return srv

    def measure(self, srv, route, concurrency, duration, **kwargs):
        if duration < 1.0:  # warm-up: the machine's speed drifts between pairs
            self.machine = 1.0 + self.rng.gauss(0, 0.10)
            return FakeRun(1000.0, 5.0, 50.0, concurrency=concurrency)
        factor = self.head_factor if srv.side == "head" else 1.0
        rps = 20_000 * self.machine * factor * (1 + self.rng.gauss(0, self.noise))
        self.measured.append(srv.side)
        pair = sum(1 for s in self.measured if s == "head") - 1
        errors = 3 if srv.side == "head" and self.head_errors_in_pair == pair else 0
        burn = float(srv.env.get(gate.COST_ENV, 0.0))  # an injected cost adds exactly itself here
        return FakeRun(rps, 3.0 / factor, 50.0 / factor + burn, errors=errors, all_failed=self.head_dead and srv.side == "head")

    def latency(self, handles, route, duration, cpus=None):
        """The interleaved low-concurrency run: 200 µs, slower by HEAD's factor; a wait adds exactly its mean."""
        out = {}
        for side, srv in handles.items():
            self.latency_runs.append(srv.side)
            wait = float(srv.env.get(gate.DELAY_ENV, 0.0)) / int(srv.env.get(gate.DELAY_EVERY_ENV, 1))
            mean = 200.0 / (self.head_factor if srv.side == "head" else 1.0) * (1 + self.rng.gauss(0, self.noise)) + wait
            out[side] = {"concurrency": 1, "ok": 1000, "errors": {}, "non_2xx": {}, "avg_ms": mean / 1000,
                         "p50_ms": mean * 0.9 / 1000, "p99_ms": mean * 3 / 1000}
        return out

    def gate(self, tmp_path, **opts):
        o = dict(cases=(CASE,), seed=1, resamples=500)
        slowdown = opts.pop("head_slowdown", None)
        increase = opts.pop("head_delay_increase", None)
        o.update(opts)
        return run_gate(GateOptions(**o), base_python="/base/python", head_python="/head/python",
                        base_info={"spec": "granian==1.0"}, head_info={"spec": "granian==1.1"}, out_dir=tmp_path,
                        start=self.start, measure_fn=self.measure, route_fn=lambda name: name,
                        check_fn=lambda *a, **k: None, latency_fn=self.latency, head_slowdown=slowdown,
                        head_delay_increase=increase, log=lambda s: None)


@pytest.mark.parametrize("text, value", [("5%", 0.05), ("0.05", 0.05), ("12.5%", 0.125)])
def test_percent_accepts_percentages_and_fractions(text, value):
    assert gate_cli.percent(text) == pytest.approx(value)


@pytest.mark.parametrize("text", ["5", "abc", "0%", "100%", "-3%"])
def test_percent_refuses_ambiguous_or_out_of_range_values_quoting_them(text):
    with pytest.raises(argparse.ArgumentTypeError, match=repr(text).replace("%", "%")[1:-1]):
        gate_cli.percent(text)


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
    assert result.exit_status == 0


def test_pairs_are_interleaved_in_random_order_with_fresh_servers_every_pair(tmp_path):
    lab = FakeLab()
    result = lab.gate(tmp_path, pairs=10, max_pairs=10, budget=1e9)
    runs = result.runs
    streamed = [json.loads(line) for line in (tmp_path / "runs.jsonl").read_text().splitlines()]
    assert streamed == json.loads(json.dumps(runs))  # appended as each run finished
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


def test_head_cost_reaches_only_the_head_server(tmp_path):
    lab = FakeLab()
    lab.gate(tmp_path, pairs=8, max_pairs=8, head_cost_us=3.5)
    assert {s.env.get(gate.COST_ENV) for s in lab.started if s.side == "head"} == {"3.500"}
    assert all(gate.COST_ENV not in s.env for s in lab.started if s.side == "base")


def test_head_slowdown_is_calibrated_on_base_s_install_then_burnt_by_head(tmp_path):
    """The fake lab's burn adds exactly itself to 50 µs per request: 10% slower needs 50/9 µs."""
    lab = FakeLab()
    result = lab.gate(tmp_path, pairs=8, max_pairs=8, head_slowdown=0.10)
    assert result.calibration["cost_us"] == pytest.approx(50 / 9, rel=0.02)
    assert result.head["cost_us"] == result.calibration["cost_us"]
    calibrating = [s for s in lab.started if s.side == "base" and gate.COST_ENV in s.env]
    assert len(calibrating) == 9  # 3 rounds x 2 trial costs + 3 rounds of the first answer, all on BASE's interpreter
    measured = [s for s in lab.started if s not in calibrating and s.side == "head"]
    assert measured and all(s.env[gate.COST_ENV] == f"{result.head['cost_us']:.3f}" for s in measured)


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
    assert "| RPS (not gated) |" in text and "| p99 latency (not gated) |" in text and "| server CPU per request |" in text
    assert "❌ regression" in text


def test_outputs_are_written_once_with_a_schema_version(tmp_path):
    result = FakeLab().gate(tmp_path / "work", pairs=8, max_pairs=8)
    paths = gate_report.write_outputs(result, tmp_path / "out", storage=tmp_path / "storage")
    doc = json.loads(paths["pairs"].read_text())
    assert doc["schema_version"] == gate.SCHEMA_VERSION and doc["kind"] == "gatecheck-gate"
    assert len(doc["runs"]) == 16 and doc["options"]["seed"] == 1
    base = json.loads(paths["benchmark_base"].read_text())
    assert base["benchmarks"][0]["name"] == "gate[json c64 (granian:rsgi:auto)]"
    assert base["benchmarks"][0]["stats"]["rounds"] == 8
    assert paths["storage_head"].name == "0002_gate_head.json"
    with pytest.raises(FileExistsError):
        gate_report.write_outputs(result, tmp_path / "out")


def parse(argv):
    parser = argparse.ArgumentParser()
    gate_cli.add_arguments(parser)
    return parser.parse_args(argv)


@pytest.mark.parametrize("argv, message", [
    (["--threshold", "5"], "ambiguous"),
    (["--pairs", "4"], "--pairs must be a whole number >= 8"),
    (["--fail-on", "speed"], "invalid metric list"),
    (["--head-cost", "1", "--head-slowdown", "5%"], "not allowed with"),
])
def test_cli_rejects_bad_values_at_parse_time(argv, message, capsys):
    with pytest.raises(SystemExit) as info:
        parse(["--base", "a==1", "--head", "a==2", *argv])
    assert info.value.code == 2
    assert message in capsys.readouterr().err


def test_cli_defaults():
    args = parse(["--base", "granian==2.8.6", "--head", "granian==2.8.7"])
    assert (args.threshold, args.pairs, args.max_pairs, args.fail_on, args.restart_every) == (0.05, 8, 24, ("cpu", "lat"), 1)
    assert (args.budget, args.duration, args.latency_duration, args.head_delay) == (90, 1.5, 1, None)


def test_cli_unknown_install_spec_is_a_clear_error_with_status_2(tmp_path, capsys):
    status = gate_cli.main(["--base", "granian==2.8.6", "--head", "not a spec!", "--out", str(tmp_path / "o"), "--quiet"])
    assert status == 2
    assert "expected a requirement such as 'granian==2.8.6'" in capsys.readouterr().err


def test_cli_unknown_route_lists_the_known_ones(tmp_path, capsys):
    status = gate_cli.main(["--base", "a==1", "--head", "a==1", "--route", "nope", "--out", str(tmp_path / "o")])
    assert status == 2
    assert "known routes" in capsys.readouterr().err


def test_experiment_replay_reproduces_the_gate_and_its_stopping_rule(tmp_path):
    """load/experiments/gate_rates.py recomputes stored gates for other pair counts and thresholds."""
    from gatecheck.load.experiments import gate_rates

    result = FakeLab(head_factor=0.90, noise=0.02).gate(tmp_path, pairs=8, max_pairs=16, budget=1e9)
    doc = json.loads(json.dumps(result.to_dict()))
    res, used, _secs = gate_rates.replay(doc, threshold=0.05, fail_on=["rps"], min_pairs=8, max_pairs=16,
                                         resamples=500)
    assert used == result.pairs and res["failed"] is True
    name = CASE.name
    assert res["verdicts"][name]["rps"] == result.results[0].decisions["rps"].verdict.value
    res, used, _ = gate_rates.replay(doc, threshold=0.20, fail_on=["rps"], min_pairs=8, max_pairs=8)
    assert used == 8 and res["failed"] is False  # a 10% slowdown is below a 20% threshold
    assert gate_rates.pooled_ratio([doc], "rps") == pytest.approx(0.90, abs=0.02)


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


def test_cases_come_from_routes_with_the_target_resolved():
    args = parse(["--base", "x==1", "--head", "x==1", "--target", "granian:asgi:h2", "--route", "b1k", "--route", "json",
                  "--concurrency", "32"])
    cases = gate_cli.cases_from_args(args)
    assert [c.name for c in cases] == ["b1k c32 (granian:asgi:h2)", "json c32 (granian:asgi:h2)"]
    assert all(c.http2 for c in cases)


def test_profile_and_route_together_are_refused():
    args = parse(["--base", "x==1", "--head", "x==1", "--profile", "smoke", "--route", "json"])
    with pytest.raises(GateError, match="not both"):
        gate_cli.cases_from_args(args)


def test_experiment_pack_keeps_every_stored_gate_for_analysis(tmp_path):
    from gatecheck.load.experiments import gate_rates

    exp = tmp_path / "exp"
    result = FakeLab(head_factor=0.9).gate(tmp_path / "g", pairs=8, max_pairs=8)
    gate_report.write_outputs(result, exp / "10pct-00")
    (exp / "gates.jsonl").write_text(json.dumps({"kind": "10%", "dir": "10pct-00", "seconds": 60.0}) + "\n")
    packed = tmp_path / "gates.jsonl.gz"
    assert gate_rates.main(["pack", str(exp), str(packed)]) == 0
    from_dir, from_file = gate_rates._load(exp), gate_rates._load(packed)
    assert list(from_file) == ["10%"] and from_file["10%"][0]["runs"] == from_dir["10%"][0]["runs"]


def test_experiment_analysis_says_how_quiet_the_server_cpus_were():
    from gatecheck.load.experiments import gate_rates

    runs = [{"wall": 2.0, "foreign_cpu_seconds": f, "steal_seconds": 0.0} for f in (0.0, 0.01, 0.02, 0.5)]
    (line,) = [x for x in gate_rates.machine_lines({"aa": [{"runs": runs}]}) if x]
    assert "median 0.8%" in line and "max 25.0%" in line and "1 runs (25%) lost more than 5%" in line
    assert gate_rates.machine_lines({"aa": [{"runs": [{"wall": 2.0}]}]}) == []  # older experiments: nothing


def test_every_interval_of_a_multi_case_gate_is_at_the_family_wise_level(tmp_path):
    """4 cases x 1 gated metric: each interval at 1 - 0.05/4, so the gate as a whole holds at 95%."""
    cases = tuple(gate_case(r) for r in ("json", "b1k", "echo1k", "b10k"))
    result = FakeLab(noise=0.02).gate(tmp_path, cases=cases, pairs=8, max_pairs=8, fail_on=("cpu",))
    assert result.options.comparisons == 4
    for r in result.results:
        for d in r.decisions.values():
            assert d.estimate.confidence == pytest.approx(0.9875)
            assert "98.75% interval" in d.reason
    assert "each at 98.75% so that all 4 gated comparisons hold together at 95% (Bonferroni)" in \
        gate_report.render_markdown(result)


def test_experiment_slowdown_kinds_calibrate_per_gate_and_gates_record_the_load_average():
    from gatecheck.load.experiments import gate_rates

    assert gate_rates._slowdown("10%=10%") == ("10%", pytest.approx(0.10))
    argv = gate_rates._gate_argv("granian==2.8.7", "granian==2.8.7", gate_rates.Path("o"), 0.0, 7, ["--profile", "smoke"], 0.1)
    assert argv[-2:] == ["--head-slowdown", "0.1000"] and "--head-cost" not in argv
    assert len(gate_rates._loadavg()) == 3


def test_experiment_replay_without_the_correction_judges_each_interval_at_the_stored_level(tmp_path, monkeypatch):
    from gatecheck.load import stats
    from gatecheck.load.experiments import gate_rates

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


# ---- the latency metric and the off-CPU injection (issue 15, item 3) ---------------------------------------

def test_by_default_both_cpu_and_low_concurrency_latency_are_gated_and_counted_in_the_family():
    """m = cases x gated metrics: one case gated on cpu and lat is two comparisons, each at 97.5%."""
    opts = GateOptions(cases=(CASE,))
    assert opts.fail_on == ("cpu", "lat") and opts.comparisons == 2
    assert opts.interval_confidence == pytest.approx(0.975)
    two = GateOptions(cases=(CASE, gate_case("b1k")))
    assert two.comparisons == 4 and two.interval_confidence == pytest.approx(0.9875)
    with pytest.raises(ValueError, match="low-concurrency run"):
        GateOptions(cases=(CASE,), latency_duration=0)
    assert GateOptions(cases=(CASE,), latency_duration=0, fail_on=("cpu",)).comparisons == 1


def test_every_pair_measures_both_sides_at_low_concurrency_after_their_main_runs(tmp_path):
    lab = FakeLab(noise=0.005)
    result = lab.gate(tmp_path, pairs=8, max_pairs=8)
    assert len(lab.latency_runs) == 16 and sorted(lab.latency_runs) == ["base"] * 8 + ["head"] * 8
    assert all(r["low_latency"]["concurrency"] == 1 and r["low_latency"]["avg_ms"] > 0 for r in result.runs)
    # each pair's latency run takes both servers at once, in the pair's order
    assert lab.latency_runs == [r["side"] for r in result.runs]
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
    assert r.decisions["lat"].verdict is Verdict.REGRESSION and r.decisions["lat"].estimate.ratio == pytest.approx(2.0, rel=0.05)
    assert result.exit_status == 1
    heads = [s for s in lab.started if s.side == "head"]
    assert {(s.env[gate.DELAY_ENV], s.env[gate.DELAY_EVERY_ENV]) for s in heads} == {("2000.000", "10")}
    assert all(gate.DELAY_ENV not in s.env for s in lab.started if s.side == "base")
    assert "injected wait of 2000 µs without CPU on every 10th request" in gate_report.render_markdown(result)
    # the same gate judged on CPU alone does not see it
    assert gate.analyse(result.runs, dataclasses_replace(result.options, fail_on=("cpu",)))[0].failed(("cpu",)) is False


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
    probes = [s for s in lab.started if s.side == "base" and gate.DELAY_ENV in s.env]
    assert len(probes) == 6  # 3 rounds of the nominal period + 3 of the corrected one, on BASE's interpreter


def test_a_low_concurrency_run_with_errors_leaves_its_pair_out():
    base = {"case": CASE.name, "pair": 0, "side": "base", "rps": 100.0, "ok": 200, "errors": {}, "non_2xx": {},
            "low_latency": {"ok": 50, "errors": {}, "non_2xx": {}, "avg_ms": 0.2, "p50_ms": 0.2}}
    head = dict(base, side="head", low_latency=dict(base["low_latency"], errors={"reset": 1}))
    assert gate_analysis._clean(base) and not gate_analysis._clean(head)


@pytest.mark.parametrize("text, spec", [("10%", ("increase", 0.10)), ("200us", ("wait", (200.0, 1))),
                                        ("200µs", ("wait", (200.0, 1))), ("2ms/30", ("wait", (2000.0, 30))),
                                        ("0.5s", ("wait", (500000.0, 1)))])
def test_head_delay_accepts_a_percentage_or_a_time_with_its_unit(text, spec):
    kind, value = gate_cli.delay_spec(text)
    assert kind == spec[0] and value == pytest.approx(spec[1])


@pytest.mark.parametrize("text", ["200", "abc", "2ms/0", "-1ms", "0us", "2ms/x", "0%"])
def test_head_delay_refuses_a_time_without_unit_or_a_bad_period(text):
    with pytest.raises(argparse.ArgumentTypeError):
        gate_cli.delay_spec(text)
