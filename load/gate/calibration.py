"""Calibrating the fake regression: the ``GATECHECK_COST_US`` that makes a server a known amount slower.

Rules of this module:

1. **The size of a slowdown is what the server shows**, not what the app burns: a slowdown ``s`` is
   HEAD/BASE server CPU per request of ``1 / (1 - s)`` (then a CPU-bound server's RPS drops by ``s``).
2. **Burning c µs per request does not add c µs per request.** Measured on this project's machine
   (granian:rsgi, route json, 29.5 µs of server CPU per request, 6-8 interleaved pairs of fresh
   processes each): a burn of 1.6 µs added 0.73 µs, 3.27 µs added 2.14 µs, 6.5 µs added 5.37 µs.
   About 1.1 µs of every burn is won back elsewhere in the server (a slower handler lets the I/O side
   batch more per wake-up, and a busy-loop timed by the wall clock loses what preemption takes). The
   model ``c = T s / (1 - s)`` (:func:`nominal_cost`) therefore under-injects, most at small ``s``.
   The cost is injected as 50 µs bursts on every N-th request (``load.gate.injection.cost_burst``): on
   granian 2.8.9 a burn on every request added 1.7 µs at 0.001 µs and 2-12% at 0.25 µs, where bursts of
   50 µs every 100th/50th/30th request added 5.3/8.8/12.8% within 1% per round (benchmarks/gate/README.md,
   sixth experiment). The calibration below sizes the average cost per request, whatever its form.
3. So the cost is **found by measurement** (:func:`calibrate_cost`), in two stages of rounds on fresh
   processes, each trial cost measured right after its round's BASE: the nominal cost and twice it, a
   straight line through their median ratios solved for the target; then that answer itself, measured
   as many rounds again. The answer is a robust line through **every** round's point (:func:`robust_cost`:
   Theil-Sen, log ratio against cost), solved for the target. Why not the simpler lines:
   - one least-squares line over every round of two trial costs (an earlier version): with the 5% cost
     it gave 2.32 µs, and 12 gates measured x1.039-1.065 instead of x1.053 - a disturbed round (x1.086
     where the others gave x1.02-1.05) pulls a least-squares line, where it moves Theil-Sen's median of
     slopes by one rank;
   - a secant step through the last answer's median and the nearest trial point across the target (the
     version before this one): exact on a smooth convex response, but with two points 0.4 µs apart and
     single rounds spreading from x1.01 to x1.08, the 3% and 5% answers of one calibration came out in
     the wrong order (1.05 and 0.49 µs; benchmarks/gate/README.md, eighth experiment). A line through all 48
     points of that calibration, log ratio = 0.001 + 0.0391 × µs, put both kinds on their names (x1.050
     and x1.028 measured over 20 gates each).
   The measuring is a callable passed in (``cpu_per_request(cost_us) -> µs``), so the arithmetic is
   tested on known answers.
4. **The off-CPU wait** (``--head-delay PCT``, :func:`calibrate_delay`) is sized the same way, against
   the mean latency of single requests: a wait of :data:`DELAY_WAIT_US` on every N-th request, N found
   by measurement (an event loop's timers and a woken thread both overshoot a short wait).
5. **Counted work is sized by counting** (:func:`calibrate_loops`): where the gate counts instructions, a
   slowdown is a fixed amount of work on every request (``fixtures.payloads.spin``: units of about 70
   instructions, BASE calling it with none), and its size is arithmetic over counts (BASE's instructions per
   request, a unit's instructions), with no clock in it.
"""

from __future__ import annotations

import math
import statistics
from typing import Any, Callable, Dict, List, Sequence, Tuple

__all__ = [
    "nominal_cost",
    "target_ratio",
    "fit_cost",
    "robust_cost",
    "calibrate_cost",
    "DELAY_WAIT_US",
    "nominal_every",
    "calibrate_delay",
    "calibrate_loops",
]


