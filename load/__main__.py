"""``python -m gatecheck.load``: run load profiles, render reports, list profiles, gate pull requests.

Rules of this module:
- Subcommands map to ``cmd_<name>`` functions through ``COMMANDS``; ``main(argv=None) -> int`` so tests call
  it in-process. Every option has ``help=``; bad values are rejected at parse time by ``type=`` callables
  that quote the value.
- ``gate``'s options and its run belong to ``load/gate/cli.py`` (the regression gate's command line),
  imported only when ``gate`` is the command, so the other commands do not pay for it.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Callable, Sequence

from .plan import cpu_list, positive_float, positive_int, server_or_target
from .run import INTERRUPTED, stop_on_signals

__all__ = ["main", "build_parser", "COMMANDS"]

#: ``fidelity``'s default --out: the lab's document, beside the results it is rendered from
FIDELITY_OUT = Path("benchmarks/load/fidelity.md")


# ---- parse-time validators (argparse ``type=`` callables; the shared ones are in load/plan/argtypes.py) ---


def quick_factor(text: str) -> float:
    value = positive_float(text)
    if value > 1:
        raise argparse.ArgumentTypeError(f"--quick scales durations down: expected a factor in (0, 1], got {text!r}")
    return value


def concurrency_list(text: str) -> tuple[int, ...]:
    try:
        values = tuple(int(x) for x in text.split(",") if x.strip())
    except ValueError:
        values = ()
    if not values or any(v < 1 for v in values):
        raise argparse.ArgumentTypeError(f"invalid concurrency list: {text!r} (expected e.g. '64,128')")
    return values


def profile_arg(text: str):
    from .plan import ProfileError, load_profile

    try:
        return load_profile(text)
    except ProfileError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


# ---- commands ---------------------------------------------------------------------------------------


def _run_pinning(args: argparse.Namespace):
    """The run's CPU split; ValueError (one line) for a half-given or unavailable CPU list."""
    from .run import Pinning, available_cpus, require_available, split_cpus

    if args.no_pin:
        return Pinning(None, None)
    if args.server_cpus or args.oha_cpus:
        if not (args.server_cpus and args.oha_cpus):
            raise ValueError("give both --server-cpus and --oha-cpus, or neither")
        require_available(args.server_cpus, "--server-cpus")
        require_available(args.oha_cpus, "--oha-cpus")
        return Pinning(args.server_cpus, args.oha_cpus)
    return split_cpus(available_cpus())


def _run_status(summary) -> int:
    """0 only when something was measured and nothing failed or was skipped for an error (one line otherwise)."""
    problems = []
    if summary.failures:
        problems.append(f"{summary.failures} failure(s)")
    if summary.errors:
        problems.append(f"{summary.errors} case(s) skipped for an error")
    if not summary.runs:
        problems.append("nothing was measured")
    if not problems:
        return 0
    print(f"error: {', '.join(problems)} ({summary.runs} run(s) measured; see {summary.results})", file=sys.stderr)
    return 1


