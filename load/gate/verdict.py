"""The regression gate's verdict rule: significance and size, from one HEAD/BASE estimate and its interval.

Rules of this module:

1. A verdict needs both significance and size (pyperf's ``--min-speed``; Kalibera & Jones,
   "Rigorous benchmarking in reasonable time", 2013): a change is only reported when the whole
   interval lies on one side of 1 *and* the change reaches the threshold: by default its interval's
   far end does, with the point estimate past half of it (:func:`decide`, ``size_by``).
2. Whether a ratio above 1 is good depends on the metric and is passed in explicitly, never guessed from
   a name; ``Decision.change`` is signed so that positive always means better.
3. Pure functions on :class:`load.gate.stats.Estimate`; the estimates and their intervals are
   :mod:`load.gate.stats`'.

The verdict rule (:func:`decide`), for one estimate, with ``change`` the signed improvement (``ratio - 1`` when
higher is better, ``1 - ratio`` otherwise):

1. **regression** when the whole interval lies on the worse side of 1 and the change reaches the
   threshold. With ``size_by="interval"`` (the gate's default) that is: the interval's worse end
   reaches it (a slowdown of the threshold's size is not ruled out) and the point estimate is at
   least half of it (nearer such a slowdown than to none: with symmetric noise, the likelihood
   ratio's choice between the two). With ``size_by="estimate"`` (the gate's earlier rule)
   the point estimate must reach it, ``-change >= threshold``, which catches a slowdown of exactly
   the threshold's size only half the time;
2. **improvement** symmetrically: the interval on the better side of 1 and the change reaching the
   threshold in the same sense;
3. **inconclusive** when neither holds and the interval is wider than ``threshold`` (it cannot
   rule out a change of the threshold's size); ``more_pairs`` then estimates how many more
   pairs would narrow it to the threshold (:func:`pairs_needed`);
4. **no significant change** otherwise: the interval, at most ``threshold`` wide and containing
   the estimate, excludes any change of the threshold's size; or the change is real but
   smaller than the threshold (the reason then says so).

Under ``size_by="interval"`` a significant change whose interval is wider than the threshold
reaches it whenever its estimate is past half the threshold, so *inconclusive* then nearly always
means an interval that contains 1.
"""

from __future__ import annotations

import enum
import math
from dataclasses import dataclass
from typing import Optional, Tuple

from .stats import Estimate

__all__ = ["SIZE_RULES", "Decision", "Verdict", "decide", "pairs_needed"]


class Verdict(str, enum.Enum):
    """The gate's four answers (the value is what the reports print)."""

    REGRESSION = "regression"
    IMPROVEMENT = "improvement"
    INCONCLUSIVE = "inconclusive"
    NO_CHANGE = "no significant change"


@dataclass(frozen=True)
class Decision:
    """A verdict with the numbers behind it.

    ``change`` is signed so that positive means better: +0.05 is 5% more requests per second, or
    5% lower latency; -0.05 is a 5% slowdown. ``more_pairs`` is set only when inconclusive.
    """

    verdict: Verdict
    estimate: Estimate
    change: float
    threshold: float
    higher_is_better: bool
    more_pairs: Optional[int]
    reason: str


def pairs_needed(n: int, width: float, target_width: float) -> int:
    """How many pairs in total should shrink an interval of ``width`` (from ``n`` pairs) to ``target_width``.

    Assumes the width shrinks as ``1 / sqrt(n)`` (true for the bootstrap of a mean-like statistic
    when the spread of the runs stays the same). It is an extrapolation, not a promise: a noisier
    machine tomorrow needs more.
    """
    if n < 1 or width < 0 or target_width <= 0:
        raise ValueError(f"pairs_needed needs n >= 1, width >= 0, target > 0; got {n!r}, {width!r}, {target_width!r}")
    if width <= target_width:
        return n
    return max(n + 1, math.ceil(n * (width / target_width) ** 2))


