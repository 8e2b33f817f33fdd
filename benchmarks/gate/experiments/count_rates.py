"""The counted metric's experiments: kinds of gates given as gate options, interleaved round by round (several
targets in one experiment), the injected counted work sized by counting, and the rates per gated metric.

    python benchmarks/gate/experiments/count_rates.py calibrate --base PY --target granian:rsgi --increases 1% 3%
    python benchmarks/gate/experiments/count_rates.py run --out results/count-rates --base PY --rounds 20 \\
        --kind 'granian-aa=' --kind 'granian-count1%=--head-loops 10' --kind 'uvicorn-aa=--target uvicorn:asgi'
    python benchmarks/gate/experiments/count_rates.py analyse results/count-rates

A lab script beside ``gate_rates.py`` (whose record format, packing and replay it reuses): not in the wheel, it
needs ``gatecheck`` importable. Rules as there: every gate is the real gate through its own argument parser, the
kinds are interleaved round by round, each gate's ``pairs.json`` is kept and one ``experiment-gate`` line per
finished gate goes to ``gates.jsonl`` (with the load averages around it), and ``run`` resumes where it stopped.
"""

from __future__ import annotations

import argparse
import json
import math
import shlex
import statistics
import sys
import time
from pathlib import Path
from typing import Any, Dict, List, Optional, Sequence, Tuple

sys.path.insert(0, str(Path(__file__).resolve().parent))

import gate_rates  # noqa: E402 - the sibling tool, from this folder

from gatecheck.load.gate import cli as gate_cli  # noqa: E402
from gatecheck.load.records import append_record, load_document, load_records  # noqa: E402
from gatecheck.load.run import INTERRUPTED, stop_on_signals  # noqa: E402

GATED = ("count", "cpu", "lat")


def _kind(text: str) -> Tuple[str, List[str]]:
    label, _, args = text.partition("=")
    if not label:
        raise argparse.ArgumentTypeError(f"expected LABEL=GATE OPTIONS, e.g. 'count1%=--head-loops 10', got {text!r}")
    return label, shlex.split(args)


def _set_aside(gdir: Path) -> None:
    """An unrecorded gate's folder (the gate was interrupted) is kept beside it, so the gate can run again."""
    if not gdir.exists():
        return
    n = 1
    while gdir.with_name(f"{gdir.name}.interrupted-{n}").exists():
        n += 1
    gdir.rename(gdir.with_name(f"{gdir.name}.interrupted-{n}"))
    print(f"{gdir.name}: an interrupted gate's folder, kept as {gdir.name}.interrupted-{n}", flush=True)


def cmd_run(args: argparse.Namespace) -> int:
    """Every kind once per round, in the order given, each gate through the real CLI; resumes. SIGTERM and
    Ctrl-C interrupt the gate under way as they do the gate's own command (its lane and servers stopped)."""
    stop_on_signals()
    parser = argparse.ArgumentParser(prog="gate")
    gate_cli.add_arguments(parser)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    log = out / gate_rates.GATES_FILE
    done: Dict[str, int] = {}
    for rec in (load_records([log]) if log.exists() else []):
        done[rec["treatment"]] = done.get(rec["treatment"], 0) + 1
    for rnd in range(args.rounds):
        for n, (kind, extra) in enumerate(args.kind):
            if done.get(kind, 0) > rnd:
                continue
            gdir = out / f"{kind.replace('%', 'pct')}-{rnd:02d}"
            _set_aside(gdir)
            argv = ["--base", args.base, "--head", args.head or args.base, "--out", str(gdir),
                    "--seed", str(1000 * rnd + 7 * n), "--quiet", *extra, *args.gate_args]
            t, load0 = time.monotonic(), gate_rates._loadavg()
            status = gate_cli.main_from_args(parser.parse_args(argv))
            took = time.monotonic() - t
            if status == INTERRUPTED:
                print(f"interrupted during {gdir.name}; not recorded; run the same command to resume", flush=True)
                return INTERRUPTED
            summary: Dict[str, Any] = {"kind": "experiment-gate", "treatment": kind, "round": rnd, "cost_us": 0.0,
                                       "exit_status": status, "seconds": round(took, 1), "dir": gdir.name,
                                       "gate_args": extra, "loadavg_before": load0,
                                       "loadavg_after": gate_rates._loadavg()}
            if (gdir / "pairs.json").exists():
                doc = load_document(gdir / "pairs.json")
                summary["pairs"] = doc["pairs"]
                summary["verdicts"] = {r["case"]: {m: (v or {}).get("verdict") for m, v in r["metrics"].items()}
                                       for r in doc["results"]}
            print(json.dumps(append_record(log, summary), sort_keys=True), flush=True)
    return 0


