"""The gate's options, in the order ``--help`` lists them, and the parsers of their values (a bad value is one
clear message from argparse, exit status 2). ``cli.py`` re-exports ``add_arguments``, ``percent``, ``delay_spec``
and ``alpha_weights_spec``."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any, Tuple

from ..plan import at_least, cpu_list, non_negative_float, percent, positive_float, positive_int, server_or_target
from .model import COST_ENV, DEFAULT_ALPHA_WEIGHTS, DELAY_ENV, LOOPS_ENV, METRICS
from .stats import STATISTICS
from .verdict import SIZE_RULES

__all__ = ["percent", "delay_spec", "alpha_weights_spec", "add_arguments"]

_TIME_UNITS = {"us": 1.0, "µs": 1.0, "ms": 1000.0, "s": 1e6}


def delay_spec(text: str) -> Tuple[str, Any]:
    """``--head-delay``: ``('increase', 0.10)`` for ``10%`` (calibrated against BASE's mean latency at low
    concurrency), or ``('wait', (µs, every))`` for ``200us`` (every request) or ``2ms/30`` (every 30th)."""
    value = text.strip()
    if value.endswith("%"):
        increase = percent(value)
        if not 0 < increase <= 10:
            raise argparse.ArgumentTypeError(f"a latency increase must be above 0%% and at most 1000%%, got {text!r}")
        return "increase", increase
    wait, _, every_text = value.partition("/")
    unit = next((u for u in sorted(_TIME_UNITS, key=len, reverse=True) if wait.endswith(u)), None)
    try:
        micros = float(wait[: -len(unit)]) * _TIME_UNITS[unit] if unit else float("nan")
        every = int(every_text) if every_text else 1
    except ValueError:
        micros, every = float("nan"), 0
    if not (micros > 0 and micros < 60e6 and every >= 1):
        raise argparse.ArgumentTypeError(
            f"invalid delay {text!r}: give a percentage of BASE's latency ('10%%'), a time with its unit "
            "('200us', '2ms'), or a time on every N-th request ('2ms/30')"
        )
    return "wait", (micros, every)


def _metric_list(text: str) -> Tuple[str, ...]:
    values = tuple(v.strip() for v in text.split(",") if v.strip())
    bad = [v for v in values if v not in METRICS]
    if not values or bad:
        raise argparse.ArgumentTypeError(
            f"invalid metric list {text!r}; choose from {', '.join(METRICS)} (e.g. 'rps,p99')"
        )
    return values


def alpha_weights_spec(text: str) -> Tuple[Tuple[str, float], ...]:
    """``cpu=4,lat=1`` -> (("cpu", 4.0), ("lat", 1.0)); ``equal`` -> () (every gated metric the same share)."""
    if text.strip() == "equal":
        return ()
    out = []
    for item in (v.strip() for v in text.split(",") if v.strip()):
        metric, _, weight = item.partition("=")
        try:
            value = float(weight)
        except ValueError:
            value = float("nan")
        if metric.strip() not in METRICS or not (value > 0 and value < float("inf")):
            raise argparse.ArgumentTypeError(
                f"invalid alpha weights {text!r}: give METRIC=WEIGHT pairs with metrics from {', '.join(METRICS)} and "
                "weights above 0 (e.g. 'cpu=4,lat=1'), or 'equal'"
            )
        out.append((metric.strip(), value))
    if not out:
        raise argparse.ArgumentTypeError(f"invalid alpha weights {text!r}: e.g. 'cpu=4,lat=1', or 'equal'")
    return tuple(out)


def _confidence(text: str) -> float:
    value = percent(text)
    if value < 0.5:
        raise argparse.ArgumentTypeError(f"a confidence level below 50% makes no sense, got {text!r}")
    return value


def _add_injection_arguments(parser: argparse.ArgumentParser) -> None:
    """The fake regressions HEAD can be given: a CPU cost (``--head-cost``/``--head-slowdown``) and an
    off-CPU wait (``--head-delay``)."""
    knob = parser.add_mutually_exclusive_group()
    knob.add_argument(
        "--head-cost",
        type=non_negative_float,
        default=0.0,
        metavar="MICROSECONDS",
        help=f"fake a regression: HEAD's app burns this much CPU per request on average ({COST_ENV}; "
        "as 50 µs bursts on every N-th request below 50 µs)",
    )
    knob.add_argument(
        "--head-slowdown",
        type=percent,
        default=None,
        metavar="PERCENT",
        help="fake a regression of this size: HEAD's app runs a loop sized by counting so that HEAD "
        "executes 1/(1-PERCENT) times BASE's instructions per request (where valgrind is missing: "
        "a CPU burn sized by timing BASE)",
    )
    knob.add_argument(
        "--head-loops",
        type=positive_int,
        default=0,
        metavar="N",
        help=f"fake a regression of counted work: HEAD's app does N units of it per request, about 70 "
        f"instructions each ({LOOPS_ENV}; BASE calls the same code with none)",
    )
    parser.add_argument(
        "--head-delay",
        type=delay_spec,
        default=None,
        metavar="PERCENT|TIME[/N]",
        help=f"fake a regression that costs no CPU: HEAD's app waits ({DELAY_ENV}; asyncio.sleep, "
        "time.sleep for WSGI): '10%%' = calibrated to raise BASE's mean latency at low concurrency "
        "by 10%%; '200us' = on every request; '2ms/30' = on every 30th request",
    )


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The gate's options (``python -m gatecheck.load gate ...`` and ``python -m gatecheck.load.gate ...``), in
    the order ``--help`` lists them."""
    _add_subject_arguments(parser)
    _add_rule_arguments(parser)
    _add_run_arguments(parser)
    _add_injection_arguments(parser)
    _add_metric_arguments(parser)
    _add_measure_arguments(parser)
    _add_output_arguments(parser)


