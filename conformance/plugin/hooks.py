"""The pytest hooks and fixtures of a conformance session (``conformance/conftest.py`` re-exports them).

Flow: options → targets (resolved, capabilities known before anything starts) and output paths checked →
each check is parametrized over the targets whose interface it applies to (a target lacking a needed
feature gets it as *unsupported*) → the ``server`` fixture hands out the target's ``StartedServer`` from the
pool, which starts it once and restarts it when it dies → each phase's report becomes a verdict
(``outcomes.decide``, with the item's matched deviation) → each check's record is appended as soon as it is
decided → the results document at the end.
"""
from __future__ import annotations

import sys
import weakref
from pathlib import Path

import pytest
from _pytest.reports import TestReport

from gatecheck import IMPORT_ROOT
from gatecheck.servers import ServerError, TargetError, stop_all
from gatecheck.servers.reaper import after_death, cancel

from ..markers import MARKERS, applicable_interfaces, row_of, validate_item
from .expectations import Applied, ExpectationError, Expectations, read_expectations, server_version
from .interrupts import Deadlines, Interrupts
from .options import add_options, check_output_paths, session_timeout
from .outcomes import SPEC_GROUP, Verdict, decide
from .profiles import load_profile
from .pool import ServerPool, StartFailed
from .resultsfile import NO_TARGET, Results, check_id_of, meta_of, set_meta
from .session import GatecheckSession, item_meta
from .stale import judge_session, write_summary
from .started import read_log
from .targets import targets_from_options
from .tools import ensure_tools

__all__ = [
    "pytest_addoption", "pytest_configure", "pytest_unconfigure", "pytest_report_header",
    "pytest_generate_tests", "pytest_collection_modifyitems", "pytest_collection_everything",
    "pytest_runtest_protocol",
    "pytest_runtest_protocol_records",
    "pytest_runtest_call", "pytest_runtest_makereport", "pytest_sessionfinish", "pytest_terminal_summary",
    "pytest_keyboard_interrupt", "pytest_internalerror", "server", "usage", "_server_watch", "server_pool",
]

_SESSION = pytest.StashKey[GatecheckSession]()
_DEVIATION = pytest.StashKey[object]()
_CALLED = pytest.StashKey[bool]()
_FINISH_JOB = "finish-results"
_LOG = pytest.StashKey[tuple]()
_ACTIVATED: weakref.WeakSet = weakref.WeakSet()
_CHECKS_DIR = Path(__file__).resolve().parent.parent


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


@pytest.hookimpl(tryfirst=True)  # before hypothesis's own plugin, which loads a --hypothesis-profile given
def pytest_configure(config):
    if not _wanted(config):
        return
    load_profile(config)
    for line in MARKERS:
        config.addinivalue_line("markers", line)
    config.addinivalue_line("markers", "gatecheck_not_applicable: internal, no target applies")
    config.addinivalue_line("markers", "gatecheck_unsupported: internal, the target lacks a needed feature")
    opt = config.getoption
    try:
        targets = targets_from_options(opt("--server"), opt("--server-cmd"), opt("--interface"),
                                       opt("--http"), opt("--features"))
        expectations = _expectations(config, targets)
    except (TargetError, ServerError, ExpectationError) as exc:
        raise pytest.UsageError(str(exc)) from None
    check_output_paths(config)
    results = Results(opt("--results-json"))
    results.open()
    _finish_if_killed(config, results)
    pool = ServerPool(opt("--server-log-dir"), opt("--ready-timeout"))
    pool.on_start = lambda started: results.add_target(started.session_target, started.versions)
    for st in targets:
        results.add_target(st)
    gs = GatecheckSession(targets, expectations, results, pool,
                          Deadlines(opt("--check-timeout"), session_timeout(config, len(targets))),
                          Interrupts(on_first=lambda: setattr(pool, "stopping", True)))
    gs.interrupts.install()
    config.stash[_SESSION] = gs
    for warning in expectations.warnings:
        config.issue_config_time_warning(pytest.PytestConfigWarning(warning), stacklevel=2)


