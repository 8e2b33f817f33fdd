"""Tests of load/stats.py on synthetic samples with known answers (all seeded)."""

from __future__ import annotations

import math
import random

import pytest

from gatecheck.load.gate import stats, verdict
from gatecheck.load.gate.verdict import Verdict


def paired_samples(n, ratio, cv, seed, level=20_000.0, drift=0.0):
    """n pairs of RPS-like values: HEAD is ``ratio`` times BASE, each run with noise of ``cv``.

    ``drift`` adds a per-pair machine speed factor shared by both runs of the pair, as on a shared
    machine whose speed changes between pairs (this is what pairing cancels).
    """
    rng = random.Random(seed)
    base, head = [], []
    for _ in range(n):
        machine = 1.0 + rng.gauss(0.0, drift)
        base.append(level * machine * (1.0 + rng.gauss(0.0, cv)))
        head.append(level * ratio * machine * (1.0 + rng.gauss(0.0, cv)))
    return base, head


def test_pair_ratios_are_head_over_base():
    assert stats.pair_ratios([10.0, 20.0], [5.0, 30.0]) == [0.5, 1.5]


@pytest.mark.parametrize(
    "base, head", [([1.0], [1.0, 2.0]), ([], []), ([1.0, 0.0], [1.0, 1.0]), ([1.0], [float("nan")]), ([-1.0], [1.0])]
)
def test_unpaired_empty_or_non_positive_input_is_refused(base, head):
    with pytest.raises(ValueError):
        stats.pair_ratios(base, head)


def test_ratio_statistics_on_exact_values():
    base, head = [100.0, 200.0, 300.0], [90.0, 180.0, 300.0]
    assert stats.ratio_of_means(base, head) == pytest.approx(570 / 600)
    assert stats.ratio_of_medians(base, head) == pytest.approx(0.9)
    assert stats.geomean_of_pair_ratios(base, head) == pytest.approx((0.9 * 0.9 * 1.0) ** (1 / 3))


def test_median_of_pair_ratios_resists_one_disturbed_pair():
    base, head = [100.0, 100.0, 100.0, 100.0, 100.0], [90.0, 91.0, 89.0, 90.0, 40.0]
    assert stats.median_of_pair_ratios(base, head) == pytest.approx(0.90)
    assert stats.geomean_of_pair_ratios(base, head) < 0.80
    even = stats.median_of_pair_ratios([1.0, 1.0, 1.0, 1.0], [0.8, 0.9, 1.0, 1.1])
    assert even == pytest.approx((0.9 * 1.0) ** 0.5)
    assert even * stats.median_of_pair_ratios([0.8, 0.9, 1.0, 1.1], [1.0, 1.0, 1.0, 1.0]) == pytest.approx(1.0)


def test_hodges_lehmann_is_the_median_of_walsh_averages_of_log_ratios():
    # log ratios 0, 0, log 2: Walsh averages 0, 0, 0, l/2, l/2, l -> median (0 + l/2) / 2 = l/4
    assert stats.hodges_lehmann_of_pair_ratios([1.0, 1.0, 1.0], [1.0, 1.0, 2.0]) == pytest.approx(2**0.25)
    base, head = paired_samples(11, 0.93, 0.05, seed=2)
    assert stats.hodges_lehmann_of_pair_ratios(base, head) * stats.hodges_lehmann_of_pair_ratios(
        head, base
    ) == pytest.approx(1.0)
    est = stats.estimate_ratio(base, head, "hl", resamples=500)
    assert est.low <= est.ratio <= est.high


def test_geometric_mean_is_symmetric_under_swapping_sides():
    base, head = paired_samples(10, 0.93, 0.05, seed=1)
    assert stats.geomean_of_pair_ratios(base, head) * stats.geomean_of_pair_ratios(head, base) == pytest.approx(1.0)


@pytest.mark.parametrize("q, expected", [(0, 1.0), (100, 4.0), (50, 2.5), (25, 1.75)])
def test_percentile_interpolates_like_numpy_linear(q, expected):
    assert stats.percentile([1.0, 2.0, 3.0, 4.0], q) == pytest.approx(expected)


def test_percentile_rejects_out_of_range():
    with pytest.raises(ValueError):
        stats.percentile([1.0], 101)


def test_bootstrap_is_reproducible_with_a_seed_and_varies_without():
    base, head = paired_samples(10, 1.0, 0.05, seed=2)
    a = stats.bootstrap_ci(base, head, seed=7)
    assert a == stats.bootstrap_ci(base, head, seed=7)
    assert a != stats.bootstrap_ci(base, head, seed=8)