def cmd_run(args: argparse.Namespace) -> int:
    from . import run
    from .plan import Method
    from .records import ResultsError, writable_dir
    from .report import write_report

    try:
        pinning = _run_pinning(args)
        if not args.dry_run:
            writable_dir(args.out, "--out")
    except (ValueError, ResultsError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    profile = args.profile
    method = Method(request_timeout=args.request_timeout)
    if args.duration:
        method = Method(duration=args.duration, request_timeout=args.request_timeout)
    opts = run.RunOptions(
        profile=profile,
        target=args.target,
        out_dir=args.out / profile.name,
        quick=args.quick,
        full=args.full,
        repeat=args.repeat,
        pinning=pinning,
        oha=args.oha,
        python=args.python,
        select=args.select,
        concurrency=args.concurrency,
        method=method,
    )
    if args.dry_run:
        for item in opts.planned(run.environment()["cpus_available"]):
            status = f"skip ({item.skip})" if item.skip else "run"
            conc = ",".join(map(str, opts.concurrency or item.case.concurrency))
            print(f"{item.case.label:<40} {str(item.target):<45} {item.case.route:<12} c{conc}  {status}")
        return 0
    try:
        summary = run.run_profile(opts)
    except KeyboardInterrupt:
        print(f"\ninterrupted: runs measured so far are in {opts.out_dir / 'results.jsonl'}", file=sys.stderr)
        return INTERRUPTED
    if not args.no_report and (summary.runs or summary.failures or summary.skipped):
        path = write_report([summary.results], opts.out_dir, plots=True)
        print(f"report: {path}", file=sys.stderr)
    return _run_status(summary)


def cmd_report(args: argparse.Namespace) -> int:
    from .records import ResultsError
    from .report import write_report

    out = args.out or (args.paths[0] if args.paths[0].is_dir() else args.paths[0].parent)
    try:
        path = write_report(args.paths, out, plots=not args.no_plots, vs=args.vs, force=args.force)
    except ResultsError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    if args.print:
        print(path.read_text(encoding="utf-8"), end="")
    else:
        print(path)
    return 0


def cmd_fidelity(args: argparse.Namespace) -> int:
    from .records import ResultsError
    from .report import FidelityError, SeedError, write_fidelity

    try:
        path = write_fidelity(args.paths, args.out)
    except (FidelityError, ResultsError, SeedError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    except OSError as exc:
        print(f"error: --out {args.out}: cannot write ({exc.strerror or exc})", file=sys.stderr)
        return 1
    print(path)
    return 0


def cmd_list_profiles(args: argparse.Namespace) -> int:
    from .plan import list_profiles, load_profile

    for name in list_profiles():
        profile = load_profile(name)
        routes = sorted({c.route for c in profile.cases})
        print(f"{name:<14} {profile.title} ({len(profile.cases)} cases; routes {', '.join(routes)})")
        if args.verbose:
            for case in profile.cases:
                print(
                    f"    {case.label:<40} {case.target:<45} {case.route:<12} c{','.join(map(str, case.concurrency))}"
                )
    return 0


def cmd_gate(args: argparse.Namespace) -> int:
    from .gate.cli import main_from_args

    return int(main_from_args(args))


COMMANDS: dict[str, Callable[[argparse.Namespace], int]] = {
    "run": cmd_run,
    "report": cmd_report,
    "fidelity": cmd_fidelity,
    "list-profiles": cmd_list_profiles,
    "gate": cmd_gate,
}


# ---- parser -----------------------------------------------------------------------------------------


def build_parser(with_gate_options: bool = False) -> argparse.ArgumentParser:
    """The CLI. ``with_gate_options`` (only when ``gate`` is the command) adds the gate's own options."""
    parser = argparse.ArgumentParser(
        prog="python -m gatecheck.load", description="gatecheck load: profiles, reports, regression gate"
    )
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    run = sub.add_parser("run", help="run a load profile against a server and record the results")
    _add_run_arguments(run)
    _add_run_host_arguments(run)
    _add_report_parsers(sub)
    gate = sub.add_parser("gate", help="regression gate: interleaved A/B runs of two installs (docs/gate.md)")
    if with_gate_options:
        from .gate.cli import add_arguments

        add_arguments(gate)
    return parser


def _add_run_arguments(run: argparse.ArgumentParser) -> None:
    """``run``: which profile against which server, and how long and how hard it measures."""
    run.add_argument(
        "target",
        nargs="?",
        type=server_or_target,
        metavar="SERVER_OR_TARGET",
        help="server name (granian) or target (granian:asgi?loop=uvloop); default: the profile's own targets",
    )
    run.add_argument(
        "--profile",
        "-p",
        required=True,
        type=profile_arg,
        metavar="NAME",
        help="profile name (see list-profiles) or path to a profile .toml",
    )
    run.add_argument(
        "--quick",
        nargs="?",
        const=0.2,
        default=None,
        type=quick_factor,
        metavar="FACTOR",
        help="scale every duration by FACTOR (default 0.2 when given) for CI",
    )
    run.add_argument(
        "--out",
        type=Path,
        default=Path("results"),
        help="results directory; runs are appended to OUT/PROFILE/results.jsonl (default: results)",
    )
    run.add_argument(
        "--full", action="store_true", help="also run configurations that need more cores than this host has"
    )
    run.add_argument("--repeat", type=positive_int, default=1, help="run the whole profile N times (for spread)")
    run.add_argument("--select", metavar="TEXT", help="only cases whose label contains TEXT (case-insensitive)")
    run.add_argument(
        "--concurrency",
        "-c",
        type=concurrency_list,
        metavar="LIST",
        help="override every case's concurrencies, e.g. 64,128",
    )
    run.add_argument("--duration", type=positive_float, metavar="SECONDS", help="seconds per measured run (default 10)")
    run.add_argument(
        "--request-timeout",
        type=positive_float,
        default=10.0,
        metavar="SECONDS",
        help="oha's per-request timeout (default 10)",
    )


def _add_run_host_arguments(run: argparse.ArgumentParser) -> None:
    """``run``: the CPUs, load generator and interpreter of this host it uses, and what it writes."""
    run.add_argument("--no-pin", action="store_true", help="do not pin server and oha to separate CPUs")
    run.add_argument("--server-cpus", type=cpu_list, metavar="LIST", help="CPUs for the server tree, e.g. 0-1")
    run.add_argument("--oha-cpus", type=cpu_list, metavar="LIST", help="CPUs for oha, e.g. 2-3")
    run.add_argument("--oha", type=Path, metavar="PATH", help="oha binary to use (default: cache, PATH, or build it)")
    run.add_argument("--python", metavar="PATH", help="interpreter or venv that runs the server (default: this one)")
    run.add_argument("--dry-run", action="store_true", help="print which cases would run or be skipped, and exit")
    run.add_argument("--no-report", action="store_true", help="do not render OUT/PROFILE/report.md after the run")


def _add_report_parsers(sub) -> None:
    """``report``, ``fidelity`` and ``list-profiles``: reading what runs recorded."""
    report = sub.add_parser("report", help="render Markdown tables and SVG plots from results")
    report.add_argument("paths", nargs="+", type=Path, metavar="PATH", help="results directories or .jsonl files")
    report.add_argument("--out", type=Path, help="directory for report.md and plots (default: the first PATH)")
    report.add_argument("--vs", action="store_true", help="add a side-by-side comparison of servers per route")
    report.add_argument("--no-plots", action="store_true", help="skip the SVG plots")
    report.add_argument("--force", action="store_true", help="render results from different machines together")
    report.add_argument("--print", action="store_true", help="print the Markdown instead of its path")

    fid = sub.add_parser(
        "fidelity", help="compare results with the seed tables: ranks, Spearman, CV (benchmarks/load/fidelity.md)"
    )
    fid.add_argument(
        "paths",
        nargs="+",
        type=Path,
        metavar="RESULTS_DIR",
        help="results directories (or .jsonl files) of seeded profiles, e.g. results/interfaces",
    )
    fid.add_argument(
        "--out", type=Path, default=FIDELITY_OUT, help=f"the Markdown document to write (default: {FIDELITY_OUT})"
    )

    lp = sub.add_parser("list-profiles", help="list the load profiles")
    lp.add_argument("--verbose", "-v", action="store_true", help="also list every case")


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    parser = build_parser(with_gate_options=argv[:1] == ["gate"])
    args = parser.parse_args(argv)
    if not args.command:
        parser.print_usage(sys.stderr)
        return 1
    return COMMANDS[args.command](args)


if __name__ == "__main__":
    stop_on_signals()  # Ctrl-C and SIGTERM stop a run or a gate even when started with SIGINT ignored
    sys.exit(main())
