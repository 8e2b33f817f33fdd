"""Running a profile: start each target once, check its routes, prime, warm up, measure, record.

Rules of this module:
- The method is the seed benchmarks' (``load.plan.method``): a primer at c8 for 4 s, a warm-up at the case's
  highest concurrency for 3 s, then 10 s per concurrency with short pauses between; ``quick`` scales every
  duration (and a fixed request count becomes the case's ``quick_requests``, ``load.run.options``). A WebSocket
  case (route ``ws_broadcast``) follows the seed's WebSocket method instead (``load.run.wsbroadcast``: no
  primer, clients settle 3 s; ``quick`` scales its messages).
- Before any load, each route is checked (status and body size): a benchmark of a broken route is worthless.
- Servers are started, checked and measured through ``load.run.pipeline.Pipeline`` (as the gate does); each
  group's target is resolved once, before anything starts, into a ``ServerSetup``.
- Each measured run is appended to ``results.jsonl`` (``load.records``) the moment it finishes. Skips and
  failures are records too, with their reason: nothing is silently left out of a report.
- A run where nothing succeeded is recorded as a failure, never as a number.
- Progress goes to ``log`` (stderr by default): which run of how many, and about how long is left.
"""

from __future__ import annotations

import os
import sys
import time
from dataclasses import asdict
from datetime import datetime, timezone
from pathlib import Path
from typing import Callable, Sequence

from ..plan import SETTLE, Case, Method, PlannedCase, RouteError
from ..plan import route as lookup_route
from ..records import RESULTS_FILE, append_record
from .host import environment, host_load, host_speed
from .measure import LoadRun, RouteCheckError
from .oha import OhaError, find_oha, oha_version
from .options import RunOptions, RunSummary, case_concurrencies, interpreter, messages_for, requests_for
from .pinning import available_cpus, split_cpus
from .pipeline import Pipeline, ServerSetup, setup_for
from .wsbroadcast import BroadcastError, BroadcastRun

__all__ = ["run_profile"]

SERVER_START_ESTIMATE = 2.0  # seconds to start a server and see it ready, for the "time left" estimate
WS_RATE_ESTIMATE = 100_000.0  # messages received per second in a broadcast run, for the "time left" estimate


def _say(line: str) -> None:
    print(line, file=sys.stderr, flush=True)


def _fmt_seconds(seconds: float) -> str:
    seconds = int(round(seconds))
    return f"{seconds // 60}m{seconds % 60:02d}s" if seconds >= 60 else f"{seconds}s"


def _group(planned: Sequence[PlannedCase]) -> list[tuple[tuple, list[PlannedCase]]]:
    """Runnable cases grouped by how their server is started, in first-seen order."""
    groups: dict[tuple, list[PlannedCase]] = {}
    for item in planned:
        if item.skip:
            continue
        key = (item.target, item.case.app, tuple(sorted(item.case.env.items())))
        groups.setdefault(key, []).append(item)
    return list(groups.items())


def _setups(groups, log: Callable[[str], None], error: Callable[[PlannedCase, str], None]) -> list:
    """Resolve each group's target once, before anything starts: ``[(ServerSetup, items)]``.

    A target that does not resolve (``granian:asgi?workers=abc``) skips its cases *for an error*: one
    line per case through ``log``, a record through ``error``, and the run's exit status is non-zero."""
    from gatecheck.servers import ServerError

    ready = []
    for (target, app, env), items in groups:
        try:
            setup = setup_for(target, app=app, env=env)
        except ServerError as exc:
            for item in items:
                log(f"ERROR {item.case.label}: skipped, its target {str(item.target)!r} is invalid: {exc}")
                error(item, str(exc))
            continue
        ready.append((setup, items))
    return ready


def _costs(groups, opts: RunOptions, method: Method) -> list:
    """Seconds each measured run is expected to take, in order (for "time left")."""
    costs = []
    for _setup, items in groups * opts.repeat:
        start = SERVER_START_ESTIMATE  # charged to the group's first run
        for item in items:
            ws = item.case.websocket
            per_case = 1.0 if ws else method.primer + method.warmup + 0.5  # 0.5: the route check
            for index, c in enumerate(case_concurrencies(item.case, opts)):
                if ws:
                    run_s = SETTLE + messages_for(item.case, opts) * c * c / WS_RATE_ESTIMATE
                else:
                    run_s = method.duration if item.case.requests is None else 5.0
                costs.append(start + run_s + method.pause + (per_case if index == 0 else 0.0))
                start = 0.0
    return costs


