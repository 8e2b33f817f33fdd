"""The conformance session: options, one server per target, markers, expectations, results.

Flow: options → targets (resolved, capabilities known before anything starts) → each check is
parametrized over the targets whose interface it applies to; a target lacking a needed feature gets the
check as *not supported* → the session-scoped ``server`` fixture starts each target once (restarting it if a
check killed it) → expectations turn known deviations into strict xfails → results JSON at the end.
"""
from __future__ import annotations

import signal
import sys
from pathlib import Path

import pytest

from servers import ServerError, TargetError, stop_all

from .expectations import ExpectationError, load_expectations
from .markers import MARKERS, applicable_interfaces, clause_of, validate_item
from .results import UNSUPPORTED_PREFIX, Results, check_id_of, set_meta
from .served import ServerPool
from .targets import targets_from_options

_RESULTS = pytest.StashKey[Results]()
_POOL = pytest.StashKey[ServerPool]()
_TARGETS = pytest.StashKey[list]()


def pytest_addoption(parser):
    group = parser.getgroup("gatecheck", "gatecheck conformance")
    group.addoption("--server", action="append", default=[], metavar="TARGET",
                    help="target to check, e.g. granian:asgi, granian:rsgi:h2, uvicorn:asgi?loop=uvloop "
                         "(repeatable; default: granian:rsgi, granian:asgi, granian:wsgi)")
    group.addoption("--server-cmd", default=None, metavar="TEMPLATE",
                    help="check any server from a command template with {app} {host} {port}, "
                         "e.g. \"uvicorn --port {port} {app}\" (needs --interface)")
    group.addoption("--interface", default=None, choices=("asgi", "rsgi", "wsgi"),
                    help="interface of the --server-cmd server")
    group.addoption("--http", default=None, choices=("h1", "h2", "auto"),
                    help="HTTP mode of the --server-cmd server (default h1)")
    group.addoption("--features", default=None, metavar="LIST",
                    help="comma-separated features of the --server-cmd server, e.g. h2c,websockets,lifespan")
    group.addoption("--results-json", default="results/conformance.json", metavar="PATH",
                    help="where to write the JSON results (default: results/conformance.json)")
    group.addoption("--server-log-dir", default=None, metavar="DIR",
                    help="directory for server logs (default: a new temporary directory)")
    group.addoption("--ready-timeout", type=float, default=30.0, metavar="SECONDS",
                    help="how long a server may take to answer its first request (default 30)")
    group.addoption("--no-expectations", action="store_true",
                    help="ignore conformance/expectations/*.toml: known deviations fail like any other")


def pytest_configure(config):
    for line in MARKERS:
        config.addinivalue_line("markers", line)
    config.addinivalue_line("markers", "gatecheck_not_applicable: internal, no target applies")
    opt = config.getoption
    try:
        targets = targets_from_options(opt("--server"), opt("--server-cmd"), opt("--interface"),
                                       opt("--http"), opt("--features"))
        expectations = {}
        if not opt("--no-expectations"):
            for st in targets:
                expectations.setdefault(st.target.server, load_expectations(st.target.server))
    except (TargetError, ServerError, ExpectationError) as exc:
        raise pytest.UsageError(str(exc)) from None
    config.stash[_TARGETS] = targets
    config.stash[_RESULTS] = Results()
    config.stash[_POOL] = ServerPool(opt("--server-log-dir"), opt("--ready-timeout"))
    config._gatecheck_expectations = expectations
    for st in targets:
        config.stash[_RESULTS].add_target(st)
    # SIGTERM ends the run like Ctrl-C: through teardown, so every server is stopped.
    if sys.platform != "win32":
        signal.signal(signal.SIGTERM, _sigterm)


def _sigterm(signum, frame):
    raise KeyboardInterrupt("SIGTERM")


def pytest_report_header(config):
    targets = config.stash.get(_TARGETS, [])
    return ["gatecheck targets: " + ", ".join(str(st.target) for st in targets)]


def pytest_generate_tests(metafunc):
    if "server" not in metafunc.fixturenames:
        return
    wanted = applicable_interfaces(metafunc.definition.iter_markers("interfaces"))
    needed = [f for mark in metafunc.definition.iter_markers("needs") for f in mark.args]
    params = []
    for st in metafunc.config.stash[_TARGETS]:
        if st.interface not in wanted:
            continue
        if st.capabilities.tls and "tls" not in needed:
            # A tls=on listener speaks only TLS and checks that do not ask for "tls" speak cleartext: they do
            # not apply to it (like a check of another interface), rather than being "not supported".
            continue
        missing = st.capabilities.missing(*needed) if needed else []
        marks = [pytest.mark.skip(reason=f"{UNSUPPORTED_PREFIX} {st.target} lacks {', '.join(missing)}")] if missing else []
        params.append(pytest.param(st, id=st.id, marks=marks))
    if not params:
        params = [pytest.param(None, id="no-target", marks=pytest.mark.gatecheck_not_applicable)]
    metafunc.parametrize("server", params, indirect=True, scope="session")


