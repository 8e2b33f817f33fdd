"""Running a gate: servers per side, the measured runs, the injected slowdowns' calibration, the pair loop
(each pair's measured runs: :mod:`load.gate.pair_runs`).

Rules 1-4 of :mod:`load.gate` are enforced here. Servers are started, their routes checked and measured
through :class:`load.run.Pipeline`, as the profile runner does; what HEAD is injected with and how its
size is probed are :mod:`load.gate.injection`'s; ``start``, ``measure_fn``,
``check_fn`` (the pipeline's seams), ``route_fn`` and ``latency_fn`` can be replaced, so the loop is tested
with fake servers and runs.
"""

from __future__ import annotations

import json
import random
import sys
import time
from contextlib import nullcontext
from dataclasses import dataclass, field, replace
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Callable, ContextManager, Dict, List, Optional, Tuple

from ..plan import route as lookup_route
from ..run import Pipeline, valgrind_missing
from .analysis import _decisive, analyse
from .calibration import DELAY_WAIT_US, calibrate_cost, calibrate_delay, calibrate_loops
from .counted import CountLane, counted_records
from .injection import LatencyFn, burn_probe, count_probe, delay_probe, idle_env, injected_env, spin_cost
from .model import COUNTED, GateCase, GateError, GateOptions, GateResult
from .pair_runs import PairRuns, _interleaved, _stop_all

__all__ = ["run_gate"]


