"""``python -m gatecheck.load run`` and ``python -m gatecheck.load gate`` as real processes: exit statuses, one-line
errors, signals.

Each test starts the command as a subprocess, as a user or a CI script would. The bad-input tests
(a target that does not resolve, an unwritable output path, a CPU this host lacks) fail before any
server starts, in a second or two. The signal tests start the command with SIGINT *ignored* (what a
shell does to a script's background job), send SIGINT once it is measuring, and check it stops at
once with exit status 130, says what it measured and leaves no server behind; they need oha and
granian and skip (saying why) without them.
"""

from __future__ import annotations

import importlib.util
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
MISSING_CPU = str((os.cpu_count() or 1) + 3)


def load_cli(*args: str, timeout: float = 60) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "gatecheck.load", *args],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=timeout,
        stdin=subprocess.DEVNULL,
    )


def _no_traceback(proc) -> None:
    assert "Traceback" not in proc.stderr + proc.stdout, proc.stderr


def test_a_run_whose_target_does_not_resolve_measures_nothing_and_exits_non_zero(tmp_path):
    proc = load_cli("run", "granian:asgi?workers=abc", "--profile", "smoke", "--out", str(tmp_path))
    assert proc.returncode == 1, proc.stderr
    _no_traceback(proc)
    skipped = [line for line in proc.stderr.splitlines() if line.startswith("ERROR ")]
    assert skipped == [
        "ERROR ASGI get 1KB: skipped, its target 'granian:asgi?workers=abc' is invalid: "
        "option workers='abc' must be a whole number >= 1"
    ]
    assert (
        proc.stderr.strip()
        .splitlines()[-1]
        .startswith("error: 1 case(s) skipped for an error, nothing was measured (0 run(s) measured;")
    )


@pytest.mark.parametrize(
    "command",
    [
        ["run", "granian", "--profile", "smoke", "--out", "/proc/gatecheck-nowhere"],
        ["gate", "--base", sys.executable, "--head", sys.executable, "--out", "/proc/gatecheck-nowhere"],
        [
            "gate",
            "--base",
            sys.executable,
            "--head",
            sys.executable,
            "--out",
            "{tmp}/ok",
            "--benchmark-storage",
            "/proc/gatecheck-nowhere",
        ],
    ],
)
def test_an_unwritable_output_path_fails_before_any_work_with_one_line(command, tmp_path):
    t0 = time.monotonic()
    proc = load_cli(*[c.format(tmp=tmp_path) for c in command])
    assert proc.returncode == 2, proc.stderr
    assert proc.stderr.splitlines() == [proc.stderr.strip()], proc.stderr  # exactly one line
    assert proc.stderr.startswith("error: --") and "/proc/gatecheck-nowhere: cannot write there" in proc.stderr
    assert time.monotonic() - t0 < 30  # nothing was started or built first


@pytest.mark.parametrize(
    "command",
    [
        ["run", "granian", "--profile", "smoke", "--out", "{tmp}", "--server-cpus", MISSING_CPU, "--oha-cpus", "0"],
        [
            "gate",
            "--base",
            sys.executable,
            "--head",
            sys.executable,
            "--out",
            "{tmp}/g",
            "--server-cpus",
            MISSING_CPU,
            "--oha-cpus",
            "0",
        ],
    ],
)
def test_a_cpu_this_host_lacks_is_one_line_not_a_traceback(command, tmp_path):
    proc = load_cli(*[c.format(tmp=tmp_path) for c in command])
    assert proc.returncode == 2, proc.stderr
    _no_traceback(proc)
    assert proc.stderr.strip() == (
        f"error: --server-cpus {MISSING_CPU}: CPU {MISSING_CPU} is not available here "
        f"(this process may use CPUs {_cpus()})"
    )


def _cpus() -> str:
    from gatecheck.load.plan.cpulist import format_cpu_list
    from gatecheck.load.run.pinning import available_cpus

    return format_cpu_list(available_cpus())


# ---- signals: started with SIGINT ignored, then interrupted while measuring ----------------------------


def _real_load_or_skip():
    from gatecheck.load.run.oha import OhaNotFound, find_oha

    if importlib.util.find_spec("granian") is None:
        pytest.skip("granian is not installed")
    try:
        find_oha(build=False)
    except OhaNotFound as exc:
        pytest.skip(f"oha is not available: {exc}")


def _start_with_sigint_ignored(args, log_path: Path) -> subprocess.Popen:
    def ignore_sigint():  # as a shell starts a script's background job
        signal.signal(signal.SIGINT, signal.SIG_IGN)

    return subprocess.Popen(
        [sys.executable, "-m", "gatecheck.load", *args],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=open(log_path, "w"),
        text=True,
        stdin=subprocess.DEVNULL,
        preexec_fn=ignore_sigint,
    )


def _wait_for(log_path: Path, text: str, proc: subprocess.Popen, timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while text not in log_path.read_text():
        if proc.poll() is not None or time.monotonic() > deadline:
            proc.kill()
            pytest.fail(f"never saw {text!r}; stderr:\n{log_path.read_text()}")
        time.sleep(0.1)


def _interrupt_and_collect(proc: subprocess.Popen, timeout: float = 30) -> tuple:
    import psutil

    tree = [c for c in psutil.Process(proc.pid).children(recursive=True)]
    proc.send_signal(signal.SIGINT)
    try:
        out, _ = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        out, _ = proc.communicate()
        pytest.fail("SIGINT was ignored: still running 30 s after it")
    _gone, alive = psutil.wait_procs(tree, timeout=5)
    assert not alive, f"left running after the interrupt: {alive}"
    return proc.returncode, out


def test_a_gate_started_with_sigint_ignored_stops_on_sigint_and_reports_what_it_measured(tmp_path):
    _real_load_or_skip()
    log = tmp_path / "stderr.txt"
    proc = _start_with_sigint_ignored(
        [
            "gate",
            "--base",
            sys.executable,
            "--head",
            sys.executable,
            "--out",
            str(tmp_path / "gate"),
            "--duration",
            "0.5",
            "--warmup",
            "0",
            "--seed",
            "1",
        ],
        log,
    )
    _wait_for(log, "pair 1:", proc, timeout=60)
    status, out = _interrupt_and_collect(proc)
    stderr = log.read_text()
    assert status == 130, stderr
    assert "Traceback" not in stderr + out
    assert "⏹ **interrupted** after" in out  # the summary of what was measured so far, on stdout
    assert "interrupted: " in stderr and "run(s) in" in stderr
    assert (tmp_path / "gate" / "runs.jsonl").read_text().count("\n") >= 2
    assert (tmp_path / "gate" / "pairs.json").exists()


def test_a_run_started_with_sigint_ignored_stops_on_sigint(tmp_path):
    _real_load_or_skip()
    log = tmp_path / "stderr.txt"
    proc = _start_with_sigint_ignored(
        [
            "run",
            "granian:rsgi",
            "--profile",
            "smoke",
            "--select",
            "RSGI get",
            "--quick",
            "0.5",
            "--duration",
            "10",
            "--out",
            str(tmp_path),
            "--no-report",
        ],
        log,
    )
    _wait_for(log, "[1/", proc, timeout=60)
    status, _out = _interrupt_and_collect(proc)
    stderr = log.read_text()
    assert status == 130, stderr
    assert "Traceback" not in stderr
    assert "interrupted: runs measured so far are in" in stderr