def _finish_if_killed(config, results: Results) -> None:
    """Ask the server reaper to finish the results files if this process dies before sessionfinish."""
    argv = [sys.executable, "-m", "gatecheck.conformance.plugin.finish", str(results.partial), str(results.path)]
    junit = getattr(config.option, "xmlpath", None)
    if junit:
        argv += ["--junit", str(Path(junit).resolve())]
    after_death(_FINISH_JOB, argv, env={"PYTHONPATH": IMPORT_ROOT}, cwd=str(Path.cwd()))


def _expectations(config, targets) -> Expectations:
    """The built-in file of each target's server (unless --no-builtin-expectations), then each
    --expectations FILE; none with --no-expectations."""
    files = config.getoption("--expectations")
    if config.getoption("--no-expectations"):
        if files or config.getoption("--no-builtin-expectations"):
            raise ExpectationError("--no-expectations reads no expectation file: leave out --expectations "
                                   "and --no-builtin-expectations, or --no-expectations")
        return Expectations()
    return read_expectations([st.target.server for st in targets], files,
                             builtin=not config.getoption("--no-builtin-expectations"))


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
    return ["gatecheck targets: " + ", ".join(st.target.name + ("" if st.target.name == str(st.target) else f" ({st.target})")
                                             for st in gs.targets)]


def pytest_generate_tests(metafunc):
    if "server" not in metafunc.fixturenames or _session(metafunc.config) is None:
        return
    wanted = applicable_interfaces(metafunc.definition.iter_markers("interfaces"))
    needed = [f for mark in metafunc.definition.iter_markers("needs") for f in mark.args]
    if not {"h2c", "h2c_upgrade", "tls"} & set(needed) and "http1" not in needed:
        # A check that asks for no HTTP/2 and no TLS speaks HTTP/1.1 on the cleartext listener: an HTTP/2-only
        # listener (granian --http 2) lacks that, as it would lack a declared needs("http1").
        needed.append("http1")
    params = []
    for st in metafunc.config.stash[_SESSION].targets:
        if st.interface not in wanted:
            continue
        if st.capabilities.tls and "tls" not in needed:
            # A tls=on listener speaks only TLS and checks that do not ask for "tls" speak cleartext: they do
            # not apply to it (like a check of another interface), rather than being "not supported".
            continue
        missing = st.capabilities.missing(*needed) if needed else []
        marks = []
        if missing:
            reason = f"not supported: {st.target} lacks {', '.join(missing)}"
            marks = [pytest.mark.gatecheck_unsupported(reason), pytest.mark.skip(reason=reason)]
        params.append(pytest.param(st, id=st.id, marks=marks))
    if not params:
        params = [pytest.param(None, id=NO_TARGET, marks=pytest.mark.gatecheck_not_applicable)]
    metafunc.parametrize("server", params, indirect=True, scope="session")


@pytest.hookimpl(tryfirst=True, specname="pytest_collection_modifyitems")
def pytest_collection_everything(session, config, items):
    """Before anything is deselected (-k, --deselect): every (check, target) collected, for the stale report."""
    gs = config.stash.get(_SESSION, None)
    if gs is None:
        return
    for item in items:
        st = item.callspec.params.get("server") if hasattr(item, "callspec") else None
        gs.collected.add(check_id_of(item), st.target.name if st is not None else None, Path(str(item.path)))


def pytest_collection_modifyitems(session, config, items):
    gs = _session(config)
    if gs is None:
        if any(_is_check(item) for item in items):
            raise pytest.UsageError("gatecheck's checks need a target: add --server TARGET (e.g. --server "
                                    "granian:asgi) or --server-cmd; `gatecheck servers list` shows the targets")
        return
    errors = [msg for item in items if (msg := validate_item(item))]
    if errors:
        raise pytest.UsageError("malformed checks:\n  " + "\n  ".join(errors))
    keep, dropped = [], []
    for item in items:
        if item.get_closest_marker("gatecheck_not_applicable"):
            dropped.append(item)
            continue
        keep.append(item)
        st = item.callspec.params.get("server") if hasattr(item, "callspec") else None
        meta = item_meta(item, st, check_id_of(item), row_of(item))
        set_meta(item, meta)
        item.user_properties += [(k, meta[k]) for k in ("check", "target", "clause", "level")]
        if st is not None:  # the version range is decided once the server has started (_deviation)
            candidates = gs.expectations.candidates(meta["check"], st.target.server, meta["target"])
            if candidates:
                item.stash[_DEVIATION] = candidates
    if dropped:
        config.hook.pytest_deselected(items=dropped)
    items[:] = keep
    ensure_tools(config, gs.results, keep)


