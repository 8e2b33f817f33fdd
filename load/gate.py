"""The regression gate: BASE and HEAD installs of one server, run interleaved, judged with an interval.

    python -m gatecheck.load gate --base granian==2.8.6 --head ./dist/granian-2.9.0-...whl [--threshold 5%]

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
export in :mod:`load.benchjson`, the summary and files in :mod:`load.gate_report`, the command line in
:mod:`load.gate_cli`; this module holds the nouns, the analysis and the run loop.
"""

from __future__ import annotations

import json
import os
import random
import sys
import time
from dataclasses import asdict, dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple

from .calibration import calibrate_cost, calibrate_delay
from .pinning import cpu_times
from .stats import Decision, Verdict, decide, estimate_ratio, family_confidence, stability_warnings

__all__ = ["GateCase", "GateOptions", "GateResult", "CaseResult", "GateError", "METRICS", "STATISTIC_LABELS",
           "run_gate", "analyse", "app_for", "start_case", "measure_cpu", "burn_probe", "delay_probe", "tree_cpu_ns",
           "SCHEMA_VERSION", "COST_ENV", "DELAY_ENV", "DELAY_EVERY_ENV", "LATENCY_METRICS"]

#: Version of pairs.json. History: 1 - first layout (gate, options, cases, runs, results).
SCHEMA_VERSION = 1

COST_ENV = "GATECHECK_COST_US"  # the fixture apps burn this many µs of CPU per payload/json/echo request
DELAY_ENV = "GATECHECK_DELAY_US"  # ... and wait this many µs without CPU (asyncio.sleep / time.sleep) ...
DELAY_EVERY_ENV = "GATECHECK_DELAY_EVERY"  # ... on every N-th such request (fixtures/payloads.py)

# Metric name -> (record field, higher is better, label). "cpu" is the server tree's CPU time per 2xx
# response: unlike RPS it does not drop when another process takes the server's CPU away, so it stays
# precise on a shared machine (see docs/gate.md for the measured difference).
METRICS: Dict[str, Tuple[str, bool, str]] = {
    "rps": ("rps", True, "RPS"),
    "p99": ("p99_ms", False, "p99 latency"),
    "cpu": ("cpu_us_per_request", False, "server CPU per request"),
    # The low-concurrency run (one request at a time, BASE and HEAD interleaved: load/latency.py): the server
    # is not saturated, so every microsecond a request waits (a sleep, a lost TCP_NODELAY, a lock held across an
    # await) is in its latency, whether or not it costs CPU. The mean counts a wait that only some
    # requests make; the median does not (docs/gate.md, fourth experiment).
    "lat": ("low_latency.avg_ms", False, "mean latency at low concurrency"),
    "lat50": ("low_latency.p50_ms", False, "median latency at low concurrency"),
}

#: The metrics measured by the low-concurrency run.
LATENCY_METRICS = ("lat", "lat50")


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
    pairs: int = 8
    max_pairs: int = 24
    budget: float = 90.0
    duration: float = 1.5
    warmup: float = 0.5
    confidence: float = 0.95
    statistic: str = "pair-median"
    seed: int = 0
    head_cost_us: float = 0.0
    head_delay_us: float = 0.0  # HEAD's app waits this long (off CPU) ...
    head_delay_every: int = 1  # ... on every N-th request
    fail_on: Tuple[str, ...] = ("cpu", "lat")
    latency_duration: float = 1.0  # seconds of the interleaved one-connection run after the main runs (0: none)
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
        if not self.latency_duration > 0 and set(self.fail_on) & set(LATENCY_METRICS):
            raise ValueError("--fail-on lat/lat50 needs the low-concurrency run (--latency-duration above 0)")
        if self.head_delay_every < 1:
            raise ValueError(f"the delay's period must be at least 1 request, got {self.head_delay_every}")

    @property
    def comparisons(self) -> int:
        """How many intervals can fail the gate: every case times every gated metric."""
        return len(self.cases) * len(self.fail_on)

    @property
    def interval_confidence(self) -> float:
        """Each interval's level, so that all :attr:`comparisons` hold together at ``confidence``
        (Bonferroni, :func:`load.stats.family_confidence`; docs/gate.md says why)."""
        return family_confidence(self.confidence, self.comparisons)


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
    interrupted: bool = False  # Ctrl-C or SIGTERM: the verdicts cover only the pairs measured so far

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
            "interrupted": self.interrupted,
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
    low = run.get("low_latency")
    if low is not None and (low.get("errors") or low.get("non_2xx") or not low.get("ok")):
        return False
    return not run.get("errors") and not run.get("non_2xx") and run.get("rps", 0) > 0


