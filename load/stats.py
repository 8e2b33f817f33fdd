"""Statistics for the regression gate: paired ratios, bootstrap intervals, the verdict rule.

Rules of this module:

1. Pure functions on plain lists of floats; stdlib only (``random``, ``math``, ``statistics``).
   No I/O, no clock, no global random state: every random draw comes from a ``random.Random``
   seeded by the caller, so the same samples and seed always give the same interval.
2. A *pair* is one BASE run and one HEAD run measured back to back (the gate randomises which
   goes first). ``base[i]`` and ``head[i]`` always belong to pair ``i``; resampling keeps pairs
   together, which is what lets slow drift of a shared machine cancel out.
3. Every ratio is HEAD / BASE. Whether a ratio above 1 is good depends on the metric
   (requests per second: higher is better; p99 latency: lower is better) and is passed in
   explicitly, never guessed from a name.
4. A verdict needs both significance and size (pyperf's ``--min-speed``; Kalibera & Jones,
   "Rigorous benchmarking in reasonable time", 2013): a change is only reported when the whole
   interval lies on one side of 1 *and* the change reaches the threshold: by default its interval's
   far end does, with the point estimate past half of it (:func:`decide`, ``size_by``).

Method: the point estimate is a statistic of the paired samples (the gate's default is the median
of the per-pair ratios, :func:`median_of_pair_ratios`; the functions here default to the geometric
mean); its 95% interval is a percentile bootstrap over pairs (Efron & Tibshirani 1993, ch. 13). Assumptions: pairs are independent and identically distributed
(interleaving with random order within a pair is what makes that plausible on a machine whose
speed drifts), and all values are strictly positive. The percentile bootstrap is known to
under-cover for very small samples (below ~8 pairs the 95% interval is closer to 90%); the
gate therefore requires at least 8 pairs, and the size threshold adds a second guard against
false alarms.

Several comparisons, one verdict (:func:`family_confidence`): a gate over ``m`` gated cases x metrics
fails when *any* interval shows a regression, so each interval is at ``1 - alpha / m`` (Bonferroni):
by the union bound all ``m`` hold together with probability at least ``1 - alpha``, whatever their
correlation. Chosen over Holm's step-down on bootstrap p-values because the interval shown is then
the interval that decides, and the precision rules (inconclusive, stopping) stay about that interval.
The shares of ``alpha`` need not be equal (weighted Bonferroni, :func:`weighted_levels`): the union bound
holds for any split that sums to ``alpha``, so a metric whose regressions sit close to the threshold can be
given a wider share than one whose targeted changes are larger.
"""

from __future__ import annotations

import enum
import math
import random
import statistics
from dataclasses import dataclass
from typing import Callable, Dict, List, Optional, Sequence

__all__ = [
    "SIZE_RULES",
    "STATISTICS",
    "Decision",
    "Estimate",
    "Verdict",
    "bootstrap_ci",
    "coefficient_of_variation",
    "decide",
    "estimate_ratio",
    "family_confidence",
    "geomean_of_pair_ratios",
    "hodges_lehmann_of_pair_ratios",
    "median_of_pair_ratios",
    "pair_ratios",
    "pairs_needed",
    "percentile",
    "ratio_of_means",
    "ratio_of_medians",
    "stability_warnings",
    "weighted_levels",
]


def _check_pairs(base: Sequence[float], head: Sequence[float]) -> None:
    if len(base) != len(head):
        raise ValueError(f"base and head must be paired: got {len(base)} base and {len(head)} head values")
    if not base:
        raise ValueError("need at least one pair, got none")
    for side, values in (("base", base), ("head", head)):
        for v in values:
            if not (v > 0 and math.isfinite(v)):
                raise ValueError(f"{side} values must be finite and > 0, got {v!r}")


def pair_ratios(base: Sequence[float], head: Sequence[float]) -> List[float]:
    """Return ``head[i] / base[i]`` for every pair.

    Args:
        base: one value per pair from the BASE install (e.g. requests per second).
        head: the HEAD value of the same pairs, in the same order.
    Returns:
        The per-pair ratios. Raises ValueError on unpaired, empty or non-positive input.
    """
    _check_pairs(base, head)
    return [h / b for b, h in zip(base, head)]


def ratio_of_means(base: Sequence[float], head: Sequence[float]) -> float:
    """Return ``mean(head) / mean(base)`` (Kalibera & Jones' ratio of means).

    Sensitive to a single outlying run, but unbiased for the ratio of long-run averages.
    """
    _check_pairs(base, head)
    return math.fsum(head) / math.fsum(base)


