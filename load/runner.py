"""Running a profile: start each target once, check its routes, prime, warm up, measure, record.

Rules of this module:
- The method is the seed benchmarks': a primer at c8 for 4 s, a warm-up at the profile's highest
  concurrency for 3 s, then 10 s per concurrency with short pauses between; ``quick`` scales every duration
  (and a fixed request count becomes the case's ``quick_requests``).
- Before any load, each route is checked (status and body size): a benchmark of a broken route is worthless.
- Each measured run is appended to ``results.jsonl`` the moment it finishes. Skips and failures are records
  too, with their reason: nothing is silently left out of a report.
- A run where nothing succeeded is recorded as a failure, never as a number.
- Progress goes to ``log`` (stderr by default): which run of how many, and about how long is left.
"""
from __future__ import annotations

import os
import sys
import time
from dataclasses import asdict, dataclass, field, replace
from datetime import datetime, timezone
from pathlib import Path
from typing import Callable, Sequence

from .measure import LoadRun, RouteCheckError, check_route, measure
from .oha import OhaError, find_oha, oha_version
from .pinning import Pinning, available_cpus, split_cpus
from .profile import Case, PlannedCase, Profile, plan
from .results import RESULTS_FILE, append_record, environment, host_load
from .routes import RouteError, route as lookup_route

__all__ = ["Method", "RunOptions", "RunSummary", "run_profile", "DEFAULT_QUICK"]

DEFAULT_QUICK = 0.2
SERVER_START_ESTIMATE = 2.0  # seconds to start a server and see it ready, for the "time left" estimate


@dataclass(frozen=True)
class Method:
    """Durations in seconds; ``scaled`` gives the --quick variant."""

    primer_concurrency: int = 8
    primer: float = 4.0
    warmup: float = 3.0
    duration: float = 10.0
    pause: float = 1.0
    request_timeout: float = 10.0

    def scaled(self, factor: float) -> Method:
        return replace(
            self,
            primer=self.primer * factor,
            warmup=self.warmup * factor,
            duration=self.duration * factor,
            pause=self.pause * factor,
        )

    def describe(self) -> str:
        return (
            f"primer at c{self.primer_concurrency} for {self.primer:g} s, warm-up at the highest concurrency "
            f"for {self.warmup:g} s, then {self.duration:g} s per concurrency with {self.pause:g} s pauses"
        )


@dataclass(frozen=True)
class RunOptions:
    profile: Profile
    server: str | None = None  # server name, or None for the profile's default / every fixed target
    interface: str | None = None  # from a full target on the command line: only cases of this interface
    http: str | None = None  # ... run in this HTTP mode
    target_options: tuple[tuple[str, str], ...] = ()  # ... with these options added
    out_dir: Path = Path("results")
    quick: float | None = None
    full: bool = False
    repeat: int = 1
    pinning: Pinning | None = None  # None: split the available CPUs
    oha: Path | None = None
    python: str | None = None
    select: str | None = None
    concurrency: tuple[int, ...] | None = None  # overrides every case's list
    method: Method = Method()

    def effective_method(self) -> Method:
        return self.method.scaled(self.quick) if self.quick else self.method

    def planned(self, host_cores: int) -> list[PlannedCase]:
        """The profile's cases as they run here: filtered, customised, or skipped with a reason.

        Python-version limits and ``needs`` are judged for the interpreter that runs the server."""
        version, importable = _interpreter(self.python)
        items = plan(self.profile, self.server, host_cores=host_cores, full=self.full, select=self.select,
                     interface=self.interface, python_version=version, importable=importable)
        return [replace(p, target=_customise(p.target, self.target_options, self.http)) for p in items]


@dataclass
class RunSummary:
    results: Path
    runs: int = 0
    skipped: int = 0  # cases the plan leaves out here, each with its reason (too few cores, ...)
    errors: int = 0  # cases skipped for an error (a target that does not resolve): never a clean run
    failures: int = 0
    flagged: int = 0
    session: str = ""
    messages: list = field(default_factory=list)


def _say(line: str) -> None:
    print(line, file=sys.stderr, flush=True)


