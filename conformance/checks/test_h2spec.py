"""h2spec, the HTTP/2 reference suite (RFC 7540/7541), run once per h2-capable target; each case is a check.

The case list is the committed one (``conformance/data/h2spec_cases.txt``, from the installed h2spec's
``--dryrun -S``); each case cites the RFC section h2spec files it under. h2spec runs with ``-S`` (its one
strict case, a SHOULD, included), ``-o 5`` seconds per case and ``-P /probe``: h2spec needs a path that
answers GET and POST with a body of at least 5 bytes (it never looks at the status); ``/`` is the fixture
contract's 404, ``/probe`` answers every method 200 with a JSON body. Its exit status is ignored: the
verdicts come from its JUnit report, and ``test_h2spec_ran_every_case`` checks that all cases ran. It runs
against a private server of the same target, so its abuse cannot weaken the session's server.
"""

from __future__ import annotations

import pytest

from gatecheck.conformance.app.private import private_server
from gatecheck.conformance.h2spec import tool as h2spec
from gatecheck.conformance.spec.markers import needs, spec

pytestmark = needs("h2c")

CASES = h2spec.load_cases()
PATH = "/probe"
#: run after all other cases: http2/5.1.2/1 opens one stream more than the server allows, into a zero window,
#: then leaves; a server that strands those requests' workers (granian 2.8.7 wsgi does) then fails the
#: unrelated cases h2spec would run next by timing out their handshakes, intermittently. The stranding itself
#: is checked deterministically in test_h2_streams.py (disconnect while the app reads the body).
LAST = ("http2/5.1.2/1",)
_REPORTS: dict = {}


def _report(server) -> h2spec.Report:
    """h2spec's report for this target, run on first use (one run per target per session)."""
    binary = h2spec.find_h2spec()
    if binary is None:
        # the session said why at its start and is marked incomplete (plugin/hooks.py, h2spec_install.py)
        pytest.skip(f"incomplete: h2spec not installed; {h2spec.INSTALL_HINT}")
    key = str(server.target)
    if key not in _REPORTS:
        # A private server: h2spec's abuse (e.g. 201 streams into a zero window, then gone) must not leave
        # the session's server short of worker threads for the checks after it.
        with private_server(server) as priv:
            problem = _preflight(priv)
            # -o 5: a generous per-case wait (h2spec default 2 s) for a loaded 2-core machine
            _REPORTS[key] = (
                h2spec.Report([], None, "", "", problem=problem)
                if problem
                else h2spec.run(
                    binary,
                    priv.host,
                    priv.port,
                    CASES,
                    path=PATH,
                    case_timeout=5,
                    deadline=240.0,
                    strict=True,
                    last=LAST,
                )
            )
    report = _REPORTS[key]
    if report.problem:
        pytest.fail(
            f"{report.problem}; commands: {[' '.join(argv) for argv in report.command]}\n{report.tail()}", pytrace=False
        )
    return report


def _preflight(server) -> str:
    """Why h2spec's run would show nothing, or "": the server must answer a connection preface with its
    SETTINGS and ACK ours (else every h2spec case fails at its handshake, after its timeout, or passes
    only because the connection closed)."""
    from gatecheck.conformance.client.h2 import H2Client

    try:
        with H2Client(server.address, authority=server.authority, timeout=5) as client:
            client.wait_settings()
    except (AssertionError, OSError) as exc:
        return f"h2spec not run: the server did not answer an HTTP/2 connection preface ({exc})"
    return ""


def _invalid_preface_closes_the_connection(server):
    """h2spec http2/3.5/2 assumes an HTTP/2-only endpoint and fails on any bytes that are not frames. A
    listener that also serves HTTP/1.1 may read the invalid preface as a malformed HTTP/1.x request: what
    RFC 9113 §3.4 requires is that the connection ends, so that is what is checked here (an HTTP/1.x 4xx
    or a GOAWAY may come first; a 2xx or a connection left open fails).

    Evidence: a connection error may end with a bare TCP close (the GOAWAY is a SHOULD, §5.4.1), so a
    close is only the server's answer when the server is shown serving HTTP/2 on a connection of its own
    just before (a GET /ping answered 200 "ok"); a server that closes everything shows nothing."""
    from gatecheck.conformance.client.h2 import H2Client
    from gatecheck.conformance.client.http1 import Connection

    with H2Client(server.address, authority=server.authority, timeout=5) as control:
        ping = control.response(control.request("GET", "/ping"))
    assert (ping.status, ping.body) == (200, b"ok"), f"control request over HTTP/2: {ping.describe()}"
    with Connection(server.address, timeout=5) as conn:
        conn.send(b"INVALID CONNECTION PREFACE\r\n\r\n")
        closed = conn.wait_closed(timeout=5)
        data = conn.buffer
    assert closed, f"the connection stayed open after an invalid preface; got {data[:200]!r}"
    if data.startswith(b"HTTP/"):
        status = data.split(b" ", 2)[1]
        assert status.startswith(b"4"), f"an invalid preface was answered {data[:100]!r}, not 4xx"
    elif data:
        # HTTP/2 frames: a GOAWAY (type 0x7) is the only frame allowed before the close.
        assert len(data) >= 9 and data[3] in (0x4, 0x7), f"unexpected bytes before the close: {data[:60]!r}"


# Cases whose h2spec verdict presumes an HTTP/2-only listener; on a listener that also serves HTTP/1.1 the
# same clause is checked directly.
_DUAL_LISTENER_CASES = {"http2/3.5/2": _invalid_preface_closes_the_connection}


@pytest.mark.parametrize("case", [pytest.param(c, id=c.id, marks=spec(c.clause, c.level)) for c in CASES])
def test_h2spec_case(server, case):
    """The server passes this h2spec case (h2spec's own verdict, read from its JUnit report)."""
    if case.id in _DUAL_LISTENER_CASES and server.capabilities.http1:
        _DUAL_LISTENER_CASES[case.id](server)
        return
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
    assert report.summary is not None and report.summary[0] == len(CASES), (
        f"h2spec summary {report.summary} (total, passed, skipped, failed); expected {len(CASES)} tests"
    )