def ratio_of_medians(base: Sequence[float], head: Sequence[float]) -> float:
    """Return ``median(head) / median(base)``: robust to a few disturbed runs on either side."""
    _check_pairs(base, head)
    return statistics.median(head) / statistics.median(base)


def geomean_of_pair_ratios(base: Sequence[float], head: Sequence[float]) -> float:
    """Return the geometric mean of the per-pair ratios ``head[i] / base[i]``.

    Each pair's ratio cancels whatever slowed the machine during that pair (both runs of a pair
    are seconds apart), and the geometric mean is symmetric: swapping BASE and HEAD gives
    exactly the reciprocal. The gate's default until a burst over three pairs fooled it (docs/gate.md).
    """
    logs = [math.log(r) for r in pair_ratios(base, head)]
    return math.exp(math.fsum(logs) / len(logs))


def median_of_pair_ratios(base: Sequence[float], head: Sequence[float]) -> float:
    """Return the median of the per-pair ratios ``head[i] / base[i]``.

    Pairing like the geometric mean, but a few pairs hit by a burst of other work on a shared
    machine move it less. The gate's default statistic. With an even number of pairs the two middle ratios are averaged
    geometrically, so swapping BASE and HEAD still gives exactly the reciprocal.
    """
    logs = sorted(math.log(r) for r in pair_ratios(base, head))
    n = len(logs)
    mid = logs[n // 2] if n % 2 else (logs[n // 2 - 1] + logs[n // 2]) / 2.0
    return math.exp(mid)


def hodges_lehmann_of_pair_ratios(base: Sequence[float], head: Sequence[float]) -> float:
    """Return the Hodges-Lehmann estimate of the per-pair ratios: ``exp`` of the median of the
    Walsh averages ``(l_i + l_j) / 2`` (``i <= j``) of the log ratios ``l_i``.

    A robust centre with the efficiency of a mean: a few pairs hit by a burst of other work move it
    little (breakdown point 29%, against 0% for the geometric mean), yet under normal noise it is
    95% as efficient as the mean (the median of the ratios: 64%), so it needs about as few pairs.
    Swapping BASE and HEAD negates every log and gives exactly the reciprocal.
    """
    logs = [math.log(r) for r in pair_ratios(base, head)]
    return math.exp(_walsh_median(logs))


def _walsh_median(logs: Sequence[float]) -> float:
    n = len(logs)
    walsh = sorted((logs[i] + logs[j]) / 2.0 for i in range(n) for j in range(i, n))
    m = len(walsh)
    return walsh[m // 2] if m % 2 else (walsh[m // 2 - 1] + walsh[m // 2]) / 2.0


#: Name -> statistic of paired samples. Each takes (base, head) and returns a HEAD/BASE ratio.
STATISTICS: Dict[str, Callable[[Sequence[float], Sequence[float]], float]] = {
    "geomean": geomean_of_pair_ratios,
    "mean": ratio_of_means,
    "median": ratio_of_medians,
    "pair-median": median_of_pair_ratios,
    "hl": hodges_lehmann_of_pair_ratios,
}


def percentile(sorted_values: Sequence[float], q: float) -> float:
    """Return the ``q``-th percentile (0..100) of already sorted values, interpolating linearly.

    Same definition as numpy's default ("linear"): position ``(n - 1) * q / 100``.
    """
    if not 0 <= q <= 100:
        raise ValueError(f"percentile must be within [0, 100], got {q!r}")
    if not sorted_values:
        raise ValueError("percentile of an empty sequence")
    pos = (len(sorted_values) - 1) * q / 100.0
    lo = math.floor(pos)
    hi = min(lo + 1, len(sorted_values) - 1)
    frac = pos - lo
    return sorted_values[lo] + (sorted_values[hi] - sorted_values[lo]) * frac


def bootstrap_ci(
    base: Sequence[float],
    head: Sequence[float],
    statistic: str = "geomean",
    confidence: float = 0.95,
    resamples: int = 10_000,
    seed: int = 0,
) -> tuple:
    """Percentile bootstrap interval of a HEAD/BASE ratio statistic, resampling whole pairs.

    Draws ``resamples`` samples of ``n`` pair indices with replacement, computes ``statistic``
    on each and returns the ``(1 - confidence) / 2`` and ``(1 + confidence) / 2`` percentiles.

    Args:
        base, head: paired values (see :func:`pair_ratios`).
        statistic: a key of :data:`STATISTICS`.
        confidence: two-sided coverage, e.g. 0.95.
        resamples: number of bootstrap resamples; 10,000 keeps the interval ends stable to
            about 0.1% for the sample sizes the gate uses.
        seed: seed of the private ``random.Random``; same inputs and seed, same interval.
    Returns:
        ``(low, high)``.
    """
    _check_pairs(base, head)
    if statistic not in STATISTICS:
        raise ValueError(f"unknown statistic {statistic!r}; expected one of {sorted(STATISTICS)}")
    if not 0 < confidence < 1:
        raise ValueError(f"confidence must be within (0, 1), got {confidence!r}")
    if resamples < 100:
        raise ValueError(f"need at least 100 bootstrap resamples, got {resamples!r}")
    rng = random.Random(seed)
    n = len(base)
    idx = range(n)
    draws: List[float] = []
    if statistic == "geomean":
        # Fast path: the log of the geometric mean is the mean of the logs.
        logs = [math.log(h / b) for b, h in zip(base, head)]
        for _ in range(resamples):
            pick = rng.choices(idx, k=n)
            draws.append(math.exp(math.fsum(logs[i] for i in pick) / n))
    elif statistic == "hl":
        logs = [math.log(h / b) for b, h in zip(base, head)]
        for _ in range(resamples):
            pick = rng.choices(idx, k=n)
            draws.append(math.exp(_walsh_median([logs[i] for i in pick])))
    else:
        fn = STATISTICS[statistic]
        for _ in range(resamples):
            pick = rng.choices(idx, k=n)
            draws.append(fn([base[i] for i in pick], [head[i] for i in pick]))
    draws.sort()
    alpha = (1.0 - confidence) / 2.0
    return percentile(draws, 100.0 * alpha), percentile(draws, 100.0 * (1.0 - alpha))


def family_confidence(confidence: float, comparisons: int) -> float:
    """Per-interval level that keeps the family-wise coverage of ``comparisons`` intervals at ``confidence``.

    Bonferroni: ``1 - (1 - confidence) / comparisons``. If each of ``m`` intervals misses its true
    value with probability at most ``alpha / m``, the chance that any misses is at most ``alpha``
    (union bound), so a family of A/A comparisons raises a false alarm anywhere with probability at
    most ``alpha``, whatever the correlation between them. ``comparisons`` counts only what can fail
    the gate (gated metrics times cases). Example: 95% over 4 comparisons is 98.75% each.
    """
    if not 0 < confidence < 1:
        raise ValueError(f"confidence must be within (0, 1), got {confidence!r}")
    if comparisons < 1:
        raise ValueError(f"need at least one comparison, got {comparisons!r}")
    return 1.0 - (1.0 - confidence) / comparisons


def weighted_levels(confidence: float, weights: Dict[str, float], cases: int = 1) -> Dict[str, float]:
    """Per-interval level of each metric when ``alpha = 1 - confidence`` is split by ``weights`` over ``cases``.

    Weighted Bonferroni: metric ``m`` of each case gets ``alpha * w_m / (cases * sum(w))``; the shares sum
    to ``alpha``, so by the union bound the whole family still misses with probability at most ``alpha``.
    Equal weights give :func:`family_confidence`. Example: 95%, cpu 4 and lat 1, one case: cpu's
    intervals at 96%, lat's at 99%.
    """
    if not 0 < confidence < 1:
        raise ValueError(f"confidence must be within (0, 1), got {confidence!r}")
    if cases < 1 or not weights:
        raise ValueError(f"need at least one case and one weighted metric, got {cases!r} and {weights!r}")
    bad = {m: w for m, w in weights.items() if not (w > 0 and math.isfinite(w))}
    if bad:
        raise ValueError(f"weights must be finite and > 0, got {bad!r}")
    total = sum(weights.values()) * cases
    return {m: 1.0 - (1.0 - confidence) * w / total for m, w in weights.items()}


@dataclass(frozen=True)
class Estimate:
    """A HEAD/BASE ratio with its bootstrap interval, over ``n`` pairs."""

    ratio: float
    low: float
    high: float
    n: int
    confidence: float = 0.95
    statistic: str = "geomean"

    def __post_init__(self) -> None:
        if not self.low <= self.high:
            raise ValueError(f"interval low {self.low!r} is above high {self.high!r}")
        if self.n < 1:
            raise ValueError(f"an estimate needs at least one pair, got n={self.n!r}")

    @property
    def width(self) -> float:
        """Width of the interval in ratio units (0.04 means four percentage points)."""
        return self.high - self.low


def estimate_ratio(
    base: Sequence[float],
    head: Sequence[float],
    statistic: str = "geomean",
    confidence: float = 0.95,
    resamples: int = 10_000,
    seed: int = 0,
) -> Estimate:
    """Point estimate and bootstrap interval of HEAD/BASE in one call (see :func:`bootstrap_ci`)."""
    if statistic not in STATISTICS:
        raise ValueError(f"unknown statistic {statistic!r}; expected one of {sorted(STATISTICS)}")
    point = STATISTICS[statistic](base, head)
    low, high = bootstrap_ci(base, head, statistic, confidence, resamples, seed)
    # The point estimate of a skewed statistic can fall outside a short percentile interval by a
    # rounding hair; widen the interval rather than report an estimate outside its own interval.
    return Estimate(point, min(low, point), max(high, point), len(base), confidence, statistic)


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
    """Apply the gate's verdict rule to one estimate.

    With ``change`` the signed improvement (``ratio - 1`` when higher is better, ``1 - ratio``
    otherwise):

    1. **regression** when the whole interval lies on the worse side of 1 and the change reaches the
       threshold. With ``size_by="interval"`` (the gate's default) that is: the interval's worse end
       reaches it (a slowdown of the threshold's size is not ruled out) and the point estimate is at
       least half of it (nearer such a slowdown than to none: with symmetric noise, the likelihood
       ratio's choice between the two). With ``size_by="estimate"`` (the gate's rule until 2026-11-28)
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

    Args:
        estimate: HEAD/BASE ratio with its interval.
        threshold: smallest change that matters, as a fraction (0.05 for 5%).
        higher_is_better: True for throughput, False for latency.
        size_by: ``"interval"`` or ``"estimate"``: what must reach the threshold (rule 1).
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
    # How far the change reaches in each direction: the point estimate, or the interval's far end with
    # the estimate at least halfway there (nearer a change of the threshold's size than to none).
    if size_by == "interval":
        worst = (1.0 - lo if higher_is_better else hi - 1.0) if -change >= threshold / 2 else 0.0
        best = (hi - 1.0 if higher_is_better else 1.0 - lo) if change >= threshold / 2 else 0.0
    else:
        worst, best = -change, change
    if worse_side and worst >= threshold:
        reach = "" if worst == -change else f", reaching {worst:.1%} worse: a {threshold:.0%} slowdown is not ruled out"
        return Decision(Verdict.REGRESSION, estimate, change, threshold, higher_is_better, None,
                        f"{-change:.1%} worse, {ci} entirely on the worse side of 1{reach}")
    if better_side and best >= threshold:
        reach = "" if best == change else f", reaching {best:.1%} better"
        return Decision(Verdict.IMPROVEMENT, estimate, change, threshold, higher_is_better, None,
                        f"{change:.1%} better, {ci} entirely on the better side of 1{reach}")
    if estimate.width > threshold:
        total = pairs_needed(estimate.n, estimate.width, threshold)
        return Decision(Verdict.INCONCLUSIVE, estimate, change, threshold, higher_is_better, total - estimate.n,
                        f"{ci} is {estimate.width:.1%} wide, wider than the {threshold:.0%} threshold; "
                        f"about {total - estimate.n} more pairs ({total} in all) should narrow it")
    if worse_side or better_side:
        word = "worse" if worse_side else "better"
        below = "below" if size_by == "estimate" else (
            "its interval ends below" if abs(change) >= threshold / 2 else "under half of")
        reason = f"{abs(change):.1%} {word}, significant but {below} the {threshold:.0%} threshold ({ci})"
    else:
        reason = f"{ci} contains 1 and excludes a {threshold:.0%} change"
    return Decision(Verdict.NO_CHANGE, estimate, change, threshold, higher_is_better, None, reason)


def coefficient_of_variation(values: Sequence[float]) -> float:
    """Sample standard deviation divided by the mean (0 for fewer than two values)."""
    if len(values) < 2:
        return 0.0
    m = statistics.fmean(values)
    if m == 0:
        raise ValueError("coefficient of variation of values whose mean is 0")
    return statistics.stdev(values) / abs(m)


def stability_warnings(name: str, values: Sequence[float], max_cv: float = 0.10) -> List[str]:
    """Warnings when one side's runs are unstable, each naming a remedy (after pyperf's checks).

    Returns an empty list when the coefficient of variation is below ``max_cv`` and no run is
    more than 50% from the mean.
    """
    out: List[str] = []
    if len(values) < 2:
        return out
    cv = coefficient_of_variation(values)
    m = statistics.fmean(values)
    if cv >= max_cv:
        out.append(f"{name}: runs vary a lot (coefficient of variation {cv:.1%} >= {max_cv:.0%}); "
                   "the machine is busy or throttling: close other work, pin CPUs, or rerun with more pairs")
    far = [v for v in values if abs(v - m) > 0.5 * m]
    if far:
        out.append(f"{name}: {len(far)} run(s) are more than 50% from the mean; "
                   "look for errors or a disturbance in those runs, then rerun")
    return out
