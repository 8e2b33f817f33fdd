"""The gate's command line: ``python -m gatecheck.load gate ...`` and ``python -m gatecheck.load.gate ...``.

Rules of this module: options are validated when parsed (one clear message, exit status 2); every
failure the gate can meet while running is turned into ``error: ...`` on stderr and exit status 2;
otherwise the exit status is the gate's own (rule 5 of :mod:`load.gate`). Output directories and CPU
lists are checked before anything is built or started. Ctrl-C or SIGTERM (handled even when started
with SIGINT ignored, :mod:`load.run.signals`) stops the servers and oha, writes and prints what was
measured so far, and exits 130.
"""

from __future__ import annotations

import argparse
import random
import sys
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Optional, Sequence, Tuple

from ..plan import at_least, cpu_list, non_negative_float, percent, positive_float, positive_int, server_or_target
from ..run import INTERRUPTED
from .model import COST_ENV, DEFAULT_ALPHA_WEIGHTS, DELAY_ENV, LOOPS_ENV, METRICS, GateCase, GateError, GateOptions
from .report import render_markdown, write_outputs
from .running import run_gate
from .stats import STATISTICS
from .verdict import SIZE_RULES

__all__ = ["percent", "delay_spec", "alpha_weights_spec", "add_arguments", "cases_from_args", "main_from_args", "main"]

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
            "('200us', '2ms'), or a time on every N-th request ('2ms/30')")
    return "wait", (micros, every)


