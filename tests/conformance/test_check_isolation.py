"""A check that damages the server's state for the rest of the session runs on a private server.

``tests.broken.asgi:mid_response_error_poisons`` under uvicorn stops acting on any app's exception once an
HTTP app raised after http.response.start (as daphne 4.2 does: its reaper of finished apps dies on that
exception). The mid-response exception checks now run on a private server of their own, so the WebSocket
checks of apps that raise, run after them in the same session, still see a server that handles a raise.
"""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
TARGET = "{python} -m uvicorn --host {host} --port {port} --no-access-log tests.broken.asgi:mid_response_error_poisons"
AFTER = ("test_websocket_asgi.py::test_app_ending_before_accept_is_refused_with_http_error[raise]",
         "test_websocket_asgi.py::test_app_ending_after_accept_closes_the_socket[raise]")


def test_mid_response_exceptions_leave_the_session_server_intact(tmp_path):
    """The files run in the order given: the mid-response exception checks first, the WebSocket ones after."""
    results = tmp_path / "results.json"
    cmd = [sys.executable, "-m", "pytest", "conformance/test_asgi_messages_errors.py", "conformance/test_websocket_asgi.py",
           "-q", "-p", "no:cacheprovider", "--no-expectations", "--server-cmd", TARGET, "--interface", "asgi",
           "--features", "websockets", "-k", "exception_after_start_never_looks_complete or app_ending and raise",
           "--results-json", str(results)]
    done = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=240, stdin=subprocess.DEVNULL)
    assert results.exists(), f"no results:\n{done.stdout[-2000:]}\n{done.stderr[-2000:]}"
    got = {c["check"]: c for c in json.loads(results.read_text())["checks"]}
    assert any("never_looks_complete" in check for check in got), f"the mid-response checks did not run: {sorted(got)}"
    for check in AFTER:
        assert got[check]["outcome"] == "passed", f"{check}: {got[check]['outcome']}: {got[check]['message'][:400]}"