def _add_subject_arguments(parser: argparse.ArgumentParser) -> None:
    """What is gated: the two installs, how the server starts, and the cases (a profile, or routes)."""
    parser.add_argument(
        "--base",
        required=True,
        metavar="INSTALL",
        help="the reference install: a requirement ('granian==2.8.6'), a wheel, sdist or source tree, "
        "or an existing interpreter or virtualenv",
    )
    parser.add_argument(
        "--head", required=True, metavar="INSTALL", help="the install under test (same forms as --base)"
    )
    parser.add_argument(
        "--target",
        type=server_or_target,
        default="granian:rsgi",
        help="how to start the server (default granian:rsgi); with --profile, its server name fills {server}",
    )
    parser.add_argument(
        "--profile", help="gate every case of this load profile (load/profiles/NAME.toml) at its highest concurrency"
    )
    parser.add_argument(
        "--route",
        action="append",
        dest="routes",
        help="route to gate without --profile (repeatable; default: json, which the cost knob slows)",
    )
    parser.add_argument(
        "--concurrency", type=positive_int, default=64, help="connections for --route cases (default 64)"
    )


def _add_rule_arguments(parser: argparse.ArgumentParser) -> None:
    """The verdict's rule and how many pairs it may take: threshold, size rule, pair counts, budget."""
    parser.add_argument(
        "--threshold",
        type=percent,
        default=0.05,
        help="the slowdown the gate must catch, e.g. '5%%' (default 5%%): a significant slowdown "
        "fails unless its interval shows it smaller than this (see --size-by)",
    )
    parser.add_argument(
        "--size-by",
        choices=SIZE_RULES,
        default="interval",
        help="what must reach --threshold for a significant change to count: 'interval' (default), "
        "its worse end, so a slowdown the size of the threshold is caught; or 'estimate', the "
        "point estimate (the earlier rule), which lets half of them pass",
    )
    parser.add_argument(
        "--pairs", type=at_least(8, "--pairs"), default=8, help="pairs before the gate may stop (at least 8; default 8)"
    )
    parser.add_argument(
        "--max-pairs",
        type=at_least(8, "--max-pairs"),
        default=24,
        help="stop after this many pairs even if an interval is still wide (default 24; --budget "
        "usually stops the gate first; more pairs narrow the intervals as 1/sqrt(n))",
    )
    parser.add_argument(
        "--budget",
        type=positive_float,
        default=90.0,
        help="seconds the whole gate may take: a pair starts only if it and the analysis after it "
        "still end inside (default 90; the first --pairs pairs always run)",
    )


def _add_run_arguments(parser: argparse.ArgumentParser) -> None:
    """Each run's length, and how the pairs become an interval: coverage, statistic, seed."""
    parser.add_argument(
        "--duration",
        type=positive_float,
        default=1.5,
        help="seconds per measured run at the case's concurrency (default 1.5)",
    )
    parser.add_argument(
        "--warmup",
        type=non_negative_float,
        default=0.5,
        help="seconds of unrecorded load after each server start (default 0.5)",
    )
    parser.add_argument("--confidence", type=_confidence, default=0.95, help="interval coverage (default 95%%)")
    parser.add_argument(
        "--statistic",
        choices=sorted(STATISTICS),
        default="pair-median",
        help="how pairs combine into one ratio (default pair-median: the median of the per-pair "
        "ratios, which a few disturbed pairs barely move; geomean, hl, mean and median also; "
        "see docs/gate.md)",
    )
    parser.add_argument(
        "--seed",
        type=int,
        default=None,
        help="seed for the run order and the bootstrap (default: random, recorded in pairs.json)",
    )