def _metric_list(text: str) -> Tuple[str, ...]:
    values = tuple(v.strip() for v in text.split(",") if v.strip())
    bad = [v for v in values if v not in METRICS]
    if not values or bad:
        raise argparse.ArgumentTypeError(f"invalid metric list {text!r}; choose from {', '.join(METRICS)} (e.g. 'rps,p99')")
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
                "weights above 0 (e.g. 'cpu=4,lat=1'), or 'equal'")
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
    knob.add_argument("--head-cost", type=non_negative_float, default=0.0, metavar="MICROSECONDS",
                      help=f"fake a regression: HEAD's app burns this much CPU per request on average ({COST_ENV}; "
                           "as 50 µs bursts on every N-th request below 50 µs)")
    knob.add_argument("--head-slowdown", type=percent, default=None, metavar="PERCENT",
                      help="fake a regression of this size: HEAD's app runs a loop sized by counting so that HEAD "
                           "executes 1/(1-PERCENT) times BASE's instructions per request (where valgrind is missing: "
                           "a CPU burn sized by timing BASE)")
    knob.add_argument("--head-loops", type=positive_int, default=0, metavar="N",
                      help=f"fake a regression of counted work: HEAD's app does N units of it per request, about 70 "
                           f"instructions each ({LOOPS_ENV}; BASE calls the same code with none)")
    parser.add_argument("--head-delay", type=delay_spec, default=None, metavar="PERCENT|TIME[/N]",
                        help=f"fake a regression that costs no CPU: HEAD's app waits ({DELAY_ENV}; asyncio.sleep, "
                             "time.sleep for WSGI): '10%%' = calibrated to raise BASE's mean latency at low concurrency "
                             "by 10%%; '200us' = on every request; '2ms/30' = on every 30th request")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The gate's options (``python -m gatecheck.load gate ...`` and ``python -m gatecheck.load.gate ...``), in
    the order ``--help`` lists them."""
    _add_subject_arguments(parser)
    _add_rule_arguments(parser)
    _add_injection_arguments(parser)
    _add_metric_arguments(parser)
    _add_output_arguments(parser)


def _add_subject_arguments(parser: argparse.ArgumentParser) -> None:
    """What is gated: the two installs, how the server starts, and the cases (a profile, or routes)."""
    parser.add_argument("--base", required=True, metavar="INSTALL",
                        help="the reference install: a requirement ('granian==2.8.6'), a wheel, sdist or source tree, "
                             "or an existing interpreter or virtualenv")
    parser.add_argument("--head", required=True, metavar="INSTALL", help="the install under test (same forms as --base)")
    parser.add_argument("--target", type=server_or_target, default="granian:rsgi",
                        help="how to start the server (default granian:rsgi); with --profile, its server name fills {server}")
    parser.add_argument("--profile", help="gate every case of this load profile (load/profiles/NAME.toml) at its highest concurrency")
    parser.add_argument("--route", action="append", dest="routes",
                        help="route to gate without --profile (repeatable; default: json, which the cost knob slows)")
    parser.add_argument("--concurrency", type=positive_int, default=64, help="connections for --route cases (default 64)")


def _add_rule_arguments(parser: argparse.ArgumentParser) -> None:
    """The verdict's rule and the pairs' length: threshold, size rule, pair counts, budget, durations, statistic."""
    parser.add_argument("--threshold", type=percent, default=0.05,
                        help="the slowdown the gate must catch, e.g. '5%%' (default 5%%): a significant slowdown "
                             "fails unless its interval shows it smaller than this (see --size-by)")
    parser.add_argument("--size-by", choices=SIZE_RULES, default="interval",
                        help="what must reach --threshold for a significant change to count: 'interval' (default), "
                             "its worse end, so a slowdown the size of the threshold is caught; or 'estimate', the "
                             "point estimate (the earlier rule), which lets half of them pass")
    parser.add_argument("--pairs", type=at_least(8, "--pairs"), default=8,
                        help="pairs before the gate may stop (at least 8; default 8)")
    parser.add_argument("--max-pairs", type=at_least(8, "--max-pairs"), default=24,
                        help="stop after this many pairs even if an interval is still wide (default 24; --budget "
                             "usually stops the gate first; more pairs narrow the intervals as 1/sqrt(n))")
    parser.add_argument("--budget", type=positive_float, default=90.0,
                        help="seconds the whole gate may take: a pair starts only if it and the analysis after it "
                             "still end inside (default 90; the first --pairs pairs always run)")
    parser.add_argument("--duration", type=positive_float, default=1.5,
                        help="seconds per measured run at the case's concurrency (default 1.5)")
    parser.add_argument("--warmup", type=non_negative_float, default=0.5,
                        help="seconds of unrecorded load after each server start (default 0.5)")
    parser.add_argument("--confidence", type=_confidence, default=0.95, help="interval coverage (default 95%%)")
    parser.add_argument("--statistic", choices=sorted(STATISTICS), default="pair-median",
                        help="how pairs combine into one ratio (default pair-median: the median of the per-pair "
                             "ratios, which a few disturbed pairs barely move; geomean, hl, mean and median also; "
                             "see docs/gate.md)")
    parser.add_argument("--seed", type=int, default=None,
                        help="seed for the run order and the bootstrap (default: random, recorded in pairs.json)")


def _add_metric_arguments(parser: argparse.ArgumentParser) -> None:
    """What fails the gate and how the pairs are measured: gated metrics, their alpha shares, the latency run,
    restarts and CPUs."""
    parser.add_argument("--fail-on", type=_metric_list, default=("cpu", "lat", "count"),
                        help="metrics whose regression fails the gate: any of rps, p99, cpu, lat, lat50, count (default "
                             "cpu,lat,count: server CPU per request, the mean latency of a low-concurrency run and "
                             "instructions per request counted under valgrind, all precise on a shared machine where "
                             "RPS is not; see docs/gate.md)")
    parser.add_argument("--alpha-weights", type=alpha_weights_spec, default=DEFAULT_ALPHA_WEIGHTS, metavar="M=W,...",
                        help="how the gated metrics share the family's false alarms (1 - --confidence; weighted Bonferroni; default "
                             "cpu=4,lat=1,count=1: CPU's intervals at 96.7%%, latency's and the count's at 99.2%%; "
                             "'equal' for equal shares; a gated metric not named weighs 1)")
    parser.add_argument("--count-pairs", type=at_least(0, "--count-pairs"), default=6,
                        help="counted pairs: batches of requests to a BASE and a HEAD server under valgrind, beside "
                             "the timed pairs (default 6; 0 = no counted metric)")
    parser.add_argument("--count-restart-every", type=at_least(1, "--count-restart-every"), default=3,
                        help="fresh counted servers every N counted pairs (default 3)")
    parser.add_argument("--count-requests", type=positive_int, default=300,
                        help="requests per side counted in each counted pair, after as many uncounted (default 300)")
    parser.add_argument("--count-threshold", type=percent, default=0.01,
                        help="the change in instructions per request the gate must catch (default 1%%)")
    parser.add_argument("--latency-duration", type=non_negative_float, default=1.0,
                        help="seconds of the low-concurrency run after each pair's main runs: one request at a time, "
                             "BASE and HEAD interleaved request by request, for the lat metrics (default 1; 0 = none)")
    parser.add_argument("--restart-every", type=at_least(0, "--restart-every"), default=1,
                        help="start fresh server processes every N pairs (default 1; 0 = start once)")
    parser.add_argument("--server-cpus", type=cpu_list, help="CPUs for both servers, e.g. '0' (default: first half)")
    parser.add_argument("--oha-cpus", type=cpu_list, help="CPUs for oha, e.g. '1' (default: the other half)")


def _add_output_arguments(parser: argparse.ArgumentParser) -> None:
    """Where the results go and how BASE's and HEAD's environments are built."""
    parser.add_argument("--out", type=Path, help="output directory (default results/gate-<UTC time>)")
    parser.add_argument("--benchmark-storage", type=Path, metavar="DIR",
                        help="also file both sides in pytest-benchmark storage (e.g. .benchmarks) for its history tools")
    parser.add_argument("--python", default=sys.executable,
                        help="interpreter that creates the BASE/HEAD virtualenvs (default: this one)")
    parser.add_argument("--with", dest="extras", action="append", default=[], metavar="REQUIREMENT",
                        help="extra requirement installed into environments the gate builds (repeatable)")
    parser.add_argument("--rebuild-envs", action="store_true", help="rebuild cached environments")
    parser.add_argument("--env-timeout", type=positive_float, default=1800.0,
                        help="seconds allowed for each venv/pip step (default 1800)")
    parser.add_argument("--quiet", action="store_true", help="no progress on stderr")


def cases_from_args(args: argparse.Namespace) -> Tuple[GateCase, ...]:
    """The cases to gate: the profile's (each at its highest concurrency) or ``--route`` × ``--concurrency``."""
    from ..plan import load_profile, route
    from ..run import setup_for

    if args.profile:
        if args.routes:
            raise GateError("give --profile or --route, not both")
        profile = load_profile(args.profile)
        return tuple(GateCase(setup_for(c.target_for(args.target.server, profile.default_server), app=c.app, env=c.env),
                              c.route, max(c.concurrency)) for c in profile.cases)
    names = args.routes or ["json"]
    for name in names:
        route(name)  # RouteError lists the known names
    setup = setup_for(args.target)
    return tuple(GateCase(setup, name, args.concurrency) for name in names)


