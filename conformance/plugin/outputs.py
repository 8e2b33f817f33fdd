"""The session's output files as the user sees them: the results opened (locked, finished by the reaper if the
session is killed), a lost record said at once, a JUnit XML that cannot be written said in one line."""

from __future__ import annotations

import contextlib
import os
import sys

import pytest

from gatecheck.conformance.plugin.finish import finish_if_killed
from gatecheck.conformance.plugin.resultsfile import Results, ResultsBusy

__all__ = ["open_results", "say_now", "junit_failed"]


def open_results(config) -> Results:
    """The session's results, their partial file created and locked (a second run on the same file is a usage
    error, one line), finished by the reaper if this process is killed; a failed append is said at once."""
    results = Results(config.getoption("--results-json"))
    try:
        results.open()
    except ResultsBusy as exc:
        raise pytest.UsageError(str(exc)) from None
    results.on_loss = lambda message: say_now(config, message)
    finish_if_killed(config, results)
    return results


def say_now(config, message: str) -> None:
    """One red line on the terminal now, outside pytest's capture of the running check."""
    capman = config.pluginmanager.getplugin("capturemanager")
    reporter = config.pluginmanager.getplugin("terminalreporter")
    with capman.global_and_fixture_disabled() if capman is not None else contextlib.nullcontext():
        if reporter is not None:
            reporter.write_line(message, red=True)
        else:
            print(message, file=sys.stderr)


def junit_failed(session, exc: OSError) -> str:
    """pytest's JUnit XML could not be written (a full disk): the torn file removed, the run failed; the line
    for the summary."""
    xml = getattr(session.config.option, "xmlpath", None)
    with contextlib.suppress(OSError, TypeError):
        os.unlink(xml)  # what pytest began to write: a torn file must not pass for the results
    session.exitstatus = session.exitstatus or 1
    return f"could not write {xml}: {exc.strerror or exc}"
