"""One child pytest session of a ``--jobs`` run (``jobs.py``): its command line and files, its process, what it
appended to its partial results file, and the environment the children share.

A child is started in a session of its own (its process group: one signal reaches its servers too) and gets
SIGTERM from the kernel when the parent dies (``PR_SET_PDEATHSIG``), which ends it as Ctrl-C does.
"""

from __future__ import annotations

import ctypes
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from gatecheck.conformance.plugin.resultsfile import partial_path
from gatecheck.conformance.plugin.shards import SHARD_OPTION

__all__ = ["Child", "child_env"]

_OVERDUE = 120.0  # seconds past its session deadline before a child is killed


class Child:
    """One child session: its targets (``SessionTarget``), its command line and files, its process."""

    def __init__(
        self, index: int, targets: list, argv: list, scratch: Path, cwd: str, timeout: float, junit: bool
    ) -> None:
        self.targets = targets
        self.results = scratch / f"child-{index}.json"
        self.xml = scratch / f"child-{index}.xml"
        self.collected = scratch / f"child-{index}.collected.json"
        self.log = scratch / f"child-{index}.log"
        self.argv = [
            *argv,
            "--jobs",
            "1",
            "--results-json",
            str(self.results),
            "--gatecheck-collected",
            str(self.collected),
        ] + (["--junitxml", str(self.xml)] if junit else [])
        self.cwd, self.timeout = cwd, timeout
        self.proc: subprocess.Popen | None = None
        self.started = self.ended = 0.0
        self._offset = 0
        self.group_args: list = []  # the group's own arguments (a shard of it gets the same)
        self.shard = False  # started to help a running target (rule 6)

    @property
    def claims(self) -> str | None:
        """Its target's claims directory (``shards.py``), from its group's arguments; None for the TLS group."""
        args = self.group_args
        return args[args.index(SHARD_OPTION) + 1] if SHARD_OPTION in args else None

    @property
    def names(self) -> str:
        names = ", ".join(st.target.name for st in self.targets)
        return f"{names} (a shard)" if self.shard else names

    def start(self, env: dict) -> None:
        parent = os.getpid()
        with open(self.log, "wb") as log:
            self.proc = subprocess.Popen(
                [sys.executable, "-m", "pytest", *self.argv],
                cwd=self.cwd,
                env=env,
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
                start_new_session=True,
                preexec_fn=lambda: _die_with(parent),
            )
        self.started = time.monotonic()

    def running(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def overdue(self) -> bool:
        return time.monotonic() > self.started + self.timeout + _OVERDUE

    def signal(self, sig: int) -> None:
        """``sig`` to the child's process group (its session: started with start_new_session), while the child
        is not yet reaped (so the group id is still ours)."""
        if self.running():
            try:
                os.killpg(self.proc.pid, sig)
            except ProcessLookupError:
                pass

    def new_lines(self) -> list:
        """The complete lines the child appended to its partial file since the last call."""
        try:
            with open(partial_path(self.results), "rb") as fh:
                fh.seek(self._offset)
                data = fh.read()
        except OSError:
            return []
        end = data.rfind(b"\n") + 1
        self._offset += end
        return [line for line in data[:end].decode("utf-8", "replace").splitlines() if line]

    def log_tail(self, lines: int = 15) -> str:
        try:
            text = self.log.read_text(encoding="utf-8", errors="replace")
        except OSError:
            return ""
        return "\n".join(text.rstrip().splitlines()[-lines:])


def _die_with(parent: int) -> None:
    """Runs in a child before exec: SIGTERM it when the parent dies (PR_SET_PDEATHSIG), which ends it as Ctrl-C
    does, its servers stopped; the parent's own results are then finished by its reaper (``finish.py``)."""
    try:
        ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG
    except Exception:  # pragma: no cover - not Linux
        pass
    if os.getppid() != parent:  # the parent died before the signal was armed
        os._exit(1)


def child_env(pycache: Path) -> dict:
    """This environment, with bytecode written under ``pycache`` only (PYTHONPYCACHEPREFIX, unless the caller
    set one): the children share pytest's rewritten check modules (about 5 s of CPU each to rewrite: tox sets
    PYTHONDONTWRITEBYTECODE), and nothing of the run writes ``__pycache__`` next to the sources. The servers
    inherit it too (rule 5)."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    env.setdefault("PYTHONPYCACHEPREFIX", str(pycache))
    return env
