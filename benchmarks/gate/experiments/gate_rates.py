"""Measure the gate's false-alarm rate and power on this machine, then analyse the stored gates.

    python benchmarks/gate/experiments/gate_rates.py calibrate --base granian==2.8.7
    python benchmarks/gate/experiments/gate_rates.py run --out results/gate-rates --base granian==2.8.7 \\
        --cost 5%=1.7 --cost 10%=3.6 --rounds 20
    python benchmarks/gate/experiments/gate_rates.py analyse results/gate-rates

A lab script, not part of the product: it is not in the wheel, and it needs ``gatecheck`` importable (installed,
or ``PYTHONPATH=.`` in a checkout). Its packed experiments are in ``data/`` beside it and in ``benchmarks/gate/``.

Rules of this module:

1. Every gate here is the real gate (``load.gate.main_from_args`` through its own argument parser),
   so what is measured is what users run, including its time per gate.
2. Kinds are interleaved round by round (A/A, 5%, 10%, A/A, 5%, 10%, ...): whatever else the shared
   machine is doing at the time hits every kind alike.
3. The injected cost is fixed in microseconds for a whole experiment (from ``calibrate``), so each
   kind is one known treatment; its real size is then estimated from all gates of the kind pooled.
   ``--slowdown LABEL=PCT`` instead lets each gate calibrate its own cost (``--head-slowdown``), as
   a user proving detection would.
5. Each gate's line in ``gates.jsonl`` records the machine's load average before and after it
   (``/proc/loadavg``): the machine is shared, and how busy it was belongs to the data.
4. Each gate keeps its full ``pairs.json``; ``analyse`` recomputes verdicts offline, exactly (the
   bootstrap is seeded), for other thresholds, metrics and pair counts, and replays the gate's
   stopping rule on the stored pairs. ``gates.jsonl`` gets one line per finished gate, so an
   interrupted experiment keeps every gate it finished.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from dataclasses import replace
from pathlib import Path
from typing import Any, Dict, List, Optional, Sequence, Tuple

from gatecheck.load import gate as gate_mod
from gatecheck.load.gate import SIZE_RULES, GateCase, GateOptions, Verdict, analyse, percentile
from gatecheck.load.gate import cli as gate_cli
from gatecheck.load.gate.analysis import _decisive
from gatecheck.load.plan import server_or_target
from gatecheck.load.records import append_record, append_records, load_document, load_records
from gatecheck.load.run import INTERRUPTED


#: One ``experiment-gate`` record (:mod:`load.records.results`) per finished gate of an experiment directory.
GATES_FILE = "gates.jsonl"


def _gate_argv(base: str, head: str, out: Path, cost_us: float, seed: int, extra: Sequence[str],
              slowdown: Optional[float] = None, delay: Optional[str] = None) -> List[str]:
    argv = ["--base", base, "--head", head, "--out", str(out), "--seed", str(seed), "--quiet", *extra]
    if delay:
        argv += ["--head-delay", delay]
    if cost_us:
        argv += ["--head-cost", f"{cost_us:.3f}"]
    if slowdown:
        argv += ["--head-slowdown", f"{slowdown:.4f}"]
    return argv


def _loadavg() -> List[float]:
    """The 1, 5 and 15 minute load averages (empty where the platform has none)."""
    try:
        return [round(v, 2) for v in os.getloadavg()]
    except (AttributeError, OSError):
        return []


def cmd_run(args: argparse.Namespace) -> int:
    parser = argparse.ArgumentParser(prog="gate")
    gate_cli.add_arguments(parser)
    kinds: List[Tuple[str, float, Optional[float], Optional[str]]] = (
        ([] if args.no_aa else [("aa", 0.0, None, None)]) + [(label, 0.0, None, spec) for label, spec in args.delay]
        + [(label, us, None, None) for label, us in args.cost] + [(label, 0.0, pct, None) for label, pct in args.slowdown])
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    log = out / GATES_FILE
    done: Dict[str, int] = {}
    for rec in (load_records([log]) if log.exists() else []):
        done[rec["treatment"]] = done.get(rec["treatment"], 0) + 1
    for rnd in range(args.rounds):
        for kind, cost, slowdown, delay in kinds:
            if done.get(kind, 0) > rnd:
                continue  # resumed: this round of this kind is already measured
            gdir = out / f"{kind.replace('%', 'pct')}-{rnd:02d}"
            seed = 1000 * rnd + len(kind) * 7 + int(cost * 1000)
            argv = _gate_argv(args.base, args.head or args.base, gdir, cost, seed, args.gate_args, slowdown, delay)
            t, load0 = time.monotonic(), _loadavg()
            status = gate_cli.main_from_args(parser.parse_args(argv))
            took = time.monotonic() - t
            if status == INTERRUPTED:  # Ctrl-C or SIGTERM: this gate is not a result; a resumed run redoes it
                print(f"interrupted during {gdir.name}; not recorded; run the same command to resume", flush=True)
                return INTERRUPTED
            summary: Dict[str, Any] = {"kind": "experiment-gate", "treatment": kind, "round": rnd, "cost_us": cost, "exit_status": status,
                                       "seconds": round(took, 1), "dir": gdir.name, "slowdown": slowdown, "delay": delay,
                                       "loadavg_before": load0, "loadavg_after": _loadavg()}
            pairs = gdir / "pairs.json"
            if pairs.exists():
                doc = load_document(pairs)
                summary["pairs"] = doc["pairs"]
                summary["verdicts"] = {r["case"]: {m: (v or {}).get("verdict") for m, v in r["metrics"].items()}
                                       for r in doc["results"]}
            print(json.dumps(append_record(log, summary), sort_keys=True), flush=True)
    return 0


def _options_from(doc: Dict[str, Any]) -> GateOptions:
    o = dict(doc["options"])
    o["cases"] = tuple(GateCase.from_dict(c) for c in o["cases"])
    o.setdefault("size_by", "estimate")  # gates stored before the rule had a name used this one
    o["alpha_weights"] = tuple((m, float(w)) for m, w in o.get("alpha_weights", ()))  # absent: equal shares, as run
    for key in ("fail_on", "server_cpus", "oha_cpus"):
        if o.get(key) is not None:
            o[key] = tuple(o[key])
    return GateOptions(**o)


def replay(doc: Dict[str, Any], *, threshold: float, fail_on: Sequence[str], min_pairs: int, max_pairs: int,
           budget: Optional[float] = None, statistic: Optional[str] = None, resamples: int = 2000,
           uncorrected: bool = False, size_by: Optional[str] = None,
           alpha_weights: Optional[Tuple[Tuple[str, float], ...]] = None) -> Tuple[Dict[str, Any], int, float]:
    """Re-run the gate's decision and stopping rule on stored pairs; return (verdicts, pairs used, seconds).

    ``uncorrected`` judges every interval at the stored confidence itself, as the gate did before the
    family-wise correction: what the same pairs would have said without it. ``alpha_weights`` replaces the
    stored split of alpha over the gated metrics (``()``: equal shares).

    Stopping is replayed exactly as ``run_gate`` does it: from ``min_pairs`` on, stop at the first
    pair count whose gated intervals are all narrower than the threshold, or when the next pair would
    overrun ``budget`` (using the stored end time of each pair), or at ``max_pairs``.
    """
    opts = _options_from(doc)
    opts = replace(opts, threshold=threshold, fail_on=tuple(fail_on), pairs=min_pairs,
                   max_pairs=max(max_pairs, min_pairs), statistic=statistic or opts.statistic, resamples=resamples,
                   size_by=size_by or opts.size_by,
                   alpha_weights=opts.alpha_weights if alpha_weights is None else alpha_weights)
    if uncorrected:  # each interval at ``confidence``: the family's level that makes it so
        opts = replace(opts, confidence=1.0 - (1.0 - opts.confidence) * opts.comparisons, alpha_weights=())
    runs = doc["runs"]
    stored = doc["pairs"]
    ends = {}
    for r in runs:
        ends[r["pair"]] = max(ends.get(r["pair"], 0.0), r.get("gate_seconds", 0.0))
    setup = doc.get("setup_seconds", 0.0)
    durations = [ends[p] - (ends[p - 1] if p else setup) for p in sorted(ends)]
    used = min(stored, max_pairs)
    for k in range(min_pairs, min(stored, max_pairs) + 1):
        res = analyse(runs, opts, max_pair=k)
        if _decisive(res, opts.fail_on):
            used = k
            break
        if budget is not None and ends.get(k - 1, 0) + max(durations[:k]) > budget:
            used = k
            break
    results = analyse(runs, opts, max_pair=used)
    verdicts = {r.case.name: {m: (d.verdict.value if d else None) for m, d in r.decisions.items()} for r in results}
    failed = any(r.failed(opts.fail_on) for r in results)
    seconds = ends.get(used - 1, 0.0) + 0.5  # + stopping the last pair's servers
    return {"verdicts": verdicts, "failed": failed,
            "ratios": {r.case.name: {m: (d.estimate.ratio if d else None) for m, d in r.decisions.items()}
                       for r in results}}, used, seconds


def _stored_gates(out: Path) -> List[Dict[str, Any]]:
    """An experiment's ``experiment-gate`` records, each with its ``gate`` (the gate's pairs.json), from an
    experiment directory or a packed ``.jsonl.gz`` (see ``pack``); gates that left no pairs.json are left out."""
    if out.is_file():
        return load_records([out], kinds=("experiment-gate",))
    stored = []
    for rec in load_records([out / GATES_FILE], kinds=("experiment-gate",)):
        p = out / rec["dir"] / "pairs.json"
        if p.exists():
            stored.append({**rec, "gate": load_document(p)})
    return stored


def _load(out: Path) -> Dict[str, List[Dict[str, Any]]]:
    """Stored gates by treatment, each gate with its wall time and the load averages around it."""
    by_kind: Dict[str, List[Dict[str, Any]]] = {}
    for rec in _stored_gates(out):
        doc = dict(rec["gate"], _wall=rec["seconds"],
                   _loadavg=rec.get("loadavg_before", []) + rec.get("loadavg_after", []))
        by_kind.setdefault(rec["treatment"], []).append(doc)
    return by_kind


def pooled_ratio(docs: Sequence[Dict[str, Any]], metric: str) -> Optional[float]:
    """Geometric mean of every pair's HEAD/BASE ratio over all gates of a kind: the true effect size."""
    import math

    logs = []
    for doc in docs:
        for r in doc["results"]:
            m = r["metrics"].get(metric)
            if m:
                logs += [math.log(h / b) for b, h in zip(m["base"], m["head"])]
    return math.exp(sum(logs) / len(logs)) if logs else None