def _is_check(item) -> bool:
    """An item of gatecheck's own checks (the folder of gatecheck.conformance)."""
    return Path(str(getattr(item, "path", ""))).parent == _CHECKS_DIR


@pytest.fixture(scope="session")
def server(request):
    """This check's target as a ``StartedServer`` (started on first use; ``_server_watch`` restarts it)."""
    st = request.param
    return request.config.stash[_SESSION].pool.get(st)


@pytest.fixture
def usage(server, request):
    """The server tree's RSS and descriptors before a robustness scenario; ``usage.check()`` judges after.
    Its measurements become the check's JUnit properties (``user_properties``: what ``record_property`` does,
    without its warning under the default xunit2 family)."""
    from ..usage import Usage

    return Usage(server, lambda name, value: request.node.user_properties.append((name, value)))


@pytest.fixture(autouse=True)
def _server_watch(request):
    """Around each check: a dead server is restarted first (an error with the reason when it cannot be);
    a server that dies during a check makes that check an error, and is restarted for the next ones."""
    if "server" not in request.fixturenames or _session(request.config) is None:
        yield
        return
    pool = request.config.stash[_SESSION].pool
    started = request.getfixturevalue("server")
    try:
        pool.get(started.session_target)
        pool.check(started.target)
        failure = None
    except StartFailed as exc:
        failure = str(exc)
    if failure is not None:
        pytest.fail(failure, pytrace=False)
    request.node.stash[_LOG] = (started, started.handle, started.log_size())
    yield
    if pool.stopping:
        return
    died = _death(request.node, pool)
    if died is not None or not started.alive():
        pool.get(started.session_target)  # restart now; a failure is reported by the next check of this target
    if died:
        pytest.fail(died, pytrace=False)


def _death(item, pool) -> str | None:
    """Once per check: the message when the check's server process exited while the check ran."""
    watched = item.stash.get(_LOG, None)
    if watched is None or pool.stopping:
        return None
    started, handle, offset = watched
    if started.handle is not handle or handle.alive():
        return None
    item.stash[_LOG] = (started, None, offset)  # reported: the call's report or the teardown's, not both
    log = started.log_since(offset)
    code = started.stop()
    return f"the server process exited during this check (exit code {code}); log:\n{log}"


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_protocol(item, nextitem):
    """Past the session deadline, no check starts: the session stops (exit status 2)."""
    gs = item.config.stash.get(_SESSION, None)
    if gs is not None and gs.deadlines.session_over():
        item.session.shouldstop = gs.deadlines.session_message()
        return True
    return None


@pytest.hookimpl(wrapper=True, specname="pytest_runtest_protocol")
def pytest_runtest_protocol_records(item, nextitem):
    """Each check's record is appended once its phases are over; Ctrl-C makes the running one "interrupted"."""
    gs = item.config.stash.get(_SESSION, None)
    try:
        return (yield)
    except KeyboardInterrupt:
        if gs is not None and not item.stash.get(_CALLED, False):
            _report_interrupted(item, gs)
        raise
    finally:
        if gs is not None and meta_of(item) is not None:
            gs.results.decided(item)


def _report_interrupted(item, gs) -> None:
    """The check that was running when Ctrl-C or SIGTERM came: its own outcome, in JSON and JUnit alike."""
    message = f"interrupted by {gs.interrupts.received or 'KeyboardInterrupt'} while this check ran"
    report = TestReport(item.nodeid, item.location, {}, "failed", message, "call", user_properties=item.user_properties)
    gs.results.fold(item, Verdict("interrupted", message), 0.0)
    item.ihook.pytest_runtest_logreport(report=report)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_call(item):
    gs = item.config.stash.get(_SESSION, None)
    if gs is None:
        return (yield)
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
    report = yield
    gs = item.config.stash.get(_SESSION, None)
    if gs is None or meta_of(item) is None:
        return report
    if call.when == "call":
        item.stash[_CALLED] = True
    unsupported = item.get_closest_marker("gatecheck_unsupported") is not None
    verdict = decide(call.when, report, call.excinfo, _deviation(item, gs), unsupported,
                     meta_of(item).get("level", ""))
    if call.when == "call" and verdict.outcome != "interrupted":
        # A server that died during the call makes the call an error (in the call's report, so JUnit keeps one
        # test case per check, as the results do); the watch fixture restarts it.
        died = _death(item, gs.pool)
        verdict = Verdict("error", died) if died else verdict
    _shape(report, verdict)
    _attach_log(item, report)
    gs.results.fold(item, verdict, getattr(report, "duration", 0.0))
    if verdict is not None and verdict.outcome == "timeout" and gs.deadlines.session_over():
        item.session.shouldstop = gs.deadlines.session_message()
    return report