def run_profile(opts: RunOptions, *, log: Callable[[str], None] = _say) -> RunSummary:
    """Run every planned case of ``opts.profile``; append records to ``opts.out_dir/results.jsonl``."""
    run = _ProfileRun(opts, log)
    planned = opts.planned(run.env["cpus_available"])
    setups = _setups(_group(planned), log, run.error)
    if any(not item.case.websocket for _setup, items in setups for item in items):
        # oha is found (or built) only when an HTTP case will be measured (WebSocket cases use load.run.wsbroadcast)
        run.pipeline.oha = Path(opts.oha) if opts.oha else find_oha(build=True, log=log)
        run.versions_oha = oha_version(run.pipeline.oha)
    run.record_plan_skips(planned)
    run.costs = _costs(setups, opts, run.method)
    log(
        f"profile {opts.profile.name}: {len(run.costs)} measured runs, about {_fmt_seconds(sum(run.costs))}; "
        f"pinning: {run.pin.describe()}; oha {run.versions_oha}; results -> {run.summary.results}"
    )
    for repeat in range(opts.repeat):
        for setup, items in setups:
            run.run_group(setup, items, repeat)
    summary = run.summary
    log(
        f"done: {summary.runs} runs, {summary.flagged} flagged, {summary.failures} failures, "
        f"{summary.errors} skipped for an error, {summary.skipped} skipped by the plan -> {summary.results}"
    )
    return summary


