"""A check whose app outlives its client waits until the server is quiet before the next check measures it.

``tests.broken.asgi:abandoned_stream_keeps_working`` under uvicorn keeps a thread busy for ABANDONED_WORK s after
the never-reads check's client left, with RSS flat (as hypercorn 0.18's WSGI worker runs an abandoned app to its
end, filling a buffer slowly on a loaded machine). The never-reads check used to hand over once RSS had stayed
within the margin for 2.5 s, so that growth landed in a later check (hypercorn wsgi: the kept-alive idle check,
"server RSS grew 218 → 355 MiB"); quiet now also means the server tree idle, so the check lasts until the work
is done.
"""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from tests.broken.asgi import ABANDONED_WORK

ROOT = Path(__file__).resolve().parents[2]
TARGET = "{python} -m uvicorn --host {host} --port {port} --no-access-log tests.broken.asgi:abandoned_stream_keeps_working"
CHECK = "test_robustness.py::test_client_that_never_reads_keeps_server_memory_bounded"


def test_never_reads_check_waits_for_the_abandoned_apps_work(tmp_path):
    results = tmp_path / "results.json"
    cmd = [sys.executable, "-m", "pytest", "conformance/test_robustness.py", "-q", "-p", "no:cacheprovider",
           "--no-expectations", "--server-cmd", TARGET, "--interface", "asgi", "-k", "never_reads_keeps",
           "--results-json", str(results)]
    done = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=240, stdin=subprocess.DEVNULL)
    assert results.exists(), f"no results:\n{done.stdout[-2000:]}\n{done.stderr[-2000:]}"
    got = {c["check"]: c for c in json.loads(results.read_text())["checks"]}
    assert got[CHECK]["outcome"] == "passed", got[CHECK]["message"][:400]
    assert got[CHECK]["duration"] >= 2.0 + ABANDONED_WORK, (
        f"the check handed over after {got[CHECK]['duration']} s, while the server still worked for its app")