def test_bootstrap_of_identical_ratios_is_a_point():
    lo, hi = stats.bootstrap_ci([10.0, 20.0, 30.0], [9.0, 18.0, 27.0], resamples=200)
    assert lo == pytest.approx(0.9) and hi == pytest.approx(0.9)


@pytest.mark.parametrize("statistic", sorted(stats.STATISTICS))
def test_every_statistic_brackets_the_true_ratio(statistic):
    base, head = paired_samples(12, 0.95, 0.02, seed=3)
    est = stats.estimate_ratio(base, head, statistic=statistic, resamples=2000)
    assert est.low <= est.ratio <= est.high
    assert est.low < 0.95 < est.high


def test_unknown_statistic_names_the_choices():
    with pytest.raises(ValueError, match="geomean"):
        stats.estimate_ratio([1.0], [1.0], statistic="mode")


def test_no_change_gives_no_significant_change():
    """Same distribution both sides, 2% run-to-run noise, 10 pairs: interval narrow and around 1."""
    base, head = paired_samples(10, 1.0, 0.02, seed=4)
    d = verdict.decide(stats.estimate_ratio(base, head), threshold=0.05, higher_is_better=True)
    assert d.verdict is Verdict.NO_CHANGE
    assert d.estimate.low < 1.0 < d.estimate.high


def test_ten_percent_slower_rps_is_a_regression():
    base, head = paired_samples(10, 0.90, 0.02, seed=5)
    d = verdict.decide(stats.estimate_ratio(base, head), threshold=0.05, higher_is_better=True)
    assert d.verdict is Verdict.REGRESSION
    assert d.change == pytest.approx(-0.10, abs=0.02)
    assert d.more_pairs is None


def test_five_percent_slower_with_low_noise_is_a_regression_at_a_four_percent_threshold():
    base, head = paired_samples(12, 0.95, 0.01, seed=6)
    d = verdict.decide(stats.estimate_ratio(base, head), threshold=0.04, higher_is_better=True)
    assert d.verdict is Verdict.REGRESSION


def test_significant_change_below_threshold_is_no_significant_change():
    """A real 2% slowdown, measured precisely, is not a regression at a 5% threshold."""
    base, head = paired_samples(20, 0.98, 0.003, seed=7)
    d = verdict.decide(stats.estimate_ratio(base, head), threshold=0.05, higher_is_better=True)
    assert d.estimate.high < 1.0
    assert d.verdict is Verdict.NO_CHANGE
    assert "significant but under half of the 5% threshold" in d.reason
    by_estimate = verdict.decide(d.estimate, threshold=0.05, higher_is_better=True, size_by="estimate")
    assert by_estimate.verdict is Verdict.NO_CHANGE and "significant but below the 5% threshold" in by_estimate.reason


def test_ten_percent_faster_is_an_improvement():
    base, head = paired_samples(10, 1.10, 0.02, seed=8)
    d = verdict.decide(stats.estimate_ratio(base, head), threshold=0.05, higher_is_better=True)
    assert d.verdict is Verdict.IMPROVEMENT and d.change > 0.05


def test_latency_direction_is_reversed():
    """p99 latency 10% higher on HEAD is a regression; 10% lower is an improvement."""
    base, head = paired_samples(10, 1.10, 0.02, seed=9, level=2.0)
    assert verdict.decide(stats.estimate_ratio(base, head), 0.05, higher_is_better=False).verdict is Verdict.REGRESSION
    assert verdict.decide(stats.estimate_ratio(head, base), 0.05, higher_is_better=False).verdict is Verdict.IMPROVEMENT


def test_noisy_samples_are_inconclusive_and_ask_for_more_pairs():
    """20% run-to-run noise over 8 pairs cannot resolve a 5% threshold."""
    base, head = paired_samples(8, 0.97, 0.20, seed=10)
    d = verdict.decide(stats.estimate_ratio(base, head), threshold=0.05, higher_is_better=True)
    assert d.verdict is Verdict.INCONCLUSIVE
    assert d.more_pairs is not None and d.more_pairs > 8
    assert d.estimate.width > 0.05
    total = d.estimate.n + d.more_pairs
    assert total == math.ceil(8 * (d.estimate.width / 0.05) ** 2)


def test_large_regression_is_reported_even_when_the_interval_is_wide():
    base, head = paired_samples(8, 0.60, 0.08, seed=11)
    d = verdict.decide(stats.estimate_ratio(base, head), threshold=0.05, higher_is_better=True)
    assert d.estimate.width > 0.05
    assert d.verdict is Verdict.REGRESSION


def test_pairing_cancels_drift_shared_by_both_runs_of_a_pair():
    """Machine speed varying 15% between pairs would swamp a 10% slowdown without pairing."""
    base, head = paired_samples(10, 0.90, 0.01, seed=12, drift=0.15)
    paired = verdict.decide(stats.estimate_ratio(base, head, "geomean"), 0.05, True)
    assert paired.verdict is Verdict.REGRESSION
    assert paired.estimate.width < 0.05


