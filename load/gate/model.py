"""The gate's nouns: what is measured (cases, options, metrics) and what is decided (results).

Rules of this module: data only, no I/O; it imports nothing from the rest of the gate. ``GateResult``
knows how to become ``pairs.json`` (:meth:`GateResult.to_dict`, a ``gate`` record of :mod:`load.records.results`),
everything needed to recompute every verdict offline.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any, Dict, List, Optional, Sequence, Tuple

from gatecheck.fixtures import COST_ENV
from gatecheck.fixtures.payloads import COST_EVERY_ENV, DELAY_ENV, DELAY_EVERY_ENV, LOOPS_ENV

from ..run import ServerSetup, setup_for
from .stats import family_confidence, weighted_levels
from .verdict import Decision, Verdict

__all__ = [
    "DEFAULT_ALPHA_WEIGHTS",
    "GateCase",
    "GateOptions",
    "GateResult",
    "CaseResult",
    "GateError",
    "METRICS",
    "LATENCY_METRICS",
    "COUNTED",
    "STATISTIC_LABELS",
    "COST_ENV",
    "COST_EVERY_ENV",
    "LOOPS_ENV",
    "DELAY_ENV",
    "DELAY_EVERY_ENV",
    "INCONCLUSIVE_STATUS",
]

# COST_ENV: the fixture apps burn this many µs of CPU on every COST_EVERY_ENV-th payload/json/echo request
# (the gate injects an average cost per request as such bursts, running.cost_burst); DELAY_ENV: ... and wait
# this many µs without CPU (asyncio.sleep / time.sleep) on every DELAY_EVERY_ENV-th such request. The
# variables are fixtures' own (fixtures/payloads.py), imported, never spelled here.

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
    # requests make; the median does not (benchmarks/gate/README.md, fourth experiment).
    "lat": ("low_latency.avg_ms", False, "mean latency at low concurrency"),
    "lat50": ("low_latency.p50_ms", False, "median latency at low concurrency"),
    # The counted lane (load/gate/counted.py): the server tree's instructions per request under valgrind, start-up
    # and warm-up not counted, BASE and HEAD interleaved request by request: nearly deterministic, so a few pairs
    # see a 1% change on a machine whose CPU speed moves by more than that from one second to the next.
    "count": ("instructions_per_request", False, "instructions per request"),
}

#: The counted metric: its own pairs (the counted lane's), threshold (``count_threshold``) and interval (t).
COUNTED = "count"

#: The metrics measured by the low-concurrency run.
LATENCY_METRICS = ("lat", "lat50")


#: How the summary names each statistic of :data:`load.gate.stats.STATISTICS`.
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
    """One thing measured on both sides: a server setup (resolved target, app, env), a route and a concurrency."""

    setup: ServerSetup
    route: str
    concurrency: int

    @property
    def http2(self) -> bool:
        return self.setup.http2

    @property
    def name(self) -> str:
        return f"{self.route} c{self.concurrency} ({self.setup.target})"

    def to_dict(self) -> Dict[str, Any]:
        """The case as pairs.json's ``options.cases`` stores it."""
        return {
            "target": str(self.setup.target),
            "route": self.route,
            "concurrency": self.concurrency,
            "app": self.setup.app,
            "env": [list(kv) for kv in self.setup.env],
            "http2": self.http2,
        }

    @classmethod
    def from_dict(cls, data: Dict[str, Any]) -> GateCase:
        """A case back from pairs.json (to recompute verdicts offline)."""
        from gatecheck.servers import Target

        setup = setup_for(Target.parse(data["target"]), app=data.get("app"), env=tuple(map(tuple, data.get("env", ()))))
        return cls(setup, data["route"], int(data["concurrency"]))


