"""Tests of load/gate/cli.py: options checked at parse time, cases from routes or a profile, clear errors."""

from __future__ import annotations

import argparse

import pytest

from gatecheck.load.gate import GateError
from gatecheck.load.gate import cli as gate_cli


@pytest.mark.parametrize("text, value", [("5%", 0.05), ("0.05", 0.05), ("12.5%", 0.125)])
def test_percent_accepts_percentages_and_fractions(text, value):
    assert gate_cli.percent(text) == pytest.approx(value)


@pytest.mark.parametrize("text", ["5", "abc", "0%", "100%", "-3%"])
def test_percent_refuses_ambiguous_or_out_of_range_values_quoting_them(text):
    with pytest.raises(argparse.ArgumentTypeError, match=repr(text).replace("%", "%")[1:-1]):
        gate_cli.percent(text)


def parse(argv):
    parser = argparse.ArgumentParser()
    gate_cli.add_arguments(parser)
    return parser.parse_args(argv)


@pytest.mark.parametrize(
    "argv, message",
    [
        (["--threshold", "5"], "ambiguous"),
        (["--pairs", "4"], "--pairs must be a whole number >= 8"),
        (["--fail-on", "speed"], "invalid metric list"),
        (["--head-cost", "1", "--head-slowdown", "5%"], "not allowed with"),
        (["--alpha-weights", "cpu=0"], "invalid alpha weights"),
        (["--alpha-weights", "speed=1"], "invalid alpha weights"),
        (["--alpha-weights", "cpu"], "invalid alpha weights"),
    ],
)
def test_cli_rejects_bad_values_at_parse_time(argv, message, capsys):
    with pytest.raises(SystemExit) as info:
        parse(["--base", "a==1", "--head", "a==2", *argv])
    assert info.value.code == 2
    assert message in capsys.readouterr().err


def test_cli_defaults():
    args = parse(["--base", "granian==2.8.6", "--head", "granian==2.8.7"])
    assert (args.threshold, args.pairs, args.max_pairs, args.restart_every) == (0.05, 8, 24, 1)
    assert args.fail_on == ("cpu", "lat", "count")
    assert (args.budget, args.duration, args.latency_duration, args.head_delay) == (90, 1.5, 1, None)
    assert args.alpha_weights == (("cpu", 4.0), ("lat", 1.0), ("count", 1.0))
    assert (args.count_pairs, args.count_requests, args.count_threshold, args.head_loops) == (6, 300, 0.01, 0)


def test_alpha_weights_name_metrics_or_ask_for_equal_shares():
    assert gate_cli.alpha_weights_spec("cpu=3, lat=0.5") == (("cpu", 3.0), ("lat", 0.5))
    assert gate_cli.alpha_weights_spec("equal") == ()


def test_cli_unknown_install_spec_is_a_clear_error_with_status_2(tmp_path, capsys):
    status = gate_cli.main(
        ["--base", "granian==2.8.6", "--head", "not a spec!", "--out", str(tmp_path / "o"), "--quiet"]
    )
    assert status == 2
    assert "expected a requirement such as 'granian==2.8.6'" in capsys.readouterr().err


def test_cli_unknown_route_lists_the_known_ones(tmp_path, capsys):
    status = gate_cli.main(["--base", "a==1", "--head", "a==1", "--route", "nope", "--out", str(tmp_path / "o")])
    assert status == 2
    assert "known routes" in capsys.readouterr().err


def test_cases_come_from_routes_with_the_target_resolved():
    args = parse(
        [
            "--base",
            "x==1",
            "--head",
            "x==1",
            "--target",
            "granian:asgi:h2",
            "--route",
            "b1k",
            "--route",
            "json",
            "--concurrency",
            "32",
        ]
    )
    cases = gate_cli.cases_from_args(args)
    assert [c.name for c in cases] == ["b1k c32 (granian:asgi:h2)", "json c32 (granian:asgi:h2)"]
    assert all(c.http2 for c in cases)


def test_profile_and_route_together_are_refused():
    args = parse(["--base", "x==1", "--head", "x==1", "--profile", "smoke", "--route", "json"])
    with pytest.raises(GateError, match="not both"):
        gate_cli.cases_from_args(args)


@pytest.mark.parametrize(
    "text, spec",
    [
        ("10%", ("increase", 0.10)),
        ("200us", ("wait", (200.0, 1))),
        ("200µs", ("wait", (200.0, 1))),
        ("2ms/30", ("wait", (2000.0, 30))),
        ("0.5s", ("wait", (500000.0, 1))),
    ],
)
def test_head_delay_accepts_a_percentage_or_a_time_with_its_unit(text, spec):
    kind, value = gate_cli.delay_spec(text)
    assert kind == spec[0] and value == pytest.approx(spec[1])


@pytest.mark.parametrize("text", ["200", "abc", "2ms/0", "-1ms", "0us", "2ms/x", "0%"])
def test_head_delay_refuses_a_time_without_unit_or_a_bad_period(text):
    with pytest.raises(argparse.ArgumentTypeError):
        gate_cli.delay_spec(text)
