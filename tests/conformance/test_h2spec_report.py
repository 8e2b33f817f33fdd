"""h2spec plumbing (case list, JUnit and console parsing) and the h2 client's raw-frame path, without a server."""

from __future__ import annotations

import socket

import h2.config
import h2.connection
import h2.events

from gatecheck.conformance.client.h2 import GOAWAY, PING, H2Client, StreamState
from gatecheck.conformance.h2spec import tool as h2spec

DRYRUN = """Generic tests for HTTP/2 server
  1. Starting HTTP/2
    1: Sends a client connection preface

  3. Frame Definitions
    3.1. DATA
      1: Sends a DATA frame
      2: Sends multiple DATA frames

Hypertext Transfer Protocol Version 2 (HTTP/2)
  5. Streams and Multiplexing
    5.4. Error Handling
      5.4.1. Connection Error Handling
        1: Sends an invalid PING frame for connection close
"""

JUNIT = """<?xml version="1.0" encoding="UTF-8"?>
<testsuites>
  <testsuite name="3.1. DATA" package="generic/3.1" id="3.1" tests="2" skipped="1" failures="0" errors="0">
    <testcase package="generic/3.1" classname="Sends a DATA frame" time="0.0003"></testcase>
    <testcase package="generic/3.1" classname="Sends multiple DATA frames" time="0.0003"><skipped></skipped></testcase>
  </testsuite>
  <testsuite name="5.4.1. Connection Error Handling" package="http2/5.4.1" id="5.4.1" tests="2" skipped="0"
             failures="0" errors="2">
    <testcase package="http2/5.4.1" classname="Sends an invalid PING frame for connection close" time="0.001">
      <error>GOAWAY Frame (Error Code: PROTOCOL_ERROR)
Connection closed
Error: read tcp 127.0.0.1:1-&gt;127.0.0.1:2: read: connection reset by peer</error>
    </testcase>
    <testcase package="http2/5.4.1" classname="Sends something new" time="0.001">
      <error>Connection closed
Error: http2: failed reading the frame payload: unexpected EOF</error>
    </testcase>
  </testsuite>
</testsuites>
"""

CASES = [
    h2spec.Case("generic/3.1/1", False, "Sends a DATA frame"),
    h2spec.Case("generic/3.1/2", False, "Sends multiple DATA frames"),
    h2spec.Case("http2/5.4.1/1", False, "Sends an invalid PING frame for connection close"),
]


def test_dryrun_lines_become_case_ids_named_as_on_the_h2spec_command_line():
    assert h2spec.parse_dryrun(DRYRUN) == [
        ("generic/1/1", "Sends a client connection preface"),
        ("generic/3.1/1", "Sends a DATA frame"),
        ("generic/3.1/2", "Sends multiple DATA frames"),
        ("http2/5.4.1/1", "Sends an invalid PING frame for connection close"),
    ]


def test_committed_case_list_is_complete_and_unique():
    cases = h2spec.load_cases()
    assert len(cases) == 146 and len({c.id for c in cases}) == 146
    assert [c.id for c in cases if c.strict] == ["http2/5.4.1/2"]
    assert len({(c.group, c.description) for c in cases}) == 146  # the JUnit match key is unique
    assert {c.id.split("/")[0] for c in cases} == {"generic", "http2", "hpack"}
    assert all(c.clause.startswith(("RFC 7540 §", "RFC 7541 §")) for c in cases)


def test_case_ids_cite_the_rfc_section():
    assert h2spec.clause_for("http2/6.9.1/2") == "RFC 7540 §6.9.1"
    assert h2spec.clause_for("hpack/5.2/3") == "RFC 7541 §5.2"
    assert h2spec.clause_for("generic/3.10/1") == "RFC 7540 §6.10"
    assert h2spec.clause_for("generic/5/14") == "RFC 7541 §6"


def test_junit_outcomes_are_matched_to_cases_by_group_and_description():
    results, tests = h2spec.parse_junit(JUNIT, CASES)
    assert tests == 4
    assert results["generic/3.1/1"].outcome == "passed"
    assert results["generic/3.1/2"].outcome == "skipped"
    # a reset where h2spec expected the connection to close is what h2spec means to count as closed
    assert results["http2/5.4.1/1"].outcome == "passed"
    assert "connection reset by peer" in results["http2/5.4.1/1"].message
    # a case the committed list does not know is kept, under a name that cannot match a listed case
    assert results["http2/5.4.1/?Sends something new"].outcome == "failed"


def test_failure_text_is_taken_from_the_console_report():
    stdout = (
        "...\nFailures: \n\nHypertext Transfer Protocol Version 2 (HTTP/2)\n  3. Starting HTTP/2\n"
        "    3.5. HTTP/2 Connection Preface\n      × 2: Sends invalid connection preface\n"
        "        -> The endpoint MUST terminate the TCP connection.\n"
        "           Expected: Connection closed\n             Actual: Error: boom\n\n"
        "Finished in 0.0615 seconds\n145 tests, 144 passed, 0 skipped, 1 failed\n"
    )
    texts = h2spec._failure_texts(stdout)
    assert texts == {
        (
            "http2/3.5",
            "Sends invalid connection preface",
        ): "-> The endpoint MUST terminate the TCP connection.\nExpected: Connection closed\nActual: Error: boom"
    }


