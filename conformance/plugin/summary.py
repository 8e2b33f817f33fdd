"""The ``gatecheck`` section of the terminal summary: outcome counts, failures by level, stale expectation
entries, what the session could not run, where the results went. A serial session writes it from its own
records; a ``--jobs`` run from the merged records of its child sessions (``jobs.py``), so both read alike."""

from __future__ import annotations

from gatecheck.conformance.plugin.console import LISTS_HINT, write_targets
from gatecheck.conformance.plugin.outcomes import SPEC_GROUP
from gatecheck.conformance.plugin.stale import write_summary

__all__ = ["write_gatecheck_summary", "LineWriter"]


def write_gatecheck_summary(tr, results, report: dict, written: bool, write_error: str, junit_error: str = "") -> None:
    """``tr``: pytest's terminal reporter or a :class:`LineWriter`; ``results``: a ``resultsfile.Results``; the
    errors: the results document's and the JUnit XML's, when they could not be written."""
    tr.write_sep("=", "gatecheck")
    counts = results.counts()
    tr.write_line("checks × targets: " + ", ".join(f"{n} {k}" for k, n in counts.items() if n))
    write_targets(tr, results)
    findings = results.findings_by_level()
    if findings:
        order = [SPEC_GROUP, "POLICY", "MAY", "INFO"]
        parts = [f"{group} {_count(findings.get(group, {}))}" for group in order if group in findings or group != "MAY"]
        tr.write_line(
            "failed by level: " + ", ".join(parts) + " (POLICY and INFO are the suite's readings, "
            "not spec requirements)"
        )
    write_summary(tr, report)
    for reason in results.incomplete:
        tr.write_line(f"incomplete: {reason}", red=True)
    for restart in results.restarts:
        after = f" after {restart['after']}" if restart.get("after") else " before its first check"
        tr.write_line(
            f"restarted: the server of {restart['target']} was found dead{after} (exit code "
            f"{restart['exit_code']}) and started again",
            yellow=True,
        )
    if write_error:
        tr.write_line(f"results: {write_error}; {results.kept_line()}", red=True)
    elif written:
        lost = f" (every record; while the run ran, {results.lost})" if results.lost else ""
        tr.write_line(f"results: {results.path} ({LISTS_HINT}){lost}", red=bool(results.lost))
    if junit_error:
        tr.write_line(f"junit: {junit_error}", red=True)


def _count(outcomes: dict) -> str:
    """ "4" or "4 (1 crashed)": a level's findings, the crashes named."""
    total = sum(outcomes.values())
    crashed = outcomes.get("crashed", 0)
    return f"{total} ({crashed} crashed)" if crashed else str(total)


class LineWriter:
    """The two calls of pytest's terminal reporter the summary uses, on a plain ``TerminalWriter`` (a ``--jobs``
    parent has no terminal reporter: it runs no pytest session of its own)."""

    def __init__(self, tw) -> None:
        self.tw = tw

    def write_line(self, line: str, **markup) -> None:
        self.tw.line(line, **markup)

    def write_sep(self, sep: str, title: str, **markup) -> None:
        self.tw.sep(sep, title, **markup)
