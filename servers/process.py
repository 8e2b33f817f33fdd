"""One server process: start it in its own process group, wait until it answers, sample it, stop it.

Rules of this module:
- The process is started with ``start_new_session=True``: it leads its own process group, so the terminal's
  Ctrl-C does not reach it and ``killpg`` reaches every worker it forks.
- Every process of the server is tracked by ``tree.ProcessTree`` (read its header): the tree sampled
  continuously with create times, a random token in the server's environment that every descendant
  inherits, and the listener on the server's port when it is provably ours. A worker that double-forks
  and calls ``setsid`` escapes the group and the tree, but not the token.
- If the harness dies, however it dies: the leader gets ``PR_SET_PDEATHSIG`` = SIGKILL (a leader that
  ignores SIGTERM would outlive a SIGTERM death signal), and since the death signal is not inherited
  across ``fork``, the rest of the tree is killed by the reaper (``reaper.py``: one small process per
  harness, told each server's token, which kills every token bearer when the harness's pipe closes).
  Limits: a process that clears its environment *and* leaves the tree before a sample saw it *and*
  does not listen on the server's port is not found; a reaper killed with SIGKILL reaps nothing.
- Ready means a TCP connect *and* one HTTP round trip succeeded before one deadline; never a sleep.
- Stop is SIGTERM to the leader (as an operator's ``kill <pid>``: the server's own master stops its workers
  gracefully, e.g. Hypercorn runs lifespan shutdown only then), a grace period, then SIGKILL to the group
  and to every process of the tree, by PID, each after checking its create time against the one recorded
  when it was spawned or first seen (a reused PID is never signalled). Nothing else is ever signalled.
- Every live process is in ``_LIVE`` until stopped, so ``stop_all()`` (atexit, signal handlers, pytest
  hooks) is a backstop for every exit path.
"""

from __future__ import annotations

import atexit
import contextlib
import ctypes
import os
import signal
import socket
import subprocess
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Sequence

import psutil

from . import reaper, staging  # noqa: F401  (both register atexit first: they run after stop_all)
from .cpus import available_cpus
from .cpus import checked_cpus as _checked_cpus
from .errors import ServerExited, ServerNotReady, TargetError
from .listeners import ListenerChecks
from .memory import DEFAULT_BOUND, MemoryWatch
from .peak import PeakTracker
from .ports import free_port, port_is_free
from .tree import TOKEN_ENV, ProcessTree, new_token
from .tree import _alive as _running

__all__ = [
    "ServerProcess",
    "die_with_parent",
    "ResourceSample",
    "PeakTracker",
    "stop_all",
    "live_pids",
    "available_cpus",
    "free_port",
    "port_is_free",
]

_LIVE: "set[ServerProcess]" = set()
_LIVE_LOCK = threading.Lock()


@dataclass(frozen=True)
class ResourceSample:
    """Resident memory and CPU time of a whole process tree at one moment."""

    rss_bytes: int
    cpu_seconds: float
    processes: int


def die_with_parent() -> None:
    """Runs in the child before exec: ask the kernel to SIGKILL it if the parent dies (SIGKILL: a
    server that ignores SIGTERM, or a process left stopped, must not outlive a killed harness)."""
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG
    except Exception:  # pragma: no cover - non-Linux
        pass