SIZE_RULES = ("interval", "estimate")


def decide(estimate: Estimate, threshold: float, higher_is_better: bool, size_by: str = "interval") -> Decision:
    """Apply the gate's verdict rule (cases 1-4 in the module's docstring) to one estimate.

    Args:
        estimate: HEAD/BASE ratio with its interval.
        threshold: smallest change that matters, as a fraction (0.05 for 5%).
        higher_is_better: True for throughput, False for latency.
        size_by: ``"interval"`` or ``"estimate"``: what must reach the threshold (case 1).
    """
    if not 0 < threshold < 1:
        raise ValueError(f"threshold must be a fraction within (0, 1), e.g. 0.05; got {threshold!r}")
    r, lo, hi = estimate.ratio, estimate.low, estimate.high
    change = (r - 1.0) if higher_is_better else (1.0 - r)
    worse_side = hi < 1.0 if higher_is_better else lo > 1.0
    better_side = lo > 1.0 if higher_is_better else hi < 1.0
    ci = f"{100 * estimate.confidence:.4g}% interval {lo:.3f}..{hi:.3f}"
    if size_by not in SIZE_RULES:
        raise ValueError(f"unknown size rule {size_by!r}; expected one of {SIZE_RULES}")
    worst, best = _reach(estimate, change, threshold, higher_is_better, size_by)
    if worse_side and worst >= threshold:
        reach = "" if worst == -change else f", reaching {worst:.1%} worse: a {threshold:.0%} slowdown is not ruled out"
        return Decision(
            Verdict.REGRESSION,
            estimate,
            change,
            threshold,
            higher_is_better,
            None,
            f"{-change:.1%} worse, {ci} entirely on the worse side of 1{reach}",
        )
    if better_side and best >= threshold:
        reach = "" if best == change else f", reaching {best:.1%} better"
        return Decision(
            Verdict.IMPROVEMENT,
            estimate,
            change,
            threshold,
            higher_is_better,
            None,
            f"{change:.1%} better, {ci} entirely on the better side of 1{reach}",
        )
    if estimate.width > threshold:
        total = pairs_needed(estimate.n, estimate.width, threshold)
        return Decision(
            Verdict.INCONCLUSIVE,
            estimate,
            change,
            threshold,
            higher_is_better,
            total - estimate.n,
            f"{ci} is {estimate.width:.1%} wide, wider than the {threshold:.0%} threshold; "
            f"about {total - estimate.n} more pairs ({total} in all) should narrow it",
        )
    reason = _no_change_reason(change, threshold, worse_side, better_side, size_by, ci)
    return Decision(Verdict.NO_CHANGE, estimate, change, threshold, higher_is_better, None, reason)


def _reach(
    estimate: Estimate, change: float, threshold: float, higher_is_better: bool, size_by: str
) -> Tuple[float, float]:
    """How far the change reaches, worse and better: the point estimate, or the interval's far end with the
    estimate at least halfway there (nearer a change of the threshold's size than to none)."""
    lo, hi = estimate.low, estimate.high
    if size_by != "interval":
        return -change, change
    worst = (1.0 - lo if higher_is_better else hi - 1.0) if -change >= threshold / 2 else 0.0
    best = (hi - 1.0 if higher_is_better else 1.0 - lo) if change >= threshold / 2 else 0.0
    return worst, best


def _no_change_reason(
    change: float, threshold: float, worse_side: bool, better_side: bool, size_by: str, ci: str
) -> str:
    """Why a decisive interval is no significant change: significant but too small, or containing 1."""
    if worse_side or better_side:
        word = "worse" if worse_side else "better"
        below = (
            "below"
            if size_by == "estimate"
            else ("its interval ends below" if abs(change) >= threshold / 2 else "under half of")
        )
        return f"{abs(change):.1%} {word}, significant but {below} the {threshold:.0%} threshold ({ci})"
    return f"{ci} contains 1 and excludes a {threshold:.0%} change"