def machine_lines(by_kind: Dict[str, List[Dict[str, Any]]]) -> List[str]:
    """How quiet the server's CPUs were: other processes' CPU time and steal per run (recorded since
    the foreign-CPU diagnostic exists; older experiments have none)."""
    runs = [r for ds in by_kind.values() for d in ds for r in d["runs"] if "foreign_cpu_seconds" in r]
    if not runs:
        return []
    share = sorted(r["foreign_cpu_seconds"] / max(r["wall"], 1e-9) for r in runs)
    steal = sorted(r.get("steal_seconds", 0.0) / max(r["wall"], 1e-9) for r in runs)
    disturbed = sum(1 for v in share if v > 0.05)
    return ["", f"The server's CPU during the {len(runs)} measured runs: other processes took a median "
            f"{statistics.median(share):.1%} of it (90th percentile {percentile(share, 90):.1%}, max {share[-1]:.1%}); "
            f"{disturbed} runs ({disturbed / len(runs):.0%}) lost more than 5%; hypervisor steal: median "
            f"{statistics.median(steal):.1%}, max {steal[-1]:.1%}."]


def _kind_order(kind: str) -> Tuple[bool, str, float]:
    """A/A first, then by label and size: 'cpu3%' < 'cpu5%' < 'lat10%' (older experiments: '5%' < '10%')."""
    digits = "".join(c for c in kind if c.isdigit() or c == ".")
    try:
        size = float(digits)
    except ValueError:
        size = 0.0
    return kind != "aa", kind.rstrip("0123456789.%"), size