@dataclass
class _Session(PairRuns):
    """One gate being run: its options, seams and state, so that each step is a short method."""

    opts: GateOptions
    result: GateResult
    pythons: Dict[str, str]  # side -> interpreter
    pipeline: Pipeline
    latency_fn: LatencyFn
    routes: Dict[str, Any]
    out_dir: Path
    log: Callable[[str], None]
    clock: Callable[[], float]
    t0: float
    cost_us: float = 0.0
    delay: Tuple[float, int] = (0.0, 1)
    loops: int = 0
    servers: Dict[Tuple[str, str], Any] = field(default_factory=dict)
    analysed: Tuple[int, Any] = (-1, None)  # (how many runs, their verdicts): the last analysis, reused at the end
    lane: Any = None  # the counted lane running beside the pairs (None: not counting)

    def lane_paused(self) -> ContextManager[Any]:
        """The counted lane stopped for a latency run (:meth:`load.gate.counted.CountLane.paused`); nothing to
        stop without one."""
        paused = getattr(self.lane, "paused", None)
        return paused() if paused else nullcontext()

    @property
    def server_cpus(self) -> Optional[List[int]]:
        return list(self.opts.server_cpus) if self.opts.server_cpus else None

    def launch(self, case: GateCase, side: str) -> Any:
        """Start ``side``'s server for ``case``; HEAD's app carries the injected cost and wait, BASE's the same
        variables with nothing ever due (:func:`idle_env`)."""
        return self.pipeline.start(case.setup, python=self.pythons[side], env=self.env(side))

    def env(self, side: str) -> Dict[str, str]:
        """The fixture variables of ``side``'s app: HEAD's injection, BASE's idle twin (:func:`idle_env`)."""
        injected = (self.cost_us, self.delay, self.loops)
        return injected_env(*injected) if side == "head" else idle_env(*injected)

    def calibrate(self, head_slowdown: Optional[float], head_delay_increase: Optional[float]) -> None:
        """HEAD's injected CPU cost and off-CPU wait: as given, or calibrated on BASE's install first. A
        slowdown is counted work (a loop sized by counting instructions) where the gate counts, else a timed burn."""
        self.cost_us, self.loops = self.opts.head_cost_us, self.opts.head_loops
        if head_slowdown and self.opts.count_pairs:  # counting here (_without_counting set 0 pairs where it cannot)
            self.loops = self._calibrate_loops(head_slowdown)
        elif head_slowdown:
            self.cost_us = self._calibrate_cost(head_slowdown)
        if self.cost_us:
            self.result.head["cost_us"] = self.cost_us
        if self.loops:
            self.result.head["loops"] = self.loops
        self.delay = (self.opts.head_delay_us, self.opts.head_delay_every)
        if head_delay_increase:
            self.delay = self._calibrate_delay(head_delay_increase)
        if self.delay[0]:
            self.result.head["delay_us"], self.result.head["delay_every"] = self.delay

    def _calibrate_cost(self, slowdown: float) -> float:
        """The burn for ``slowdown`` on the first case (:func:`load.gate.calibration.calibrate_cost`)."""
        case = self.opts.cases[0]
        cpu_per_request = burn_probe(
            self.pipeline,
            case,
            self.routes[case.route],
            python=self.pythons["base"],
            warmup=self.opts.warmup,
            duration=self.opts.duration,
        )
        self.log(f"calibrating the injected cost for a {slowdown:.0%} slowdown on {case.name} (BASE's install)")
        cost_us, calib = calibrate_cost(cpu_per_request, slowdown, rounds=3, log=self.log)
        self.result.calibration = dict(calib, case=case.name)
        self.log(
            f"calibration: BASE {calib['per_request_us']:.1f} µs of server CPU per request -> {cost_us:.2f} µs "
            f"burnt per request on HEAD (x{calib['target_ratio']:.3f}; the additive model said "
            f"{calib['nominal_cost_us']:.2f})"
        )
        return cost_us

    def _calibrate_loops(self, slowdown: float) -> int:
        """The loop for ``slowdown`` more instructions per request on the first case, by counting: BASE's
        instructions per request (one counted server) and the loop's per iteration and per call (a bare
        interpreter under callgrind), at once (:func:`load.gate.calibration.calibrate_loops`)."""
        import threading

        case, opts = self.opts.cases[0], self.opts
        self.log(
            f"calibrating the injected work for {slowdown:.0%} more instructions per request on {case.name} "
            "(counting BASE's install)"
        )
        folder, spin = self.out_dir / "counted", {}
        t = threading.Thread(target=lambda: spin.update(cost=spin_cost(self.pythons["head"], folder)))
        t.start()
        try:
            per_request = count_probe(
                self.pipeline,
                case,
                self.routes[case.route],
                python=self.pythons["base"],
                requests=opts.count_requests,
                warmup=opts.count_warmup,
                out_dir=folder,
            )
        finally:
            t.join()
        if "cost" not in spin:
            raise GateError("calibration: the loop's instructions could not be counted (see the log above)")
        loops, calib = calibrate_loops(per_request, *spin["cost"], slowdown)
        self.result.calibration = dict(calib, case=case.name)
        self.log(
            f"calibration: BASE {per_request:,.0f} instructions per request; a unit of work "
            f"{spin['cost'][0]:.1f} -> HEAD spins {loops} units per request (x{calib['expected_ratio']:.4f} "
            f"for x{calib['target_ratio']:.4f})"
        )
        return loops

    def start_lane(self, lane_fn: Callable[..., Any]) -> Any:
        """The counted lane (:mod:`load.gate.counted`) for every case, beside the timed pairs; None without it."""
        opts = self.opts
        if not opts.count_pairs:
            return None
        spec = {
            "cases": [c.to_dict() for c in opts.cases],
            "pythons": dict(self.pythons),
            "envs": {side: self.env(side) for side in ("base", "head")},
            "pairs": opts.count_pairs,
            "max_pairs": opts.count_max_pairs,
            "level": opts.level(COUNTED),
            "threshold": opts.count_threshold,
            "size_by": opts.size_by,
            # the budget's end, on the wall clock the lane's process shares: more pairs only if they end before it
            "deadline": time.time() + opts.budget - (self.clock() - self.t0),
            "restart_every": opts.count_restart_every,
            "requests": opts.count_requests,
            "warmup": opts.count_warmup,
            "pause": opts.count_pause,
            "seed": opts.seed,
            "out_dir": str(self.out_dir),
        }
        self.log(
            f"counting instructions per request beside the timed pairs: {opts.count_pairs} counted pairs of "
            f"{opts.count_requests} requests per side, fresh servers every {opts.count_restart_every}"
        )
        return lane_fn(spec, self.out_dir)

    def finish_lane(self, lane: Any, timeout: float = 900.0) -> None:
        """Wait for the counted lane, then take its records; a lane that failed is noted, in one line."""
        note = lane.wait(timeout)
        if note:
            self.result.count_note = f"instructions per request: {note}"
            self.log(self.result.count_note)
        self.result.runs.extend(counted_records(self.out_dir))
        self.result.runs.sort(key=self._order())

    def _order(self) -> Callable[[Dict[str, Any]], int]:
        """Records in the order runs.jsonl has them (timed and counted interleaved as they ended)."""
        from ..records import load_records

        path = self.out_dir / "runs.jsonl"
        lines = [json.dumps(r, sort_keys=True) for r in load_records([path])] if path.exists() else []
        where = {line: i for i, line in enumerate(lines)}
        return lambda r: where.get(json.dumps(r, sort_keys=True), len(where))

    def _calibrate_delay(self, increase: float) -> Tuple[float, int]:
        """HEAD's (wait µs, every N) for a mean latency ``1 + increase`` times BASE's, measured on BASE's
        install on the first case (:func:`load.gate.calibration.calibrate_delay`); stored in the calibration."""
        case, opts = self.opts.cases[0], self.opts
        probe = delay_probe(
            self.pipeline,
            case,
            self.routes[case.route],
            python=self.pythons["base"],
            latency_fn=self.latency_fn,
            duration=max(opts.latency_duration, 1.0),
            wait_us=DELAY_WAIT_US,
        )
        self.log(f"calibrating the injected wait for a {increase:.0%} latency increase on {case.name} (BASE's install)")
        every, calib = calibrate_delay(probe, increase, DELAY_WAIT_US, rounds=3, log=self.log)
        self.result.calibration = dict(self.result.calibration or {}, delay=dict(calib, case=case.name))
        self.log(
            f"calibration: BASE {calib['mean_latency_us']:.0f} µs mean latency at one connection -> "
            f"HEAD waits {DELAY_WAIT_US:.0f} µs on every {every} request(s) (nominal {calib['nominal_every']})"
        )
        return DELAY_WAIT_US, every

    def check_routes(self) -> None:
        """Every route on both sides before any measurement: a benchmark of a broken route is worthless."""
        for case in self.opts.cases:
            for side in ("base", "head"):
                with self.launch(case, side) as srv:
                    self.pipeline.check(srv, self.routes[case.route], http2=case.http2)
                    getattr(self.result, side).setdefault("versions", dict(getattr(srv, "versions", {}) or {}))

    def analyse(self) -> List[Any]:
        """The verdicts of every run so far (the last analysis again when no run came since)."""
        if self.analysed[0] != len(self.result.runs):
            self.analysed = (len(self.result.runs), analyse(self.result.runs, self.opts))
        return self.analysed[1]

    def pairs(self, rng: random.Random) -> None:
        """Rule 3: at least ``pairs`` pairs, then stop once precise, at the budget or at ``max_pairs``.

        The budget holds the gate's verdict too: another pair starts only when it and the analysis after
        it (timed on the analysis just made) still end inside it; the analysis made after the last pair is
        the verdict's, not repeated. A pair longer than every earlier one can still pass it by the excess."""
        opts, result = self.opts, self.result
        pair_seconds: List[float] = []
        for pair in range(opts.max_pairs):
            p0 = self.clock()
            for case in opts.cases:
                order = ["base", "head"]
                rng.shuffle(order)
                self.measure_case(case, pair, order)
            result.pairs = pair + 1
            pair_seconds.append(self.clock() - p0)
            self.log(
                f"pair {pair + 1}: "
                + ", ".join(f"{r['side']} {r['rps']:,.0f}" for r in result.runs if r["pair"] == pair)
                + f" RPS ({self.clock() - self.t0:.0f} s)"
            )
            if result.pairs >= opts.pairs:
                a0 = self.clock()
                if _decisive(self.analyse(), opts.fail_on):
                    result.stopped_because = "every gated interval is narrower than the threshold"
                    return
                analysis_seconds = self.clock() - a0
                if self.clock() - self.t0 + max(pair_seconds) + analysis_seconds > opts.budget:
                    result.stopped_because = f"time budget of {opts.budget:.0f} s reached"
                    return
        result.stopped_because = f"--max-pairs {opts.max_pairs} reached"


