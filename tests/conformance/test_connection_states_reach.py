"""Positions a server never reaches are *not supported*, not failed (conformance/test_connection_states.py).

``tests/broken/server.py --break no_persistent_connections --break close_unannounced`` closes the connection
after every response without saying "close", as uWSGI does without keep-alive: RFC 9112 §9.5 lets a server
close at any time, and the missing "close" (§9.3) is no obligation of the position checks. So the 2nd and
3rd places of a kept-alive connection or of a pipeline are not supported (they used to fail with "no answer
to the request at position ..."), and the places the server does reach pass, the unanswered requests after
them included. The close the request under test provokes still fails: that is
``test_checks_can_fail.py``'s row ``connection_states-wire-later_body_dropped``.
"""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

COMMAND = ("{python} -m tests.broken.server --host {host} --port {port} "
           "--break no_persistent_connections --break close_unannounced")
FILE = "test_connection_states.py::"
EXPECTED = {
    **{f"{FILE}test_app_sees_the_request_at_each_position[{p}]": "unsupported"
       for p in ("keep-alive-2nd", "keep-alive-3rd", "pipelined-2nd", "pipelined-3rd")},
    **{f"{FILE}test_app_sees_the_request_at_each_position[{p}]": "passed" for p in ("alone", "pipelined-1st")},
    f"{FILE}test_request_body_is_read_at_each_position[keep-alive-2nd-chunked]": "unsupported",
    f"{FILE}test_request_body_is_read_at_each_position[pipelined-1st-content-length]": "passed",
    f"{FILE}test_streamed_response_is_delimited_at_each_position[pipelined-3rd]": "unsupported",
    f"{FILE}test_connection_close_request_is_answered_then_closed_at_each_position[keep-alive-3rd]": "unsupported",
    f"{FILE}test_connection_close_from_the_app_closes_at_each_position[pipelined-2nd]": "unsupported",
    f"{FILE}test_requests_pipelined_after_a_close_are_not_processed[pipelined-2nd-request]": "unsupported",
    f"{FILE}test_half_closed_client_gets_its_responses[pipelined-two]": "unsupported",
    f"{FILE}test_half_closed_client_gets_its_responses[get]": "passed",
}


def test_positions_past_an_unannounced_close_are_not_supported(tmp_path):
    results = tmp_path / "results.json"
    cmd = [sys.executable, "-m", "pytest", "conformance/test_connection_states.py", "-q", "-p", "no:cacheprovider",
           "--no-expectations", "--server-cmd", COMMAND, "--interface", "wsgi", "--results-json", str(results)]
    done = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert results.exists(), f"no results:\n{done.stdout[-2000:]}\n{done.stderr[-2000:]}"
    got = {c["check"]: (c["outcome"], c["message"]) for c in json.loads(results.read_text())["checks"]}
    for check, outcome in EXPECTED.items():
        assert check in got, f"{check} did not run; ran {sorted(got)}"
        assert got[check][0] == outcome, f"{check}: {got[check][0]}, expected {outcome}: {got[check][1][:500]}"
