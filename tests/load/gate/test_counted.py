"""The gate's counted metric: instructions per request under valgrind (load/run/counting.py, load/gate/counted.py).

The parser reads recorded callgrind and cachegrind output (tests/load/data/); the verdicts and the report run on
the fake lab (tests/load/gatefakes.py); one real gate counts granian's instructions under valgrind, kept short.
"""

from __future__ import annotations

import json
import math
import shutil
from pathlib import Path
from types import SimpleNamespace

import pytest

from gatecheck.fixtures import payloads
from gatecheck.load import gate
from gatecheck.load.gate import Verdict, calibrate_loops, t_interval_ratio
from gatecheck.load.gate import report as gate_report
from gatecheck.load.gate.stats import t_quantile
from gatecheck.load.run import CountError, counting
from tests.load.gatefakes import FakeLab

DATA = Path(__file__).resolve().parents[1] / "data"


# ---- reading valgrind's output -----------------------------------------------------------------------


def test_a_recorded_callgrind_dump_gives_its_instructions():
    """A dump vgdb asked a counted granian worker for (head and tail of it; its totals line is the summary's)."""
    text = (DATA / "callgrind-dump-granian-worker.out").read_text()
    assert "desc: Trigger: dump" in text
    assert counting.parse_totals(text) == {"Ir": 17645769}  # the summary line; totals (the file's sum) is 14 more


def test_a_recorded_cachegrind_output_gives_its_instructions():
    text = (DATA / "cachegrind-true.out").read_text()
    assert counting.parse_totals(text) == {"Ir": 127771}


@pytest.mark.parametrize(
    "text", ["", "events: Ir\n", "summary: 12\n", "events: Ir\nsummary: twelve\n", "events: Ir\nsummary: 1 2\n"]
)
def test_what_is_not_a_valgrind_output_is_a_count_error(text):
    with pytest.raises(CountError):
        counting.parse_totals(text)


def test_several_events_are_read_by_name():
    assert counting.parse_totals("events: Ir Dr Dw\nsummary: 10 4\n") == {"Ir": 10, "Dr": 4, "Dw": 0}


def test_a_missing_dump_is_a_count_error_naming_it(tmp_path):
    with pytest.raises(CountError, match="base-0.callgrind.123.1"):
        counting.read_dump(tmp_path, "base-0", 123, 1, timeout=0.1)


def test_valgrind_missing_says_why_in_one_line(monkeypatch):
    monkeypatch.setattr(counting.shutil, "which", lambda name: None)
    reason = counting.valgrind_missing()
    assert reason.startswith("valgrind not found") and "apt-get install valgrind" in reason and "\n" not in reason


def test_the_counted_client_alternates_abba_one_request_at_a_time():
    asked = []
    conns = {side: SimpleNamespace(one=lambda raw, side=side: asked.append(side) or 200) for side in ("base", "head")}
    assert counting.counted_requests(conns, b"GET / HTTP/1.1\r\n\r\n", 4) == {"base": 4, "head": 4}
    assert asked == ["base", "head", "head", "base", "base", "head", "head", "base"]


def test_the_wrapper_counts_every_process_from_a_switch_not_from_the_start(tmp_path):
    wrap = counting.callgrind_wrap(tmp_path, "head-0")
    assert wrap[:2] == ["valgrind", "--tool=callgrind"]
    assert {"--instr-atstart=no", "--trace-children=yes"} <= set(wrap)
    assert f"--callgrind-out-file={tmp_path}/head-0.callgrind.%p" in wrap
    assert counting.COUNT_ENV == {"PYTHONHASHSEED": "0"}


def test_the_wrapper_names_absolute_paths_for_a_relative_out(tmp_path, monkeypatch):
    """The server runs in its staging folder: a relative --out (``gate --out run``) must not reach valgrind as is
    (valgrind could not create its log there and the server exited before answering: no count)."""
    monkeypatch.chdir(tmp_path)
    wrap = counting.callgrind_wrap(Path("run") / "counted", "base-0")
    assert f"--log-file={tmp_path}/run/counted/base-0.valgrind.%p.log" in wrap
    assert f"--callgrind-out-file={tmp_path}/run/counted/base-0.callgrind.%p" in wrap