def _weights_text(weights: Optional[Tuple[Tuple[str, float], ...]]) -> str:
    if weights is None:
        return "as run"
    return ",".join(f"{m}={w:g}" for m, w in weights) or "equal"


def cmd_analyse(args: argparse.Namespace) -> int:
    out = Path(args.out)
    by_kind = _load(out)
    kinds = sorted(by_kind, key=_kind_order)
    lines = ["Gates per kind: " + ", ".join(f"{k}: {len(by_kind[k])}" for k in kinds), ""]
    lines += ["True effect (all pairs of all gates of a kind pooled, HEAD/BASE geometric mean):", "",
              "| kind | RPS | p99 | server CPU/request | mean latency c1 | median latency c1 |",
              "| --- | ---: | ---: | ---: | ---: | ---: |"]
    for k in kinds:
        vals = [pooled_ratio(by_kind[k], m) for m in ("rps", "p99", "cpu", "lat", "lat50")]
        lines.append(f"| {k} | " + " | ".join(f"{v:.3f}" if v else "-" for v in vals) + " |")
    lines += ["", "Failed gates (exit status 1) per kind, with how many were inconclusive on a gated metric:", "",
              "| gated on | statistic | size by | alpha weights | threshold | pairs (min..max) | " + " | ".join(
        f"{k}" for k in kinds) + " | pairs used (median, max) | seconds per gate (median, max) |",
              "| --- | --- | --- | --- | ---: | --- | " + " | ".join("---:" for _ in kinds) + " | --- | --- |"]
    plans = [(f, st, rule, w, t, lo, hi) for f in args.metrics for st in args.statistics for rule in args.size_rules or [None]
             for w in args.alpha_weights or [None] for t in args.thresholds for lo, hi in args.pair_plans]
    for fail_on, statistic, rule, weights, threshold, lo, hi in plans:
        cells, used_all, secs_all = [], [], []
        for k in kinds:
            failed = inconclusive = 0
            for doc in by_kind[k]:
                res, used, secs = replay(doc, threshold=threshold, fail_on=fail_on.split(","), min_pairs=lo,
                                         max_pairs=hi, budget=args.budget, statistic=statistic,
                                         uncorrected=args.uncorrected, size_by=rule, alpha_weights=weights)
                failed += res["failed"]
                inconclusive += any(v.get(m) == Verdict.INCONCLUSIVE.value for v in res["verdicts"].values()
                                    for m in fail_on.split(","))
                used_all.append(used)
                secs_all.append(secs + doc.get("setup_seconds", 0.0))
            cells.append(f"{failed}/{len(by_kind[k])} ({inconclusive} inc.)")
        lines.append(f"| {fail_on} | {statistic} | {rule or 'as run'} | {_weights_text(weights)} | {threshold:.0%} | "
                     f"{lo}..{hi} | " + " | ".join(cells)
                     + f" | {statistics.median(used_all):g}, {max(used_all)} | "
                     f"{statistics.median(secs_all):.0f}, {max(secs_all):.0f} |")
    lines += ["", "Wall time of the stored gates (full --max-pairs, including env check and route checks): "
              f"median {statistics.median(d['_wall'] for ds in by_kind.values() for d in ds):.0f} s, "
              f"max {max(d['_wall'] for ds in by_kind.values() for d in ds):.0f} s."]
    lines += machine_lines(by_kind)
    one_minute = [d["_loadavg"][i] for ds in by_kind.values() for d in ds for i in (0, 3) if len(d["_loadavg"]) == 6]
    if one_minute:
        lines += ["", f"1-minute load average at the start and end of each gate ({os.cpu_count()} CPUs): "
                  f"median {statistics.median(one_minute):.2f}, min {min(one_minute):.2f}, max {max(one_minute):.2f}."]
    text = "\n".join(lines)
    print(text)
    if args.write:
        Path(args.write).write_text(text + "\n", encoding="utf-8")
    return 0


