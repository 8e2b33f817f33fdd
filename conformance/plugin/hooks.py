"""The pytest hooks and fixtures of a conformance session (``conformance/conftest.py`` re-exports them).

Flow: options → targets (resolved, capabilities known before anything starts) and output paths checked →
each check is parametrized over the targets whose interface it applies to (a target lacking a needed
feature gets it as *unsupported*) → the ``server`` fixture hands out the target's ``StartedServer`` from the
pool, which starts it once and restarts it when it dies → each phase's report becomes a verdict
(``outcomes.decide``, with the item's matched deviation) → each check's record is appended as soon as it is
decided → the results document at the end.
"""

from __future__ import annotations

import weakref
from pathlib import Path

import pytest

from gatecheck.conformance.client import transcript
from gatecheck.conformance.plugin.collection import (  # hooks of this plugin, registered from here
    pytest_collection_everything,
    pytest_collection_modifyitems,
    pytest_generate_tests,
    pytest_ignore_collect,
)
from gatecheck.conformance.plugin.console import verbose_lists
from gatecheck.conformance.plugin.expectations import ExpectationError, expectations_of
from gatecheck.conformance.plugin.finish import FINISH_JOB
from gatecheck.conformance.plugin.inflight import after_call
from gatecheck.conformance.plugin.interrupts import Deadlines, Interrupts
from gatecheck.conformance.plugin.merge import write_collected
from gatecheck.conformance.plugin.options import add_options, check_output_paths, jobs_wanted, session_timeout
from gatecheck.conformance.plugin.outcomes import decide
from gatecheck.conformance.plugin.outputs import junit_failed, open_results
from gatecheck.conformance.plugin.pool import ServerPool
from gatecheck.conformance.plugin.profiles import load_profile
from gatecheck.conformance.plugin.reports import (
    attach_details,
    brief_if_known,
    deviation,
    record_cut,
    report_interrupted,
    shape,
)
from gatecheck.conformance.plugin.resultsfile import meta_of
from gatecheck.conformance.plugin.session import SESSION as _SESSION
from gatecheck.conformance.plugin.session import GatecheckSession
from gatecheck.conformance.plugin.shards import Claims
from gatecheck.conformance.plugin.stale import judge_session
from gatecheck.conformance.plugin.summary import write_gatecheck_summary
from gatecheck.conformance.plugin.targets import targets_from_options
from gatecheck.conformance.plugin.watch import _server_watch, server  # noqa: F401  (fixtures of the plugin)
from gatecheck.conformance.spec.markers import MARKERS
from gatecheck.servers import ServerError, TargetError, stop_all
from gatecheck.servers.reaper import cancel

__all__ = [
    "pytest_addoption",
    "pytest_cmdline_main",
    "pytest_configure",
    "pytest_unconfigure",
    "pytest_report_header",
    "pytest_generate_tests",
    "pytest_ignore_collect",
    "pytest_collection_modifyitems",
    "pytest_collection_everything",
    "pytest_runtest_protocol",
    "pytest_runtest_protocol_records",
    "pytest_runtest_call",
    "pytest_runtest_makereport",
    "pytest_sessionfinish",
    "pytest_sessionfinish_junit",
    "pytest_terminal_summary",
    "pytest_keyboard_interrupt",
    "pytest_internalerror",
    "server",
    "_server_watch",
    "server_pool",
]

_CALLED = pytest.StashKey[bool]()
_ELSEWHERE = pytest.StashKey[bool]()  # the check's module is run by another child of its target (shards.py)
_ACTIVATED: weakref.WeakSet = weakref.WeakSet()


def pytest_addoption(parser):
    add_options(parser)


def activate(pluginmanager) -> None:
    """Make this plugin act in the pytest run of ``pluginmanager`` even without --server (the conformance
    folder's ``conftest.py`` calls it: a run over the checks' folder checks Granian's defaults)."""
    _ACTIVATED.add(pluginmanager)


def _wanted(config) -> bool:
    """Whether this run asked for gatecheck: --server/--server-cmd given, or the checks' folder was given to
    pytest. Otherwise (the plugin autoloaded into a server project's own test run) every hook stays inert."""
    opt = config.getoption
    try:
        asked = bool(opt("--server") or opt("--server-cmd"))
    except ValueError:  # registered after the command line was parsed (a conftest found late): not asked
        asked = False
    return asked or config.pluginmanager in _ACTIVATED


def _session(config) -> GatecheckSession | None:
    return config.stash.get(_SESSION, None)


_NOT_A_RUN = ("help", "version", "collectonly", "showfixtures", "show_fixtures_per_test", "markers", "setupplan")