class _ProfileRun:
    """One ``run_profile`` call: the pipeline, the records and the progress, so each step is a short method."""

    def __init__(self, opts: RunOptions, log: Callable[[str], None]) -> None:
        self.opts, self.log, self.method = opts, log, opts.effective_method()
        self.pin = opts.pinning or split_cpus(available_cpus())
        out_dir = Path(opts.out_dir)
        self.pipeline = Pipeline(
            out_dir,
            server_cpus=self.pin.server,
            oha_cpus=self.pin.oha,
            python=opts.python,
            request_timeout=self.method.request_timeout,
        )
        session = datetime.now(timezone.utc).strftime("%Y%m%dT%H%M%SZ") + f"-{os.getpid()}"
        self.summary = RunSummary(results=out_dir / RESULTS_FILE, session=session)
        self.env = environment()
        self.base = {
            "profile": opts.profile.name,
            "session": session,
            "quick": opts.quick,
            "method": asdict(self.method),
            "pinning": self.pin.to_dict(),
            "environment": self.env,
        }
        self.python_version = ".".join(map(str, interpreter(opts.python)[0]))
        self.versions_oha: str | None = None
        self.costs: list = []
        self.done = 0

    def record(self, kind: str, item: PlannedCase, **fields) -> None:
        """The record step: one line of results.jsonl."""
        case = item.case
        append_record(
            self.summary.results,
            {
                **self.base,
                "kind": kind,
                "case": case.label,
                "group": case.group,
                "cells": list(case.cells),
                "target": str(item.target),
                "server": item.target.server,
                "app": case.app,
                "case_env": dict(case.env),
                **fields,
            },
        )

    def error(self, item: PlannedCase, reason: str) -> None:
        """A case skipped for an error (a target that does not resolve): recorded, and the run fails."""
        self.record("skip", item, reason=reason, error=True, versions={"python": self.python_version})
        self.summary.errors += 1

    def fail(self, item: PlannedCase, reason: str, **fields) -> None:
        self.record("failure", item, reason=reason, **fields)
        self.summary.failures += 1

    def record_plan_skips(self, planned: Sequence[PlannedCase]) -> None:
        """One ``skip`` record per case the plan leaves out (too few cores, a missing package)."""
        versions = {"oha": self.versions_oha, "python": self.python_version}
        for item in planned:
            if item.skip:
                self.log(f"skip  {item.case.label}: {item.skip}")
                self.record("skip", item, reason=item.skip, versions=versions)
                self.summary.skipped += 1

    def run_group(self, setup: ServerSetup, items: Sequence[PlannedCase], repeat: int) -> None:
        """Start one server, run its cases, stop it; a server that does not start fails each of its cases."""
        from gatecheck.servers import ServerError  # lazy: the harness's tests need no servers

        try:
            srv = self.pipeline.start(setup)
        except ServerError as exc:
            for item in items:
                self.fail(item, f"server did not start: {exc}", versions={"oha": self.versions_oha}, repeat=repeat)
                self.done += len(case_concurrencies(item.case, self.opts))
            self.log(f"FAIL  {setup.target}: server did not start: {exc}")
            return
        with srv:
            versions = {**srv.versions, **({"oha": self.versions_oha} if self.versions_oha else {})}
            for item in items:
                self.run_case(item, srv, setup.http2 or item.case.http2, versions, repeat)
                if not srv.alive():
                    self.log(f"FAIL  {setup.target}: the server died; log tail:\n{srv.log_tail(20)}")
                    break

    def run_case(self, item: PlannedCase, srv, http2: bool, versions: dict, repeat: int) -> None:
        """Check the case's route, prime and warm the server, then one measured run per concurrency."""
        case, concs = item.case, case_concurrencies(item.case, self.opts)
        common = dict(
            versions={**versions, **_needed_versions(case, srv.python)}, repeat=repeat, target_resolved=str(srv.target)
        )
        try:
            spec = lookup_route(case.route).resolve()
            self.pipeline.check(srv, spec, http2=http2)
        except (RouteCheckError, RouteError, OhaError, BroadcastError) as exc:
            self.log(f"FAIL  {case.label}: route check failed: {exc}")
            self.fail(item, f"route check failed: {exc}", route=case.route, **common)
            self.done += len(concs)
            return
        try:
            if not case.websocket:  # the seed's WebSocket method has no primer or warm-up: its clients settle instead
                self.warm(srv, spec, http2, case.h2_parallel, concs)
        except OhaError as exc:
            self.log(f"FAIL  {case.label}: primer/warm-up failed: {exc}")
            self.fail(item, f"primer/warm-up failed: {exc}", route=case.route, **common)
            self.done += len(concs)
            return
        for concurrency in concs:  # for a WebSocket case: the number of clients
            if case.websocket:
                self.measure_ws(item, srv, spec, concurrency, common)
            else:
                self.measure(item, srv, spec, concurrency, http2, common)
            if self.method.pause > 0:
                time.sleep(self.method.pause)
            if not srv.alive():
                break

    def warm(self, srv, spec, http2: bool, h2_parallel: int, concurrencies) -> None:
        """The unrecorded primer (low concurrency) and warm-up (the case's highest concurrency, as the seed's
        benchmark() warms each test at its own max(concurrencies))."""
        method = self.method
        if method.primer > 0:
            self.pipeline.measure(
                srv, spec, method.primer_concurrency, method.primer, http2=http2, h2_parallel=h2_parallel
            )
        if method.warmup > 0:
            highest = max(concurrencies)
            self.pipeline.measure(srv, spec, highest, method.warmup, http2=http2, h2_parallel=h2_parallel)

    def announce(self, what: str) -> dict:
        """Before a measured run: count it, log which of how many and the time left, and take the host's load
        and speed (the record's ``host_load`` and ``host_speed``)."""
        left = sum(self.costs[self.done :])
        self.done += 1
        self.log(f"[{self.done}/{len(self.costs)}] {self.opts.profile.name}: {what} - about {_fmt_seconds(left)} left")
        return {"host_load": host_load(), "host_speed": host_speed(self.pin.server)}

    def measure(self, item: PlannedCase, srv, spec, concurrency: int, http2: bool, common: dict) -> None:
        """One measured run, recorded: a run, or a failure when oha failed or nothing got a 2xx answer."""
        case, method = item.case, self.method
        requests = requests_for(case, self.opts)
        what = f"{requests} requests" if requests else f"{method.duration:g} s"
        host = self.announce(f"{case.label} c{concurrency} ({what})")
        try:
            run = self.pipeline.measure(
                srv,
                spec,
                concurrency,
                None if requests else method.duration,
                requests=requests,
                http2=http2,
                h2_parallel=case.h2_parallel,
            )
        except OhaError as exc:
            self.log(f"FAIL  {case.label} c{concurrency}: {exc}")
            self.fail(item, str(exc), route=case.route, concurrency=concurrency, **common)
            return
        fields = {**run.to_dict(), **common, **host}
        if run.result.all_failed:
            reason = f"no 2xx response: non-2xx {dict(run.result.non_2xx)}, errors {dict(run.result.errors)}"
            self.log(f"FAIL  {case.label} c{concurrency}: {reason}")
            self.fail(item, reason, **fields)
            return
        self.record("run", item, **fields)
        self.summary.runs += 1
        if set(run.flags()) - {"generator-bound"}:
            self.summary.flagged += 1
        self.log("      " + _describe(run))

    def measure_ws(self, item: PlannedCase, srv, spec, clients: int, common: dict) -> None:
        """One measured WebSocket broadcast run, recorded: a run, or a failure when the broadcast did not
        complete (a client failed, a message was wrong or missing, the deadline passed)."""
        case = item.case
        messages = messages_for(case, self.opts)
        host = self.announce(f"{case.label} ({clients} clients × {messages} messages)")
        try:
            run = self.pipeline.broadcast(srv, spec, clients, messages)
        except BroadcastError as exc:
            self.log(f"FAIL  {case.label} {clients} clients: {exc}")
            self.fail(item, str(exc), route=case.route, concurrency=clients, messages_per_client=messages, **common)
            return
        self.record("run", item, **{**run.to_dict(), **common, **host})
        self.summary.runs += 1
        self.log("      " + _describe_ws(run))


def _needed_versions(case: Case, python: str) -> dict:
    """Installed versions of the packages a case ``needs`` (e.g. fastapi), as the server's interpreter sees them."""
    from gatecheck.servers.adapters._base import _distribution_version

    found = {}
    for module in case.needs:
        version = _distribution_version(python, module)
        if version:
            found[module] = version
    return found


def _describe_ws(run: BroadcastRun) -> str:
    th = run.result["throughput"]
    parts = [
        f"combined {th['combined']:,.0f} msg/s",
        f"send {th['send']:,.0f}",
        f"receive {th['recv']:,.0f}",
        f"server CPU {run.server_util:.0%}",
        f"client CPU {run.client_util:.0%}",
    ]
    if run.generator_bound:
        parts.append("GENERATOR-BOUND")
    return ", ".join(parts)


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