def _pooled(docs: Sequence[Dict[str, Any]], metric: str) -> str:
    ratio = gate_rates.pooled_ratio(docs, metric)
    return f"{ratio:.4f}" if ratio else "-"


def _flagged(doc: Dict[str, Any], metric: str) -> bool:
    return any((r["metrics"].get(metric) or {}).get("verdict") == "regression" for r in doc["results"])


def cmd_analyse(args: argparse.Namespace) -> int:
    """Per kind: the pooled effect per metric, failed gates and which gated metric flagged them, time, load."""
    by_kind = gate_rates._load(Path(args.out))
    kinds = sorted(by_kind, key=lambda k: (k.split("-")[0], gate_rates._kind_order(k.split("-", 1)[-1])))
    lines = ["Pooled effect (every pair of every gate of a kind, HEAD/BASE geometric mean) and failed gates:", "",
             "| kind | gates | instructions | server CPU | mean latency c1 | failed | by count | by cpu | by lat "
             "| count inconclusive | s per gate (median, max) | load avg (median, max) |",
             "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | --- | --- |"]
    for k in kinds:
        docs = by_kind[k]
        walls = [d["_wall"] for d in docs]
        loads = [d["_loadavg"][i] for d in docs for i in (0, 3) if len(d["_loadavg"]) == 6]
        inconclusive = sum(any((r["metrics"].get("count") or {}).get("verdict") == "inconclusive"
                               for r in d["results"]) for d in docs)
        lines.append(f"| {k} | {len(docs)} | {_pooled(docs, 'count')} | {_pooled(docs, 'cpu')} | "
                     f"{_pooled(docs, 'lat')} | {sum(d['exit_status'] == 1 for d in docs)}/{len(docs)} | "
                     + " | ".join(f"{sum(_flagged(d, m) for d in docs)}/{len(docs)}" for m in GATED)
                     + f" | {inconclusive} | {statistics.median(walls):.0f}, {max(walls):.0f} | "
                     + (f"{statistics.median(loads):.1f}, {max(loads):.1f} |" if loads else "- |"))
    notes = sorted({d.get("count_note") for ds in by_kind.values() for d in ds if d.get("count_note")})
    lines += ["", *(f"- count note: {n}" for n in notes)]
    spread = {k: [math.log(h / b) for d in by_kind[k] for r in d["results"]
                  for b, h in zip((r["metrics"].get("count") or {}).get("base", []),
                                  (r["metrics"].get("count") or {}).get("head", []))] for k in kinds}
    lines += ["", "Counted pairs: standard deviation of the per-pair log ratio, per kind: "
              + ", ".join(f"{k} {statistics.stdev(v):.4f} ({len(v)} pairs)" for k, v in spread.items() if len(v) > 1)]
    lines += ["", *_precision(by_kind, kinds)]
    text = "\n".join(lines)
    print(text)
    if args.write:
        Path(args.write).write_text(text + "\n", encoding="utf-8")
    return 0


def _width(doc: Dict[str, Any], metric: str) -> Optional[float]:
    m = (doc["results"][0]["metrics"].get(metric) or {}) if doc["results"] else {}
    return m["high"] - m["low"] if m.get("high") is not None else None


def _median_of(values: Sequence[Optional[float]], fmt: str) -> str:
    got = [v for v in values if v is not None]
    return fmt.format(statistics.median(got)) if got else "-"