@pytest.hookimpl(tryfirst=True)
def pytest_cmdline_main(config):
    """``--jobs N`` (N > 1): child sessions check the targets (a target's checks split over the sessions left
    free, ``shards.py``), this process merges (``jobs.py``)."""
    if not _wanted(config) or config.getoption("--jobs") == "1":
        return None
    if any(getattr(config.option, name, False) for name in _NOT_A_RUN):
        return None
    if config.getoption("--gatecheck-check") or getattr(config.option, "lf", False):
        return None  # a rerun of named or last-failed checks: one session selects them (pytest's --lf cache)
    targets, expectations = _targets_and_expectations(config)
    jobs = jobs_wanted(config.getoption("--jobs"))
    if jobs < 2:
        return None
    check_output_paths(config)
    from gatecheck.conformance.plugin.jobs import run_jobs

    return run_jobs(config, targets, expectations, jobs)


def _targets_and_expectations(config) -> tuple:
    """The session's targets and expectation entries from its options; a bad one is a usage error."""
    opt = config.getoption
    try:
        targets = targets_from_options(
            opt("--server"), opt("--server-cmd"), opt("--interface"), opt("--http"), opt("--features")
        )
        return targets, expectations_of(config, targets)
    except (TargetError, ServerError, ExpectationError) as exc:
        raise pytest.UsageError(str(exc)) from None


@pytest.hookimpl(tryfirst=True)  # before hypothesis's own plugin, which loads a --hypothesis-profile given
def pytest_configure(config):
    if not _wanted(config):
        return
    load_profile(config)
    verbose_lists(config)
    for line in MARKERS:
        config.addinivalue_line("markers", line)
    config.addinivalue_line("markers", "gatecheck_not_applicable: internal, no target applies")
    config.addinivalue_line("markers", "gatecheck_unsupported: internal, the target lacks a needed feature")
    opt = config.getoption
    targets, expectations = _targets_and_expectations(config)
    check_output_paths(config)
    results = open_results(config)
    pool = ServerPool(opt("--server-log-dir"), opt("--ready-timeout"), opt("--server-memory"))
    pool.on_start = lambda started: results.add_target(started.session_target, started.versions)
    pool.on_restart = lambda started: results.restarted(
        started.target.name, started.stop(), started.last_check, "\n".join(started.log_text().splitlines()[-20:])
    )
    for st in targets:
        results.add_target(st)
    gs = GatecheckSession(
        targets,
        expectations,
        results,
        pool,
        Deadlines(opt("--check-timeout"), session_timeout(config, len(targets))),
        Interrupts(on_first=lambda: setattr(pool, "stopping", True)),
    )
    if opt("--gatecheck-shard"):
        gs.claims = Claims(opt("--gatecheck-shard"))
    gs.interrupts.install()
    config.stash[_SESSION] = gs
    for warning in expectations.warnings:
        config.issue_config_time_warning(pytest.PytestConfigWarning(warning), stacklevel=2)


def pytest_unconfigure(config):
    gs = config.stash.get(_SESSION, None)
    if gs is not None:
        gs.interrupts.restore()


def server_pool(config) -> ServerPool | None:
    """The session's pool of started servers (None before configure): for plugins that stop a target early."""
    gs = config.stash.get(_SESSION, None)
    return gs.pool if gs is not None else None


def pytest_report_header(config):
    gs = _session(config)
    if gs is None:
        return None
    return [
        "gatecheck targets: "
        + ", ".join(
            st.target.name + ("" if st.target.name == str(st.target) else f" ({st.target})") for st in gs.targets
        )
    ]


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_protocol(item, nextitem):
    """Past the session deadline, no check starts: the session stops (exit status 2). With a claims directory
    (``shards.py``): the modules to run are listed for the parent before the first check, and the checks of a
    module another child claimed are passed over."""
    gs = item.config.stash.get(_SESSION, None)
    if gs is not None and gs.deadlines.session_over():
        item.session.shouldstop = gs.deadlines.session_message()
        return True
    claims = gs.claims if gs is not None else None
    if claims is not None:
        if not claims.listed:  # the modules with a check to run: one of only unsupported checks takes no time
            claims.list_modules(
                list(
                    dict.fromkeys(
                        _module_of(i)
                        for i in item.session.items
                        if i.get_closest_marker("gatecheck_unsupported") is None
                    )
                )
            )
        if not claims.mine(_module_of(item)):
            item.stash[_ELSEWHERE] = True  # another child runs this module (shards.py rule 3): no record here
            return True
    return None


def _module_of(item) -> str:
    """The node id of the check's file (``conformance/checks/test_x.py``): what children claim (``shards.py``)."""
    return item.nodeid.split("::")[0]