def cmd_pack(args: argparse.Namespace) -> int:
    """One gzipped record per finished gate (its gates.jsonl record with its pairs.json as ``gate``), to commit."""
    if Path(args.to).exists():
        print(f"error: {args.to} exists; pack into a new file", file=sys.stderr)
        return 2
    stored = _stored_gates(Path(args.out))
    append_records(Path(args.to), stored)
    print(f"packed {len(stored)} gates into {args.to}")
    return 0


def cmd_calibrate(args: argparse.Namespace) -> int:
    """Measure the --head-cost for each asked slowdown on BASE's install (load/gate/calibration.py), as the
    gate's --head-slowdown does but with more rounds; one JSON line per slowdown."""
    from gatecheck.load.gate import calibrate_cost
    from gatecheck.load.plan import route
    from gatecheck.load.run import Pipeline, available_cpus, ensure_env, setup_for, split_cpus

    env = ensure_env(args.base, package="granian", module="granian")
    pin = split_cpus(available_cpus())
    pipeline = Pipeline(Path("/tmp/gatecheck-calibrate"), server_cpus=pin.server, oha_cpus=pin.oha)
    case = GateCase(setup_for(args.target), args.route, args.concurrency)
    probe = gate_mod.burn_probe(pipeline, case, route(args.route).resolve(), python=env.python, warmup=0.5, duration=2.0)
    say = lambda line: print(line, file=sys.stderr, flush=True)
    for s in args.slowdowns:
        cost, info = calibrate_cost(probe, s, rounds=args.rounds, log=say)
        print(json.dumps({k: round(v, 3) if isinstance(v, float) else v for k, v in info.items()}, sort_keys=True), flush=True)
    for increase in args.delays:  # the off-CPU wait: every how many requests a 2 ms wait raises mean latency at c1
        from gatecheck.load.gate import DELAY_WAIT_US, calibrate_delay

        lat = gate_mod.delay_probe(pipeline, case, route(args.route).resolve(), python=env.python,
                                   latency_fn=gate_mod.running._interleaved, duration=1.0, wait_us=DELAY_WAIT_US)
        every, info = calibrate_delay(lat, increase, DELAY_WAIT_US, rounds=args.rounds, log=say)
        print(json.dumps({k: round(v, 3) if isinstance(v, float) else v for k, v in info.items()}, sort_keys=True), flush=True)
    return 0