# CPU's regressions are targeted at the threshold itself (5%), latency's at twice it (10%, docs/gate.md), so CPU
# gets four fifths of alpha: with cpu,lat its intervals are at 96% and latency's at 99% (not 97.5% each).
DEFAULT_ALPHA_WEIGHTS: Tuple[Tuple[str, float], ...] = (("cpu", 4.0), ("lat", 1.0), ("count", 1.0))


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
    fail_on: Tuple[str, ...] = ("cpu", "lat", "count")
    latency_duration: float = 1.0  # seconds of the interleaved one-connection run after the main runs (0: none)
    restart_every: int = 1
    server_cpus: Optional[Tuple[int, ...]] = None
    oha_cpus: Optional[Tuple[int, ...]] = None
    resamples: int = 10_000
    size_by: str = "interval"  # what must reach the threshold: the interval's worse end, or the estimate (stats.decide)
    # Shares of the family's alpha per gated metric (weighted Bonferroni, stats.weighted_levels); a gated metric
    # not named has weight 1, and () means equal shares (every gate stored before the eighth experiment's).
    alpha_weights: Tuple[Tuple[str, float], ...] = DEFAULT_ALPHA_WEIGHTS
    # The counted lane: counted pairs (0: none, and "count" is not gated), fresh counted servers every so many of
    # them, requests per side counted in each, uncounted requests per side before a server pair's first, the
    # pause after each counted answer, and the counted metric's own threshold.
    count_pairs: int = 6
    count_max_pairs: int = 12  # more counted pairs while the count's interval is too wide and the budget allows
    count_restart_every: int = 3
    count_requests: int = 300
    count_warmup: int = 300
    count_threshold: float = 0.01
    count_pause: float = (
        0.002  # each server rests between counted requests (pilots: per-pair spread 0.2-0.3%, not 0.35%)
    )
    head_loops: int = 0  # HEAD's app spins this many loop iterations per request (counted work; fixtures.spin)

    def __post_init__(self) -> None:
        if self.pairs < 8:
            raise ValueError(
                f"the gate needs at least 8 pairs (the bootstrap under-covers below that), got {self.pairs}"
            )
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
        unknown = {m for m, _ in self.alpha_weights} - set(METRICS)
        if unknown:
            raise ValueError(f"unknown metric(s) {sorted(unknown)} in the alpha weights; choose from {sorted(METRICS)}")
        if self.fail_on:
            weighted_levels(self.confidence, self.weights)  # refuses a weight that is not > 0
        if COUNTED in self.fail_on and self.count_pairs == 1:
            raise ValueError("--fail-on count needs at least 2 counted pairs (--count-pairs; 0: not counted)")
        if self.count_pairs and self.count_max_pairs < self.count_pairs:
            raise ValueError(f"--count-max-pairs {self.count_max_pairs} is below --count-pairs {self.count_pairs}")
        if (
            not 0 < self.count_threshold < 1
            or self.count_requests < 1
            or self.count_warmup < 0
            or self.count_restart_every < 1
            or self.count_pause < 0
        ):
            raise ValueError(
                "the counted lane needs a threshold in (0, 1), requests >= 1, a warm-up >= 0, "
                "fresh servers every >= 1 pairs and a pause >= 0"
            )

    def threshold_for(self, metric: str) -> float:
        """The slowdown ``metric`` must catch: the counted metric's own, else ``threshold``."""
        return self.count_threshold if metric == COUNTED else self.threshold

    @property
    def comparisons(self) -> int:
        """How many intervals can fail the gate: every case times every gated metric."""
        return len(self.cases) * len(self.fail_on)

    @property
    def interval_confidence(self) -> float:
        """Each interval's level, so that all :attr:`comparisons` hold together at ``confidence``
        (Bonferroni, :func:`load.gate.stats.family_confidence`; docs/gate.md says why)."""
        return family_confidence(self.confidence, self.comparisons)

    @property
    def weights(self) -> Dict[str, float]:
        """Each gated metric's share of alpha (1 where :attr:`alpha_weights` does not name it)."""
        named = dict(self.alpha_weights)
        return {m: float(named.get(m, 1.0)) for m in self.fail_on}

    def level(self, metric: str) -> float:
        """The level of ``metric``'s intervals: a gated metric's weighted share
        (:func:`load.gate.stats.weighted_levels`), so that all :attr:`comparisons` hold together at ``confidence``; an
        ungated one, shown for information, at the equal share (:attr:`interval_confidence`)."""
        if metric not in self.fail_on:
            return self.interval_confidence
        return weighted_levels(self.confidence, self.weights, len(self.cases))[metric]


#: the gate's exit status when it is inconclusive: neither a regression nor "no regression" can be said
INCONCLUSIVE_STATUS = 3


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

    def inconclusive(self, fail_on: Sequence[str]) -> list:
        """The gated metrics whose intervals cannot exclude a change of the threshold's size."""
        return [
            m for m, d in self.decisions.items() if m in fail_on and d is not None and d.verdict is Verdict.INCONCLUSIVE
        ]

    def unmeasured(self, fail_on: Sequence[str]) -> list:
        """The gated metrics with no clean pair (a counted lane that failed, every pair excluded): nothing rules
        out a regression there."""
        return [m for m in fail_on if self.decisions.get(m) is None]


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
    count_note: str = ""  # why instructions per request were not measured (valgrind missing, counting failed)

    @property
    def inconclusive(self) -> bool:
        """No gated regression, no errors on HEAD, but a gated comparison that cannot exclude the threshold, or
        a gated metric not measured at all."""
        fail_on = self.options.fail_on
        return not any(r.failed(fail_on) for r in self.results) and any(
            r.inconclusive(fail_on) or r.unmeasured(fail_on) for r in self.results
        )

    @property
    def exit_status(self) -> int:
        """1: a gated regression or errors on HEAD; 3: inconclusive (see :attr:`inconclusive`); else 0."""
        if any(r.failed(self.options.fail_on) for r in self.results):
            return 1
        return INCONCLUSIVE_STATUS if self.inconclusive else 0

    def to_dict(self) -> Dict[str, Any]:
        """pairs.json (a ``gate`` record; :func:`load.records.results.write_document` stamps its version): everything
        needed to recompute every verdict offline."""
        return {
            "kind": "gate",
            "started_at": self.started_at,
            "seconds": round(self.seconds, 3),
            "setup_seconds": round(self.setup_seconds, 3),
            "pairs": self.pairs,
            "stopped_because": self.stopped_because,
            "interrupted": self.interrupted,
            "count_note": self.count_note,
            "exit_status": self.exit_status,
            "base": self.base,
            "head": self.head,
            "calibration": self.calibration,
            "options": {**asdict(self.options), "cases": [c.to_dict() for c in self.options.cases]},
            "results": [_case_result_dict(r) for r in self.results],
            "runs": self.runs,
        }


def _case_result_dict(r: CaseResult) -> Dict[str, Any]:
    out: Dict[str, Any] = {
        "case": r.case.name,
        "excluded_pairs": r.excluded_pairs,
        "head_errors": r.head_errors,
        "base_errors": r.base_errors,
        "warnings": list(r.warnings),
        "metrics": {},
    }
    for metric, d in r.decisions.items():
        out["metrics"][metric] = (
            None
            if d is None
            else {
                "verdict": d.verdict.value,
                "ratio": d.estimate.ratio,
                "low": d.estimate.low,
                "high": d.estimate.high,
                "n": d.estimate.n,
                "change": d.change,
                "more_pairs": d.more_pairs,
                "reason": d.reason,
                "base": r.base[metric],
                "head": r.head[metric],
            }
        )
    return out