class ServerProcess(ListenerChecks):
    """A started server process; use ``wait_ready`` then ``stop`` (or the context manager)."""

    def __init__(
        self,
        argv: Sequence[str],
        *,
        log_path: Path,
        env: dict | None = None,
        cwd: str | os.PathLike | None = None,
        cpus: Sequence[int] | None = None,
        port: int | None = None,
        memory: int | None = DEFAULT_BOUND,
    ) -> None:
        """``memory``: the bound on the tree's resident memory in bytes (``memory.py``), None for none."""
        self.argv = list(argv)
        cpu_set = _checked_cpus(cpus)
        self.token = new_token()
        env = {**(os.environ if env is None else env), TOKEN_ENV: self.token}
        self.log_path = Path(log_path)
        self.log_path.parent.mkdir(parents=True, exist_ok=True)
        self._log = open(self.log_path, "ab")
        self._log.write(f"=== gatecheck: starting {' '.join(self.argv)}\n".encode())
        self._log.flush()

        harness = os.getpid()

        def preexec() -> None:
            die_with_parent()
            if os.getppid() != harness:  # the harness died before the death signal was armed
                os._exit(1)
            if cpu_set:
                os.sched_setaffinity(0, cpu_set)

        self.cpus = cpu_set
        reaper.watch(self.token)  # before the spawn: no window in which a harness death is missed
        try:
            self.popen = subprocess.Popen(
                self.argv,
                stdin=subprocess.DEVNULL,
                stdout=self._log,
                stderr=subprocess.STDOUT,
                env=env,
                cwd=cwd,
                start_new_session=True,
                preexec_fn=preexec,
            )
        except OSError as exc:  # a missing or non-executable program: no retry can help
            reaper.forget(self.token)
            self._log.close()
            raise TargetError(
                f"cannot run {self.argv[0]!r}: {exc.strerror or exc} (command: {' '.join(self.argv)})"
            ) from None
        self.pid = self.popen.pid
        self.tree = ProcessTree(self.pid, self.token, port)
        self._stopped = False
        self.killed = False  # stop() had to SIGKILL the leader: it did not exit within the grace after SIGTERM
        self.memory = MemoryWatch(self, memory, self._over_memory) if memory else None
        with _LIVE_LOCK:
            _LIVE.add(self)

    # -- readiness ---------------------------------------------------------------------------------

    def wait_ready(
        self,
        host: str,
        port: int,
        probe: Callable[[str, int, float], bool],
        timeout: float = 30.0,
        loopback_only: bool = True,
    ) -> float:
        """Wait until ``probe(host, port, io_timeout)`` returns True; return the seconds it took.

        Raises ServerExited if the process ends first, ServerNotReady at the deadline, PortTaken when the
        answer may have come from a process that is not the server's (it listens on ``port`` too: it took
        the port between our pick and the server's bind); all carry the log tail.
        """
        start = time.monotonic()
        deadline = start + timeout
        last_error = "no connection attempt yet"
        next_check = start + 0.5
        io_timeout = 2.0  # doubled after each round trip that connected but got no answer in time: a slow server
        while True:
            code = self.popen.poll()
            if code is not None:
                raise ServerExited(
                    f"server exited with code {code} before it answered on {host}:{port} "
                    f"(command: {' '.join(self.argv)})",
                    self.log_tail(),
                )
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise ServerNotReady(
                    f"server did not answer on {host}:{port} within {timeout:.0f} s "
                    f"(last attempt: {last_error}); raise the deadline with --ready-timeout "
                    f"if it is just slow to start or to answer (command: {' '.join(self.argv)})",
                    self.log_tail(),
                )
            wait = min(io_timeout, max(0.2, remaining))
            try:
                if probe(host, port, wait):
                    self.check_port_is_ours(port)
                    self.check_listeners(host, port, ready=True, loopback_only=loopback_only)
                    return time.monotonic() - start
                last_error = "connected, but the HTTP round trip failed"
            except socket.timeout:  # connected (or connecting) and no answer within ``wait``: wait longer next time
                last_error = f"no answer within {wait:.1f} s"
                io_timeout = io_timeout * 2
            except OSError as exc:
                last_error = f"{type(exc).__name__}: {exc}"
            if time.monotonic() >= next_check:
                self.check_listeners(host, port, ready=False, loopback_only=loopback_only)
                next_check = time.monotonic() + 0.5
            time.sleep(0.05)

    # -- inspection ----------------------------------------------------------------------------------

    def alive(self) -> bool:
        return self.popen.poll() is None

    @property
    def resident(self) -> int | None:
        """The tree's resident memory at the memory watch's last sample (bytes); None without a bound."""
        return self.memory.latest if self.memory is not None else None

    @property
    def memory_exceeded(self) -> str | None:
        """The line logged when the tree passed its memory bound and was killed; None while it has not."""
        return self.memory.exceeded if self.memory is not None else None

    def _over_memory(self, message: str) -> None:
        """The memory watch's verdict: one line in the log, then SIGKILL to the group and every member."""
        self._log_line(message)
        self._signal_group(signal.SIGKILL)
        self.tree.kill_all()

    def exited_within(self, seconds: float) -> bool:
        """Whether the process has exited, waiting up to ``seconds`` for it (0: just look)."""
        if seconds > 0:
            with contextlib.suppress(subprocess.TimeoutExpired):
                self.popen.wait(timeout=seconds)
        return not self.alive()

    def log_tail(self, lines: int = 40) -> str:
        try:
            if not self._log.closed:  # closed once stopped: the file is still there to read
                self._log.flush()
            data = self.log_path.read_bytes()[-64 * 1024 :]
        except OSError:
            return ""
        return "\n".join(data.decode("utf-8", "replace").splitlines()[-lines:])

    def _tree(self) -> list:
        return self.tree.live()

    def sample(self) -> ResourceSample:
        """RSS (bytes) and CPU seconds (user + system) summed over the live process tree."""
        rss, cpu, count = 0, 0.0, 0
        for proc in self._tree():
            try:
                mem = proc.memory_info().rss
                times = proc.cpu_times()
            except psutil.Error:
                continue
            rss += mem
            cpu += (
                times.user
                + times.system
                + getattr(times, "children_user", 0.0)
                + getattr(times, "children_system", 0.0)
            )
            count += 1
        return ResourceSample(rss, cpu, count)

    def track_peak(self, interval: float = 0.2) -> "PeakTracker":
        """A context manager sampling the tree every ``interval`` s; read ``.peak_rss_bytes`` after."""
        return PeakTracker(self, interval)

    # -- stopping ------------------------------------------------------------------------------------

    def stop(self, grace: float = 5.0) -> int | None:
        """SIGTERM the leader, wait ``grace`` s, then SIGKILL the group and any descendant seen.

        Returns the exit code (negative for a signal), or None if it could not be reaped. A signal handler that
        raises while it waits (Ctrl-C, SIGTERM, a check's deadline) does not end it halfway: the tree is killed
        at once and the exception raised after; a tree not seen gone stays with the reaper (its token is not
        forgotten) and in ``_LIVE``, so ``stop_all`` tries again.
        """
        if self._stopped:
            return self.popen.returncode
        self._stopped = True
        raised: list = []
        try:
            if self.memory is not None:
                self.memory.stop()
            self._tree()
            if self.popen.poll() is None:
                self.popen.send_signal(signal.SIGTERM)
                try:
                    self.popen.wait(timeout=grace)
                except subprocess.TimeoutExpired:
                    self.killed = True
                    self._log_line(f"did not exit {grace:.1f} s after SIGTERM; sending SIGKILL")
        except BaseException as exc:  # the kill below runs whatever arrived
            raised.append(exc)
            self._log_line(f"stopping was interrupted ({type(exc).__name__}); sending SIGKILL")
        gone = False
        for _attempt in range(3):
            try:
                gone = self._kill_tree()
                break
            except BaseException as exc:  # a second signal: try again, raise the first one after
                raised.append(exc)
        self._stopped_as(gone)
        if raised:
            raise raised[0]
        return self.popen.returncode

    def _kill_tree(self) -> bool:
        """SIGKILL the group and every process of the tree; whether the leader is reaped and nothing is left."""
        # Workers may outlive their leader: the group, then every process of the tree, get SIGKILL.
        self._signal_group(signal.SIGKILL)
        strangers = self.tree.kill_all()
        if strangers:
            self._log_line(
                f"left alone: pid {', '.join(map(str, strangers))} listens on the server's "
                f"port but is not a process gatecheck started"
            )
        try:
            self.popen.wait(timeout=5)
        except subprocess.TimeoutExpired:  # pragma: no cover - unkillable (D state)
            return False
        return not [p for p in self.tree.live(scan_tokens=True) if p.pid != self.pid and _running(p)]

    def _stopped_as(self, gone: bool) -> None:
        """Close the books on a stop: a tree seen gone is forgotten by the reaper; one that is not stays with
        the reaper and in ``_LIVE`` (``stop_all`` tries again)."""
        if not gone:
            self._stopped = False
            self._log_line("some of its processes may still run: left to the reaper and to stop_all")
            return
        self.tree.close()
        reaper.forget(self.token)
        self._log_line(f"stopped, exit code {self.popen.returncode}")
        self._log.close()
        with _LIVE_LOCK:
            _LIVE.discard(self)

    def _signal_group(self, sig: int) -> None:
        try:
            os.killpg(self.pid, sig)
        except (ProcessLookupError, PermissionError):
            pass

    def _log_line(self, text: str) -> None:
        try:
            self._log.write(f"=== gatecheck: {text}\n".encode())
            self._log.flush()
        except (OSError, ValueError):
            pass

    def __enter__(self) -> ServerProcess:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()


def live_pids() -> list[int]:
    with _LIVE_LOCK:
        return [p.pid for p in _LIVE]


def stop_all(grace: float = 3.0) -> None:
    """Stop every server this process started and has not stopped yet."""
    with _LIVE_LOCK:
        procs = list(_LIVE)
    for proc in procs:
        try:
            proc.stop(grace=grace)
        except Exception:  # pragma: no cover - best effort backstop
            pass


atexit.register(stop_all)
