"""A property check whose failing example waits out a read timeout still fails within --check-timeout.

``tests.broken.asgi:ws_empty_message_dropped`` under uvicorn never echoes an empty WebSocket message (as daphne
4.2 does), so every failing example of the WebSocket round-trip property waits 10 s for a frame. Hypothesis's
shrinker used to replay that example dozens of times (30 × 10 s on daphne): the check ran past its deadline
and a known deviation became a timeout. The round trips now stop at their first failing example. This runs
the check with the suite's own hypothesis profile (not the can-fail runs', which never shrinks).
"""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
TARGET = "{python} -m uvicorn --host {host} --port {port} --no-access-log tests.broken.asgi:ws_empty_message_dropped"
CHECK = "test_properties.py::test_websocket_messages_round_trip_whatever_the_fragmentation"


def test_round_trip_property_fails_within_the_check_timeout(tmp_path):
    results = tmp_path / "results.json"
    cmd = [sys.executable, "-m", "pytest", "conformance/test_properties.py", "-q", "-p", "no:cacheprovider",
           "--no-expectations", "--server-cmd", TARGET, "--interface", "asgi", "--features", "websockets",
           "--check-timeout", "60", "-k", "test_websocket_messages_round_trip", "--results-json", str(results)]
    done = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=240, stdin=subprocess.DEVNULL)
    assert results.exists(), f"no results:\n{done.stdout[-2000:]}\n{done.stderr[-2000:]}"
    got = {c["check"]: c for c in json.loads(results.read_text())["checks"]}
    assert got[CHECK]["outcome"] == "failed", f"{got[CHECK]['outcome']}: {got[CHECK]['message'][:500]}"
    assert "sent 0 B" in got[CHECK]["message"], got[CHECK]["message"][:500]
