"""The gate's command line: ``python -m gatecheck.load gate ...`` and ``python -m gatecheck.load.gate ...``.

Rules of this module: options (``arguments.py``) are validated when parsed (one clear message, exit status 2); every
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

from ..run import INTERRUPTED
from .arguments import add_arguments, alpha_weights_spec, delay_spec, percent
from .model import GateCase, GateError, GateOptions
from .report import render_markdown, write_outputs
from .running import run_gate

__all__ = ["percent", "delay_spec", "alpha_weights_spec", "add_arguments", "cases_from_args", "main_from_args", "main"]


def cases_from_args(args: argparse.Namespace) -> Tuple[GateCase, ...]:
    """The cases to gate: the profile's (each at its highest concurrency) or ``--route`` × ``--concurrency``."""
    from ..plan import load_profile, route
    from ..run import setup_for

    if args.profile:
        if args.routes:
            raise GateError("give --profile or --route, not both")
        profile = load_profile(args.profile)
        return tuple(
            GateCase(
                setup_for(c.target_for(args.target.server, profile.default_server), app=c.app, env=c.env),
                c.route,
                max(c.concurrency),
            )
            for c in profile.cases
        )
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
    opts = GateOptions(
        cases=cases,
        threshold=args.threshold,
        pairs=args.pairs,
        max_pairs=args.max_pairs,
        budget=args.budget,
        duration=args.duration,
        warmup=args.warmup,
        confidence=args.confidence,
        statistic=args.statistic,
        seed=seed,
        head_cost_us=args.head_cost,
        fail_on=tuple(m for m in args.fail_on if m != "count" or args.count_pairs),
        restart_every=args.restart_every,
        server_cpus=server_cpus,
        oha_cpus=oha_cpus,
        latency_duration=args.latency_duration,
        size_by=args.size_by,
        alpha_weights=args.alpha_weights,
        count_pairs=args.count_pairs,
        count_max_pairs=args.count_max_pairs,
        count_restart_every=args.count_restart_every,
        count_requests=args.count_requests,
        count_warmup=args.count_requests,
        count_threshold=args.count_threshold,
        head_loops=args.head_loops,
        **_delay_options(args.head_delay),
    )
    base_env, head_env = ensure_pair(
        args.base,
        args.head,
        package=adapter.package,
        module=adapter.module,
        extras=args.extras,
        python=args.python,
        rebuild=args.rebuild_envs,
        timeout=args.env_timeout,
        log=log,
    )
    log(f"BASE: {base_env.describe()}\nHEAD: {head_env.describe()}")
    log(
        f"gating {len(cases)} case(s), {opts.pairs}..{opts.max_pairs} pairs of {opts.duration:g} s runs, "
        f"server on CPUs {server_cpus}, oha on CPUs {oha_cpus}; output -> {out_dir}"
    )
    return opts, base_env, head_env


def _gate(args: argparse.Namespace, out_dir: Path, seed: int, log) -> tuple:
    """Prepare, run the gate and write its outputs: (the result, the paths written)."""
    info = lambda env: {
        "spec": env.spec.text,
        "kind": env.spec.kind,
        "server_version": env.server_version,
        "env_key": env.key,
    }
    opts, base_env, head_env = _prepare(args, out_dir, seed, log)
    result = run_gate(
        opts,
        base_python=base_env.python,
        head_python=head_env.python,
        base_info=info(base_env),
        head_info=info(head_env),
        out_dir=out_dir,
        head_slowdown=args.head_slowdown,
        head_delay_increase=args.head_delay[1] if args.head_delay and args.head_delay[0] == "increase" else None,
        log=log,
    )
    return result, write_outputs(result, out_dir, args.benchmark_storage)


def main_from_args(args: argparse.Namespace) -> int:
    """Run the gate from parsed options; returns the exit status (rule 5; 130 when interrupted)."""
    from gatecheck.servers import ServerError

    from ..plan import ProfileError, RouteError
    from ..records import ResultsError
    from ..run import CountError, EnvError, OhaError, RouteCheckError

    log = (lambda s: None) if args.quiet else (lambda s: print(s, file=sys.stderr, flush=True))
    seed = args.seed if args.seed is not None else random.SystemRandom().randrange(2**31)
    out_dir = args.out or Path("results") / ("gate-" + datetime.now(timezone.utc).strftime("%Y%m%dT%H%M%SZ"))
    try:
        result, paths = _gate(args, out_dir, seed, log)
    except (
        GateError,
        EnvError,
        ServerError,
        OhaError,
        RouteError,
        RouteCheckError,
        ProfileError,
        ResultsError,
        CountError,
        ValueError,
    ) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        kept = out_dir / "runs.jsonl"
        print(
            f"interrupted: {kept} keeps every run measured so far"
            if kept.exists()
            else "interrupted before the first pair: nothing was measured",
            file=sys.stderr,
        )
        return INTERRUPTED
    print(render_markdown(result))
    log("wrote " + ", ".join(str(p) for p in paths.values()))
    if result.interrupted:
        print(
            f"interrupted: {len(result.runs)} run(s) in {result.pairs} complete pair(s) measured so far, "
            f"kept in {out_dir}",
            file=sys.stderr,
        )
        return INTERRUPTED
    return result.exit_status


def main(argv: Optional[Sequence[str]] = None) -> int:
    """``python -m gatecheck.load.gate ...``: the same gate without the ``load`` CLI around it."""
    parser = argparse.ArgumentParser(prog="python -m gatecheck.load.gate", description="gatecheck regression gate")
    add_arguments(parser)
    return main_from_args(parser.parse_args(argv))
