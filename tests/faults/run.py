"""A conformance session as a real process, for the fault tests, and what it leaves behind.

Every process of a run carries ``GATECHECK_FAULT_MARK=<random>`` in its environment (set here, inherited by
every descendant, whatever its session: the harness, its reaper, its ``--jobs`` children, their servers), so
a test finds all of them afterwards with psutil, independently of how gatecheck tracks them; its temporary
folders go under a ``TMPDIR`` of the test's own, so a test sees every one left behind.
"""

from __future__ import annotations

import json
import os
import secrets
import signal
import subprocess
import time
import xml.etree.ElementTree as ET
from pathlib import Path

import psutil

from tests.installed import PYTEST, RUN_DIR

__all__ = ["ROOT", "Run", "MARK", "marked", "wait_until", "CHECKS"]

ROOT = Path(__file__).resolve().parents[2]
MARK = "GATECHECK_FAULT_MARK"
CHECKS = "gatecheck/conformance/checks"


def marked(mark: str) -> list:
    """Live (non-zombie) processes whose environment carries ``mark``."""
    found = []
    for proc in psutil.process_iter():
        try:
            if proc.environ().get(MARK) == mark and proc.status() != psutil.STATUS_ZOMBIE:
                found.append(proc)
        except psutil.Error:
            continue
    return found


def wait_until(predicate, timeout: float, what: str, interval: float = 0.05):
    """Poll ``predicate`` until it returns something true; fail naming ``what`` at the deadline."""
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() >= deadline:
            raise AssertionError(f"{what}: not within {timeout:g} s")
        time.sleep(interval)


class Run:
    """One ``pytest`` conformance session over the installed checks, started in a session of its own."""

    def __init__(self, tmp: Path, *args: str, results: Path | None = None, junit: bool = True, preexec=None) -> None:
        self.mark = secrets.token_hex(8)
        self.tmp = tmp
        self.tmpdir = tmp / "tmp"
        self.tmpdir.mkdir(parents=True, exist_ok=True)
        self.results = results or tmp / "r.json"
        self.junit = self.results.with_suffix(".xml") if junit else None
        self.logs = tmp / "logs"
        self.out = tmp / f"out-{self.mark}.txt"
        argv = [
            *PYTEST,
            "-p",
            "no:cacheprovider",
            *args,
            "--results-json",
            str(self.results),
            "--server-log-dir",
            str(self.logs),
        ] + (["--junitxml", str(self.junit)] if junit else [])
        env = {**os.environ, "PYTHONPATH": str(ROOT), MARK: self.mark, "TMPDIR": str(self.tmpdir)}
        with open(self.out, "wb") as out:
            self.proc = subprocess.Popen(
                argv,
                cwd=RUN_DIR,
                env=env,
                stdin=subprocess.DEVNULL,
                stdout=out,
                stderr=subprocess.STDOUT,
                start_new_session=True,
                preexec_fn=preexec,
            )

    def signal(self, sig: int) -> None:
        if self.proc.poll() is None:
            self.proc.send_signal(sig)

    def wait(self, timeout: float = 180) -> int:
        try:
            return self.proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait(10)
            raise AssertionError(f"the session did not end within {timeout:g} s:\n{self.output()[-3000:]}")

    def output(self) -> str:
        return self.out.read_text("utf-8", "replace")

    def log_lines(self, text: str) -> list:
        """Server log files (``--server-log-dir``, private servers' included) that contain ``text``."""
        found = []
        for path in self.logs.rglob("*.log") if self.logs.exists() else []:
            try:
                if text in path.read_text("utf-8", "replace"):
                    found.append(path)
            except OSError:
                continue
        return found

    def document(self) -> dict:
        return json.loads(self.results.read_text(encoding="utf-8"))

    def records(self) -> dict:
        return {(r["check"], r["target"]): r for r in self.document()["checks"]}

    def junit_counts(self) -> dict:
        root = ET.parse(self.junit).getroot()
        suites = [root] if root.tag == "testsuite" else list(root.iter("testsuite"))
        cases = [case for suite in suites for case in suite.iter("testcase")]
        totals = {key: sum(int(s.get(key, "0")) for s in suites) for key in ("tests", "errors", "failures")}
        return {**totals, "cases": len(cases)}

    def leftovers(self, timeout: float = 15.0) -> list:
        """The processes of this run still alive ``timeout`` s after it ended (each then killed here, by PID: a
        fault test never leaks into the next one); [] when none."""
        deadline = time.monotonic() + timeout
        while True:
            left = [p for p in marked(self.mark) if p.pid != os.getpid()]
            if not left or time.monotonic() >= deadline:
                break
            time.sleep(0.1)
        described = []
        for proc in left:
            try:
                described.append(f"{proc.pid} {' '.join(proc.cmdline())[:160]}")
                proc.kill()
            except psutil.Error:
                continue
        return described

    def left_folders(self, timeout: float = 15.0) -> list:
        """What is left in the run's TMPDIR ``timeout`` s after it ended."""
        deadline = time.monotonic() + timeout
        while True:
            left = sorted(p.name for p in self.tmpdir.iterdir())
            if not left or time.monotonic() >= deadline:
                return left
            time.sleep(0.1)

    def stop(self) -> None:
        """The end of every test: the run killed if still running, its processes gone."""
        if self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGKILL)
            self.proc.wait(10)
        self.leftovers(timeout=0)