# ---- the injected counted work ---------------------------------------------------------------------


def test_spin_does_its_units_of_work_and_none_at_zero():
    assert payloads.spin(0) == 0 and payloads.spin(10) == 10 and payloads.spin(5000) == 5000
    assert [payloads.parse_loops(v) for v in (None, "", "0", "12", "-1", "x")] == [None, None, 0, 12, None, None]


def test_head_spins_its_units_and_base_calls_the_same_code_with_none():
    assert gate.injected_env(loops=12) == {gate.LOOPS_ENV: "12"}
    assert gate.idle_env(loops=12) == {gate.LOOPS_ENV: "0"}
    assert gate.idle_env() == {} and gate.injected_env() == {}


def test_a_slowdown_is_sized_by_counting():
    """60,000 instructions per request, 70 per unit: 1% more (x1.0101) is 606 instructions, 9 units (x1.0105)."""
    units, calib = calibrate_loops(60_000, 70.0, 2_000.0, 0.01)
    assert units == 9 and calib["expected_ratio"] == pytest.approx(1.0105)
    assert calibrate_loops(60_000, 70.0, 0.0, 0.0001)[0] == 1  # at least one unit
    with pytest.raises(ValueError):
        calibrate_loops(0, 70.0, 0.0, 0.01)


def test_head_slowdown_where_the_gate_counts_is_counted_work(tmp_path, monkeypatch):
    """With valgrind, --head-slowdown sizes a loop from BASE's counted instructions per request, not a timed burn."""
    from gatecheck.load.gate import running

    probes = []
    monkeypatch.setattr(running, "count_probe", lambda *a, **k: probes.append(k["python"]) or 60_000.0)
    monkeypatch.setattr(running, "spin_cost", lambda python, folder: (70.0, 2_000.0))
    lab = FakeLab(noise=0.005)
    result = lab.gate(tmp_path, pairs=8, max_pairs=8, head_slowdown=0.03)
    assert probes == ["/base/python"] and result.head["loops"] == 27 and "cost_us" not in result.head
    assert lab.lane_specs[0]["envs"] == {"base": {gate.LOOPS_ENV: "0"}, "head": {gate.LOOPS_ENV: "27"}}
    assert result.results[0].decisions["count"].verdict is Verdict.REGRESSION


# ---- statistics and verdicts -------------------------------------------------------------------------


@pytest.mark.parametrize(
    "p, df, t", [(0.975, 1, 12.706), (0.975, 3, 3.182), (0.995, 4, 4.604), (0.9995, 5, 6.869), (0.975, 30, 2.042)]
)
def test_t_quantiles_match_the_tables(p, df, t):
    assert t_quantile(p, df) == pytest.approx(t, abs=1e-3)


def test_the_counted_interval_is_a_t_interval_on_the_log_ratios():
    base, head = [60_000.0] * 4, [60_600.0, 60_720.0, 60_480.0, 60_660.0]
    est = t_interval_ratio(base, head, 0.99)
    logs = [math.log(h / b) for b, h in zip(base, head)]
    mean = sum(logs) / 4
    sd = math.sqrt(sum((x - mean) ** 2 for x in logs) / 3)
    assert est.ratio == pytest.approx(math.exp(mean))
    assert math.log(est.high) - mean == pytest.approx(t_quantile(0.995, 3) * sd / 2)
    assert est.statistic == "geomean-t" and est.n == 4
    with pytest.raises(ValueError):
        t_interval_ratio([1.0], [1.0])


@pytest.mark.parametrize(
    "factor, verdict",
    [(1.0, Verdict.NO_CHANGE), (0.99, Verdict.REGRESSION), (0.97, Verdict.REGRESSION), (1.03, Verdict.IMPROVEMENT)],
)
def test_the_count_decides_at_its_own_threshold(tmp_path, factor, verdict):
    """The fake lane: 0.1% noise per pair; HEAD 1/factor times BASE's instructions. A 1% change is a regression
    at the counted threshold (1%) while the timed metrics, at 5%, call it no change."""
    result = FakeLab(head_factor=factor, noise=0.002).gate(tmp_path, pairs=8, max_pairs=8)
    r = result.results[0]
    assert r.decisions["count"].verdict is verdict and r.decisions["count"].threshold == 0.01
    assert r.decisions["cpu"].threshold == 0.05
    if factor == 0.99:
        assert r.decisions["cpu"].verdict is not Verdict.REGRESSION and result.exit_status == 1


