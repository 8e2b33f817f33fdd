"""h2spec, the HTTP/2 reference suite (RFC 7540/7541), run once per h2-capable target; each case is a check.

The case list is the committed one (``conformance/data/h2spec_cases.txt``, from the installed h2spec's
``--dryrun -S``); each case cites the RFC section h2spec files it under. h2spec runs with ``-S`` (its one
strict case, a SHOULD, included), ``-o 5`` seconds per case and ``-P /probe``: h2spec needs a path that
answers GET and POST with a body of at least 5 bytes (it never looks at the status); ``/`` is the fixture
contract's 404, ``/probe`` answers every method 200 with a JSON body. Its exit status is ignored: the
verdicts come from its JUnit report, and ``test_h2spec_ran_every_case`` checks that all cases ran.
"""
from __future__ import annotations

import pytest

from . import h2spec
from .markers import needs, spec

pytestmark = needs("h2c")

CASES = h2spec.load_cases()
PATH = "/probe"
_REPORTS: dict = {}


def _report(server) -> h2spec.Report:
    """h2spec's report for this target, run on first use (one run per target per session)."""
    binary = h2spec.find_h2spec()
    if binary is None:
        pytest.skip(f"not supported: h2spec not installed; {h2spec.INSTALL_HINT}")
    key = str(server.target)
    if key not in _REPORTS:
        # -o 5: h2spec's per-case wait; the default 2 s produced false timeouts on a loaded 2-core machine
        _REPORTS[key] = h2spec.run(binary, server.host, server.port, CASES, path=PATH, case_timeout=5,
                                   deadline=240.0, strict=True)
    report = _REPORTS[key]
    if report.problem:
        pytest.fail(f"{report.problem}; command: {' '.join(report.command)}\n{report.tail()}", pytrace=False)
    return report


@pytest.mark.parametrize("case", [pytest.param(c, id=c.id, marks=spec(c.clause, c.level)) for c in CASES])
def test_h2spec_case(server, case):
    """The server passes this h2spec case (h2spec's own verdict, read from its JUnit report)."""
    result = _report(server).results.get(case.id)
    if result is None:
        pytest.fail(f"h2spec did not run {case.id} ({case.description!r}) against {server.target}", pytrace=False)
    if result.outcome == "skipped":
        pytest.skip(f"h2spec skipped {case.id}: {result.message}")
    if result.outcome != "passed":
        pytest.fail(f"h2spec {case.id} [{case.clause}] {case.description}:\n{result.message}", pytrace=False)


@spec("h2spec run (http.md §9)", "POLICY")
def test_h2spec_ran_every_case(server):
    """h2spec ran exactly the committed cases: its JUnit report and its summary line count them all, none unknown."""
    report = _report(server)
    expected = {c.id for c in CASES}
    missing = sorted(expected - set(report.results))
    unknown = sorted(set(report.results) - expected)
    assert not missing, f"h2spec did not run {len(missing)} case(s): {missing[:20]}"
    assert not unknown, f"h2spec ran case(s) the committed list lacks (regenerate it): {unknown[:20]}"
    assert report.tests_attr == len(CASES), f"JUnit counts {report.tests_attr} tests, the list {len(CASES)}"
    assert report.summary is not None and report.summary[0] == len(CASES), \
        f"h2spec summary {report.summary} (total, passed, skipped, failed); expected {len(CASES)} tests"