def _fmt_seconds(seconds: float) -> str:
    seconds = int(round(seconds))
    return f"{seconds // 60}m{seconds % 60:02d}s" if seconds >= 60 else f"{seconds}s"


def _case_concurrencies(case: Case, opts: RunOptions) -> tuple[int, ...]:
    return opts.concurrency or case.concurrency


def _requests_for(case: Case, opts: RunOptions) -> int | None:
    if case.requests is None:
        return None
    if opts.quick:
        return case.quick_requests or max(1000, int(case.requests * opts.quick * 0.05))
    return case.requests


def _interpreter(python: str | None) -> tuple[tuple[int, int], Callable[[str], bool] | None]:
    """(major, minor) of the server's interpreter and an ``importable(module)`` test run inside it."""
    if not python:
        return sys.version_info[:2], None
    import subprocess

    path = Path(python)
    exe = str(path / "bin" / "python") if path.is_dir() else str(path)
    script = "import sys; print('%d.%d' % sys.version_info[:2])"
    try:
        out = subprocess.run([exe, "-c", script], capture_output=True, text=True, timeout=30, stdin=subprocess.DEVNULL)
        major, minor = (int(x) for x in out.stdout.strip().split("."))
    except (OSError, ValueError, subprocess.TimeoutExpired):
        return sys.version_info[:2], None  # start_server will report the broken interpreter clearly

    def importable(module: str) -> bool:
        probe = f"import importlib.util, sys; sys.exit(importlib.util.find_spec({module!r}) is None)"
        try:
            return subprocess.run([exe, "-c", probe], timeout=30, stdin=subprocess.DEVNULL).returncode == 0
        except (OSError, subprocess.TimeoutExpired):
            return False

    return (major, minor), importable


def _customise(target: str, options: Sequence[tuple[str, str]], http: str | None) -> str:
    """Apply a command-line target's options (and HTTP mode) to a case's target."""
    if not options and not http:
        return target
    from gatecheck.servers import Target

    parsed = Target.parse(target)
    if http:
        parsed = replace(parsed, http=http)
    return str(parsed.with_options(**{k.replace("-", "_"): v for k, v in options}))


def _group(planned: Sequence[PlannedCase]) -> list[tuple[tuple, list[PlannedCase]]]:
    """Runnable cases grouped by how their server is started, in first-seen order."""
    groups: dict[tuple, list[PlannedCase]] = {}
    for item in planned:
        if item.skip:
            continue
        key = (item.target, item.case.app, tuple(sorted(item.case.env.items())))
        groups.setdefault(key, []).append(item)
    return list(groups.items())


def _resolve_groups(groups, log: Callable[[str], None], error: Callable[[PlannedCase, str], None]) -> list:
    """Resolve each group's target once, before anything starts: ``[(group key, items, adapter, resolved)]``.

    A target that does not resolve (``granian:asgi?workers=abc``) skips its cases *for an error*: one
    line per case through ``log``, a record through ``error``, and the run's exit status is non-zero."""
    from gatecheck.servers import ServerError, resolve

    ready = []
    for key, items in groups:
        try:
            adapter, resolved = resolve(key[0])
        except ServerError as exc:
            for item in items:
                log(f"ERROR {item.case.label}: skipped, its target {item.target!r} is invalid: {exc}")
                error(item, str(exc))
            continue
        ready.append((key, items, adapter, resolved))
    return ready


def _costs(groups, opts: RunOptions, method: Method) -> list:
    """Seconds each measured run is expected to take, in order (for "time left")."""
    costs = []
    for _key, items, *_ in groups * opts.repeat:
        start = SERVER_START_ESTIMATE  # charged to the group's first run
        for item in items:
            per_case = method.primer + method.warmup + 0.5  # 0.5: the route check
            for index, _c in enumerate(_case_concurrencies(item.case, opts)):
                run_s = method.duration if item.case.requests is None else 5.0
                costs.append(start + run_s + method.pause + (per_case if index == 0 else 0.0))
                start = 0.0
    return costs