def test_the_report_leads_with_one_line_per_case(tmp_path):
    result = FakeLab(head_factor=0.99, noise=0.002).gate(tmp_path, pairs=8, max_pairs=8)
    text = gate_report.render_markdown(result)
    lead = next(line for line in text.splitlines() if line.startswith("- **json c64"))
    assert lead.index("instructions +") < lead.index("CPU +") < lead.index("latency +")
    assert "moved: instructions" in lead and lead.endswith("❌ regression (instructions)")
    assert (
        "| instructions per request (counted) | 60,0" in text or "| instructions per request (counted) | 59,9" in text
    )
    assert text.index(lead) < text.index("### json c64")


def test_a_wait_moves_latency_alone_and_the_report_says_what_that_points_to(tmp_path):
    lab = FakeLab(noise=0.002)
    result = lab.gate(tmp_path, pairs=8, max_pairs=8, head_delay_us=40.0)
    lead = next(line for line in gate_report.render_markdown(result).splitlines() if line.startswith("- **json"))
    assert "moved: latency: latency alone (a wait, a lock, Nagle)" in lead


def test_where_valgrind_is_missing_the_gate_says_so_once_and_gates_on_the_timed_metrics(tmp_path):
    lab = FakeLab(noise=0.002)
    lab.missing = "valgrind not found on PATH (Debian/Ubuntu: apt-get install valgrind)"
    result = lab.gate(tmp_path, pairs=8, max_pairs=8)
    assert result.options.fail_on == ("cpu", "lat") and "count" not in result.results[0].decisions
    text = gate_report.render_markdown(result)
    assert text.count("instructions per request not measured: valgrind not found on PATH") == 1
    assert result.exit_status == 0


def test_a_lane_that_failed_is_noted_and_the_gate_cannot_say_no_regression(tmp_path):
    """A gated metric that was asked for and not measured rules nothing out: inconclusive (exit 3), never a ✅
    "no regression" that reads as if instructions had been gated."""
    lab = FakeLab(noise=0.002)
    lab.lane_note, lab.lane_fails_at = "counting failed (vgdb 'dump' failed for 123)", 0
    result = lab.gate(tmp_path, pairs=8, max_pairs=8, count_pairs=2)
    assert result.count_note == "instructions per request: counting failed (vgdb 'dump' failed for 123)"
    text = gate_report.render_markdown(result)
    assert "⚠️ instructions per request: counting failed" in text
    assert result.results[0].unmeasured(result.options.fail_on) == ["count"]
    assert result.exit_status == gate.INCONCLUSIVE_STATUS
    assert "❔ **inconclusive**" in text and "instructions per request: not measured, see below" in text


def test_counted_records_replay_exactly(tmp_path):
    result = FakeLab(head_factor=0.99, noise=0.002).gate(tmp_path, pairs=8, max_pairs=8)
    again = gate.analyse(json.loads(json.dumps(result.runs)), result.options)
    assert again[0].decisions["count"] == result.results[0].decisions["count"]
    assert sum(1 for r in result.runs if r.get("lane") == "count") == 2 * result.options.count_pairs


# ---- more counted pairs only to decide --------------------------------------------------------------

# A granian A/A gate of the ninth experiment (granian-aa-03): its 6 pairs' interval, 0.994..1.005 at 99.17%, is
# wider than the 1% threshold, so the count is inconclusive.
GRANIAN_AA_BASE = [61787.1, 61550.85, 61871.97, 61728.44, 61344.40, 62000.54]
GRANIAN_AA_HEAD = [61619.62, 61771.22, 61656.68, 61698.43, 61534.23, 61861.44]
SPEC = {"pairs": 6, "max_pairs": 12, "level": 0.991667, "threshold": 0.01, "size_by": "interval", "seed": 1}