def pytest_collection_modifyitems(session, config, items):
    errors = [msg for item in items if (msg := validate_item(item))]
    if errors:
        raise pytest.UsageError("malformed checks:\n  " + "\n  ".join(errors))
    keep, dropped = [], []
    expectations = config._gatecheck_expectations
    for item in items:
        if item.get_closest_marker("gatecheck_not_applicable"):
            dropped.append(item)
            continue
        keep.append(item)
        st = item.callspec.params.get("server") if hasattr(item, "callspec") else None
        clause, level = clause_of(item)
        check = check_id_of(item)
        target = str(st.target) if st is not None else ""
        meta = {"check": check, "target": target, "server": st.target.server if st else "",
                "interface": st.interface if st else "", "clause": clause, "level": level,
                "area": Path(str(item.path)).stem.removeprefix("test_")}
        set_meta(item, meta)
        item.user_properties += [("check", check), ("target", target), ("clause", clause), ("level", level)]
        if st is not None:
            for deviation in expectations.get(st.target.server, []):
                if deviation.applies(check, target):
                    item.add_marker(pytest.mark.xfail(reason=deviation.reason(), strict=True, run=True))
                    break
    if dropped:
        config.hook.pytest_deselected(items=dropped)
    items[:] = keep


def server_pool(config) -> ServerPool | None:
    """The session's pool of started servers (None before configure): for plugins that stop a target early."""
    return config.stash.get(_POOL, None)


@pytest.fixture(scope="session")
def server(request):
    """The started server for this check's target (started once per session, restarted if it died)."""
    st = request.param
    pool = request.config.stash[_POOL]
    served = pool.get(st)
    request.config.stash[_RESULTS].add_target(st, served.versions)
    return served


@pytest.fixture
def usage(server, record_property):
    """The server tree's RSS and descriptors before a robustness scenario; ``usage.check()`` judges after."""
    from .usage import Usage

    return Usage(server, record_property)


@pytest.fixture(autouse=True)
def _server_watch(request):
    """Around each check: a dead server is an error for the check that finds it; a server that died
    during a check fails that check and is restarted for the next ones."""
    if "server" not in request.fixturenames:
        yield
        return
    served = request.getfixturevalue("server")
    if not served.alive():
        pytest.fail(f"the server for {served.target} is down and could not be restarted: "
                    f"{served.restart_error}", pytrace=False)
    offset = served.log_size()
    request.node._gatecheck_log = (served, offset)
    yield
    if not served.alive():
        code = served.handle.process.popen.returncode
        log = served.log_since(offset)
        request.config.stash[_POOL].restart(served)
        pytest.fail(f"the server process exited during this check (exit code {code}); log:\n{log}",
                    pytrace=False)


@pytest.hookimpl(hookwrapper=True, tryfirst=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    report = outcome.get_result()
    log = getattr(item, "_gatecheck_log", None)
    if log and report.failed:
        served, offset = log
        text = served.log_since(offset)
        if text.strip():
            report.sections.append((f"server log ({served.target})", text))
    item.config.stash[_RESULTS].record(item, report)


def pytest_sessionfinish(session, exitstatus):
    config = session.config
    pool = config.stash.get(_POOL, None)
    if pool is not None:
        pool.stop_all()
    stop_all()
    results = config.stash.get(_RESULTS, None)
    if results is not None and results.records:
        path = Path(config.getoption("--results-json"))
        results.write(path)
        config._gatecheck_results_path = path


def pytest_terminal_summary(terminalreporter, exitstatus, config):
    results = config.stash.get(_RESULTS, None)
    path = getattr(config, "_gatecheck_results_path", None)
    if results is None or path is None:
        return
    counts = results.counts()
    line = ", ".join(f"{n} {k}" for k, n in counts.items() if n)
    terminalreporter.write_sep("=", "gatecheck")
    terminalreporter.write_line(f"checks × targets: {line}")
    terminalreporter.write_line(f"results: {path}")


def pytest_keyboard_interrupt(excinfo):
    stop_all()


def pytest_internalerror(excrepr, excinfo):
    stop_all()


# Hypothesis profiles for test_properties.py. "gatecheck" (loaded here, so it is the default) keeps one
# target's property checks to a few seconds and is reproducible: derandomized, no example database.
# "thorough" explores: pytest --hypothesis-profile thorough (the plugin loads it after this module).
try:
    from hypothesis import HealthCheck, settings as _hyp_settings
except ImportError:  # pragma: no cover - hypothesis is a declared test dependency
    _hyp_settings = None
if _hyp_settings is not None:
    _hyp_common = dict(deadline=None, database=None, print_blob=True,
                       suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
    _hyp_settings.register_profile("gatecheck", max_examples=12, derandomize=True, **_hyp_common)
    _hyp_settings.register_profile("thorough", max_examples=400, **_hyp_common)
    _hyp_settings.load_profile("gatecheck")