def target_ratio(slowdown: float) -> float:
    """HEAD/BASE server CPU per request that a slowdown of ``slowdown`` means (``1 / (1 - s)``)."""
    if not 0 < slowdown < 1:
        raise ValueError(f"need 0 < slowdown < 1, got {slowdown!r}")
    return 1.0 / (1.0 - slowdown)


def nominal_cost(per_request_us: float, slowdown: float) -> float:
    """Microseconds of CPU per request that would make a server spending ``per_request_us`` per request
    ``slowdown`` slower if costs simply added: ``T (1/(1-s) - 1) = T s / (1 - s)``. Rule 2 says they
    do not; this is :func:`calibrate_cost`'s first guess."""
    if not per_request_us > 0:
        raise ValueError(f"need a positive time per request, got {per_request_us!r}")
    return per_request_us * (target_ratio(slowdown) - 1.0)


def fit_cost(points: Sequence[Tuple[float, float]], slowdown: float) -> float:
    """The cost whose HEAD/BASE ratio is :func:`target_ratio`, from measured ``(cost_us, ratio)`` points.

    A least-squares line of ratio against cost through the points (two or more distinct costs), solved
    for the target. A line that does not rise (noise swamped the trial costs) cannot be solved: then the
    largest trial cost is scaled proportionally, which is the model of rule 2's first guess. The answer
    is kept within [1/4, 4] times the smallest and largest trial cost: a calibration is a correction,
    not an extrapolation.
    """
    if len({c for c, _ in points}) < 2:
        raise ValueError("need points at two or more distinct costs")
    want = target_ratio(slowdown)
    xs, ys = [c for c, _ in points], [r for _, r in points]
    mx, my = statistics.fmean(xs), statistics.fmean(ys)
    sxx = sum((x - mx) ** 2 for x in xs)
    slope = sum((x - mx) * (y - my) for x, y in zip(xs, ys)) / sxx
    if slope > 0:
        cost = mx + (want - my) / slope
    else:
        top, top_ratio = max(points)
        cost = top * (want - 1.0) / (top_ratio - 1.0) if top_ratio > 1.0 else top
    return min(max(cost, min(xs) / 4.0), max(xs) * 4.0)


def robust_cost(points: Sequence[Tuple[float, float]], slowdown: float) -> Tuple[float, float, float]:
    """``(cost, intercept, slope)``: the cost whose HEAD/BASE ratio is :func:`target_ratio`, from a
    Theil-Sen line of log ratio against cost through every measured ``(cost_us, ratio)`` point (the
    median of the slopes between points at different costs; the median intercept under it). A line
    that does not rise falls back to :func:`fit_cost` on the median ratio per cost; the answer is kept
    within [1/4, 4] times the smallest and largest trial cost, as there."""
    costs = sorted({c for c, _ in points})
    if len(costs) < 2:
        raise ValueError("need points at two or more distinct costs")
    logs = [(c, math.log(r)) for c, r in points if r > 0]
    slopes = [(y2 - y1) / (x2 - x1) for i, (x1, y1) in enumerate(logs) for x2, y2 in logs[i + 1 :] if x2 != x1]
    slope = statistics.median(slopes) if slopes else 0.0
    intercept = statistics.median(y - slope * x for x, y in logs) if logs else 0.0
    if not slope > 0:
        medians = [(c, statistics.median(r for x, r in points if x == c)) for c in costs]
        return fit_cost(medians, slowdown), intercept, slope
    cost = (math.log(target_ratio(slowdown)) - intercept) / slope
    return min(max(cost, costs[0] / 4.0), costs[-1] * 4.0), intercept, slope