def _precision(by_kind: Dict[str, List[Dict[str, Any]]], kinds: Sequence[str]) -> List[str]:
    """Per kind, medians over its gates (first case): BASE's mean latency at one connection, the widths of the
    latency, CPU and count intervals, timed and counted pairs: what a lane beside the timed runs costs them."""
    lines = ["Precision (medians over each kind's gates, first case):", "",
             "| kind | BASE mean latency c1 (µs) | latency interval width | CPU interval width | "
             "count interval width | timed pairs | counted pairs |", "| --- | ---: | ---: | ---: | ---: | ---: | ---: |"]
    for k in kinds:
        docs = [d for d in by_kind[k] if d["results"]]
        lat = [statistics.median(d["results"][0]["metrics"]["lat"]["base"]) * 1000
               if d["results"][0]["metrics"].get("lat") else None for d in docs]
        counted = [(d["results"][0]["metrics"].get("count") or {}).get("n") for d in docs]
        lines.append(f"| {k} | {_median_of(lat, '{:.0f}')} | {_median_of([_width(d, 'lat') for d in docs], '{:.3f}')} | "
                     f"{_median_of([_width(d, 'cpu') for d in docs], '{:.3f}')} | "
                     f"{_median_of([_width(d, 'count') for d in docs], '{:.4f}')} | "
                     f"{_median_of([d['pairs'] for d in docs], '{:g}')} | {_median_of(counted, '{:g}')} |")
    return lines


def cmd_calibrate(args: argparse.Namespace) -> int:
    """Units of counted work for each asked increase of instructions per request (x(1 + increase)), by counting:
    BASE's instructions per request over ``--probes`` counted servers, and one unit's in a bare interpreter."""
    from gatecheck.load.gate import GateCase, count_probe, spin_cost
    from gatecheck.load.plan import route
    from gatecheck.load.run import Pipeline, setup_for

    folder = Path(args.scratch)
    pipeline = Pipeline(folder)
    case = GateCase(setup_for(args.target), args.route, 1)
    per_request = [count_probe(pipeline, case, route(args.route).resolve(), python=args.base, requests=args.requests,
                               warmup=args.requests, out_dir=folder / "counted") for _ in range(args.probes)]
    per_unit, per_call = spin_cost(args.base, folder / "counted")
    base = statistics.median(per_request)
    for inc in args.increases:
        units = max(1, round(base * inc / per_unit))
        print(json.dumps({"target": str(args.target), "increase": inc, "units": units,
                          "expected_ratio": round(1 + units * per_unit / base, 5), "instructions_per_request":
                          [round(v, 1) for v in per_request], "instructions_per_unit": round(per_unit, 3),
                          "instructions_per_call": round(per_call, 1)}, sort_keys=True), flush=True)
    return 0


def main(argv: Optional[Sequence[str]] = None) -> int:
    p = argparse.ArgumentParser(prog="python benchmarks/gate/experiments/count_rates.py",
                                description=__doc__.split("\n\n")[0])
    sub = p.add_subparsers(dest="command", required=True)
    run = sub.add_parser("run", help="rounds of gates, one of each kind per round")
    run.add_argument("--out", required=True, help="experiment directory (resumes if it exists)")
    run.add_argument("--base", required=True, help="install spec used on both sides")
    run.add_argument("--head", help="HEAD install (default: the same as --base)")
    run.add_argument("--kind", type=_kind, action="append", required=True,
                     help="LABEL=GATE OPTIONS, repeatable, e.g. 'aa=' or 'uv-count1%%=--target uvicorn:asgi --head-loops 18'")
    run.add_argument("--rounds", type=int, default=20, help="gates per kind (default 20)")
    run.add_argument("gate_args", nargs="*", help="more gate options for every kind, after --")
    ana = sub.add_parser("analyse", help="rates per kind and per gated metric")
    ana.add_argument("out", help="experiment directory, or a .jsonl.gz made by gate_rates.py pack")
    ana.add_argument("--write", help="also write the Markdown to this file")
    cal = sub.add_parser("calibrate", help="units of counted work for given increases of instructions per request")
    cal.add_argument("--base", required=True, help="the interpreter with the server installed")
    cal.add_argument("--target", type=gate_rates.server_or_target, default="granian:rsgi")
    cal.add_argument("--route", default="json")
    cal.add_argument("--requests", type=int, default=1000, help="counted requests per probe (default 1000)")
    cal.add_argument("--probes", type=int, default=3, help="counted servers of BASE (default 3)")
    cal.add_argument("--increases", type=gate_cli.percent, nargs="+", default=[0.01, 0.03])
    cal.add_argument("--scratch", default="/tmp/gatecheck-count-calibrate")
    args = p.parse_args(argv)
    return {"run": cmd_run, "analyse": cmd_analyse, "calibrate": cmd_calibrate}[args.command](args)


if __name__ == "__main__":
    sys.exit(main())
