"""The regression gate: BASE and HEAD installs of one server, run interleaved, judged with an interval.

    python -m load gate --base granian==2.8.6 --head ./dist/granian-2.9.0-...whl [--threshold 5%]

Rules of this module:

1. **Pairs, interleaved, order randomised.** Each pair runs every case once on BASE and once on HEAD,
   back to back, in an order drawn from a seeded RNG (the seed is recorded). Whatever slows the
   machine for a few seconds hits both runs of a pair, and the per-pair ratio cancels it.
2. **Fresh processes per pair** (``--restart-every 1``, the default). A server process carries
   state the gate cannot see (memory layout, hash seeds, thread placement); if one BASE and one
   HEAD process served every run, that process-level luck would be in every pair, and the bootstrap
   over pairs would not see it (Kalibera & Jones 2013: repeat at the level that varies). Starting
   costs about 0.2 s per server here. Both servers of a pair are up at once but only one is ever
   under load; both are pinned to the server CPUs and oha to the others.
3. **Stopping depends on precision only**: after ``--pairs`` pairs the gate stops as soon as every
   gated interval is narrower than the threshold (so no verdict can be "inconclusive"), or at
   ``--max-pairs`` / ``--budget``. It never stops because an interval crossed 1: that would be
   optional stopping on the effect and would inflate false alarms.
4. **Only clean runs are numbers.** A run with errors or non-2xx answers is kept in the raw pairs
   but its pair is left out of the statistics and the route's verdict says so; errors on HEAD alone
   fail the gate (a server that errors under load is worse than a slow one).
5. Exit status: 0 unless a gated metric (``--fail-on``, default server CPU per request) is a regression or HEAD
   produced errors (1); 2 for usage, install or harness failures, with the reason on stderr.

The statistics are in :mod:`load.stats`, environments in :mod:`load.envs`, the pytest-benchmark
export in :mod:`load.benchjson`; this module orchestrates and renders.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import random
import statistics
import sys
import time
from dataclasses import asdict, dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple

from . import benchjson
from .pinning import cpu_times
from .stats import Decision, Verdict, decide, estimate_ratio, stability_warnings

__all__ = ["GateCase", "GateOptions", "GateResult", "CaseResult", "run_gate", "render_markdown",
           "add_arguments", "main_from_args", "main", "percent", "cost_for_slowdown", "SCHEMA_VERSION"]

#: Version of pairs.json. History: 1 - first layout (gate, options, cases, runs, results).
SCHEMA_VERSION = 1

COST_ENV = "GATECHECK_COST_US"  # the fixture apps burn this many µs of CPU per payload/json/echo request

# Metric name -> (record field, higher is better, label). "cpu" is the server tree's CPU time per 2xx
# response: unlike RPS it does not drop when another process takes the server's CPU away, so it stays
# precise on a shared machine (see docs/gate.md for the measured difference).
METRICS: Dict[str, Tuple[str, bool, str]] = {
    "rps": ("rps", True, "RPS"),
    "p99": ("p99_ms", False, "p99 latency"),
    "cpu": ("cpu_us_per_request", False, "server CPU per request"),
}


#: How the summary names each statistic of :data:`load.stats.STATISTICS`.
STATISTIC_LABELS: Dict[str, str] = {
    "pair-median": "median of the per-pair ratios",
    "geomean": "geometric mean of the per-pair ratios",
    "hl": "Hodges-Lehmann estimate of the per-pair ratios",
    "mean": "ratio of the means",
    "median": "ratio of the medians",
}


class GateError(RuntimeError):
    """The gate could not run (bad input, install failure, server or oha failure): exit status 2."""


# ---- parse-time validators -------------------------------------------------------------------------

def percent(text: str) -> float:
    """``"5%"`` -> 0.05 and ``"0.05"`` -> 0.05; a bare number >= 1 is refused as ambiguous."""
    raw = text.strip()
    try:
        value = float(raw[:-1]) / 100.0 if raw.endswith("%") else float(raw)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a percentage such as '5%' or a fraction such as 0.05, got {text!r}") from None
    if not raw.endswith("%") and value >= 1:
        raise argparse.ArgumentTypeError(f"{text!r} is ambiguous: write '{raw}%' for a percentage, or a fraction below 1")
    if not 0 < value < 1:
        raise argparse.ArgumentTypeError(f"expected a change between 0% and 100%, got {text!r}")
    return value


def _positive(kind):
    def parse(text: str):
        try:
            value = kind(text)
        except ValueError:
            value = 0
        if not value > 0:
            raise argparse.ArgumentTypeError(f"expected a positive number, got {text!r}")
        return value
    return parse


def _non_negative_float(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        value = -1.0
    if not value >= 0 or math.isinf(value):
        raise argparse.ArgumentTypeError(f"expected a number >= 0, got {text!r}")
    return value


def calibrate(runs: Sequence[Any], slowdown: float, cpu_seconds: Optional[Sequence[Optional[float]]] = None
              ) -> Tuple[float, Dict[str, Any]]:
    """The ``--head-cost`` that fakes ``slowdown``, from a few BASE runs (LoadRun-like objects).

    The per-request time is the server's CPU time per 2xx response when it was sampled (it does not
    grow when other processes take the CPU away, as ``1 / RPS`` does on a shared machine), else
    ``1 / RPS``. ``cpu_seconds`` overrides each run's sampled CPU time (e.g. from :func:`tree_cpu_ns`).
    Returns ``(cost_us, details)``.
    """
    rps = statistics.median(r.rps for r in runs)
    cpus = list(cpu_seconds) if cpu_seconds is not None else [getattr(r, "server_cpu_seconds", 0) for r in runs]
    per_request = [c / r.result.ok * 1e6 for r, c in zip(runs, cpus) if c and c > 0 and r.result.ok]
    per_request_us = statistics.median(per_request) if per_request else 1e6 / rps
    cost = cost_for_slowdown(1e6 / per_request_us, slowdown)
    return cost, {"slowdown": slowdown, "base_rps": rps, "per_request_us": per_request_us, "cost_us": cost,
                  "source": "server CPU per request" if per_request else "1 / RPS"}


def cost_for_slowdown(base_rps: float, slowdown: float) -> float:
    """Microseconds of CPU per request that make a CPU-bound server ``slowdown`` slower in RPS.

    A server saturating its CPU spends ``T = 1 / RPS`` per request; adding ``c`` gives
    ``RPS' = 1 / (T + c)``. For ``RPS' / RPS = 1 - slowdown``: ``c = T * slowdown / (1 - slowdown)``.
    Only valid when the server, not the load generator, is the bottleneck.
    """
    if not base_rps > 0 or not 0 < slowdown < 1:
        raise ValueError(f"need base_rps > 0 and 0 < slowdown < 1, got {base_rps!r}, {slowdown!r}")
    return 1e6 / base_rps * slowdown / (1.0 - slowdown)


# ---- the nouns ---------------------------------------------------------------------------------------

@dataclass(frozen=True)
class GateCase:
    """One thing measured on both sides: a target, a route and a concurrency."""

    target: str
    route: str
    concurrency: int
    app: Optional[str] = None
    env: Tuple[Tuple[str, str], ...] = ()
    http2: bool = False

    @property
    def name(self) -> str:
        return f"{self.route} c{self.concurrency} ({self.target})"


@dataclass(frozen=True)
class GateOptions:
    cases: Tuple[GateCase, ...]
    threshold: float = 0.05
    pairs: int = 10
    max_pairs: int = 24
    budget: float = 240.0
    duration: float = 2.0
    warmup: float = 0.5
    confidence: float = 0.95
    statistic: str = "pair-median"
    seed: int = 0
    head_cost_us: float = 0.0
    fail_on: Tuple[str, ...] = ("cpu",)
    restart_every: int = 1
    server_cpus: Optional[Tuple[int, ...]] = None
    oha_cpus: Optional[Tuple[int, ...]] = None
    resamples: int = 10_000

    def __post_init__(self) -> None:
        if self.pairs < 8:
            raise ValueError(f"the gate needs at least 8 pairs (the bootstrap under-covers below that), got {self.pairs}")
        if self.max_pairs < self.pairs:
            raise ValueError(f"--max-pairs {self.max_pairs} is below --pairs {self.pairs}")
        unknown = set(self.fail_on) - set(METRICS)
        if unknown:
            raise ValueError(f"unknown --fail-on metric(s) {sorted(unknown)}; choose from {sorted(METRICS)}")
        if not self.cases:
            raise ValueError("nothing to measure: no cases")


@dataclass(frozen=True)
class CaseResult:
    case: GateCase
    decisions: Dict[str, Optional[Decision]]  # metric -> decision (None: no clean pairs)
    base: Dict[str, List[float]]  # metric -> clean per-pair values
    head: Dict[str, List[float]]
    excluded_pairs: int
    head_errors: int
    base_errors: int
    warnings: Tuple[str, ...]

    def failed(self, fail_on: Sequence[str]) -> bool:
        if self.head_errors:
            return True
        return any(d is not None and d.verdict is Verdict.REGRESSION for m, d in self.decisions.items() if m in fail_on)


@dataclass
class GateResult:
    base: Dict[str, Any]
    head: Dict[str, Any]
    options: GateOptions
    runs: List[Dict[str, Any]] = field(default_factory=list)
    results: List[CaseResult] = field(default_factory=list)
    pairs: int = 0
    seconds: float = 0.0
    setup_seconds: float = 0.0  # environment-independent start: route checks and calibration
    stopped_because: str = ""
    calibration: Optional[Dict[str, Any]] = None
    started_at: str = ""

    @property
    def exit_status(self) -> int:
        return 1 if any(r.failed(self.options.fail_on) for r in self.results) else 0

    def to_dict(self) -> Dict[str, Any]:
        """pairs.json: everything needed to recompute every verdict offline."""
        return {
            "schema_version": SCHEMA_VERSION,
            "kind": "gatecheck-gate",
            "started_at": self.started_at,
            "seconds": round(self.seconds, 3),
            "setup_seconds": round(self.setup_seconds, 3),
            "pairs": self.pairs,
            "stopped_because": self.stopped_because,
            "exit_status": self.exit_status,
            "base": self.base,
            "head": self.head,
            "calibration": self.calibration,
            "options": {**asdict(self.options), "cases": [asdict(c) for c in self.options.cases]},
            "results": [_case_result_dict(r) for r in self.results],
            "runs": self.runs,
        }


def _case_result_dict(r: CaseResult) -> Dict[str, Any]:
    out: Dict[str, Any] = {"case": r.case.name, "excluded_pairs": r.excluded_pairs, "head_errors": r.head_errors,
                           "base_errors": r.base_errors, "warnings": list(r.warnings), "metrics": {}}
    for metric, d in r.decisions.items():
        out["metrics"][metric] = None if d is None else {
            "verdict": d.verdict.value, "ratio": d.estimate.ratio, "low": d.estimate.low, "high": d.estimate.high,
            "n": d.estimate.n, "change": d.change, "more_pairs": d.more_pairs, "reason": d.reason,
            "base": r.base[metric], "head": r.head[metric]}
    return out


# ---- analysis (pure: from run records to verdicts) -----------------------------------------------------

def _clean(run: Dict[str, Any]) -> bool:
    return not run.get("errors") and not run.get("non_2xx") and run.get("rps", 0) > 0


def _metric_value(run: Dict[str, Any], metric: str) -> Optional[float]:
    if metric == "rps":
        return run.get("rps")
    if metric == "cpu":  # µs per 2xx response; nanosecond counters when recorded, else psutil's ticks
        ok = run.get("ok")
        cpu = run["server_cpu_ns"] / 1e9 if run.get("server_cpu_ns") else (run.get("server") or {}).get("cpu_seconds")
        return cpu / ok * 1e6 if cpu and ok else None
    return (run.get("latency_ms") or {}).get("p99")


def analyse(runs: Sequence[Dict[str, Any]], opts: GateOptions, max_pair: Optional[int] = None) -> List[CaseResult]:
    """Verdicts per case from run records (each with ``case``, ``pair``, ``side``, ``rps``, ...).

    Pure and deterministic (the bootstrap is seeded with ``opts.seed``), so it recomputes a stored
    gate exactly; ``max_pair`` analyses only the first pairs (used to study how many are needed).
    """
    out = []
    for case in opts.cases:
        by_pair: Dict[int, Dict[str, Dict[str, Any]]] = {}
        for run in runs:
            if run["case"] == case.name and (max_pair is None or run["pair"] < max_pair):
                by_pair.setdefault(run["pair"], {})[run["side"]] = run
        complete = {p: sides for p, sides in sorted(by_pair.items()) if "base" in sides and "head" in sides}
        head_errors = sum(1 for s in complete.values() if not _clean(s["head"]))
        base_errors = sum(1 for s in complete.values() if not _clean(s["base"]))
        clean = [s for s in complete.values() if _clean(s["base"]) and _clean(s["head"])]
        decisions: Dict[str, Optional[Decision]] = {}
        base_vals: Dict[str, List[float]] = {}
        head_vals: Dict[str, List[float]] = {}
        warnings: List[str] = []
        for metric, (_attr, higher, label) in METRICS.items():
            pairs = [(_metric_value(s["base"], metric), _metric_value(s["head"], metric)) for s in clean]
            pairs = [(b, h) for b, h in pairs if b and h and b > 0 and h > 0]
            base_vals[metric] = [b for b, _ in pairs]
            head_vals[metric] = [h for _, h in pairs]
            if len(pairs) < 2:
                decisions[metric] = None
                continue
            est = estimate_ratio(base_vals[metric], head_vals[metric], opts.statistic, opts.confidence,
                                 opts.resamples, opts.seed)
            decisions[metric] = decide(est, opts.threshold, higher)
            if metric == "rps":
                warnings += stability_warnings(f"BASE {label}", base_vals[metric])
                warnings += stability_warnings(f"HEAD {label}", head_vals[metric])
        bound = sum(1 for s in complete.values() for r in s.values() if r.get("generator_bound"))
        if bound > len(complete) // 2:
            warnings.append(f"oha saturated its CPUs in {bound} of {2 * len(complete)} runs: the RPS measures oha as much "
                            "as the server; give oha more CPUs (--oha-cpus) or gate a heavier route")
        if head_errors or base_errors:
            warnings.append(f"{len(complete) - len(clean)} pair(s) left out: HEAD had errors or non-2xx in {head_errors}, "
                            f"BASE in {base_errors}; see the raw runs in pairs.json")
        out.append(CaseResult(case, decisions, base_vals, head_vals, len(complete) - len(clean), head_errors,
                              base_errors, tuple(warnings)))
    return out


def _decisive(results: Sequence[CaseResult], fail_on: Sequence[str]) -> bool:
    """True when no gated interval is wider than the threshold (rule 3: precision, not direction)."""
    for r in results:
        for metric in fail_on:
            d = r.decisions.get(metric)
            if d is None or d.estimate.width > d.threshold:
                return False
    return True


# ---- running ---------------------------------------------------------------------------------------------

def tree_cpu_ns(pid: Optional[int]) -> Optional[int]:
    """Nanoseconds on CPU of every thread of ``pid`` and its descendants (Linux ``schedstat``).

    ``psutil``'s CPU times come in clock ticks (10 ms): on a 2 s run that is 1-2% of quantisation
    noise per run, as large as the effects the gate looks for. The scheduler's own per-thread
    counter is in nanoseconds. A thread that exits between two readings drops out of the sum, so the
    difference is only meaningful for servers whose threads live as long as the run (they do here).
    Returns None where ``/proc`` or psutil is not available.
    """
    if pid is None:
        return None
    try:
        import psutil

        parent = psutil.Process(pid)
        pids = [pid] + [c.pid for c in parent.children(recursive=True)]
    except Exception:
        return None
    total, seen = 0, False
    for p in pids:
        try:
            tasks = os.listdir(f"/proc/{p}/task")
        except OSError:
            continue
        for task in tasks:
            try:
                with open(f"/proc/{p}/task/{task}/schedstat", encoding="ascii") as f:
                    total += int(f.read().split()[0])
                seen = True
            except (OSError, ValueError, IndexError):
                continue
    return total if seen else None


def _stop_all(handles: Sequence[Any]) -> None:
    """Stop servers concurrently (each stop waits out its own grace period)."""
    import threading

    threads = [threading.Thread(target=h.stop) for h in handles]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=30)


Measure = Callable[..., Any]
Start = Callable[..., Any]


def _run_record(run: Any, case: GateCase, pair: int, side: str, position: int) -> Dict[str, Any]:
    rec = run.to_dict() if hasattr(run, "to_dict") else dict(run)
    rec.update({"case": case.name, "pair": pair, "side": side, "position": position})
    return rec


def run_gate(
    opts: GateOptions,
    *,
    base_python: str,
    head_python: str,
    base_info: Optional[Dict[str, Any]] = None,
    head_info: Optional[Dict[str, Any]] = None,
    out_dir: Path,
    start: Optional[Start] = None,
    measure_fn: Optional[Measure] = None,
    route_fn: Optional[Callable[[str], Any]] = None,
    check_fn: Optional[Callable[..., None]] = None,
    head_slowdown: Optional[float] = None,
    log: Callable[[str], None] = lambda s: print(s, file=sys.stderr, flush=True),
    clock: Callable[[], float] = time.monotonic,
) -> GateResult:
    """Run the pairs and return the result (rules 1-4). ``start``/``measure_fn``/``route_fn``/``check_fn``
    default to ``servers.start_server`` and ``load.measure``; tests pass fakes."""
    if start is None:
        from servers import start_server as start
    if measure_fn is None or check_fn is None:
        from .measure import check_route, measure
        measure_fn = measure_fn or measure
        check_fn = check_fn or check_route
    if route_fn is None:
        from .routes import route as lookup

        def route_fn(name: str) -> Any:
            return lookup(name).resolve()

    rng = random.Random(opts.seed)
    t0 = clock()
    result = GateResult(base=dict(base_info or {}, python=base_python), head=dict(head_info or {}, python=head_python),
                        options=opts, started_at=datetime.now(timezone.utc).isoformat(timespec="seconds"))
    logs = Path(out_dir) / "logs"
    Path(out_dir).mkdir(parents=True, exist_ok=True)
    stream = Path(out_dir) / "runs.jsonl"
    server_cpus = list(opts.server_cpus) if opts.server_cpus else None
    kwargs = dict(oha_cpus=opts.oha_cpus, server_cpus=opts.server_cpus, workdir=Path(out_dir) / "bodies")

    def app_for(case: GateCase) -> str:
        if case.app:
            return case.app
        interface = case.target.split("?", 1)[0].split(":")[1] if ":" in case.target else "rsgi"
        return f"fixtures.apps.{interface}:app"

    def launch(case: GateCase, side: str, cost_us: float):
        env = dict(case.env)
        if side == "head" and cost_us > 0:
            env[COST_ENV] = f"{cost_us:.3f}"
        python = base_python if side == "base" else head_python
        return start(case.target, app=app_for(case), log_dir=logs, env=env, cpus=server_cpus, python=python)

    routes = {c.route: route_fn(c.route) for c in opts.cases}
    cost_us = opts.head_cost_us
    if head_slowdown:
        case = opts.cases[0]
        with launch(case, "base", 0.0) as srv:
            measure_fn(srv, routes[case.route], case.concurrency, max(opts.warmup, 1.0), http2=case.http2, **kwargs)
            runs, cpus = [], []
            for _ in range(3):
                c0 = tree_cpu_ns(getattr(srv, "pid", None))
                runs.append(measure_fn(srv, routes[case.route], case.concurrency, opts.duration, http2=case.http2, **kwargs))
                c1 = tree_cpu_ns(getattr(srv, "pid", None))
                cpus.append((c1 - c0) / 1e9 if c0 is not None and c1 is not None else None)
        cost_us, calib = calibrate(runs, head_slowdown, cpus if all(c for c in cpus) else None)
        result.calibration = dict(calib, case=case.name)
        log(f"calibration: BASE {calib['base_rps']:,.0f} RPS, {calib['per_request_us']:.1f} µs of server CPU per request "
            f"on {case.name} -> {cost_us:.2f} µs per request on HEAD for a {head_slowdown:.0%} slowdown")
    if cost_us:
        result.head["cost_us"] = cost_us

    # Check every route on both sides before any measurement: a benchmark of a broken route is worthless.
    for case in opts.cases:
        for side in ("base", "head"):
            with launch(case, side, cost_us) as srv:
                check_fn(srv, routes[case.route], http2=case.http2, workdir=kwargs["workdir"])
                getattr(result, side).setdefault("versions", dict(getattr(srv, "versions", {}) or {}))

    result.setup_seconds = clock() - t0
    pair_seconds: List[float] = []
    servers: Dict[Tuple[str, str], Any] = {}
    try:
        for pair in range(opts.max_pairs):
            p0 = clock()
            for case in opts.cases:
                order = ["base", "head"]
                rng.shuffle(order)
                restart = opts.restart_every > 0 and pair % opts.restart_every == 0
                for side in order:
                    key = (case.name, side)
                    if restart and key in servers:
                        servers.pop(key).stop()
                    if key not in servers:
                        servers[key] = launch(case, side, cost_us)
                        if opts.warmup > 0:
                            measure_fn(servers[key], routes[case.route], case.concurrency, opts.warmup, http2=case.http2, **kwargs)
                for position, side in enumerate(order):
                    srv = servers[(case.name, side)]
                    pid = getattr(srv, "pid", None)
                    cpu0, box0 = tree_cpu_ns(pid), cpu_times(server_cpus) if server_cpus else None
                    run = measure_fn(srv, routes[case.route], case.concurrency, opts.duration, http2=case.http2, **kwargs)
                    cpu1, box1 = tree_cpu_ns(pid), cpu_times(server_cpus) if server_cpus else None
                    if run.result.all_failed:
                        raise GateError(f"{side.upper()} answered no request with 2xx on {case.name} in pair {pair + 1}; "
                                        f"server log tail:\n{srv.log_tail(20) if hasattr(srv, 'log_tail') else ''}")
                    rec = _run_record(run, case, pair, side, position)
                    if cpu0 is not None and cpu1 is not None and cpu1 > cpu0:
                        rec["server_cpu_ns"] = cpu1 - cpu0
                    if box0 is not None and box1 is not None:
                        # Diagnostic only (never used in a verdict): what else ran on the server's CPUs.
                        used = box1 - box0
                        own = rec.get("server_cpu_ns", 0) / 1e9 or run.server_cpu_seconds
                        rec["server_cpus_busy_seconds"] = round(used.busy, 3)
                        rec["foreign_cpu_seconds"] = round(max(0.0, used.busy - own), 3)
                        rec["steal_seconds"] = round(used.steal, 3)
                    rec["gate_seconds"] = round(clock() - t0, 3)  # when this run ended, from the gate's start
                    result.runs.append(rec)
                    with open(stream, "a", encoding="utf-8") as f:  # a crash keeps every finished run
                        f.write(json.dumps(rec, sort_keys=True) + "\n")
                if opts.restart_every == 1:
                    _stop_all([servers.pop((case.name, side)) for side in order])
            result.pairs = pair + 1
            pair_seconds.append(clock() - p0)
            elapsed = clock() - t0
            log(f"pair {pair + 1}: " + ", ".join(
                f"{r['side']} {r['rps']:,.0f}" for r in result.runs if r["pair"] == pair) + f" RPS ({elapsed:.0f} s)")
            if result.pairs >= opts.pairs:
                current = analyse(result.runs, opts)
                if _decisive(current, opts.fail_on):
                    result.stopped_because = "every gated interval is narrower than the threshold"
                    break
                if elapsed + max(pair_seconds) > opts.budget:
                    result.stopped_because = f"time budget of {opts.budget:.0f} s reached"
                    break
        else:
            result.stopped_because = f"--max-pairs {opts.max_pairs} reached"
    finally:
        _stop_all(list(servers.values()))
    result.results = analyse(result.runs, opts)
    result.seconds = clock() - t0
    return result


# ---- rendering -------------------------------------------------------------------------------------------

_EMOJI = {Verdict.REGRESSION: "❌", Verdict.IMPROVEMENT: "🚀", Verdict.INCONCLUSIVE: "❔", Verdict.NO_CHANGE: "✅"}


def _fmt_value(metric: str, v: float) -> str:
    return {"rps": f"{v:,.0f}", "cpu": f"{v:.1f} µs"}.get(metric, f"{v:.2f} ms")


def _duration(seconds: float) -> str:
    m, s = divmod(int(round(seconds)), 60)
    return f"{m} min {s:02d} s" if m else f"{s} s"


def render_markdown(result: GateResult) -> str:
    """The pull-request comment: headline verdict, one table per case, warnings, method."""
    opts = result.options
    failed = [r for r in result.results if r.failed(opts.fail_on)]
    regressions = [r for r in result.results if r.head_errors == 0 and r in failed]
    head = "❌ **regression**" if regressions else ("❌ **HEAD has errors**" if failed else "✅ **no regression**")
    b, h = result.base, result.head
    lines = [f"## gatecheck gate: {b.get('spec', 'BASE')} → {h.get('spec', 'HEAD')}", "",
             f"{head} (gated on {', '.join(METRICS[m][2] for m in opts.fail_on)}; threshold {opts.threshold:.0%}; "
             f"{opts.confidence:.0%} bootstrap intervals over {result.pairs} interleaved pairs; took {_duration(result.seconds)})",
             ""]
    if h.get("cost_us"):
        lines += [f"> HEAD ran with an injected cost of {h['cost_us']:.2f} µs of CPU per request ({COST_ENV}).", ""]
    for r in result.results:
        lines += [f"### {r.case.name}", "", "| metric | base | head | head/base | interval | verdict |",
                  "| --- | ---: | ---: | ---: | :---: | --- |"]
        for metric, d in r.decisions.items():
            label = METRICS[metric][2] + ("" if metric in opts.fail_on else " (not gated)")
            if d is None:
                lines.append(f"| {label} | - | - | - | - | no clean pairs |")
                continue
            bm, hm = statistics.median(r.base[metric]), statistics.median(r.head[metric])
            more = ""
            if d.more_pairs:
                more = (f" (~{d.more_pairs} more pairs)" if d.more_pairs <= 10 * max(opts.max_pairs, 1)
                        else " (too noisy here to narrow in practice)")
            lines.append(f"| {label} | {_fmt_value(metric, bm)} | {_fmt_value(metric, hm)} | {d.estimate.ratio:.3f} | "
                         f"{d.estimate.low:.3f} – {d.estimate.high:.3f} | {_EMOJI[d.verdict]} {d.verdict.value}{more} |")
        if r.head_errors:
            lines.append(f"| errors | - | {r.head_errors} run(s) | - | - | ❌ HEAD returned errors or non-2xx |")
        lines.append("")
        lines += [f"- ⚠️ {w}" for w in r.warnings]
        if r.warnings:
            lines.append("")
    versions = lambda side: ", ".join(f"{k} {v}" for k, v in sorted((side.get("versions") or {}).items()))
    lines += ["<details><summary>method</summary>", "",
              f"- BASE: `{b.get('spec', '?')}` ({versions(b)}); HEAD: `{h.get('spec', '?')}` ({versions(h)})",
              f"- {result.pairs} pairs; each pair runs BASE and HEAD back to back in random order (seed {opts.seed}), "
              f"{opts.duration:g} s per run after a {opts.warmup:g} s warm-up, fresh server processes "
              + ("every pair" if opts.restart_every == 1 else f"every {opts.restart_every} pairs" if opts.restart_every else "once"),
              f"- values are medians over the pairs; head/base is the {STATISTIC_LABELS.get(opts.statistic, opts.statistic)}; intervals are "
              f"percentile bootstraps over pairs ({opts.resamples:,} resamples)",
              f"- regression = whole interval on the worse side of 1 and the change ≥ {opts.threshold:.0%}; "
              f"inconclusive = interval wider than {opts.threshold:.0%}",
              f"- stopped: {result.stopped_because}",
              "", "</details>", ""]
    return "\n".join(lines)


def write_outputs(result: GateResult, out_dir: Path, storage: Optional[Path] = None) -> Dict[str, Path]:
    """summary.md, pairs.json and the pytest-benchmark documents (refusing to overwrite)."""
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    paths = {"summary": out_dir / "summary.md", "pairs": out_dir / "pairs.json"}
    with open(paths["summary"], "x", encoding="utf-8") as f:
        f.write(render_markdown(result))
    benchjson.write_json(result.to_dict(), paths["pairs"])
    for side in ("base", "head"):
        info = getattr(result, side)
        entries = []
        for r in result.results:
            rps = r.base["rps"] if side == "base" else r.head["rps"]
            p99 = r.base["p99"] if side == "base" else r.head["p99"]
            if rps:
                entries.append(benchjson.benchmark_entry(r.case.name, rps, p99_ms=p99,
                                                         extra={"side": side, "spec": info.get("spec")}))
        version = ", ".join(f"{k} {v}" for k, v in sorted((info.get("versions") or {}).items()))
        doc = benchjson.document(entries, commit_id=f"{info.get('spec', side)} ({version})" if version else str(info.get("spec", side)),
                                 project=result.options.cases[0].target.split(":")[0])
        paths[f"benchmark_{side}"] = benchjson.write_json(doc, out_dir / "benchmark" / f"{side}.json")
        if storage:
            paths[f"storage_{side}"] = benchjson.save_to_storage(doc, storage, f"gate_{side}")
    return paths


# ---- command line ------------------------------------------------------------------------------------

def _at_least(minimum: int, what: str):
    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            value = minimum - 1
        if value < minimum:
            raise argparse.ArgumentTypeError(f"{what} must be a whole number >= {minimum}, got {text!r}")
        return value
    return parse


def _metric_list(text: str) -> Tuple[str, ...]:
    values = tuple(v.strip() for v in text.split(",") if v.strip())
    bad = [v for v in values if v not in METRICS]
    if not values or bad:
        raise argparse.ArgumentTypeError(f"invalid metric list {text!r}; choose from {', '.join(METRICS)} (e.g. 'rps,p99')")
    return values


def _cpus(text: str) -> Tuple[int, ...]:
    from .pinning import parse_cpu_list

    try:
        return tuple(parse_cpu_list(text))
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def _confidence(text: str) -> float:
    value = percent(text)
    if value < 0.5:
        raise argparse.ArgumentTypeError(f"a confidence level below 50% makes no sense, got {text!r}")
    return value


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The gate's options (``python -m load gate ...`` and ``python -m load.gate ...``)."""
    from .stats import STATISTICS

    parser.add_argument("--base", required=True, metavar="INSTALL",
                        help="the reference install: a requirement ('granian==2.8.6'), a wheel, sdist or source tree, "
                             "or an existing interpreter or virtualenv")
    parser.add_argument("--head", required=True, metavar="INSTALL", help="the install under test (same forms as --base)")
    parser.add_argument("--target", default="granian:rsgi",
                        help="how to start the server (default granian:rsgi); with --profile, its server name fills {server}")
    parser.add_argument("--profile", help="gate every case of this load profile (load/profiles/NAME.toml) at its highest concurrency")
    parser.add_argument("--route", action="append", dest="routes",
                        help="route to gate without --profile (repeatable; default: json, which the cost knob slows)")
    parser.add_argument("--concurrency", type=_positive(int), default=64, help="connections for --route cases (default 64)")
    parser.add_argument("--threshold", type=percent, default=0.05,
                        help="smallest slowdown that fails the gate, e.g. '5%%' (default 5%%)")
    parser.add_argument("--pairs", type=_at_least(8, "--pairs"), default=10,
                        help="pairs before the gate may stop (at least 8; default 10)")
    parser.add_argument("--max-pairs", type=_at_least(8, "--max-pairs"), default=24,
                        help="stop after this many pairs even if an interval is still wide (default 24, about 2.5 min "
                             "here; more pairs narrow the intervals as 1/sqrt(n) on a noisy machine)")
    parser.add_argument("--budget", type=_positive(float), default=240.0,
                        help="seconds of measuring after which no new pair starts (default 240)")
    parser.add_argument("--duration", type=_positive(float), default=2.0, help="seconds per measured run (default 2)")
    parser.add_argument("--warmup", type=_non_negative_float, default=0.5,
                        help="seconds of unrecorded load after each server start (default 0.5)")
    parser.add_argument("--confidence", type=_confidence, default=0.95, help="interval coverage (default 95%%)")
    parser.add_argument("--statistic", choices=sorted(STATISTICS), default="pair-median",
                        help="how pairs combine into one ratio (default pair-median: the median of the per-pair "
                             "ratios, which a few disturbed pairs barely move; geomean, hl, mean and median also; "
                             "see docs/gate.md)")
    parser.add_argument("--seed", type=int, default=None,
                        help="seed for the run order and the bootstrap (default: random, recorded in pairs.json)")
    knob = parser.add_mutually_exclusive_group()
    knob.add_argument("--head-cost", type=_non_negative_float, default=0.0, metavar="MICROSECONDS",
                      help=f"fake a regression: HEAD's app burns this much CPU per request ({COST_ENV})")
    knob.add_argument("--head-slowdown", type=percent, default=None, metavar="PERCENT",
                      help="fake a regression of this size: measure BASE first and set --head-cost from its RPS")
    parser.add_argument("--fail-on", type=_metric_list, default=("cpu",),
                        help="metrics whose regression fails the gate: any of rps, p99, cpu (default cpu: server CPU per "
                             "request stays precise on a shared machine where RPS does not; add rps on a dedicated "
                             "runner, e.g. 'rps,cpu'; see docs/gate.md)")
    parser.add_argument("--restart-every", type=_at_least(0, "--restart-every"), default=1,
                        help="start fresh server processes every N pairs (default 1; 0 = start once)")
    parser.add_argument("--server-cpus", type=_cpus, help="CPUs for both servers, e.g. '0' (default: first half)")
    parser.add_argument("--oha-cpus", type=_cpus, help="CPUs for oha, e.g. '1' (default: the other half)")
    parser.add_argument("--out", type=Path, help="output directory (default results/gate-<UTC time>)")
    parser.add_argument("--benchmark-storage", type=Path, metavar="DIR",
                        help="also file both sides in pytest-benchmark storage (e.g. .benchmarks) for its history tools")
    parser.add_argument("--python", default=sys.executable,
                        help="interpreter that creates the BASE/HEAD virtualenvs (default: this one)")
    parser.add_argument("--with", dest="extras", action="append", default=[], metavar="REQUIREMENT",
                        help="extra requirement installed into environments the gate builds (repeatable)")
    parser.add_argument("--rebuild-envs", action="store_true", help="rebuild cached environments")
    parser.add_argument("--env-timeout", type=_positive(float), default=1800.0,
                        help="seconds allowed for each venv/pip step (default 1800)")
    parser.add_argument("--quiet", action="store_true", help="no progress on stderr")


