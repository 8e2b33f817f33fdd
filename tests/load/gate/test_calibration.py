"""load/calibration.py on known answers: a server whose burn adds exactly itself, one that wins ~1 µs back."""

import math
import random

import pytest

from gatecheck.load.gate import calibration


def test_target_ratio_and_nominal_cost_follow_the_cpu_bound_model():
    assert calibration.target_ratio(0.10) == pytest.approx(1 / 0.9)
    # 50 µs per request; 10% fewer RPS needs 1/0.9 of the time: 5.56 µs more
    assert calibration.nominal_cost(50.0, 0.10) == pytest.approx(50 / 9)
    for bad in (0.0, 1.0, -0.1):
        with pytest.raises(ValueError):
            calibration.target_ratio(bad)


def test_fit_solves_the_line_through_the_trial_points():
    # ratio = 1 + (c - 1.1) / 29.5: an offset, as measured on granian:rsgi (module docstring)
    line = lambda c: 1 + (c - 1.1) / 29.5
    cost = calibration.fit_cost([(1.55, line(1.55)), (3.1, line(3.1))], 0.05)
    assert line(cost) == pytest.approx(1 / 0.95)
    assert cost == pytest.approx(29.5 * (1 / 0.95 - 1) + 1.1)


def test_fit_without_a_rising_line_scales_the_largest_trial_and_stays_bounded():
    # falling line: 2 µs gave x1.01, so x1.111 would need 22 µs, beyond 4 x the largest trial: 8 µs
    assert calibration.fit_cost([(1.0, 1.02), (2.0, 1.01)], 0.10) == pytest.approx(8.0)
    assert calibration.fit_cost([(1.0, 1.02), (2.0, 1.05)], 0.10) == pytest.approx(1.0 + (1 / 0.9 - 1.02) / 0.03)
    assert calibration.fit_cost([(1.0, 0.99), (2.0, 0.98)], 0.10) == 2.0
    with pytest.raises(ValueError):
        calibration.fit_cost([(1.0, 1.05), (1.0, 1.06)], 0.05)


@pytest.mark.parametrize("offset", [0.0, 1.1])
def test_calibrate_cost_finds_the_cost_of_a_known_server(offset):
    rng = random.Random(7)

    def server(cost):  # 29.5 µs per request, 0.5% noise; a burn adds itself minus ``offset``
        return (29.5 + max(0.0, cost - offset) if cost else 29.5) * (1 + rng.gauss(0, 0.005))

    for slowdown in (0.05, 0.10):
        cost, info = calibration.calibrate_cost(server, slowdown, rounds=6)
        truth = 29.5 * (1 / (1 - slowdown) - 1) + offset
        assert cost == pytest.approx(truth, rel=0.12)
        assert info["nominal_cost_us"] == pytest.approx(29.5 * (1 / (1 - slowdown) - 1), rel=0.05)
        assert len(info["points"]) == 18  # 6 rounds of two trial costs, 6 of the first line's answer


def test_the_final_line_through_every_round_lands_near_a_convex_response():
    """A burn that is won back more when small (as measured): added = c^2 / (c + 3) µs. The chord
    through c and 2c under-injects; the line through all three trial costs lands within 0.3% of the
    target ratio."""

    def server(cost):
        return 29.5 + (cost * cost / (cost + 3.0) if cost else 0.0)

    for slowdown in (0.03, 0.05, 0.10):
        cost, info = calibration.calibrate_cost(server, slowdown, rounds=2)
        assert server(cost) / 29.5 == pytest.approx(1 / (1 - slowdown), rel=0.003)
        assert info["line"]["log_ratio_per_us"] > 0


def test_one_disturbed_round_barely_moves_the_answer():
    """ratio = exp(0.0391 c) (the eighth experiment's line), eight rounds at three costs, one of them
    disturbed to x1.086: a least-squares line would move; the median of slopes hardly does."""
    line = lambda c: math.exp(0.0391 * c)
    points = [(c, line(c)) for c in (0.6, 1.2, 1.25) for _ in range(8)]
    clean, _, slope = calibration.robust_cost(points, 0.05)
    assert clean == pytest.approx(math.log(1 / 0.95) / 0.0391, rel=1e-6) and slope == pytest.approx(0.0391)
    disturbed = points[:-1] + [(1.25, 1.086)]
    assert calibration.robust_cost(disturbed, 0.05)[0] == pytest.approx(clean, rel=0.01)
    xs, ys = [c for c, _ in disturbed], [math.log(r) for _, r in disturbed]
    mx, my = sum(xs) / len(xs), sum(ys) / len(ys)
    ls_slope = sum((x - mx) * (y - my) for x, y in zip(xs, ys)) / sum((x - mx) ** 2 for x in xs)
    ls_cost = mx + (math.log(1 / 0.95) - my) / ls_slope
    assert abs(ls_cost / clean - 1) > 0.02  # what least squares would have answered instead


def test_the_robust_line_falls_back_when_noise_hides_the_rise_and_refuses_one_cost():
    assert calibration.robust_cost([(1.0, 1.02), (1.0, 1.03), (2.0, 1.01), (2.0, 1.01)], 0.10)[0] == pytest.approx(8.0)
    with pytest.raises(ValueError):
        calibration.robust_cost([(1.0, 1.05), (1.0, 1.06)], 0.05)


# ---- the off-CPU wait (--head-delay PCT) --------------------------------------------------------------


def test_nominal_every_spreads_the_wait_so_that_its_mean_is_the_increase():
    # 400 µs mean latency, +10% = 40 µs per request = a 2 ms wait on every 50th request
    assert calibration.nominal_every(400.0, 0.10, 2000.0) == 50
    assert calibration.nominal_every(50_000.0, 0.10, 2000.0) == 1  # never less than every request
    with pytest.raises(ValueError):
        calibration.nominal_every(0.0, 0.10)


@pytest.mark.parametrize("overshoot", [1.0, 1.6])
def test_calibrate_delay_finds_the_period_of_a_known_server(overshoot):
    """400 µs mean latency, 0.3% noise; a 2 ms wait really lasts ``overshoot`` times 2 ms (an event loop's
    timer resolution, a thread's wake-up): the nominal period under-injects, the measurement corrects it."""
    rng = random.Random(3)

    def server(every):
        added = 2000.0 * overshoot / every if every else 0.0
        base = 400.0 * (1 + rng.gauss(0, 0.003))
        return base, (400.0 + added) * (1 + rng.gauss(0, 0.003)) / base

    every, info = calibration.calibrate_delay(server, 0.10, 2000.0, rounds=3)
    assert info["nominal_every"] == 50
    want = 50 * overshoot
    assert abs(every - want) <= max(2, 0.08 * want)
    assert info["every"] == every and len(info["points"]) == 6 and info["wait_us"] == 2000.0


def test_calibrate_delay_keeps_the_nominal_period_when_noise_swamps_the_wait():
    every, info = calibration.calibrate_delay(lambda n: (400.0, 1.0), 0.10, 2000.0, rounds=1)
    assert every == info["nominal_every"] == 50