def _cost(text: str) -> Tuple[str, float]:
    label, _, us = text.partition("=")
    try:
        return label, float(us)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected LABEL=MICROSECONDS such as '5%=1.7', got {text!r}") from None


def _delay(text: str) -> Tuple[str, str]:
    label, _, spec = text.partition("=")
    if not label or not spec:
        raise argparse.ArgumentTypeError(f"expected LABEL=DELAY, e.g. lat10%=2ms/37, got {text!r}")
    gate_cli.delay_spec(spec)  # refuses what the gate would refuse
    return label, spec


def _slowdown(text: str) -> Tuple[str, float]:
    label, _, pct = text.partition("=")
    if not label or not pct:
        raise argparse.ArgumentTypeError(f"expected LABEL=PERCENT, e.g. 10%=10%, got {text!r}")
    return label, gate_cli.percent(pct)


def _pairs(text: str) -> Tuple[int, int]:
    lo, _, hi = text.partition("..")
    return int(lo), int(hi or lo)


def main(argv: Optional[Sequence[str]] = None) -> int:
    p = argparse.ArgumentParser(prog="python benchmarks/gate/experiments/gate_rates.py",
                                description=__doc__.split("\n\n")[0])
    sub = p.add_subparsers(dest="command", required=True)
    run = sub.add_parser("run", help="run rounds of A/A and injected-cost gates, interleaved")
    run.add_argument("--out", required=True, help="experiment directory (resumes if it exists)")
    run.add_argument("--base", required=True, help="install spec used on both sides")
    run.add_argument("--head", help="HEAD install (default: the same as --base)")
    run.add_argument("--cost", type=_cost, action="append", default=[], help="LABEL=MICROSECONDS, repeatable")
    run.add_argument("--slowdown", type=_slowdown, action="append", default=[],
                     help="LABEL=PERCENT, repeatable: gates run with --head-slowdown PERCENT (each calibrates its cost)")
    run.add_argument("--delay", type=_delay, action="append", default=[],
                     help="LABEL=DELAY, repeatable: a kind whose HEAD waits off CPU (--head-delay DELAY, e.g. lat10%%=2ms/37)")
    run.add_argument("--rounds", type=int, default=20, help="gates per kind (default 20)")
    run.add_argument("--no-aa", action="store_true", help="only the --cost kinds (a follow-up to an experiment that has its A/A gates)")
    run.add_argument("gate_args", nargs="*", help="more gate options after --, e.g. -- --pairs 16 --max-pairs 16")
    ana = sub.add_parser("analyse", help="rates from a finished (or partial) experiment")
    ana.add_argument("out", help="experiment directory, or a .jsonl.gz made by 'pack'")
    ana.add_argument("--metrics", nargs="+", default=["rps", "cpu", "rps,cpu", "p99"], help="gated metric sets")
    ana.add_argument("--statistics", nargs="+", default=["geomean"], help="statistics to replay (geomean, mean, median)")
    ana.add_argument("--thresholds", type=gate_cli.percent, nargs="+", default=[0.05, 0.03])
    ana.add_argument("--size-rules", nargs="+", choices=SIZE_RULES, default=None,
                     help="size rules to replay (verdict.decide's size_by; default: each gate's own)")
    ana.add_argument("--alpha-weights", type=gate_cli.alpha_weights_spec, nargs="+", default=None,
                     help="splits of alpha to replay, e.g. 'equal' 'cpu=4,lat=1' (default: each gate's own)")
    ana.add_argument("--pair-plans", type=_pairs, nargs="+", default=[(8, 8), (10, 10), (16, 16), (8, 16)],
                     help="MIN..MAX pairs to replay, e.g. 8..16")
    ana.add_argument("--budget", type=float, default=None, help="replay a time budget in seconds")
    ana.add_argument("--write", help="also write the Markdown to this file")
    ana.add_argument("--uncorrected", action="store_true",
                     help="judge each interval at --confidence itself (no family-wise correction), for comparison")
    pk = sub.add_parser("pack", help="pack an experiment's gates into one .jsonl.gz to keep")
    pk.add_argument("out", help="experiment directory")
    pk.add_argument("to", help="file to write, e.g. benchmarks/gate/experiments/data/gate-rates.jsonl.gz")
    cal = sub.add_parser("calibrate", help="measure the --head-cost for given slowdowns on BASE's install")
    cal.add_argument("--base", required=True)
    cal.add_argument("--target", type=server_or_target, default="granian:rsgi")
    cal.add_argument("--route", default="json")
    cal.add_argument("--concurrency", type=int, default=64)
    cal.add_argument("--rounds", type=int, default=8, help="rounds of BASE, cost, 2 x cost (default 8)")
    cal.add_argument("--slowdowns", type=gate_cli.percent, nargs="*", default=[0.05, 0.10])
    cal.add_argument("--delays", type=gate_cli.percent, nargs="*", default=[],
                     help="latency increases to calibrate --head-delay for (e.g. 10%%): every how many requests a 2 ms wait")
    args = p.parse_args(argv)
    return {"run": cmd_run, "analyse": cmd_analyse, "calibrate": cmd_calibrate, "pack": cmd_pack}[args.command](args)


if __name__ == "__main__":
    sys.exit(main())
