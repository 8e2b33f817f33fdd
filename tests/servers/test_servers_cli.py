"""python -m servers: the list and run commands, in-process and as a real foreground server."""

import os
import signal
import ssl
import subprocess
import sys
import urllib.request
from pathlib import Path

import pytest

from servers import __main__ as cli

ROOT = Path(__file__).resolve().parents[2]


def test_list_names_every_adapter(capsys):
    assert cli.main(["list"]) == 0
    out = capsys.readouterr().out
    for name in ("granian", "uvicorn", "hypercorn", "gunicorn", "daphne", "command"):
        assert name in out


def test_run_wants_both_cert_and_key(capsys):
    assert cli.main(["run", "granian:rsgi?tls=on", "--cert", "/nonexistent.pem"]) == 2
    assert "give both --cert and --key" in capsys.readouterr().err


def test_run_serves_a_tls_target_with_the_test_certificate_and_stops_on_sigint(tmp_path):
    pytest.importorskip("granian")
    proc = subprocess.Popen([sys.executable, "-m", "servers", "run", "granian:rsgi?tls=on", "--log-dir", str(tmp_path)],
                            cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, start_new_session=True)
    try:
        line = proc.stdout.readline()  # "serving ... at https://127.0.0.1:PORT  pid ..."
        assert " at https://127.0.0.1:" in line, line + proc.stdout.read() if proc.poll() is not None else line
        url = line.split(" at ")[1].split()[0]
        ctx = ssl.create_default_context(cafile=str(ROOT / "fixtures" / "tls" / "cert.pem"))
        with urllib.request.urlopen(url + "/ping", context=ctx, timeout=10) as resp:
            assert resp.status == 200
    finally:
        proc.send_signal(signal.SIGINT)
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(timeout=5)
    assert proc.returncode == 0