def _records(base, head, first=0):
    return [
        {"kind": "gate-run", "lane": "count", "side": side, "pair": first + i, "instructions_per_request": v}
        for i, pair in enumerate(zip(base, head))
        for side, v in zip(("base", "head"), pair)
    ]


def test_a_count_as_wide_as_its_threshold_is_undecided_and_a_narrow_one_is_not():
    from gatecheck.load.gate.counted import _undecided

    assert _undecided(_records(GRANIAN_AA_BASE, GRANIAN_AA_HEAD), SPEC)
    tight = [x * 1.0005 for x in GRANIAN_AA_BASE[:3]] + [x * 0.9995 for x in GRANIAN_AA_BASE[3:]]
    assert not _undecided(_records(GRANIAN_AA_BASE, tight), SPEC)  # no change, interval 0.1% wide
    assert not _undecided(_records(GRANIAN_AA_BASE, [x * 1.03 for x in GRANIAN_AA_HEAD]), SPEC)  # a regression
    assert _undecided(_records(GRANIAN_AA_BASE[:1], GRANIAN_AA_HEAD[:1]), SPEC)  # one pair decides nothing


def _lane(tmp_path, monkeypatch, spec, head_of):
    """run_lane with its server pairs replaced: each block gives HEAD ``head_of(pair)`` and BASE 60,000."""
    from gatecheck.load.gate import counted

    blocks = []

    def block(pipeline, case, spec, pairs, rng, log):
        blocks.append(list(pairs))
        return _records([60_000.0] * len(pairs), [head_of(p) for p in pairs], pairs[0])

    monkeypatch.setattr(counted, "_block", block)
    case = gate.GateCase.from_dict({"target": "granian:rsgi", "route": "json", "concurrency": 64})
    spec = dict(SPEC, restart_every=3, out_dir=str(tmp_path), cases=[case.to_dict()], **spec)
    lines = []
    return counted.run_lane(spec, lines.append, pipeline=object()), blocks, lines


def test_the_lane_counts_more_pairs_while_undecided_and_inside_the_budget(tmp_path, monkeypatch):
    import time

    noisy = lambda p: 60_000.0 * (1.01 if p % 2 else 0.99)  # 1% either way: undecided at 6 and at 12 pairs
    n, blocks, _ = _lane(tmp_path, monkeypatch, {"deadline": time.time() + 600}, noisy)
    assert blocks == [[0, 1, 2], [3, 4, 5], [6, 7, 8], [9, 10, 11]] and n == 12  # up to max_pairs
    n, blocks, lines = _lane(tmp_path, monkeypatch, {"deadline": time.time() - 1}, noisy)
    assert blocks == [[0, 1, 2], [3, 4, 5]] and n == 6  # the mandatory pairs even past the budget, no more
    assert lines == ["no more counted pairs: 1 case(s) still undecided, but the next would end after the budget"]
    steady = lambda p: 60_000.0 * (1.0002 if p % 2 else 0.9998)
    n, blocks, _ = _lane(tmp_path, monkeypatch, {"deadline": time.time() + 600}, steady)
    assert n == 6  # decided at 6: never counted further
    n, blocks, _ = _lane(tmp_path, monkeypatch, {"deadline": time.time() + 600, "max_pairs": 6}, noisy)
    assert n == 6
    wobbly = lambda p: 60_000.0 * (1.004 if p % 2 else 0.996)  # 0.4% either way: decided at 9 pairs
    n, blocks, _ = _lane(tmp_path, monkeypatch, {"deadline": time.time() + 600}, wobbly)
    assert n == 9


def _settle(procs, *states):
    """True once every process is in one of ``states`` (a signal is delivered asynchronously), within 5 s."""
    import time

    deadline = time.monotonic() + 5
    while time.monotonic() < deadline:
        if all(p.status() in states for p in procs):
            return True
        time.sleep(0.02)
    return False


