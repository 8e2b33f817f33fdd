"""The conformance session end to end, in a subprocess: results file, usage errors, and Ctrl-C cleanup."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import psutil

from tests.hostile.procs import descendants_running
from tests.installed import PYTEST, RUN_DIR

ROOT = Path(__file__).resolve().parents[2]


def run_pytest(*args, timeout=180, **kw):
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.run(
        [*PYTEST, "-p", "no:cacheprovider", *args],
        cwd=RUN_DIR,
        capture_output=True,
        text=True,
        timeout=timeout,
        env=env,
        **kw,
    )


def test_a_bad_target_is_a_usage_error_without_traceback(tmp_path):
    out = run_pytest(
        "gatecheck/conformance/checks", "--server", "nginx:asgi", "--results-json", str(tmp_path / "r.json")
    )
    assert out.returncode == 4, out.stdout + out.stderr
    assert "unknown server 'nginx'" in out.stderr and "Traceback" not in out.stderr


def test_server_cmd_needs_an_interface(tmp_path):
    out = run_pytest(
        "gatecheck/conformance/checks", "--server-cmd", "x {port}", "--results-json", str(tmp_path / "r.json")
    )
    assert out.returncode == 4 and "--server-cmd needs --interface" in out.stderr


def test_a_run_writes_results_with_clauses(tmp_path):
    results = tmp_path / "r.json"
    out = run_pytest(
        "gatecheck/conformance/checks/test_asgi_scope.py",
        "--server",
        "granian:asgi",
        "-k",
        "asgi_version",
        "--results-json",
        str(results),
    )
    assert out.returncode == 0, out.stdout[-2000:]
    data = json.loads(results.read_text())
    assert data["schema_version"] == 2
    (check,) = data["checks"]
    assert check["outcome"] == "passed" and check["clause"] and check["level"] == "DEFINED"
    assert data["targets"][0]["versions"]["granian"]


def test_a_server_that_never_starts_errors_each_check_with_its_log(tmp_path):
    fake = ROOT / "tests" / "servers" / "fake" / "exits_at_once.py"
    out = run_pytest(
        "gatecheck/conformance/checks/test_asgi_scope.py",
        "-k",
        "asgi_version or spec_version",
        "--server-cmd",
        f"{sys.executable} {fake} {{port}}",
        "--interface",
        "asgi",
        "--ready-timeout",
        "5",
        "--results-json",
        str(tmp_path / "r.json"),
    )
    assert out.returncode == 1
    assert "exited with code 3" in out.stdout and "cannot load application" in out.stdout
    outcomes = {c["outcome"] for c in json.loads((tmp_path / "r.json").read_text())["checks"]}
    assert outcomes == {"error"}


def test_sigint_mid_run_leaves_no_server_behind(tmp_path):
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    proc = subprocess.Popen(
        [
            *PYTEST,
            "-p",
            "no:cacheprovider",
            "gatecheck/conformance/checks/test_echo.py",
            "--server",
            "granian:asgi",
            "--server",
            "granian:wsgi",
            "--results-json",
            str(tmp_path / "r.json"),
        ],
        cwd=RUN_DIR,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
    )
    try:
        servers = []
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and not servers:
            servers = descendants_running(proc.pid, "granian")
            time.sleep(0.1)
        assert servers, "the run never started a server"
        time.sleep(0.5)
        proc.send_signal(signal.SIGINT)
        proc.wait(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
    for server in servers:
        try:
            assert not server.is_running() or server.status() == psutil.STATUS_ZOMBIE, f"{server.pid} survived"
        except psutil.NoSuchProcess:
            pass
