"""A SIGTERM to the harness's test session (tests/conftest.py) ends the child processes its tests started."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import psutil

ROOT = Path(__file__).resolve().parents[1]

_TEST = textwrap.dedent("""
    import subprocess, sys

    def test_runs_a_child():
        # a child that would outlive the session: it sleeps for two minutes, its PID in a file
        subprocess.run([sys.executable, "-c",
                        "import os, sys, time; open(sys.argv[1], 'w').write(str(os.getpid())); time.sleep(120)",
                        {pid_file!r}], timeout=300)
""")


def _alive(pid: int) -> bool:
    try:
        return psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return False


def _terminate_session(tmp_path: Path, with_conftest: bool) -> int:
    """Run a session whose test starts a sleeping child, SIGTERM the session, and return the child's PID."""
    pid_file = tmp_path / "child.pid"
    test = tmp_path / "test_spawn.py"
    test.write_text(_TEST.format(pid_file=str(pid_file)))
    plugins = ["-p", "tests.conftest"] if with_conftest else []
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    session = subprocess.Popen(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", *plugins, str(test)],
        cwd=tmp_path,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        deadline = time.monotonic() + 60
        while not (pid_file.exists() and pid_file.read_text()):
            assert time.monotonic() < deadline, "the session's child never started"
            assert session.poll() is None, "the session ended before its child started"
            time.sleep(0.05)
        session.send_signal(signal.SIGTERM)
        session.wait(timeout=30)
    finally:
        if session.poll() is None:
            session.kill()
            session.wait(timeout=10)
    return int(pid_file.read_text())


def test_a_sigterm_to_the_session_ends_the_children_it_started(tmp_path):
    child = _terminate_session(tmp_path, with_conftest=True)
    deadline = time.monotonic() + 10
    while _alive(child) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not _alive(child), f"the session's child {child} outlived the SIGTERM"


def test_without_the_handler_the_child_outlives_the_session(tmp_path):
    """The control: the default SIGTERM action leaves the child running (the test above can fail)."""
    child = _terminate_session(tmp_path, with_conftest=False)
    try:
        time.sleep(0.5)
        assert _alive(child)
    finally:
        if _alive(child):
            os.kill(child, signal.SIGKILL)  # our own child's child, by PID
