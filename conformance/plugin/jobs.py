"""``--jobs N``: the session's targets checked in up to N child pytest sessions at once, merged into one run.

Rules of this module:

1. The parent runs no check. It checks the command line as a serial session would (targets, expectation files,
   output paths: a usage error is one line, exit status 4, before anything starts), then starts one child
   pytest session per target (all TLS targets in one): the same command line with its targets alone,
   ``--jobs 1``, and its own results JSON, JUnit XML, collection and pytest cache (``lastfailed.py``) in a
   scratch directory. Targets run heaviest first (``target_groups``), at
   most N at a time. Each child starts its own servers on ports the kernel
   gives it (``servers.process.free_port``; a clash at start is retried), so no two share a server or a port.
2. Each record a child decides is appended to the run's ``<results>.partial.jsonl`` as it appears in the
   child's; a line per finished target shows its counts. At the end the children's files are merged
   (``merge.py``): the results document, the JUnit XML, the stale report judged over all of them, pytest's
   last-failed cache, each failure in full as a serial run prints it (``console.py``), one terminal summary
   with a serial run's counts, and a serial run's exit status. A run of named checks or of ``--lf`` is one
   session (``hooks.pytest_cmdline_main``).
3. A child gets ``--session-timeout`` (default 20 minutes per target) for its targets; one still running two
   minutes past it is killed, and its target is an error (a crash, ``merge.py`` rule 3), as is a child that
   died or ended without its results.
4. SIGINT and SIGTERM: no child starts; each running one gets SIGTERM to its process group (they are started
   in sessions of their own), which ends it as Ctrl-C ends a serial session (the running check
   "interrupted", servers stopped, results written); one still running 30 s later is killed. Exit status 2.
   A parent killed outright (SIGKILL) takes its children with it the same way (each gets SIGTERM from the
   kernel), and its reaper finishes the run's results from its partial file, as a serial session's does.
5. The first child starts alone; the others start once it has collected (its first record, or its end). Its
   collection fills the shared bytecode cache (``_child_env``: imports compiled, check modules rewritten), which
   the others then read instead of each compiling the same modules at once (a cold child: 7.5 s of CPU to
   collect one target here, a warm one 2.4 s). The cache is kept between runs, in gatecheck's cache directory
   (``$GATECHECK_CACHE/pycache``, default ``~/.cache/gatecheck``), so the next run's first child starts warm
   too; Python and pytest check each cached file against its source (modification time and size).
6. Once no child waits to start, a free slot starts another child, a shard, for the running target that should
   end last (``shards.py`` rule 2): one target's checks over several children, a module at a time.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import tempfile
import time
from pathlib import Path

import pytest

from gatecheck.conformance.plugin.children import Child, child_env
from gatecheck.conformance.plugin.lastfailed import child_cache, merge, seed
from gatecheck.conformance.plugin.merge import crash_record, exit_status, merge_junit, read_child, read_collected
from gatecheck.conformance.plugin.options import SESSION_TIMEOUT_PER_TARGET
from gatecheck.conformance.plugin.shards import (
    MAX_SHARDS,
    MIN_LEFT,
    SHARD_OPTION,
    WORTH,
    claims_args,
    progress,
    time_left,
)
from gatecheck.servers.reaper import remove_after_death, removed
from gatecheck.tools import cache_dir

__all__ = ["Child", "JobRun", "child_args", "target_groups", "run_jobs"]

#: options the parent replaces in a child's command line (each takes one value)
_REPLACED = (
    "--server",
    "--server-cmd",
    "--interface",
    "--http",
    "--features",
    "--results-json",
    "--junitxml",
    "--junit-xml",
    "--jobs",
    "--gatecheck-collected",
    SHARD_OPTION,
)
_STOP_GRACE = 30.0  # seconds a child has to finish after SIGTERM
_POLL = 0.25


def child_args(args: list) -> list:
    """The command line without the options the parent gives each child itself (``_REPLACED``)."""
    kept, skip = [], False
    for arg in args:
        if skip:
            skip = False
        elif arg in _REPLACED:
            skip = True
        elif not arg.startswith(tuple(option + "=" for option in _REPLACED)):
            kept.append(arg)
    return kept


class JobRun:
    """The children of a ``--jobs`` run (shards added for free slots, rule 6), started and watched from one loop
    (rules 1-4, 6)."""

    def __init__(self, config, groups: list, jobs: int, results, tw) -> None:
        self.results, self.tw, self.jobs = results, tw, jobs
        self._seed = seed(config)  # the run's lastfailed, which each child's own cache starts from
        self.scratch = Path(tempfile.mkdtemp(prefix="gatecheck-jobs-"))
        remove_after_death(str(self.scratch))  # a killed parent's scratch goes too
        base = child_args(list(config.invocation_params.args))
        given = config.getoption("--session-timeout")
        cwd, junit = str(config.invocation_params.dir), bool(getattr(config.option, "xmlpath", None))
        self._base, self._cwd, self._given, self._junit = base, cwd, given, junit
        self.children = [
            self._new(i, targets, args) for i, (targets, args) in enumerate(claims_args(groups, self.scratch))
        ]
        self.env = child_env(cache_dir() / "pycache")
        self.codes: list = []
        self._warm = False  # rule 5: the first child has collected (its first record came, or it ended)
        self.interrupted: str | None = None
        self._previous: dict = {}

    def run(self) -> None:
        self._install()
        queue, running, stop_by = list(self.children), [], None
        try:
            while queue or running:
                while queue and len(running) < (self.jobs if self._warm else 1) and not self.interrupted:
                    child = queue.pop(0)
                    child.start(self.env)
                    running.append(child)
                while not queue and self._warm and len(running) < self.jobs and not self.interrupted:
                    helper = self._shard(running)  # rule 6: a free slot helps the target likely to end last
                    if helper is None:
                        break
                    helper.start(self.env)
                    running.append(helper)
                time.sleep(_POLL)
                for child in list(running):
                    self._follow(child)
                    if not child.running():
                        running.remove(child)
                        self._finished(child)
                    elif child.overdue():
                        child.signal(signal.SIGKILL)
                if self.interrupted and stop_by is None:
                    queue.clear()
                    stop_by = time.monotonic() + _STOP_GRACE
                    for child in running:
                        child.signal(signal.SIGTERM)
                elif stop_by is not None and time.monotonic() > stop_by:
                    for child in running:
                        child.signal(signal.SIGKILL)
        finally:
            for child in self.children:
                child.signal(signal.SIGKILL)
            self._restore()

    def _new(self, index: int, targets: list, args: list, shard: bool = False) -> Child:
        cache = child_cache(self._seed, self.scratch / f"cache-{index}")  # lastfailed.py
        child = Child(
            index,
            targets,
            self._base + args + cache,
            self.scratch,
            self._cwd,
            self._given or SESSION_TIMEOUT_PER_TARGET * len(targets),
            self._junit,
        )
        child.group_args, child.shard = args, shard
        return child

    def _shard(self, running: list) -> Child | None:
        """Another child for the running target whose children should need the longest still (``shards.py``
        rule 2), or None."""
        best, most, now = None, WORTH, time.monotonic()
        for child in running:
            claims = child.claims
            if claims is None or sum(1 for c in self.children if c.claims == claims) >= MAX_SHARDS:
                continue
            listed, left = progress(claims)
            if left < MIN_LEFT:
                continue
            since = min(c.started for c in self.children if c.claims == claims and c.started)
            need = time_left(listed, left, now - since, sum(1 for c in running if c.claims == claims))
            if need >= most:
                best, most = child, need
        if best is None:
            return None
        child = self._new(len(self.children), best.targets, best.group_args, shard=True)
        self.children.append(child)
        return child

    def _follow(self, child: Child) -> None:
        if self.results.take_lines(child.new_lines()):
            self._warm = True

    def _finished(self, child: Child) -> None:
        """A child ended: its records merged (with a crash record per target when it left none), one line."""
        child.ended = time.monotonic()
        self._warm = True
        code = child.proc.returncode
        self.codes.append(code)
        targets, checks, incomplete, restarts = read_child(child.results)
        for record in restarts:
            self.results.take_lines([json.dumps({"record": "restart", **record})])
        for record in targets:
            self.results.take_target(record)
        for record in checks:
            self.results.take_check(record)
        crashed = code not in (0, 1, 2, 4, 5) or (incomplete is not None and not self._known_incomplete(incomplete))
        if crashed and self.interrupted and code in (-signal.SIGTERM, -signal.SIGKILL):
            pass  # stopped by us before it could write its results (e.g. still collecting): interrupted, as serially
        elif crashed:
            why = (
                f"the child session checking {child.names} ended with "
                f"{'signal ' + str(-code) if code < 0 else 'exit status ' + str(code)} without finishing "
                f"its results; its output ends:\n{child.log_tail()}"
            )
            for st in child.targets:
                self.results.take_check(crash_record(st, why))
            self.results.incomplete.append(why.splitlines()[0])
        elif incomplete and incomplete not in self.results.incomplete:
            self.results.incomplete.append(incomplete)
        self._progress(child, code)

    @staticmethod
    def _known_incomplete(reason: str) -> bool:
        """An ``incomplete`` the child's own session wrote (e.g. h2spec missing), not its reaper's."""
        return not reason.startswith("its session was killed") and not reason.startswith("the session was killed")

    def _progress(self, child: Child, code: int) -> None:
        done = len(self.codes)
        names = {st.target.name for st in child.targets}
        counts: dict = {}
        for rec in self.results.records.values():
            if rec["target"] in names:
                counts[rec["outcome"]] = counts.get(rec["outcome"], 0) + 1
        text = ", ".join(f"{n} {k}" for k, n in sorted(counts.items(), key=lambda kv: -kv[1])) or "no checks"
        self.tw.line(
            f"gatecheck [{done}/{len(self.children)}] {child.names}: {text} "
            f"({child.ended - child.started:.0f} s, exit status {code})"
        )
        if code == 4:
            self.tw.line(child.log_tail(3), red=True)

    def collected(self) -> tuple:
        """The children's collections merged, and the targets they cover: a child stopped before it wrote its
        own (interrupted, crashed) leaves its targets out of the stale report."""
        judged = [child for child in self.children if child.collected.exists()]
        return read_collected([child.collected for child in judged]), [st for child in judged for st in child.targets]

    def junit(self, out: Path) -> None:
        merge_junit(
            out, [child.xml for child in self.children if child.proc is not None], list(self.results.records.values())
        )

    def status(self) -> int:
        return exit_status(self.codes, self.interrupted is not None, bool(self.results.incomplete))

    def cleanup(self) -> None:
        shutil.rmtree(self.scratch, ignore_errors=True)
        removed(str(self.scratch))

    def _install(self) -> None:
        for sig in (signal.SIGINT, signal.SIGTERM):
            self._previous[sig] = signal.signal(sig, self._handle)

    def _restore(self) -> None:
        for sig, handler in self._previous.items():
            signal.signal(sig, handler)
        self._previous.clear()

    def _handle(self, signum, frame) -> None:
        if self.interrupted is None:
            self.interrupted = signal.Signals(signum).name
            self.tw.line(f"gatecheck: {self.interrupted}: stopping every child session", red=True)


def target_groups(config, targets: list) -> list:
    """(targets, command-line arguments) per child, heaviest first: one child per target that runs every
    check, then one per HTTP/2-only target (its HTTP/1.1 checks do not apply), then one child for all the TLS
    targets together (each runs only its few dozen TLS checks: a child of its own would cost more to start
    than its checks take)."""
    from gatecheck.conformance.plugin.targets import DEFAULT_TARGETS, targets_from_options

    opt = config.getoption
    by_target = {st.target: st for st in targets}
    groups, tls, seen = [], ([], []), set()
    texts = opt("--server") or ([] if opt("--server-cmd") else list(DEFAULT_TARGETS))
    for text in texts:
        (st,) = targets_from_options([text], None, None, None, None)
        if st.target in seen:
            continue
        seen.add(st.target)
        if st.capabilities.tls:
            tls[0].append(by_target[st.target])
            tls[1].extend(["--server", text])
        else:
            groups.append(([by_target[st.target]], ["--server", text]))
    if opt("--server-cmd"):
        (st,) = [st for st in targets if st.target not in seen]
        args = ["--server-cmd", opt("--server-cmd"), "--interface", opt("--interface")]
        args += [arg for name in ("--http", "--features") if opt(name) for arg in (name, opt(name))]
        groups.append(([st], args))
    groups.sort(key=lambda group: group[0][0].target.http == "h2")
    return groups + ([tls] if tls[0] else [])


def run_jobs(config, targets: list, expectations, jobs: int) -> int:
    """The whole ``--jobs`` run (rules 1-4); its exit status."""
    from _pytest.config import create_terminal_writer

    from gatecheck.conformance.plugin.console import write_failures
    from gatecheck.conformance.plugin.expectations import server_version
    from gatecheck.conformance.plugin.finish import FINISH_JOB, finish_if_killed
    from gatecheck.conformance.plugin.resultsfile import Results, ResultsBusy
    from gatecheck.conformance.plugin.stale import judge
    from gatecheck.conformance.plugin.summary import LineWriter, write_gatecheck_summary
    from gatecheck.servers.reaper import cancel

    began = time.monotonic()
    tw = create_terminal_writer(config)
    results = Results(config.getoption("--results-json"))
    try:
        results.open()
    except ResultsBusy as exc:
        raise pytest.UsageError(str(exc)) from None
    results.on_loss = lambda message: tw.line(message, red=True)
    finish_if_killed(config, results)
    for st in targets:
        results.add_target(st)
    run = JobRun(config, target_groups(config, targets), jobs, results, tw)
    n = len(run.children)
    tw.line(
        f"gatecheck: {len(targets)} target{'' if len(targets) == 1 else 's'} in {n} child session"
        f"{'' if n == 1 else 's'}, {run.jobs} at a time; a free slot starts a shard of the target likely to end "
        "last (--jobs)"
    )
    try:
        run.run()
        versions = {name: server_version(t.get("versions", {})) for name, t in results.targets.items()}
        collected, judged = run.collected()
        report = judge(
            expectations,
            [(st.target.server, st.target.name) for st in judged],
            versions,
            set(results.records),
            collected,
        )
        results.extra["expectations"] = report
        written, write_error = _write(results)
        junit_error = _junit(run, getattr(config.option, "xmlpath", None))
        cancel(FINISH_JOB)
        merge(config, [run.scratch / f"cache-{i}" for i, child in enumerate(run.children) if child.proc is not None])
        write_failures(tw, results, config)
        write_gatecheck_summary(LineWriter(tw), results, report, written, write_error, junit_error)
        lost = write_error or junit_error or results.lost
        status = 1 if lost and run.status() == 0 else run.status()
        counts = ", ".join(f"{n} {k}" for k, n in results.counts().items() if n) or "no checks"
        tw.sep("=", f"{counts} in {time.monotonic() - began:.1f}s", red=status != 0, green=status == 0)
        return status
    finally:
        run.cleanup()


def _write(results) -> tuple:
    try:
        return results.write(), ""
    except OSError as exc:
        return False, f"could not write {results.path}: {exc.strerror or exc}"


def _junit(run: JobRun, junit: str | None) -> str:
    """Write the merged JUnit XML when asked for; why it could not be, or ""."""
    if not junit:
        return ""
    try:
        run.junit(Path(os.path.abspath(junit)))
    except OSError as exc:
        return f"could not write {junit}: {exc.strerror or exc}"
    return ""