def _alarms(n, ratio, cv, size_by, gates=200, seed=1000):
    """How many of ``gates`` simulated gates (``n`` pairs, HEAD ``ratio`` times BASE's RPS) decide regression."""
    alarms = 0
    for g in range(gates):
        base, head = paired_samples(n, ratio, cv, seed=seed + g)
        est = stats.estimate_ratio(base, head, resamples=500, seed=g)
        alarms += verdict.decide(est, 0.05, True, size_by).verdict is Verdict.REGRESSION
    return alarms


def test_false_alarm_rate_of_the_rule_on_simulated_a_a_gates_is_low():
    """200 simulated A/A gates (10 pairs, 3% noise). The interval rule flags no more than its 95%
    interval misses on the worse side (nominally 2.5%; 3 of 200 here), the estimate past half the
    threshold being the second guard; the estimate rule, which wants it past the whole threshold, 1."""
    assert _alarms(10, 1.0, 0.03, "interval") <= 5
    assert _alarms(10, 1.0, 0.03, "estimate") <= 2


def test_a_slowdown_of_the_threshold_size_is_caught_by_the_interval_rule_and_half_the_time_by_the_estimate():
    """Known answer: HEAD is exactly 5% slower, 8 pairs of 1% noise, threshold 5%. The estimate rule
    needs the point estimate past the threshold, a coin toss when the true change sits on it (about 100
    of 200); the interval rule needs only the interval's worse end there, which is where the gate should
    then stand (issue 15: 19 of 20 at 5%)."""
    by_estimate = _alarms(8, 0.95, 0.01, "estimate")
    by_interval = _alarms(8, 0.95, 0.01, "interval")
    assert 70 <= by_estimate <= 130, by_estimate
    assert by_interval >= 180, by_interval


def test_the_interval_rule_passes_a_small_slowdown_it_shows_smaller_than_the_threshold():
    base, head = paired_samples(20, 0.97, 0.003, seed=7)
    d = verdict.decide(stats.estimate_ratio(base, head), threshold=0.05, higher_is_better=True, size_by="interval")
    assert d.estimate.high < 1.0 and 1.0 - d.estimate.low < 0.05
    assert d.verdict is Verdict.NO_CHANGE
    assert "its interval ends below the 5% threshold" in d.reason


def test_a_significant_slowdown_whose_interval_reaches_the_threshold_says_so():
    est = stats.Estimate(1.03, 1.015, 1.055, 8, statistic="pair-median")
    d = verdict.decide(est, 0.05, higher_is_better=False)
    assert d.verdict is Verdict.REGRESSION
    assert "reaching 5.5% worse: a 5% slowdown is not ruled out" in d.reason
    # the same interval around an estimate under half the threshold is a small slowdown, not this one
    small = verdict.decide(stats.Estimate(1.024, 1.012, 1.052, 8), 0.05, higher_is_better=False)
    assert small.verdict is Verdict.NO_CHANGE and "under half of the 5% threshold" in small.reason
    assert verdict.decide(est, 0.05, higher_is_better=False, size_by="estimate").verdict is Verdict.NO_CHANGE
    with pytest.raises(ValueError, match="size rule"):
        verdict.decide(est, 0.05, False, size_by="median")


def test_detection_rate_of_the_rule_on_simulated_ten_percent_slowdowns_is_high():
    hits = 0
    for seed in range(100):
        base, head = paired_samples(10, 0.90, 0.03, seed=2000 + seed)
        est = stats.estimate_ratio(base, head, resamples=500, seed=seed)
        hits += verdict.decide(est, 0.05, True).verdict is Verdict.REGRESSION
    assert hits >= 97


def disturbed_a_a(n, disturbed, seed, cv=0.02, burst=0.40):
    """An A/A gate on a shared machine: ``disturbed`` consecutive pairs where a burst of other work
    made one side's runs cost ``burst`` more (always the same side, as in a burst longer than a pair)."""
    base, head = paired_samples(n, 1.0, cv, seed)
    start = random.Random(seed).randrange(n - disturbed + 1)
    for i in range(start, start + disturbed):
        head[i] *= 1.0 + burst
    return base, head