Seam = Optional[Callable[..., Any]]


def _pipeline(opts: GateOptions, out_dir: Path, start: Seam, measure_fn: Seam, check_fn: Seam) -> Pipeline:
    """The runner's pipeline, pinned as the options say; the seams given replace its defaults
    (``servers.start_server``, ``load.run.measure.measure`` and ``check_route``)."""
    seams = {name: fn for name, fn in (("start_fn", start), ("measure_fn", measure_fn), ("check_fn", check_fn)) if fn}
    return Pipeline(out_dir, server_cpus=opts.server_cpus, oha_cpus=opts.oha_cpus, **seams)


def _without_counting(
    opts: GateOptions, missing: Callable[[], Optional[str]], log: Callable[[str], None]
) -> Tuple[GateOptions, str]:
    """``opts`` as run: where valgrind cannot count, without the counted metric (gated on the timed ones,
    their levels as without it), and the one line that says so."""
    if not opts.count_pairs:
        return replace(opts, fail_on=tuple(m for m in opts.fail_on if m != COUNTED)), ""
    reason = missing()
    if reason is None:
        return opts, ""
    note = f"instructions per request not measured: {reason}; gating on the timed metrics"
    log(note)
    return replace(opts, fail_on=tuple(m for m in opts.fail_on if m != COUNTED), count_pairs=0), note


