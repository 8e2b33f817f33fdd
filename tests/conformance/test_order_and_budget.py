"""A check's verdict depends neither on what ran before it on the same server nor on how slow its failures are.

Each case runs conformance checks in a subprocess against uvicorn serving a variant of ``tests/broken/asgi.py``
(``--no-expectations``, the suite's own hypothesis profile) and reads the results file:

- ``ws_empty_message_dropped`` never echoes an empty WebSocket message (as daphne 4.2 does), so every failing
  example of the WebSocket round-trip property waits 10 s for a frame. Hypothesis's shrinker used to replay it
  dozens of times (30 × 10 s on daphne): the check ran past --check-timeout, a known deviation became a
  timeout. The round trips now stop at their first failing example.
- ``mid_response_error_poisons`` stops acting on any app's exception once an HTTP app raised after
  http.response.start (as daphne 4.2, whose reaper of finished apps dies on that exception). The mid-response
  exception checks now share a private server, so the WebSocket raise checks run after them (the files run in
  the order given) still see a server that handles a raise.
- ``abandoned_stream_keeps_working`` keeps a thread busy for ABANDONED_WORK s after the never-reads check's client
  left, RSS flat (as hypercorn 0.18's WSGI worker runs an abandoned app to its end, filling a buffer slowly on a
  loaded machine, and the growth failed a later check: "server RSS grew 218 → 355 MiB"). Quiet now also means
  the server tree idle, so the check lasts until that work is done.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

from tests.broken.asgi import ABANDONED_WORK
from tests.installed import PYTEST, RUN_DIR

ROOT = Path(__file__).resolve().parents[2]


def _run(tmp_path, variant: str, files: list, keyword: str, features: str = "websockets") -> dict:
    """{check id: result record} of the checks matching ``keyword`` in ``files`` on uvicorn serving ``variant``."""
    results = tmp_path / "results.json"
    target = f"{{python}} -m uvicorn --host {{host}} --port {{port}} --no-access-log tests.broken.asgi:{variant}"
    cmd = [
        *PYTEST,
        *files,
        "-q",
        "-p",
        "no:cacheprovider",
        "--no-expectations",
        "--server-cmd",
        target,
        "--interface",
        "asgi",
        *(["--features", features] if features else []),
        "--check-timeout",
        "60",
        "-k",
        keyword,
        "--results-json",
        str(results),
    ]
    done = subprocess.run(cmd, cwd=RUN_DIR, capture_output=True, text=True, timeout=240, stdin=subprocess.DEVNULL)
    assert results.exists(), f"no results:\n{done.stdout[-2000:]}\n{done.stderr[-2000:]}"
    return {c["check"]: c for c in json.loads(results.read_text())["checks"]}


def test_round_trip_property_fails_within_the_check_timeout(tmp_path):
    check = "test_properties.py::test_websocket_messages_round_trip_whatever_the_fragmentation"
    got = _run(
        tmp_path,
        "ws_empty_message_dropped",
        ["gatecheck/conformance/checks/test_properties.py"],
        "test_websocket_messages_round_trip",
    )
    assert got[check]["outcome"] == "failed", f"{got[check]['outcome']}: {got[check]['message'][:500]}"
    assert "sent 0 B" in got[check]["message"], got[check]["message"][:500]


def test_mid_response_exceptions_leave_the_session_server_intact(tmp_path):
    got = _run(
        tmp_path,
        "mid_response_error_poisons",
        [
            "gatecheck/conformance/checks/test_asgi_messages_errors.py",
            "gatecheck/conformance/checks/test_websocket_asgi.py",
        ],
        "exception_after_start_never_looks_complete or app_ending and raise",
    )
    assert any("never_looks_complete" in check for check in got), f"the mid-response checks did not run: {sorted(got)}"
    for check in (
        "test_websocket_asgi.py::test_app_ending_before_accept_is_refused_with_http_error[raise]",
        "test_websocket_asgi.py::test_app_ending_after_accept_closes_the_socket[raise]",
    ):
        assert got[check]["outcome"] == "passed", f"{check}: {got[check]['outcome']}: {got[check]['message'][:400]}"


def test_never_reads_check_waits_for_the_abandoned_apps_work(tmp_path):
    check = "test_robustness.py::test_client_that_never_reads_keeps_server_memory_bounded"
    got = _run(
        tmp_path,
        "abandoned_stream_keeps_working",
        ["gatecheck/conformance/checks/test_robustness.py"],
        "never_reads_keeps",
        features="",
    )
    assert got[check]["outcome"] == "passed", got[check]["message"][:400]
    assert got[check]["duration"] >= 2.0 + ABANDONED_WORK, (
        f"the check handed over after {got[check]['duration']} s, while the server still worked for its app"
    )