def _check_outputs(args: argparse.Namespace, out_dir: Path) -> None:
    """Refuse a used or unwritable output directory before any work (one line each)."""
    from ..records import writable_dir

    if out_dir.exists() and out_dir.is_dir() and any(out_dir.iterdir()):
        raise GateError(f"output directory {out_dir} is not empty; choose another --out")
    writable_dir(out_dir, "--out")
    if args.benchmark_storage:
        writable_dir(args.benchmark_storage, "--benchmark-storage")


def _pinning(args: argparse.Namespace) -> Tuple[Optional[Tuple[int, ...]], Optional[Tuple[int, ...]]]:
    """(server CPUs, oha CPUs): both given and available here, or the default split."""
    from ..run import available_cpus, require_available, split_cpus

    if args.server_cpus or args.oha_cpus:
        if not (args.server_cpus and args.oha_cpus):
            raise GateError("give both --server-cpus and --oha-cpus, or neither")
        require_available(args.server_cpus, "--server-cpus")
        require_available(args.oha_cpus, "--oha-cpus")
        return args.server_cpus, args.oha_cpus
    pin = split_cpus(available_cpus())
    return pin.server, pin.oha


def _delay_options(spec: Optional[Tuple[str, Any]]) -> dict:
    """GateOptions fields of an absolute ``--head-delay`` (a percentage is calibrated by run_gate)."""
    if spec is None or spec[0] != "wait":
        return {}
    return {"head_delay_us": spec[1][0], "head_delay_every": spec[1][1]}