def _metric_value(run: Dict[str, Any], metric: str) -> Optional[float]:
    if metric == "rps":
        return run.get("rps")
    if metric == "cpu":  # µs per 2xx response; nanosecond counters when recorded, else psutil's ticks
        ok = run.get("ok")
        cpu = run["server_cpu_ns"] / 1e9 if run.get("server_cpu_ns") else (run.get("server") or {}).get("cpu_seconds")
        return cpu / ok * 1e6 if cpu and ok else None
    if metric in LATENCY_METRICS:
        return (run.get("low_latency") or {}).get("avg_ms" if metric == "lat" else "p50_ms")
    return (run.get("latency_ms") or {}).get("p99")


def analyse(runs: Sequence[Dict[str, Any]], opts: GateOptions, max_pair: Optional[int] = None) -> List[CaseResult]:
    """Verdicts per case from run records (each with ``case``, ``pair``, ``side``, ``rps``, ...).

    Pure and deterministic (the bootstrap is seeded with ``opts.seed``), so it recomputes a stored
    gate exactly; ``max_pair`` analyses only the first pairs (used to study how many are needed).
    Every interval is at :attr:`GateOptions.interval_confidence`, so the family of gated comparisons
    raises a false alarm with probability at most ``1 - opts.confidence``.
    """
    out = []
    level = opts.interval_confidence
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
            est = estimate_ratio(base_vals[metric], head_vals[metric], opts.statistic, level,
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


def app_for(case: GateCase) -> str:
    """The fixture app a case serves (its own ``app`` if it names one)."""
    if case.app:
        return case.app
    interface = case.target.split("?", 1)[0].split(":")[1] if ":" in case.target else "rsgi"
    return f"gatecheck.fixtures.apps.{interface}:app"


def start_case(start: Start, case: GateCase, *, python: str, cost_us: float, log_dir: Path,
               cpus: Optional[Sequence[int]], delay: Tuple[float, int] = (0.0, 1)) -> Any:
    """Start ``case``'s server from ``python``'s install, its app burning ``cost_us`` per request (0: none)
    and waiting ``delay[0]`` µs without CPU on every ``delay[1]``-th request (0: none)."""
    env = dict(case.env)
    if cost_us > 0:
        env[COST_ENV] = f"{cost_us:.3f}"
    if delay[0] > 0:
        env[DELAY_ENV] = f"{delay[0]:.3f}"
        env[DELAY_EVERY_ENV] = str(int(delay[1]))
    return start(case.target, app=app_for(case), log_dir=log_dir, env=env, cpus=list(cpus) if cpus else None,
                 python=python)


def measure_cpu(measure_fn: Measure, srv: Any, route: Any, case: GateCase, duration: float,
                measure_kwargs: Dict[str, Any], cpus: Optional[Sequence[int]] = None) -> Tuple[Any, Optional[int], Any]:
    """One measured run with the server tree's CPU nanoseconds around it (None where not readable) and,
    with ``cpus``, those CPUs' busy and steal time over it (a :class:`load.pinning.CpuTimes` or None)."""
    pid = getattr(srv, "pid", None)
    cpu0, box0 = tree_cpu_ns(pid), cpu_times(cpus) if cpus else None
    run = measure_fn(srv, route, case.concurrency, duration, http2=case.http2, **measure_kwargs)
    cpu1, box1 = tree_cpu_ns(pid), cpu_times(cpus) if cpus else None
    cpu_ns = cpu1 - cpu0 if cpu0 is not None and cpu1 is not None and cpu1 > cpu0 else None
    box = box1 - box0 if box0 is not None and box1 is not None else None
    return run, cpu_ns, box


def burn_probe(case: GateCase, route: Any, *, python: str, start: Start, measure_fn: Measure, log_dir: Path,
               cpus: Optional[Sequence[int]], warmup: float, duration: float,
               measure_kwargs: Dict[str, Any]) -> Callable[[float], float]:
    """``cost_us -> server CPU µs per 2xx response`` of ``python``'s install burning ``cost_us`` per request,
    one warm run on a fresh process each call: what :func:`load.calibration.calibrate_cost` measures with."""
    def cpu_per_request(cost: float) -> float:
        with start_case(start, case, python=python, cost_us=cost, log_dir=log_dir, cpus=cpus) as srv:
            if warmup > 0:
                measure_fn(srv, route, case.concurrency, warmup, http2=case.http2, **measure_kwargs)
            run, cpu_ns, _ = measure_cpu(measure_fn, srv, route, case, duration, measure_kwargs)
        if run.result.all_failed or not run.result.ok:
            raise GateError(f"calibration: no 2xx answer on {case.name} (burning {cost:.2f} µs per request)")
        cpu = cpu_ns / 1e9 if cpu_ns else run.server_cpu_seconds
        return cpu / run.result.ok * 1e6
    return cpu_per_request


LatencyFn = Callable[..., Dict[str, Dict[str, Any]]]


def _interleaved(handles: Dict[str, Any], route: Any, duration: float,
                 cpus: Optional[Sequence[int]] = None) -> Dict[str, Dict[str, Any]]:
    """The default low-concurrency run: :func:`load.latency.interleaved_latency` over the handles' URLs."""
    from .latency import interleaved_latency

    return interleaved_latency({side: h.url for side, h in handles.items()}, route, duration, cpus)


def delay_probe(case: GateCase, route: Any, *, python: str, start: Start, latency_fn: LatencyFn, log_dir: Path,
                cpus: Optional[Sequence[int]], oha_cpus: Optional[Sequence[int]], duration: float,
                wait_us: float) -> Callable[[int], Tuple[float, float]]:
    """``every -> (BASE mean latency µs, trial/BASE ratio)``: two fresh servers of ``python``'s install,
    the trial one waiting ``wait_us`` on every ``every``-th request (0: never), measured interleaved:
    what :func:`load.calibration.calibrate_delay` measures with."""
    def measure(every: int) -> Tuple[float, float]:
        trial = (wait_us, every) if every else (0.0, 1)
        with start_case(start, case, python=python, cost_us=0.0, log_dir=log_dir, cpus=cpus) as base, \
                start_case(start, case, python=python, cost_us=0.0, log_dir=log_dir, cpus=cpus, delay=trial) as head:
            latency_fn({"base": base, "head": head}, route, min(duration, 0.5), oha_cpus)  # warm both
            res = latency_fn({"base": base, "head": head}, route, duration, oha_cpus)
        if not res["base"].get("ok") or not res["head"].get("ok"):
            raise GateError(f"calibration: no 2xx answer at one connection on {case.name}")
        return res["base"]["avg_ms"] * 1000, res["head"]["avg_ms"] / res["base"]["avg_ms"]
    return measure


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


def _low_latency_run(latency_fn: LatencyFn, handles: Dict[str, Any], route: Any, case: GateCase,
                     opts: GateOptions) -> Dict[str, Dict[str, Any]]:
    """Both sides' low-concurrency latencies in one pair, interleaved request by request (the ``lat``
    metrics); a side that answers nothing stops the gate like one that answers nothing under load."""
    res = latency_fn(handles, route, opts.latency_duration, opts.oha_cpus)
    for side, rec in res.items():
        if not rec.get("ok"):
            srv = handles[side]
            raise GateError(f"{side.upper()} answered no request with 2xx at one connection on {case.name}; server log "
                            f"tail:\n{srv.log_tail(20) if hasattr(srv, 'log_tail') else ''}")
    return res


def _calibrate_delay(opts: GateOptions, result: GateResult, increase: float, routes: Dict[str, Any], *,
                     base_python: str, start: Start, latency_fn: LatencyFn, log_dir: Path,
                     cpus: Optional[Sequence[int]], log: Callable[[str], None]) -> Tuple[float, int]:
    """HEAD's (wait µs, every N) for a mean latency ``1 + increase`` times BASE's, measured on BASE's
    install on the first case (:func:`load.calibration.calibrate_delay`); stored in ``result.calibration``."""
    from .calibration import DELAY_WAIT_US

    case = opts.cases[0]
    probe = delay_probe(case, routes[case.route], python=base_python, start=start, latency_fn=latency_fn,
                        log_dir=log_dir, cpus=cpus, oha_cpus=opts.oha_cpus, duration=max(opts.latency_duration, 1.0),
                        wait_us=DELAY_WAIT_US)
    log(f"calibrating the injected wait for a {increase:.0%} latency increase on {case.name} (BASE's install)")
    every, calib = calibrate_delay(probe, increase, DELAY_WAIT_US, rounds=3, log=log)
    result.calibration = dict(result.calibration or {}, delay=dict(calib, case=case.name))
    log(f"calibration: BASE {calib['mean_latency_us']:.0f} µs mean latency at one connection -> "
        f"HEAD waits {DELAY_WAIT_US:.0f} µs on every {every} request(s) (nominal {calib['nominal_every']})")
    return DELAY_WAIT_US, every


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
    latency_fn: LatencyFn = _interleaved,
    head_slowdown: Optional[float] = None,
    head_delay_increase: Optional[float] = None,
    log: Callable[[str], None] = lambda s: print(s, file=sys.stderr, flush=True),
    clock: Callable[[], float] = time.monotonic,
) -> GateResult:
    """Run the pairs and return the result (rules 1-4). ``start``/``measure_fn``/``route_fn``/``check_fn``
    default to ``servers.start_server`` and ``load.measure``; tests pass fakes. ``head_slowdown`` and
    ``head_delay_increase`` calibrate HEAD's injected CPU cost and off-CPU wait on BASE's install first."""
    if start is None:
        from gatecheck.servers import start_server as start
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

    def launch(case: GateCase, side: str, cost_us: float):
        return start_case(start, case, python=base_python if side == "base" else head_python,
                          cost_us=cost_us if side == "head" else 0.0, log_dir=logs, cpus=server_cpus,
                          delay=delay if side == "head" else (0.0, 1))

    routes = {c.route: route_fn(c.route) for c in opts.cases}
    cost_us = opts.head_cost_us
    if head_slowdown:
        case = opts.cases[0]
        cpu_per_request = burn_probe(case, routes[case.route], python=base_python, start=start, measure_fn=measure_fn,
                                     log_dir=logs, cpus=server_cpus, warmup=opts.warmup, duration=opts.duration,
                                     measure_kwargs=kwargs)
        log(f"calibrating the injected cost for a {head_slowdown:.0%} slowdown on {case.name} (BASE's install)")
        cost_us, calib = calibrate_cost(cpu_per_request, head_slowdown, rounds=3, log=log)
        result.calibration = dict(calib, case=case.name)
        log(f"calibration: BASE {calib['per_request_us']:.1f} µs of server CPU per request -> {cost_us:.2f} µs burnt "
            f"per request on HEAD (x{calib['target_ratio']:.3f}; the additive model said {calib['nominal_cost_us']:.2f})")
    if cost_us:
        result.head["cost_us"] = cost_us
    delay = (opts.head_delay_us, opts.head_delay_every)
    if head_delay_increase:
        delay = _calibrate_delay(opts, result, head_delay_increase, routes, base_python=base_python, start=start,
                                 latency_fn=latency_fn, log_dir=logs, cpus=server_cpus, log=log)
    if delay[0]:
        result.head["delay_us"], result.head["delay_every"] = delay

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
                records: Dict[str, Dict[str, Any]] = {}
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
                    run, cpu_ns, used = measure_cpu(measure_fn, srv, routes[case.route], case, opts.duration, kwargs,
                                                    server_cpus)
                    if run.result.all_failed:
                        raise GateError(f"{side.upper()} answered no request with 2xx on {case.name} in pair {pair + 1}; "
                                        f"server log tail:\n{srv.log_tail(20) if hasattr(srv, 'log_tail') else ''}")
                    rec = _run_record(run, case, pair, side, position)
                    records[side] = rec
                    if cpu_ns:
                        rec["server_cpu_ns"] = cpu_ns
                    if used is not None:
                        # Diagnostic only (never used in a verdict): what else ran on the server's CPUs.
                        own = cpu_ns / 1e9 if cpu_ns else run.server_cpu_seconds
                        rec["server_cpus_busy_seconds"] = round(used.busy, 3)
                        rec["foreign_cpu_seconds"] = round(max(0.0, used.busy - own), 3)
                        rec["steal_seconds"] = round(used.steal, 3)
                if opts.latency_duration > 0 and not case.http2:  # the latency client speaks HTTP/1.1
                    low = _low_latency_run(latency_fn, {side: servers[(case.name, side)] for side in order},
                                           routes[case.route], case, opts)
                    for side in order:
                        records[side]["low_latency"] = low[side]
                for side in order:
                    records[side]["gate_seconds"] = round(clock() - t0, 3)  # when this side's runs ended
                    result.runs.append(records[side])
                    with open(stream, "a", encoding="utf-8") as f:  # a crash keeps every finished run
                        f.write(json.dumps(records[side], sort_keys=True) + "\n")
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
    except KeyboardInterrupt:
        # Ctrl-C or SIGTERM (load.signals): keep every finished run; the caller reports them and exits 130.
        result.interrupted = True
        result.stopped_because = f"interrupted during pair {result.pairs + 1}"
    finally:
        _stop_all(list(servers.values()))
    result.results = analyse(result.runs, opts)
    result.seconds = clock() - t0
    return result


if __name__ == "__main__":  # ``python -m gatecheck.load.gate ...`` keeps working; the command line lives in gate_cli,
    # which imports this module: run it by name, so that this module never imports upwards (no import cycle).
    import runpy

    runpy.run_module("gatecheck.load.gate_cli", run_name="__main__", alter_sys=True)
