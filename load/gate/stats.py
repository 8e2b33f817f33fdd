"""Statistics for the regression gate: paired ratios, bootstrap intervals, the levels of a family of intervals.

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
4. The verdict rule that reads these intervals is :mod:`load.gate.verdict`'s.

Method: the point estimate is a statistic of the paired samples (the gate's default is the median
of the per-pair ratios, :func:`median_of_pair_ratios`; the functions here default to the geometric
mean); its 95% interval is a percentile bootstrap over pairs (Efron & Tibshirani 1993, ch. 13). Assumptions: pairs are
independent and identically distributed (interleaving with random order within a pair is what makes that plausible on a
machine whose speed drifts), and all values are strictly positive. The percentile bootstrap is known to under-cover for
very small samples (below ~8 pairs the 95% interval is closer to 90%); the gate therefore requires at least 8 pairs, and
the size threshold (:mod:`load.gate.verdict`) adds a second guard against false alarms.

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

import math
import random
import statistics
from dataclasses import dataclass
from typing import Callable, Dict, List, Sequence

__all__ = [
    "STATISTICS",
    "Estimate",
    "bootstrap_ci",
    "coefficient_of_variation",
    "estimate_ratio",
    "family_confidence",
    "geomean_of_pair_ratios",
    "hodges_lehmann_of_pair_ratios",
    "median_of_pair_ratios",
    "pair_ratios",
    "percentile",
    "ratio_of_means",
    "ratio_of_medians",
    "stability_warnings",
    "t_quantile",
    "t_interval_ratio",
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


def _betacf(a: float, b: float, x: float) -> float:
    """The continued fraction of the regularised incomplete beta function (modified Lentz)."""
    tiny, c, d = 1e-300, 1.0, 1.0 - (a + b) * x / (a + 1.0)
    d = 1.0 / (d if abs(d) > tiny else tiny)
    h = d
    for m in range(1, 300):
        for num in (
            m * (b - m) * x / ((a + 2 * m - 1) * (a + 2 * m)),
            -(a + m) * (a + b + m) * x / ((a + 2 * m) * (a + 2 * m + 1)),
        ):
            d = 1.0 + num * d
            d = 1.0 / (d if abs(d) > tiny else tiny)
            c = 1.0 + num / c
            c = c if abs(c) > tiny else tiny
            h *= d * c
        if abs(d * c - 1.0) < 1e-15:
            break
    return h


def _t_upper(t: float, df: int) -> float:
    """P(T > t) for Student's t with ``df`` degrees of freedom, t >= 0 (via the incomplete beta function)."""
    x = df / (df + t * t)
    a, b = df / 2.0, 0.5
    front = math.exp(math.lgamma(a + b) - math.lgamma(a) - math.lgamma(b) + a * math.log(x) + b * math.log1p(-x))
    ibeta = front * _betacf(a, b, x) / a if x < (a + 1) / (a + b + 2) else 1.0 - front * _betacf(b, a, 1 - x) / b
    return 0.5 * ibeta


def t_quantile(p: float, df: int) -> float:
    """The ``p`` quantile (0.5 < p < 1) of Student's t with ``df`` degrees of freedom, by bisection."""
    if not 0.5 < p < 1 or df < 1:
        raise ValueError(f"need 0.5 < p < 1 and df >= 1, got {p!r}, {df!r}")
    lo, hi = 0.0, 1.0
    while _t_upper(hi, df) > 1.0 - p:
        hi *= 2.0
    for _ in range(200):
        mid = (lo + hi) / 2.0
        lo, hi = (mid, hi) if _t_upper(mid, df) > 1.0 - p else (lo, mid)
    return (lo + hi) / 2.0


def t_interval_ratio(base: Sequence[float], head: Sequence[float], confidence: float = 0.95) -> Estimate:
    """The geometric mean of the per-pair ratios with Student's t interval on their logs (at least 2 pairs).

    For a metric that is nearly deterministic and measured in few pairs (instructions per request: a few
    pairs of counted runs), where a bootstrap cannot resample enough: the interval is
    ``exp(mean ± t(n-1) s / sqrt(n))`` of the log ratios, valid for normal log ratios, and an outlying pair
    widens it (it cannot narrow it), so it errs towards *inconclusive*.
    """
    logs = [math.log(r) for r in pair_ratios(base, head)]
    n = len(logs)
    if n < 2:
        raise ValueError("a t interval needs at least 2 pairs")
    if not 0 < confidence < 1:
        raise ValueError(f"confidence must be within (0, 1), got {confidence!r}")
    mean = math.fsum(logs) / n
    half = t_quantile((1.0 + confidence) / 2.0, n - 1) * statistics.stdev(logs) / math.sqrt(n)
    return Estimate(math.exp(mean), math.exp(mean - half), math.exp(mean + half), n, confidence, "geomean-t")


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
        out.append(
            f"{name}: runs vary a lot (coefficient of variation {cv:.1%} >= {max_cv:.0%}); "
            "the machine is busy or throttling: close other work, pin CPUs, or rerun with more pairs"
        )
    far = [v for v in values if abs(v - m) > 0.5 * m]
    if far:
        out.append(
            f"{name}: {len(far)} run(s) are more than 50% from the mean; "
            "look for errors or a disturbance in those runs, then rerun"
        )
    return out