def calibrate_cost(
    cpu_per_request: Callable[[float], float],
    slowdown: float,
    rounds: int = 3,
    log: Callable[[str], None] = lambda s: None,
) -> Tuple[float, Dict[str, Any]]:
    """Measure and return ``(cost_us, details)`` for ``slowdown`` (rule 3).

    ``cpu_per_request(cost_us)`` runs one measurement on a fresh server burning ``cost_us`` (0 = BASE)
    and returns its server CPU per 2xx response in µs. One BASE run fixes the nominal cost ``c``; then
    ``rounds`` rounds measure BASE, ``c`` and ``2c``; the line through the two median ratios gives
    ``c*``; ``rounds`` more rounds measure BASE and ``c*``; the answer is :func:`robust_cost` through
    every round's point at all three costs.
    """
    if rounds < 1:
        raise ValueError(f"need at least one round, got {rounds!r}")
    want = target_ratio(slowdown)
    bases = [cpu_per_request(0.0)]
    ratios: Dict[float, List[float]] = {}

    def measure_round(costs: Sequence[float], label: str) -> None:
        base = cpu_per_request(0.0)
        bases.append(base)
        for c in costs:
            ratios.setdefault(c, []).append(cpu_per_request(c) / base)
        log(
            f"calibration {label}: BASE {base:.1f} µs/request; "
            + ", ".join(f"+{c:.2f} µs burn -> x{ratios[c][-1]:.3f}" for c in costs)
        )

    trial = nominal_cost(bases[0], slowdown)
    for i in range(rounds):
        measure_round((trial, 2.0 * trial), f"round {i + 1}/{2 * rounds}")
    first = [(c, statistics.median(ratios[c])) for c in (trial, 2.0 * trial)]
    guess = fit_cost(first, slowdown)
    for i in range(rounds):
        measure_round((guess,), f"round {rounds + i + 1}/{2 * rounds}")
    cost, intercept, slope = robust_cost([(c, r) for c, rs in ratios.items() for r in rs], slowdown)
    per_request = statistics.median(bases)
    return cost, {
        "slowdown": slowdown,
        "target_ratio": want,
        "per_request_us": per_request,
        "nominal_cost_us": nominal_cost(per_request, slowdown),
        "first_line_cost_us": guess,
        "cost_us": cost,
        "rounds": rounds,
        "line": {"log_ratio_intercept": round(intercept, 6), "log_ratio_per_us": round(slope, 6)},
        "points": [[round(c, 4), round(r, 5)] for c, rs in ratios.items() for r in rs],
        "median_ratios": [[round(c, 4), round(statistics.median(rs), 5)] for c, rs in ratios.items()],
        "source": "measured: trial costs against BASE, a first line, then a Theil-Sen line of log ratio through "
        "every round (load/calibration.py)",
    }


def calibrate_loops(
    per_request: float, per_unit: float, per_call: float, slowdown: float
) -> Tuple[int, Dict[str, Any]]:
    """``(units, details)``: the units of ``fixtures.payloads.spin`` per request that make HEAD execute
    :func:`target_ratio` times BASE's ``per_request`` instructions, sized by counting (rule 5). BASE calls
    ``spin(0)`` on every request, so HEAD's extra work is ``units * per_unit`` (``per_call`` is recorded, not
    injected); both are counted in a bare interpreter, where a timed burn would cost whatever the clock allowed.
    At least one unit."""
    if not (per_request > 0 and per_unit > 0 and per_call >= 0):
        raise ValueError(f"need positive counts, got {per_request!r}, {per_unit!r}, {per_call!r}")
    want = target_ratio(slowdown)
    units = max(1, round(per_request * (want - 1.0) / per_unit))
    return units, {
        "slowdown": slowdown,
        "target_ratio": want,
        "instructions_per_request": round(per_request, 1),
        "instructions_per_unit": round(per_unit, 3),
        "instructions_per_call": round(per_call, 1),
        "loops": units,
        "expected_ratio": round(1.0 + units * per_unit / per_request, 5),
        "source": "counted: BASE's instructions per request under callgrind, and the loop's per unit in a bare "
        "interpreter (load/gate/calibration.py)",
    }