def test_a_burst_over_three_of_sixteen_pairs_fools_the_geometric_mean_but_not_the_pair_median():
    """Known answer: nothing changed, but 3 of 16 pairs ran HEAD during a 40% burst. The geometric
    mean moves by about 3/16 * log 1.4 (+6.5%) and calls it a regression of CPU per request; the
    median of the ratios moves by about one order statistic (under 2%)."""
    alarms = {"geomean": 0, "pair-median": 0}
    for seed in range(40):
        base, head = disturbed_a_a(16, 3, seed=3000 + seed)
        for statistic in alarms:
            est = stats.estimate_ratio(base, head, statistic, resamples=500, seed=seed)
            alarms[statistic] += verdict.decide(est, 0.05, higher_is_better=False).verdict is Verdict.REGRESSION
    assert alarms["pair-median"] == 0
    assert alarms["geomean"] >= 20


def test_the_pair_median_still_detects_ten_percent_with_sixteen_pairs_of_three_percent_noise():
    hits = 0
    for seed in range(100):
        base, head = paired_samples(16, 1.111, 0.03, seed=4000 + seed)
        est = stats.estimate_ratio(base, head, "pair-median", resamples=500, seed=seed)
        hits += verdict.decide(est, 0.05, higher_is_better=False).verdict is Verdict.REGRESSION
    assert hits >= 97


def test_pairs_needed_follows_inverse_square_root():
    assert verdict.pairs_needed(8, 0.10, 0.05) == 32
    assert verdict.pairs_needed(8, 0.04, 0.05) == 8
    assert verdict.pairs_needed(8, 0.0501, 0.05) == 9


def test_decide_rejects_a_threshold_given_in_percent():
    est = stats.Estimate(1.0, 0.99, 1.01, 8)
    with pytest.raises(ValueError, match="fraction"):
        verdict.decide(est, 5, True)


def test_estimate_refuses_an_inverted_interval():
    with pytest.raises(ValueError):
        stats.Estimate(1.0, 1.1, 0.9, 8)


def test_stability_warnings_name_a_remedy():
    assert stats.stability_warnings("base", [100.0, 101.0, 99.0]) == []
    warnings = stats.stability_warnings("head", [100.0, 140.0, 60.0, 100.0])
    assert warnings and "rerun" in warnings[0]
    assert stats.coefficient_of_variation([5.0]) == 0.0


def test_family_confidence_is_bonferroni():
    assert stats.family_confidence(0.95, 1) == pytest.approx(0.95)
    assert stats.family_confidence(0.95, 4) == pytest.approx(0.9875)
    assert stats.family_confidence(0.90, 10) == pytest.approx(0.99)
    with pytest.raises(ValueError, match="at least one comparison"):
        stats.family_confidence(0.95, 0)
    with pytest.raises(ValueError, match="within"):
        stats.family_confidence(95, 4)


def test_weighted_levels_split_alpha_and_keep_the_family_level():
    levels = stats.weighted_levels(0.95, {"cpu": 4.0, "lat": 1.0})
    assert levels == pytest.approx({"cpu": 0.96, "lat": 0.99})
    assert sum(1 - v for v in levels.values()) == pytest.approx(0.05)  # the union bound still gives 95%
    assert stats.weighted_levels(0.95, {"cpu": 1.0, "lat": 1.0}, cases=2)["cpu"] == pytest.approx(
        stats.family_confidence(0.95, 4)
    )
    with pytest.raises(ValueError, match="> 0"):
        stats.weighted_levels(0.95, {"cpu": -1.0})
    with pytest.raises(ValueError, match="at least one"):
        stats.weighted_levels(0.95, {})


def _families_with_a_false_alarm(families, comparisons, confidence):
    """Seeded A/A families: ``comparisons`` independent no-change comparisons of 10 pairs (3% noise)
    each; count the families in which some interval lies wholly on one side of 1."""
    alarms = 0
    for family in range(families):
        for c in range(comparisons):
            base, head = paired_samples(10, 1.0, 0.03, seed=50_000 + 100 * family + c)
            est = stats.estimate_ratio(base, head, resamples=400, seed=family, confidence=confidence)
            if est.low > 1.0 or est.high < 1.0:
                alarms += 1
                break
    return alarms


def test_per_comparison_intervals_raise_family_false_alarms_and_bonferroni_intervals_do_not():
    """Known answer: nothing changed in any of 8 comparisons. At 95% each, some interval misses 1 in
    about 1 - 0.95**8 = 34% of the families; at 1 - 0.05/8 each, in at most 5%. Both come out higher
    (29 and 10 of 60 here) because the percentile bootstrap under-covers at 10 pairs, more so in the
    far tails (about 93% for a nominal 95%): the correction divides the family's rate by about three
    but the size threshold remains the second guard (docs/gate.md)."""
    naive = _families_with_a_false_alarm(60, 8, 0.95)
    family = _families_with_a_false_alarm(60, 8, stats.family_confidence(0.95, 8))
    assert naive >= 25, naive
    assert family <= 12, family
    assert family * 2 < naive