def _record_plan_skips(planned, record, summary: RunSummary, versions: dict, log: Callable[[str], None]) -> None:
    """One ``skip`` record per case the plan leaves out (too few cores, a missing package)."""
    for item in planned:
        if item.skip:
            log(f"skip  {item.case.label}: {item.skip}")
            record("skip", item, reason=item.skip, versions=versions)
            summary.skipped += 1


def _record_start_failure(target: str, items, exc: Exception, opts: RunOptions, record, summary: RunSummary,
                          versions_oha, repeat: int, log: Callable[[str], None]) -> int:
    """A ``failure`` record for every case of a server that did not start; returns the runs it counts as done."""
    done = 0
    for item in items:
        record("failure", item, reason=f"server did not start: {exc}", versions={"oha": versions_oha}, repeat=repeat)
        summary.failures += 1
        done += len(_case_concurrencies(item.case, opts))
    log(f"FAIL  {target}: server did not start: {exc}")
    return done


def run_profile(opts: RunOptions, *, log: Callable[[str], None] = _say) -> RunSummary:
    """Run every planned case of ``opts.profile``; append records to ``opts.out_dir/results.jsonl``."""
    from gatecheck.servers import ServerError, start_server  # lazy: the harness's tests need no servers

    profile, method = opts.profile, opts.effective_method()
    pin = opts.pinning or split_cpus(available_cpus())
    out_dir = Path(opts.out_dir)
    results = out_dir / RESULTS_FILE
    session = datetime.now(timezone.utc).strftime("%Y%m%dT%H%M%SZ") + f"-{os.getpid()}"
    summary = RunSummary(results=results, session=session)
    env = environment()
    planned = opts.planned(env["cpus_available"])
    base = {"profile": profile.name, "session": session, "quick": opts.quick, "method": asdict(method),
            "pinning": pin.to_dict(), "environment": env}
    python_version = ".".join(map(str, _interpreter(opts.python)[0]))

    def record(kind: str, item: PlannedCase, **fields) -> None:
        case = item.case
        append_record(results, {
            **base, "kind": kind, "case": case.label, "group": case.group, "cells": list(case.cells),
            "target": item.target, "server": item.target.split(":", 1)[0].split("?", 1)[0], "app": case.app,
            "case_env": dict(case.env), **fields,
        })

    def error(item: PlannedCase, reason: str) -> None:
        record("skip", item, reason=reason, error=True, versions={"python": python_version})
        summary.errors += 1

    groups = _resolve_groups(_group(planned), log, error)
    oha = versions_oha = None
    if groups:  # oha is found (or built) only when something will be measured
        oha = Path(opts.oha) if opts.oha else find_oha(build=True, log=log)
        versions_oha = oha_version(oha)
    _record_plan_skips(planned, record, summary, {"oha": versions_oha, "python": python_version}, log)
    costs = _costs(groups, opts, method)
    total = len(costs)
    log(f"profile {profile.name}: {total} measured runs, about {_fmt_seconds(sum(costs))}; "
        f"pinning: {pin.describe()}; oha {versions_oha}; results -> {results}")
    done = 0
    for repeat in range(opts.repeat):
        for (target, app, env_items), items, adapter, resolved in groups:
            # a framework adapter (robyn) has no interface and runs its own app unless the case names one
            app_spec = app or getattr(adapter, "own_app", "") or f"gatecheck.fixtures.apps.{resolved.interface}:app"
            try:
                srv = start_server(resolved, app=app_spec, log_dir=out_dir / "logs", env=dict(env_items),
                                   cpus=list(pin.server) if pin.server else None, python=opts.python)
            except ServerError as exc:
                done += _record_start_failure(target, items, exc, opts, record, summary, versions_oha, repeat, log)
                continue
            with srv:
                versions = {**srv.versions, "oha": versions_oha}
                for item in items:
                    done = _run_case(item, srv, opts, method, pin, oha, resolved.http == "h2", out_dir, versions,
                                     repeat, record, summary, costs, done, total, log)
                    if not srv.alive():
                        log(f"FAIL  {target}: the server died; log tail:\n{srv.log_tail(20)}")
                        break
    log(f"done: {summary.runs} runs, {summary.flagged} flagged, {summary.failures} failures, "
        f"{summary.errors} skipped for an error, {summary.skipped} skipped by the plan -> {results}")
    return summary