#: The wait a calibrated ``--head-delay PCT`` injects on every N-th request, in µs. An event loop wakes
#: timers at millisecond resolution (measured here: ``asyncio.sleep`` of 20 µs added 1.2 ms at one
#: connection), and a thread's wake-up from a sleep costs 50-150 µs on this VM, so a wait of a few
#: microseconds on every request cannot be injected; a 2 ms wait on every N-th request can, and its
#: mean over requests is what :func:`calibrate_delay` sizes.
DELAY_WAIT_US = 2000.0


def nominal_every(mean_latency_us: float, increase: float, wait_us: float = DELAY_WAIT_US) -> int:
    """Every how many requests a wait of ``wait_us`` raises a mean latency of ``mean_latency_us`` by
    ``increase`` if the wait added exactly itself: ``wait / (increase × T)``, at least 1."""
    if not increase > 0 or not mean_latency_us > 0:
        raise ValueError(f"need a positive increase and latency, got {increase!r}, {mean_latency_us!r}")
    return max(1, round(wait_us / (increase * mean_latency_us)))


def _every_for(every: int, ratio: float, increase: float, fallback: int) -> int:
    """The period that gives ``1 + increase`` under the model ``ratio - 1 = e / every`` fitted to one
    measured point; ``fallback`` when the point shows no increase (noise swamped it)."""
    if ratio <= 1.0:
        return fallback
    return max(1, round(every * (ratio - 1.0) / increase))


def calibrate_delay(
    measure: Callable[[int], Tuple[float, float]],
    increase: float,
    wait_us: float = DELAY_WAIT_US,
    rounds: int = 3,
    log: Callable[[str], None] = lambda s: None,
) -> Tuple[int, Dict[str, Any]]:
    """Measure and return ``(every, details)``: the period N such that waiting ``wait_us`` on every N-th
    request raises BASE's mean latency at low concurrency by ``increase`` (e.g. 0.10 for x1.10).

    ``measure(every)`` starts two fresh servers of BASE's install, one waiting on every ``every``-th
    request (``every`` 0: no wait), measures them interleaved (:mod:`load.run.latency`) and returns
    ``(BASE's mean latency in µs, trial/BASE ratio of the means)``. One call with no wait fixes the
    nominal period (:func:`nominal_every`); ``rounds`` measurements of it give a median ratio, corrected
    under the model ``ratio - 1 = e / N`` (a wait adds what it really lasts, once per N requests); then
    that answer is measured ``rounds`` times and corrected once more. The answer is kept within
    [1/4, 4] times the nominal period.
    """
    if rounds < 1:
        raise ValueError(f"need at least one round, got {rounds!r}")
    bases = [measure(0)[0]]
    ratios: Dict[int, List[float]] = {}

    def measure_round(every: int, label: str) -> float:
        base, ratio = measure(every)
        bases.append(base)
        ratios.setdefault(every, []).append(ratio)
        log(
            f"delay calibration {label}: BASE {base:.1f} µs mean latency; {wait_us:.0f} µs wait every {every} "
            f"request(s) -> x{ratio:.3f}"
        )
        return statistics.median(ratios[every])

    nominal = nominal_every(bases[0], increase, wait_us)
    clamp = lambda n: min(max(n, max(1, nominal // 4)), nominal * 4)
    for i in range(rounds):
        first = measure_round(nominal, f"round {i + 1}/{2 * rounds}")
    guess = clamp(_every_for(nominal, first, increase, nominal))
    for i in range(rounds):
        second = measure_round(guess, f"round {rounds + i + 1}/{2 * rounds}")
    every = clamp(_every_for(guess, second, increase, guess))
    return every, {
        "increase": increase,
        "target_ratio": 1.0 + increase,
        "mean_latency_us": statistics.median(bases),
        "wait_us": wait_us,
        "nominal_every": nominal,
        "first_every": guess,
        "every": every,
        "rounds": rounds,
        "points": [[n, round(r, 5)] for n, rs in ratios.items() for r in rs],
        "median_ratios": [[n, round(statistics.median(rs), 5)] for n, rs in ratios.items()],
        "source": "measured: trial periods against BASE, interleaved, corrected twice (load/calibration.py)",
    }