def _server_bytes() -> tuple:
    """A server that answers stream 1 after sending GOAWAY (what a graceful shutdown does)."""
    server = h2.connection.H2Connection(h2.config.H2Configuration(client_side=False, header_encoding=None))
    server.initiate_connection()
    client = h2.connection.H2Connection(h2.config.H2Configuration(client_side=True))
    client.initiate_connection()
    client.send_headers(
        1, [(":method", "GET"), (":scheme", "http"), (":authority", "x"), (":path", "/")], end_stream=True
    )
    server.receive_data(client.data_to_send())
    before = server.data_to_send()
    server.close_connection(last_stream_id=1)
    goaway = server.data_to_send()
    ping = b"\x00\x00\x08\x06\x00\x00\x00\x00\x00" + b"12345678"
    # frames h2's state machine refuses after a GOAWAY: encode them with the server's HPACK encoder
    block = server.encoder.encode([(b":status", b"200")])
    headers = len(block).to_bytes(3, "big") + b"\x01\x04" + (1).to_bytes(4, "big") + block
    data = (4).to_bytes(3, "big") + b"\x00\x01" + (1).to_bytes(4, "big") + b"done"
    return before, goaway + ping + headers + data


def test_client_completes_a_stream_after_goaway_through_the_raw_path():
    ours, theirs = socket.socketpair()
    try:
        client = H2Client(("127.0.0.1", 9), connect=False)
        client.sock = ours
        client.conn.initiate_connection()
        client.conn.data_to_send()
        client.streams[1] = StreamState(1)
        client.conn.send_headers(
            1, [(b":method", b"GET"), (b":scheme", b"http"), (b":authority", b"x"), (b":path", b"/")], end_stream=True
        )
        client.conn.data_to_send()
        before, after = _server_bytes()
        client.feed(before + after[:7])  # split mid-frame on purpose
        client.feed(after[7:])
        state = client.streams[1]
        assert [f.type for f in client.frames].count(GOAWAY) == 1 and client.goaways[0].last_stream_id == 1
        assert state.ended and state.status == 200 and state.body == b"done"
        theirs.settimeout(1)
        sent, frames = theirs.recv(65536), []
        while len(sent) >= 9:
            length = int.from_bytes(sent[:3], "big")
            frames.append((sent[3], sent[4], sent[9 : 9 + length]))
            sent = sent[9 + length :]
        assert (PING, 1, b"12345678") in frames, frames  # the PING after the GOAWAY was ACKed
    finally:
        ours.close()
        theirs.close()


FAKE_H2SPEC = r'''#!{python}
"""Stands in for h2spec: passes the case ids it is given (all of CASES when none), JUnit + summary."""
import sys
args, ids, junit = sys.argv[1:], [], None
i = 0
while i < len(args):
    if args[i] in ("-h", "-p", "-P", "-o", "-j"):
        junit = args[i + 1] if args[i] == "-j" else junit
        i += 2
        continue
    if not args[i].startswith("-"):
        ids.append(args[i])
    i += 1
cases = {cases!r}
run = [c for c in cases if not ids or c[0] in ids]
suites = {{}}
for cid, desc in run:
    suites.setdefault(cid.rsplit("/", 1)[0], []).append(desc)
xml = ['<?xml version="1.0" encoding="UTF-8"?>', "<testsuites>"]
for group, descs in suites.items():
    xml.append(f'<testsuite name="x" package="{{group}}" id="x" tests="{{len(descs)}}" '
               'skipped="0" failures="0" errors="0">')
    xml += [f'<testcase package="{{group}}" classname="{{d}}" time="0.0"></testcase>' for d in descs]
    xml.append("</testsuite>")
xml.append("</testsuites>")
open(junit, "w").write("\n".join(xml))
print(f"{{len(run)}} tests, {{len(run)}} passed, 0 skipped, 0 failed")
'''


def test_cases_run_last_go_in_a_second_invocation_and_the_counts_add_up(tmp_path):
    import sys

    fake = tmp_path / "h2spec"
    fake.write_text(FAKE_H2SPEC.format(python=sys.executable, cases=[(c.id, c.description) for c in CASES]))
    fake.chmod(0o755)
    report = h2spec.run(fake, "127.0.0.1", 1, CASES, path="/probe", last=("generic/3.1/2",), deadline=30)
    assert report.problem == ""
    first, second = report.command
    assert "generic/3.1/2" not in first and {"generic/3.1/1", "http2/5.4.1/1"} <= set(first)
    assert second[-1] == "generic/3.1/2" and "generic/3.1/1" not in second
    assert {k: v.outcome for k, v in report.results.items()} == {c.id: "passed" for c in CASES}
    assert report.tests_attr == 3 and report.summary == (3, 3, 0, 0)
