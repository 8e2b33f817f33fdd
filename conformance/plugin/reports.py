"""How a check's phases become its report and record: the deviation that applies to it, pytest's report
shaped to say what the verdict says, a failure's details (``failures.py``: the rule, the bytes, the server's
log, the command that reruns it) kept in its record and shown in its report, and the report of a check that
Ctrl-C or SIGTERM interrupted (``hooks.py`` calls these)."""

from __future__ import annotations

import pytest
from _pytest.reports import TestReport

from gatecheck.conformance.app.started import read_log
from gatecheck.conformance.plugin.expectations import Applied, Expectations, server_version
from gatecheck.conformance.plugin.failures import (
    DETAILED,
    FailureRepr,
    details,
    failure_text,
    out_of_range_note,
    rerun_options,
)
from gatecheck.conformance.plugin.outcomes import FAILING, CheckTimeout, Verdict
from gatecheck.conformance.plugin.resultsfile import meta_of

__all__ = [
    "DEVIATION",
    "LOG",
    "report_interrupted",
    "record_cut",
    "deviation",
    "brief_if_known",
    "shape",
    "attach_log",
    "attach_details",
]

DEVIATION = pytest.StashKey[object]()  # an item's candidate expectation entries
LOG = pytest.StashKey[tuple]()  # (started server, its handle, log offset) while a check runs


def report_interrupted(item, gs) -> None:
    """The check that was running when Ctrl-C or SIGTERM came: its own outcome, in JSON and JUnit alike."""
    message = f"interrupted by {gs.interrupts.received or 'KeyboardInterrupt'} while this check ran"
    report = TestReport(item.nodeid, item.location, {}, "failed", message, "call", user_properties=item.user_properties)
    gs.results.fold(item, Verdict("interrupted", message), 0.0)
    item.ihook.pytest_runtest_logreport(report=report)


def record_cut(session, gs, ours) -> None:
    """Every selected check (``ours(item)``) the session deadline left without a record: a record *interrupted*
    with an ``incomplete`` marker, in JSON and JUnit alike, and one line of why in the results' ``incomplete``."""
    why = f"the session deadline of {gs.deadlines.session_timeout:g} s passed before this check ran (--session-timeout)"
    cut = 0
    for item in session.items:
        meta = meta_of(item)
        if not ours(item) or (meta["check"], meta["target"]) in gs.results.records:
            continue
        report = TestReport(item.nodeid, item.location, {}, "failed", why, "call", user_properties=item.user_properties)
        gs.results.fold(item, Verdict("interrupted", why), 0.0)["incomplete"] = why
        item.ihook.pytest_runtest_logreport(report=report)
        gs.results.decided(item)
        cut += 1
    if cut:
        gs.results.incomplete.append(
            f"the session deadline of {gs.deadlines.session_timeout:g} s passed: {cut} "
            f"check{'s' if cut != 1 else ''} did not run (records marked incomplete)"
        )


def deviation(item, gs) -> Applied | None:
    """The item's entry whose version range holds its target's recorded version (the last one read)."""
    candidates = item.stash.get(DEVIATION, None)
    if not candidates:
        return None
    chosen = Expectations.chosen(candidates, _version(item, gs))
    return Applied(chosen, meta_of(item)["clause"]) if chosen is not None else None


def _version(item, gs) -> str | None:
    return server_version(gs.results.targets.get(meta_of(item)["target"], {}).get("versions", {}))


#: exceptions of a call that are not a check's failure (skips, the call deadline, Ctrl-C): never made brief
_NOT_A_FAILURE = (pytest.skip.Exception, CheckTimeout, KeyboardInterrupt)


def brief_if_known(item, call, known) -> None:
    """A call that failed on a check listed as a known deviation becomes "known", whose message is the entry's
    evidence (``outcomes.decide``): pytest's long traceback of it would be built (about 30 ms of CPU each: the
    check's module parsed again per frame) and never shown. Such a call gets a one-line failure text instead,
    the innermost frame and the exception; every other failure keeps pytest's own."""
    exc = call.excinfo
    if call.when != "call" or known is None or exc is None or isinstance(exc.value, _NOT_A_FAILURE):
        return
    tail = exc.traceback[-1] if exc.traceback else None
    where = f"{tail.path}:{tail.lineno + 1}: " if tail is not None else ""
    item.repr_failure = lambda excinfo, _text=f"{where}{exc.exconly()}": _text  # shadows the method, this item only


def shape(report, verdict) -> None:
    """Make pytest's own report (terminal, JUnit) say what the verdict says."""
    if verdict is None:
        return
    if verdict.outcome in ("known", "noted"):
        report.outcome, report.wasxfail = "skipped", verdict.message
    elif verdict.outcome in ("fixed", "timeout", "crashed") or (verdict.outcome == "error" and report.when == "call"):
        report.outcome, report.longrepr = "failed", verdict.message


def _log_text(item) -> tuple:
    """(target, what its server logged during the check) while the check's server is watched, else ("", "")."""
    log = item.stash.get(LOG, None)
    if not log or log[1] is None:
        return "", ""
    started, handle, offset = log
    return str(started.target), read_log(handle.log_path, offset)


def attach_log(item, report) -> None:
    """A failed setup or teardown: what the server logged during it, as a section of the report."""
    target, text = _log_text(item) if report.failed else ("", "")
    if text.strip():
        report.sections.append((f"server log ({target})", text))


def attach_details(item, call, report, verdict, gs, known: Applied | None) -> dict:
    """The details of a call that did not pass (``failures.DETAILED``): the record fields it adds, and, when it
    fails the run, its report made to show them (pytest's traceback instead when ``--tb`` was given)."""
    if call.when != "call" or verdict is None or verdict.outcome not in DETAILED:
        attach_log(item, report)
        return {}
    meta = meta_of(item)
    extra = details(item, call, _log_text(item)[1])
    if known is None:
        note = out_of_range_note(item.stash.get(DEVIATION, None), meta["server"], _version(item, gs))
        extra.update({"out_of_range": note} if note else {})
    elif known.deviation.upstream:
        extra["upstream"] = known.deviation.upstream
    if report.failed and verdict.outcome in FAILING:
        st = item.callspec.params.get("server")
        spec = str(st.target) if st is not None else meta["target"]
        record = {**meta, "outcome": verdict.outcome, "message": verdict.message, **extra}
        versions = gs.results.targets.get(meta["target"], {}).get("versions", {})
        text = failure_text(
            record, spec, rerun_options(item.config), ", ".join(f"{k} {v}" for k, v in versions.items())
        )
        if item.config.getoption("tbstyle", "auto") == "auto":
            report.longrepr = FailureRepr(text, (verdict.message.strip().splitlines() or [""])[0][:200])
        else:
            report.sections.append(("gatecheck", text))
    return extra