def _deviation(item, gs) -> Applied | None:
    """The item's entry whose version range holds its target's recorded version (the last one read)."""
    candidates = item.stash.get(_DEVIATION, None)
    if not candidates:
        return None
    meta = meta_of(item)
    versions = gs.results.targets.get(meta["target"], {}).get("versions", {})
    chosen = Expectations.chosen(candidates, server_version(versions))
    return Applied(chosen, meta["clause"]) if chosen is not None else None


def _shape(report, verdict) -> None:
    """Make pytest's own report (terminal, JUnit) say what the verdict says."""
    if verdict is None:
        return
    if verdict.outcome in ("known", "noted"):
        report.outcome, report.wasxfail = "skipped", verdict.message
    elif verdict.outcome in ("fixed", "timeout") or (verdict.outcome == "error" and report.when == "call"):
        report.outcome, report.longrepr = "failed", verdict.message


def _attach_log(item, report) -> None:
    meta = meta_of(item)
    if report.failed and report.when == "call" and meta and meta.get("sentence"):  # the rule a call broke
        report.sections.append((f"{meta['clause']} ({meta['level']})",
                                f"{meta['sentence']}\npasses: {meta['accepts']}"))
    log = item.stash.get(_LOG, None)
    if log and report.failed and log[1] is not None:
        started, handle, offset = log
        text = read_log(handle.log_path, offset)
        if text.strip():
            report.sections.append((f"server log ({started.target})", text))


def pytest_keyboard_interrupt(excinfo):
    stop_all()


def pytest_internalerror(excrepr, excinfo):
    stop_all()


def pytest_sessionfinish(session, exitstatus):
    """Stop every server, write the results document, remove the scratch directories; nothing escapes."""
    gs = session.config.stash.get(_SESSION, None)
    if gs is None:
        return
    gs.interrupts.finishing()
    try:
        gs.pool.stop_all()
        stop_all()
    finally:
        gs.results.extra["expectations"] = gs.expectation_report = judge_session(gs)
        try:
            gs.written = gs.results.write()
        except OSError as exc:
            gs.write_error = f"could not write {gs.results.path}: {exc.strerror or exc}"
            session.exitstatus = session.exitstatus or 1
        cancel(_FINISH_JOB)
        if gs.results.incomplete:
            session.exitstatus = session.exitstatus or 1
        gs.pool.cleanup()


def pytest_terminal_summary(terminalreporter, exitstatus, config):
    gs = config.stash.get(_SESSION, None)
    if gs is None or not gs.results.records:
        return
    tr = terminalreporter
    tr.write_sep("=", "gatecheck")
    counts = gs.results.counts()
    tr.write_line("checks × targets: " + ", ".join(f"{n} {k}" for k, n in counts.items() if n))
    failures = gs.results.failures_by_level()
    if failures:
        order = [SPEC_GROUP, "POLICY", "INFO"]
        parts = [f"{group} {failures.get(group, 0)}" for group in order]
        tr.write_line("failed by level: " + ", ".join(parts) + " (POLICY and INFO are the suite's readings, "
                      "not spec requirements)")
    write_summary(tr, gs.expectation_report)
    for reason in gs.results.incomplete:
        tr.write_line(f"incomplete: {reason}", red=True)
    if gs.write_error:
        tr.write_line(f"results: {gs.write_error}; the records decided are in {gs.results.partial}", red=True)
    elif gs.written:
        tr.write_line(f"results: {gs.results.path}")

