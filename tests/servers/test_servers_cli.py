"""python -m gatecheck.servers: the list and run commands, in-process and as a real foreground server."""

import os
import select
import signal
import ssl
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

from gatecheck.servers import __main__ as cli

ROOT = Path(__file__).resolve().parents[2]


def test_list_names_every_adapter(capsys):
    assert cli.main(["list"]) == 0
    out = capsys.readouterr().out
    for name in ("granian", "uvicorn", "hypercorn", "gunicorn", "daphne", "command"):
        assert name in out


def test_run_wants_both_cert_and_key(capsys):
    assert cli.main(["run", "granian:rsgi?tls=on", "--cert", "/nonexistent.pem"]) == 2
    assert "give both --cert and --key" in capsys.readouterr().err


def _first_line(proc, timeout: float) -> str:
    """The child's first line of output, or what it printed by the deadline (never blocks past it)."""
    got, deadline = b"", time.monotonic() + timeout
    while b"\n" not in got and time.monotonic() < deadline:
        ready, _, _ = select.select([proc.stdout], [], [], max(0.0, deadline - time.monotonic()))
        if not ready:
            break
        chunk = os.read(proc.stdout.fileno(), 4096)
        if not chunk:
            break
        got += chunk
    return got.decode("utf-8", "replace")


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM])
def test_run_serves_a_tls_target_with_the_test_certificate_and_stops_on_a_signal(tmp_path, sig):
    pytest.importorskip("granian")
    env = {k: v for k, v in os.environ.items() if k != "PYTHONUNBUFFERED"}  # as under tox: stdout is a pipe
    ignore_sigint = lambda: signal.signal(signal.SIGINT, signal.SIG_IGN)  # as a parent that ignores it would leave it
    proc = subprocess.Popen(
        [sys.executable, "-m", "gatecheck.servers", "run", "granian:rsgi?tls=on", "--log-dir", str(tmp_path)],
        cwd=ROOT,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        start_new_session=True,
        preexec_fn=ignore_sigint,
    )
    try:
        line = _first_line(proc, 90.0)  # the event: "serving ... at https://127.0.0.1:PORT  pid ..."
        assert " at https://127.0.0.1:" in line, line
        url = line.split(" at ")[1].split()[0]
        ctx = ssl.create_default_context(cafile=str(ROOT / "fixtures" / "tls" / "cert.pem"))
        with urllib.request.urlopen(url + "/ping", context=ctx, timeout=10) as resp:
            assert resp.status == 200
    finally:
        proc.send_signal(sig)
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(timeout=5)
        proc.stdout.close()
    assert proc.returncode == 0


SIGINT_AT_THE_SERVING_LINE = """
import os, signal, sys
from gatecheck.servers import __main__ as cli
signal.signal(signal.SIGINT, signal.SIG_IGN)  # as a parent that ignores it (a script's background job) leaves it

class Out:
    # The interrupt arrives at the worst moment: while the "serving ..." line is being written.
    def write(self, text):
        sys.__stdout__.write(text)
        if text.startswith("serving "):
            sys.__stdout__.flush()
            os.kill(os.getpid(), signal.SIGINT)
        return len(text)
    def flush(self):
        sys.__stdout__.flush()

sys.stdout = Out()
sys.exit(cli.main(["run", sys.argv[1], "--log-dir", sys.argv[2]]))
"""


def test_run_stops_on_a_sigint_that_arrives_with_the_serving_line(tmp_path):
    """The handlers are in place before the line that tells the user to press Ctrl-C: no interrupt is lost."""
    target = "command:asgi?cmd={python}+-m+tests.hostile.server+--port+{port}"
    proc = subprocess.Popen(
        [sys.executable, "-c", SIGINT_AT_THE_SERVING_LINE, target, str(tmp_path)],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )
    try:
        out, _ = proc.communicate(timeout=60)  # an interrupt that is lost leaves it serving: it never ends
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        out, _ = proc.communicate(timeout=10)
    assert proc.returncode == 0, out.decode()
    assert b"serving command:asgi" in out
    log = next(tmp_path.glob("*.log")).read_text()
    assert "gatecheck: stopped" in log