def _lookup_route(name: str) -> Any:
    return lookup_route(name).resolve()


def run_gate(
    opts: GateOptions,
    *,
    base_python: str,
    head_python: str,
    base_info: Optional[Dict[str, Any]] = None,
    head_info: Optional[Dict[str, Any]] = None,
    out_dir: Path,
    start: Seam = None,
    measure_fn: Seam = None,
    route_fn: Callable[[str], Any] = _lookup_route,
    check_fn: Seam = None,
    latency_fn: LatencyFn = _interleaved,
    head_slowdown: Optional[float] = None,
    head_delay_increase: Optional[float] = None,
    log: Callable[[str], None] = lambda s: print(s, file=sys.stderr, flush=True),
    clock: Callable[[], float] = time.monotonic,
    lane_fn: Callable[..., Any] = CountLane,
    counting_missing: Callable[[], Optional[str]] = valgrind_missing,
) -> GateResult:
    """Run the pairs and return the result (rules 1-4). ``start``/``measure_fn``/``route_fn``/``check_fn``
    default to ``servers.start_server`` and ``load.run.measure``; tests pass fakes, and ``lane_fn`` (the counted
    lane) and ``counting_missing`` (why valgrind cannot count here, or None) too. ``head_slowdown`` and
    ``head_delay_increase`` calibrate HEAD's injected work and off-CPU wait on BASE's install first."""
    rng = random.Random(opts.seed)
    t0 = clock()
    opts, note = _without_counting(opts, counting_missing, log)
    result = GateResult(
        base=dict(base_info or {}, python=base_python),
        head=dict(head_info or {}, python=head_python),
        options=opts,
        started_at=datetime.now(timezone.utc).isoformat(timespec="seconds"),
        count_note=note,
    )
    Path(out_dir).mkdir(parents=True, exist_ok=True)
    session = _Session(
        opts,
        result,
        {"base": base_python, "head": head_python},
        _pipeline(opts, Path(out_dir), start, measure_fn, check_fn),
        latency_fn,
        {c.route: route_fn(c.route) for c in opts.cases},
        Path(out_dir),
        log,
        clock,
        t0,
    )
    session.calibrate(head_slowdown, head_delay_increase)
    session.lane = session.start_lane(lane_fn)
    _run(session, session.lane, rng)
    result.results = session.analyse()
    result.seconds = clock() - t0
    return result


def _run(session: _Session, lane: Any, rng: random.Random) -> None:
    """Check the routes, run the pairs and take the counted lane's records; every server and the lane are
    stopped however it ends."""
    result = session.result
    try:
        session.check_routes()
        result.setup_seconds = session.clock() - session.t0
        session.pairs(rng)
        if lane is not None:
            session.finish_lane(lane)
            lane = None
    except KeyboardInterrupt:
        # Ctrl-C or SIGTERM (load.run.signals): keep every finished run; the caller reports them and exits 130.
        result.interrupted = True
        result.stopped_because = f"interrupted during pair {result.pairs + 1}"
        result.runs.extend(counted_records(session.out_dir))
    finally:
        if lane is not None:
            lane.stop()
        _stop_all(list(session.servers.values()))