def cases_from_args(args: argparse.Namespace) -> Tuple[GateCase, ...]:
    """The cases to gate: the profile's (each at its highest concurrency) or ``--route`` × ``--concurrency``."""
    from servers import resolve

    def build(target: str, route_name: str, concurrency: int, app=None, env=()) -> GateCase:
        _adapter, resolved = resolve(target)
        return GateCase(str(resolved), route_name, concurrency, app, tuple(sorted(dict(env).items())),
                        resolved.http == "h2")

    if args.profile:
        from .profile import load_profile

        if args.routes:
            raise GateError("give --profile or --route, not both")
        profile = load_profile(args.profile)
        server = args.target.split(":", 1)[0].split("?", 1)[0]
        return tuple(build(c.target_for(server, profile.default_server), c.route, max(c.concurrency), c.app, c.env)
                     for c in profile.cases)
    from .routes import route

    names = args.routes or ["json"]
    for name in names:
        route(name)  # RouteError lists the known names
    return tuple(build(args.target, name, args.concurrency) for name in names)


def main_from_args(args: argparse.Namespace) -> int:
    """Run the gate from parsed options; returns the exit status (rule 5)."""
    from servers import ServerError, resolve

    from .envs import EnvError, ensure_pair
    from .measure import RouteCheckError
    from .oha import OhaError
    from .pinning import available_cpus, split_cpus
    from .profile import ProfileError
    from .routes import RouteError

    log = (lambda s: None) if args.quiet else (lambda s: print(s, file=sys.stderr, flush=True))
    seed = args.seed if args.seed is not None else random.SystemRandom().randrange(2**31)
    out_dir = args.out or Path("results") / ("gate-" + datetime.now(timezone.utc).strftime("%Y%m%dT%H%M%SZ"))
    try:
        if out_dir.exists() and any(out_dir.iterdir()):
            raise GateError(f"output directory {out_dir} is not empty; choose another --out")
        cases = cases_from_args(args)
        adapter, _ = resolve(cases[0].target)
        if args.server_cpus or args.oha_cpus:
            if not (args.server_cpus and args.oha_cpus):
                raise GateError("give both --server-cpus and --oha-cpus, or neither")
            server_cpus, oha_cpus = args.server_cpus, args.oha_cpus
        else:
            pin = split_cpus(available_cpus())
            server_cpus, oha_cpus = pin.server, pin.oha
        opts = GateOptions(cases=cases, threshold=args.threshold, pairs=args.pairs, max_pairs=args.max_pairs,
                           budget=args.budget, duration=args.duration, warmup=args.warmup, confidence=args.confidence,
                           statistic=args.statistic, seed=seed, head_cost_us=args.head_cost, fail_on=args.fail_on,
                           restart_every=args.restart_every, server_cpus=server_cpus, oha_cpus=oha_cpus)
        base_env, head_env = ensure_pair(args.base, args.head, package=adapter.package, module=adapter.module,
                                         extras=args.extras, python=args.python, rebuild=args.rebuild_envs,
                                         timeout=args.env_timeout, log=log)
        log(f"BASE: {base_env.describe()}\nHEAD: {head_env.describe()}")
        log(f"gating {len(cases)} case(s), {opts.pairs}..{opts.max_pairs} pairs of {opts.duration:g} s runs, "
            f"server on CPUs {server_cpus}, oha on CPUs {oha_cpus}; output -> {out_dir}")
        info = lambda env: {"spec": env.spec.text, "kind": env.spec.kind, "server_version": env.server_version,
                            "env_key": env.key}
        result = run_gate(opts, base_python=base_env.python, head_python=head_env.python, base_info=info(base_env),
                          head_info=info(head_env), out_dir=out_dir, head_slowdown=args.head_slowdown, log=log)
        paths = write_outputs(result, out_dir, args.benchmark_storage)
    except (GateError, EnvError, ServerError, OhaError, RouteError, RouteCheckError, ProfileError, ValueError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    print(render_markdown(result))
    log("wrote " + ", ".join(str(p) for p in paths.values()))
    return result.exit_status


def main(argv: Optional[Sequence[str]] = None) -> int:
    """``python -m load.gate ...``: the same gate without the ``load`` CLI around it."""
    parser = argparse.ArgumentParser(prog="python -m load.gate", description="gatecheck regression gate")
    add_arguments(parser)
    return main_from_args(parser.parse_args(argv))


if __name__ == "__main__":
    sys.exit(main())