def test_a_paused_tree_stops_the_root_and_its_servers_only_and_continues_them_after(tmp_path):
    """A real tree: a parent, a child carrying a server token and one without (as the lane's reaper): the parent
    and the server stopped inside, the other never (it must outlive a gate killed meanwhile), all running after,
    also when the block raises; with a process of the waited-for name still running, the root alone; a tree that
    ended stops nothing."""
    import subprocess
    import sys
    import time

    import psutil

    from gatecheck.load.gate.counted import paused_tree
    from gatecheck.servers.tree import TOKEN_ENV

    spin = "[sys.executable, '-c', 'while True: pass']"
    code = (
        f"import os, subprocess, sys, time; subprocess.Popen({spin}, env=dict(os.environ, {TOKEN_ENV}='t')); "
        f"subprocess.Popen({spin}); time.sleep(60)"
    )
    env = {k: v for k, v in __import__("os").environ.items() if k != TOKEN_ENV}
    proc = subprocess.Popen([sys.executable, "-c", code], env=env)
    try:
        root = psutil.Process(proc.pid)
        deadline = time.monotonic() + 10
        while len(root.children()) < 2 and time.monotonic() < deadline:
            time.sleep(0.05)
        children = root.children()
        server = next(p for p in children if TOKEN_ENV in p.environ())
        other = next(p for p in children if p != server)
        with pytest.raises(RuntimeError):
            with paused_tree(proc.pid) as n:
                assert n == 2 and _settle([root, server], psutil.STATUS_STOPPED)
                assert other.status() != psutil.STATUS_STOPPED
                raise RuntimeError("the latency run failed")
        assert _settle([root, server, other], psutil.STATUS_RUNNING, psutil.STATUS_SLEEPING)
        with paused_tree(proc.pid, wait_for=other.name(), wait=0.5) as n:
            assert n == 1 and server.status() != psutil.STATUS_STOPPED  # it did not end: the root alone
        assert _settle([root, server, other], psutil.STATUS_RUNNING, psutil.STATUS_SLEEPING)
    finally:
        for p in psutil.Process(proc.pid).children(recursive=True):
            p.kill()
        proc.kill()
        proc.wait()
    with paused_tree(None) as n:
        assert n == 0


# ---- one real counted gate -------------------------------------------------------------------------


def _can_count() -> bool:
    import importlib.util

    return importlib.util.find_spec("granian") is not None and counting.valgrind_missing() is None


@pytest.mark.skipif(not _can_count(), reason="needs granian and valgrind")
def test_a_real_counted_gate_sees_injected_work_that_timing_calls_no_change(tmp_path):
    """granian:rsgi under callgrind, kept short: 3 counted pairs of 60 requests per side, timed pairs of 0.2 s.
    HEAD does 300 units of counted work per request (about +30% instructions): the count is a regression."""
    import sys

    from gatecheck.load.gate import cli as gate_cli
    from gatecheck.load.run import find_oha

    try:
        find_oha(build=False)
    except Exception:  # noqa: BLE001 - the timed pairs need oha
        pytest.skip("oha is not built")
    out = tmp_path / "gate"
    status = gate_cli.main(
        [
            "--base",
            sys.executable,
            "--head",
            sys.executable,
            "--head-loops",
            "300",
            "--count-pairs",
            "3",
            "--count-requests",
            "60",
            "--pairs",
            "8",
            "--max-pairs",
            "8",
            "--duration",
            "0.2",
            "--warmup",
            "0.1",
            "--latency-duration",
            "0.1",
            "--fail-on",
            "count",
            "--out",
            str(out),
            "--quiet",
        ]
    )
    doc = json.loads((out / "pairs.json").read_text())
    counted = [r for r in doc["runs"] if r.get("lane") == "count"]
    assert len(counted) == 6 and all(r["requests"] == 60 for r in counted), doc.get("count_note")
    count = doc["results"][0]["metrics"]["count"]
    assert status == 1 and count["verdict"] == "regression" and 1.1 < count["ratio"] < 1.6, count
    assert all(sum(r["processes"].values()) == r["instructions"] for r in counted)
    assert not list((out / "counted").glob("*.callgrind.*")), "dumps are deleted once read"
    assert shutil.which("valgrind")