@pytest.hookimpl(wrapper=True, specname="pytest_runtest_protocol")
def pytest_runtest_protocol_records(item, nextitem):
    """Each check's record is appended once its phases are over; Ctrl-C makes the running one "interrupted"."""
    gs = item.config.stash.get(_SESSION, None)
    try:
        return (yield)
    except KeyboardInterrupt:
        if gs is not None and not item.stash.get(_CALLED, False):
            report_interrupted(item, gs)
        raise
    finally:
        if gs is not None and meta_of(item) is not None and not item.stash.get(_ELSEWHERE, False):
            gs.results.decided(item)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_call(item):
    gs = item.config.stash.get(_SESSION, None)
    if gs is None:
        return (yield)
    transcript.begin()  # the bytes of this call's connections, for its report if it fails
    with gs.deadlines.around_call():
        try:
            return (yield)
        finally:
            _drop_hypothesis_patch(item)


def _drop_hypothesis_patch(item) -> None:
    """Hypothesis's pytest plugin turns a failed property's examples into a source patch for the check's
    file when it reports the call, importing libcst for it (1-2 s, once per session): no one patches
    gatecheck's checks from a conformance run, and the falsifying example is in the check's message."""
    item.__dict__.pop("_hypothesis_failing_examples", None)


@pytest.hookimpl(wrapper=True, tryfirst=True)
def pytest_runtest_makereport(item, call):
    gs = item.config.stash.get(_SESSION, None)
    if gs is None or meta_of(item) is None:
        return (yield)
    known = deviation(item, gs)
    brief_if_known(item, call, known)
    report = yield
    unsupported = item.get_closest_marker("gatecheck_unsupported") is not None
    verdict = decide(call.when, report, call.excinfo, known, unsupported, meta_of(item).get("level", ""))
    if call.when == "call" and verdict.outcome != "interrupted":
        # A server that died during the call makes the call "crashed", a fixture refusal an error (in the
        # call's report, so JUnit keeps one test case per check, as the results do); the watch fixture
        # restarts a dead server.
        verdict = after_call(item, gs.pool, failed=report.failed) or verdict
    shape(report, verdict)
    extra = attach_details(item, call, report, verdict, gs, known)
    record = gs.results.fold(item, verdict, getattr(report, "duration", 0.0))
    if extra and record is not None and verdict is not None and record["outcome"] == verdict.outcome:
        record.update(extra)
    if call.when == "call":  # only now: a Ctrl-C before the call's verdict is folded makes it "interrupted"
        item.stash[_CALLED] = True
    if verdict is not None and verdict.outcome == "timeout" and gs.deadlines.session_over():
        item.session.shouldstop = gs.deadlines.session_message()
    return report


def pytest_keyboard_interrupt(excinfo):
    stop_all()


def pytest_internalerror(excrepr, excinfo):
    stop_all()


@pytest.hookimpl(wrapper=True, specname="pytest_sessionfinish")
def pytest_sessionfinish_junit(session, exitstatus):
    """pytest's JUnit XML that cannot be written (a full disk) is one line of the summary and exit status 1, not
    a traceback (the results are written first: ``pytest_sessionfinish`` runs first)."""
    try:
        return (yield)
    except OSError as exc:
        gs = session.config.stash.get(_SESSION, None)
        if gs is None:
            raise
        gs.junit_error = junit_failed(session, exc)
        return None


@pytest.hookimpl(tryfirst=True)
def pytest_sessionfinish(session, exitstatus):
    """Stop every server, write the results document, remove the scratch directories; nothing escapes."""
    gs = session.config.stash.get(_SESSION, None)
    if gs is None:
        return
    gs.interrupts.finishing()
    try:
        gs.pool.stop_all()
        stop_all()
        if gs.deadlines.session_over():  # a shard claims the modules it cuts: no other child runs them then
            record_cut(
                session,
                gs,
                lambda item: (
                    meta_of(item) is not None
                    and not item.stash.get(_ELSEWHERE, False)
                    and (gs.claims is None or gs.claims.mine(_module_of(item)))
                ),
            )
    finally:
        gs.results.extra["expectations"] = gs.expectation_report = judge_session(gs)
        if session.config.getoption("--gatecheck-collected"):  # a --jobs child: its collection for the parent
            write_collected(Path(session.config.getoption("--gatecheck-collected")), gs.collected)
        try:
            gs.written = gs.results.write()
        except OSError as exc:
            gs.write_error = f"could not write {gs.results.path}: {exc.strerror or exc}"
            session.exitstatus = session.exitstatus or 1
        cancel(FINISH_JOB)
        if gs.results.incomplete or gs.results.lost:
            session.exitstatus = session.exitstatus or 1
        gs.pool.cleanup()


def pytest_terminal_summary(terminalreporter, exitstatus, config):
    gs = config.stash.get(_SESSION, None)
    if gs is None or not gs.results.records:
        return
    write_gatecheck_summary(
        terminalreporter, gs.results, gs.expectation_report, gs.written, gs.write_error, gs.junit_error
    )