def _add_metric_arguments(parser: argparse.ArgumentParser) -> None:
    """What fails the gate: gated metrics, their alpha shares, and the counted pairs (instructions per request)."""
    parser.add_argument(
        "--fail-on",
        type=_metric_list,
        default=("cpu", "lat", "count"),
        help="metrics whose regression fails the gate: any of rps, p99, cpu, lat, lat50, count (default "
        "cpu,lat,count: server CPU per request, the mean latency of a low-concurrency run and "
        "instructions per request counted under valgrind, all precise on a shared machine where "
        "RPS is not; see docs/gate.md)",
    )
    parser.add_argument(
        "--alpha-weights",
        type=alpha_weights_spec,
        default=DEFAULT_ALPHA_WEIGHTS,
        metavar="M=W,...",
        help="how the gated metrics share the family's false alarms (1 - --confidence; weighted Bonferroni; default "
        "cpu=4,lat=1,count=1: CPU's intervals at 96.7%%, latency's and the count's at 99.2%%; "
        "'equal' for equal shares; a gated metric not named weighs 1)",
    )
    parser.add_argument(
        "--count-pairs",
        type=at_least(0, "--count-pairs"),
        default=6,
        help="counted pairs: batches of requests to a BASE and a HEAD server under valgrind, beside "
        "the timed pairs (default 6; 0 = no counted metric)",
    )
    parser.add_argument(
        "--count-max-pairs",
        type=positive_int,
        default=12,
        help="counted pairs at most: past --count-pairs the lane counts more, fresh servers each time, while "
        "the count's interval is too wide to decide and the next ones still end inside --budget (default 12)",
    )
    parser.add_argument(
        "--count-restart-every",
        type=at_least(1, "--count-restart-every"),
        default=3,
        help="fresh counted servers every N counted pairs (default 3)",
    )
    parser.add_argument(
        "--count-requests",
        type=positive_int,
        default=300,
        help="requests per side counted in each counted pair, after as many uncounted (default 300)",
    )
    parser.add_argument(
        "--count-threshold",
        type=percent,
        default=0.01,
        help="the change in instructions per request the gate must catch (default 1%%)",
    )


def _add_measure_arguments(parser: argparse.ArgumentParser) -> None:
    """How the timed pairs are measured: the latency run, server restarts and CPUs."""
    parser.add_argument(
        "--latency-duration",
        type=non_negative_float,
        default=1.0,
        help="seconds of the low-concurrency run after each pair's main runs: one request at a time, "
        "BASE and HEAD interleaved request by request, for the lat metrics (default 1; 0 = none)",
    )
    parser.add_argument(
        "--restart-every",
        type=at_least(0, "--restart-every"),
        default=1,
        help="start fresh server processes every N pairs (default 1; 0 = start once)",
    )
    parser.add_argument("--server-cpus", type=cpu_list, help="CPUs for both servers, e.g. '0' (default: first half)")
    parser.add_argument("--oha-cpus", type=cpu_list, help="CPUs for oha, e.g. '1' (default: the other half)")


def _add_output_arguments(parser: argparse.ArgumentParser) -> None:
    """Where the results go and how BASE's and HEAD's environments are built."""
    parser.add_argument("--out", type=Path, help="output directory (default results/gate-<UTC time>)")
    parser.add_argument(
        "--benchmark-storage",
        type=Path,
        metavar="DIR",
        help="also file both sides in pytest-benchmark storage (e.g. .benchmarks) for its history tools",
    )
    parser.add_argument(
        "--python",
        default=sys.executable,
        help="interpreter that creates the BASE/HEAD virtualenvs (default: this one)",
    )
    parser.add_argument(
        "--with",
        dest="extras",
        action="append",
        default=[],
        metavar="REQUIREMENT",
        help="extra requirement installed into environments the gate builds (repeatable)",
    )
    parser.add_argument("--rebuild-envs", action="store_true", help="rebuild cached environments")
    parser.add_argument(
        "--env-timeout",
        type=positive_float,
        default=1800.0,
        help="seconds allowed for each venv/pip step (default 1800)",
    )
    parser.add_argument("--quiet", action="store_true", help="no progress on stderr")