def _prepare(args: argparse.Namespace, out_dir: Path, seed: int, log) -> Tuple[GateOptions, Any, Any]:
    """Everything before the first measurement: outputs, cases, pinning, options, both environments."""
    from gatecheck.servers import get_adapter

    from ..run import ensure_pair

    _check_outputs(args, out_dir)
    cases = cases_from_args(args)
    adapter = get_adapter(cases[0].setup.target.server)
    server_cpus, oha_cpus = _pinning(args)
    opts = GateOptions(cases=cases, threshold=args.threshold, pairs=args.pairs, max_pairs=args.max_pairs,
                       budget=args.budget, duration=args.duration, warmup=args.warmup, confidence=args.confidence,
                       statistic=args.statistic, seed=seed, head_cost_us=args.head_cost,
                       fail_on=tuple(m for m in args.fail_on if m != "count" or args.count_pairs),
                       restart_every=args.restart_every, server_cpus=server_cpus, oha_cpus=oha_cpus,
                       latency_duration=args.latency_duration, size_by=args.size_by, alpha_weights=args.alpha_weights,
                       count_pairs=args.count_pairs, count_restart_every=args.count_restart_every,
                       count_requests=args.count_requests,
                       count_warmup=args.count_requests, count_threshold=args.count_threshold,
                       head_loops=args.head_loops, **_delay_options(args.head_delay))
    base_env, head_env = ensure_pair(args.base, args.head, package=adapter.package, module=adapter.module,
                                     extras=args.extras, python=args.python, rebuild=args.rebuild_envs,
                                     timeout=args.env_timeout, log=log)
    log(f"BASE: {base_env.describe()}\nHEAD: {head_env.describe()}")
    log(f"gating {len(cases)} case(s), {opts.pairs}..{opts.max_pairs} pairs of {opts.duration:g} s runs, "
        f"server on CPUs {server_cpus}, oha on CPUs {oha_cpus}; output -> {out_dir}")
    return opts, base_env, head_env


def main_from_args(args: argparse.Namespace) -> int:
    """Run the gate from parsed options; returns the exit status (rule 5; 130 when interrupted)."""
    from gatecheck.servers import ServerError

    from ..plan import ProfileError, RouteError
    from ..records import ResultsError
    from ..run import CountError, EnvError, OhaError, RouteCheckError

    log = (lambda s: None) if args.quiet else (lambda s: print(s, file=sys.stderr, flush=True))
    seed = args.seed if args.seed is not None else random.SystemRandom().randrange(2**31)
    out_dir = args.out or Path("results") / ("gate-" + datetime.now(timezone.utc).strftime("%Y%m%dT%H%M%SZ"))
    info = lambda env: {"spec": env.spec.text, "kind": env.spec.kind, "server_version": env.server_version,
                        "env_key": env.key}
    try:
        opts, base_env, head_env = _prepare(args, out_dir, seed, log)
        result = run_gate(opts, base_python=base_env.python, head_python=head_env.python, base_info=info(base_env),
                          head_info=info(head_env), out_dir=out_dir, head_slowdown=args.head_slowdown,
                          head_delay_increase=args.head_delay[1] if args.head_delay and args.head_delay[0] == "increase"
                          else None, log=log)
        paths = write_outputs(result, out_dir, args.benchmark_storage)
    except (GateError, EnvError, ServerError, OhaError, RouteError, RouteCheckError, ProfileError, ResultsError,
            CountError, ValueError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        kept = out_dir / "runs.jsonl"
        print(f"interrupted: {kept} keeps every run measured so far" if kept.exists()
              else "interrupted before the first pair: nothing was measured", file=sys.stderr)
        return INTERRUPTED
    print(render_markdown(result))
    log("wrote " + ", ".join(str(p) for p in paths.values()))
    if result.interrupted:
        print(f"interrupted: {len(result.runs)} run(s) in {result.pairs} complete pair(s) measured so far, "
              f"kept in {out_dir}", file=sys.stderr)
        return INTERRUPTED
    return result.exit_status


def main(argv: Optional[Sequence[str]] = None) -> int:
    """``python -m gatecheck.load.gate ...``: the same gate without the ``load`` CLI around it."""
    parser = argparse.ArgumentParser(prog="python -m gatecheck.load.gate", description="gatecheck regression gate")
    add_arguments(parser)
    return main_from_args(parser.parse_args(argv))