def _run_case(item, srv, opts, method, pin, oha, target_h2, out_dir, versions, repeat, record, summary, costs, done, total, log) -> int:
    case = item.case
    http2 = target_h2 or case.http2
    concs = _case_concurrencies(case, opts)
    versions = {**versions, **_needed_versions(case, srv.python)}
    common = dict(versions=versions, repeat=repeat, target_resolved=str(srv.target))
    try:
        spec = lookup_route(case.route).resolve()
        check_route(srv, spec, http2=http2, oha=oha, workdir=out_dir / "bodies")
    except (RouteCheckError, RouteError, OhaError) as exc:
        log(f"FAIL  {case.label}: route check failed: {exc}")
        record("failure", item, reason=f"route check failed: {exc}", route=case.route, **common)
        summary.failures += 1
        return done + len(concs)
    kwargs = dict(http2=http2, h2_parallel=case.h2_parallel, oha_cpus=pin.oha, server_cpus=pin.server, oha=oha,
                  request_timeout=method.request_timeout, workdir=out_dir / "bodies")
    try:
        if method.primer > 0:
            measure(srv, spec, method.primer_concurrency, method.primer, **kwargs)
        if method.warmup > 0:
            measure(srv, spec, opts.profile.max_concurrency if not opts.concurrency else max(opts.concurrency), method.warmup, **kwargs)
    except OhaError as exc:
        log(f"FAIL  {case.label}: primer/warm-up failed: {exc}")
        record("failure", item, reason=f"primer/warm-up failed: {exc}", route=case.route, **common)
        summary.failures += 1
        return done + len(concs)
    requests = _requests_for(case, opts)
    for concurrency in concs:
        left = sum(costs[done:])
        done += 1
        what = f"{requests} requests" if requests else f"{method.duration:g} s"
        log(f"[{done}/{total}] {opts.profile.name}: {case.label} c{concurrency} ({what}) - about {_fmt_seconds(left)} left")
        load_before = host_load()
        try:
            run = measure(srv, spec, concurrency, None if requests else method.duration, requests=requests, **kwargs)
        except OhaError as exc:
            log(f"FAIL  {case.label} c{concurrency}: {exc}")
            record("failure", item, reason=str(exc), route=case.route, concurrency=concurrency, **common)
            summary.failures += 1
            continue
        fields = {**run.to_dict(), **common, "host_load": load_before}
        if run.result.all_failed:
            reason = f"no 2xx response: non-2xx {dict(run.result.non_2xx)}, errors {dict(run.result.errors)}"
            log(f"FAIL  {case.label} c{concurrency}: {reason}")
            record("failure", item, reason=reason, **fields)
            summary.failures += 1
        else:
            record("run", item, **fields)
            summary.runs += 1
            if set(run.flags()) - {"generator-bound"}:
                summary.flagged += 1
            log("      " + _describe(run))
        if method.pause > 0:
            time.sleep(method.pause)
        if not srv.alive():
            break
    return done


def _needed_versions(case: Case, python: str) -> dict:
    """Installed versions of the packages a case ``needs`` (e.g. fastapi), as the server's interpreter sees them."""
    from gatecheck.servers.adapters._base import _distribution_version

    found = {}
    for module in case.needs:
        version = _distribution_version(python, module)
        if version:
            found[module] = version
    return found


def _describe(run: LoadRun) -> str:
    r = run.result
    p99 = f"{r.latency_p99 * 1000:.2f} ms" if r.latency_p99 is not None else "-"
    parts = [f"{r.rps:,.0f} RPS", f"p99 {p99}", f"server CPU {run.server_util:.0%}", f"oha CPU {run.oha_util:.0%}"]
    if r.non_2xx:
        parts.append(f"non-2xx {dict(r.non_2xx)}")
    if r.errors:
        parts.append(f"errors {dict(r.errors)}")
    if run.generator_bound:
        parts.append("GENERATOR-BOUND")
    return ", ".join(parts)
