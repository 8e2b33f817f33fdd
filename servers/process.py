"""One server process: start it in its own process group, wait until it answers, sample it, stop it.

Rules of this module:
- The process is started with ``start_new_session=True``: it leads its own process group, so the terminal's
  Ctrl-C does not reach it and ``killpg`` reaches every worker it forks. It also gets ``PR_SET_PDEATHSIG``
  (SIGTERM), so if the harness itself is killed the server leader is told to stop.
- Ready means a TCP connect *and* one HTTP round trip succeeded before one deadline; never a sleep.
- Stop is SIGTERM to the leader (as an operator's ``kill <pid>``: the server's own master stops its workers
  gracefully, e.g. Hypercorn runs lifespan shutdown only then), a grace period, then SIGKILL to the group
  and to every descendant seen, by PID. Nothing else is ever signalled: only processes this module started.
- Every live process is in ``_LIVE`` until stopped, so ``stop_all()`` (atexit, signal handlers, pytest
  hooks) is a backstop for every exit path.
"""
from __future__ import annotations

import atexit
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

from .errors import ServerExited, ServerNotReady

try:
    import psutil
except ImportError:  # pragma: no cover - psutil is a declared dependency
    psutil = None

__all__ = ["ServerProcess", "ResourceSample", "PeakTracker", "stop_all", "live_pids"]

_LIVE: "set[ServerProcess]" = set()
_LIVE_LOCK = threading.Lock()


@dataclass(frozen=True)
class ResourceSample:
    """Resident memory and CPU time of a whole process tree at one moment."""

    rss_bytes: int
    cpu_seconds: float
    processes: int


def _pdeathsig() -> None:
    """Runs in the child before exec: ask the kernel to SIGTERM it if the parent dies."""
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG
    except Exception:  # pragma: no cover - non-Linux
        pass


class ServerProcess:
    """A started server process; use ``wait_ready`` then ``stop`` (or the context manager)."""

    def __init__(
        self,
        argv: Sequence[str],
        *,
        log_path: Path,
        env: dict | None = None,
        cwd: str | os.PathLike | None = None,
        cpus: Sequence[int] | None = None,
    ) -> None:
        self.argv = list(argv)
        self.log_path = Path(log_path)
        self.log_path.parent.mkdir(parents=True, exist_ok=True)
        self._log = open(self.log_path, "ab")
        self._log.write(f"=== gatecheck: starting {' '.join(self.argv)}\n".encode())
        self._log.flush()
        cpu_set = sorted(set(cpus)) if cpus else None

        def preexec() -> None:
            _pdeathsig()
            if cpu_set:
                os.sched_setaffinity(0, cpu_set)

        self.cpus = cpu_set
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
        self.pid = self.popen.pid
        self._seen_pids: set[int] = {self.pid}
        self._stopped = False
        with _LIVE_LOCK:
            _LIVE.add(self)

    # -- readiness ---------------------------------------------------------------------------------

    def wait_ready(
        self,
        host: str,
        port: int,
        probe: Callable[[str, int, float], bool],
        timeout: float = 30.0,
    ) -> float:
        """Wait until ``probe(host, port, io_timeout)`` returns True; return the seconds it took.

        Raises ServerExited if the process ends first, ServerNotReady at the deadline; both carry the
        log tail.
        """
        start = time.monotonic()
        deadline = start + timeout
        last_error = "no connection attempt yet"
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
                    f"if it is just slow to start (command: {' '.join(self.argv)})",
                    self.log_tail(),
                )
            try:
                if probe(host, port, min(2.0, max(0.2, remaining))):
                    self._remember_children()
                    return time.monotonic() - start
                last_error = "connected, but the HTTP round trip failed"
            except OSError as exc:
                last_error = f"{type(exc).__name__}: {exc}"
            time.sleep(0.05)

    # -- inspection ----------------------------------------------------------------------------------

    def alive(self) -> bool:
        return self.popen.poll() is None

    def log_tail(self, lines: int = 40) -> str:
        try:
            self._log.flush()
            data = self.log_path.read_bytes()[-64 * 1024 :]
        except OSError:
            return ""
        return "\n".join(data.decode("utf-8", "replace").splitlines()[-lines:])

    def _tree(self) -> list:
        if psutil is None:
            return []
        try:
            root = psutil.Process(self.pid)
            procs = [root] + root.children(recursive=True)
        except psutil.Error:
            return []
        self._seen_pids.update(p.pid for p in procs)
        return procs

    def _remember_children(self) -> None:
        self._tree()

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
            cpu += times.user + times.system + getattr(times, "children_user", 0.0) + getattr(
                times, "children_system", 0.0
            )
            count += 1
        return ResourceSample(rss, cpu, count)

    def track_peak(self, interval: float = 0.2) -> "PeakTracker":
        """A context manager sampling the tree every ``interval`` s; read ``.peak_rss_bytes`` after."""
        return PeakTracker(self, interval)

    # -- stopping ------------------------------------------------------------------------------------

    def stop(self, grace: float = 5.0) -> int | None:
        """SIGTERM the leader, wait ``grace`` s, then SIGKILL the group and any descendant seen.

        Returns the exit code (negative for a signal), or None if it could not be reaped.
        """
        if self._stopped:
            return self.popen.returncode
        self._stopped = True
        self._tree()
        try:
            if self.popen.poll() is None:
                self.popen.send_signal(signal.SIGTERM)
                try:
                    self.popen.wait(timeout=grace)
                except subprocess.TimeoutExpired:
                    self._log_line(f"did not exit {grace:.1f} s after SIGTERM; sending SIGKILL")
            # Workers may outlive their leader; the group and every PID seen get SIGKILL.
            self._signal_group(signal.SIGKILL)
            for pid in sorted(self._seen_pids - {self.pid}):
                _kill_if_ours(pid)
            try:
                self.popen.wait(timeout=5)
            except subprocess.TimeoutExpired:  # pragma: no cover - unkillable (D state)
                return None
            return self.popen.returncode
        finally:
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


def _kill_if_ours(pid: int) -> None:
    """SIGKILL a descendant we saw earlier, unless its PID was reused by an unrelated process."""
    if psutil is None:
        return
    try:
        proc = psutil.Process(pid)
        if proc.status() == psutil.STATUS_ZOMBIE:
            return
        proc.kill()
    except psutil.Error:
        pass


class PeakTracker:
    """Samples a ServerProcess in a background thread; gives peak RSS and CPU seconds used."""

    def __init__(self, proc: ServerProcess, interval: float) -> None:
        self._proc = proc
        self._interval = interval
        self._stop = threading.Event()
        self.peak_rss_bytes = 0
        self.cpu_seconds = 0.0
        self._cpu_start = 0.0
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        while not self._stop.wait(self._interval):
            self._take()

    def _take(self) -> ResourceSample:
        sample = self._proc.sample()
        self.peak_rss_bytes = max(self.peak_rss_bytes, sample.rss_bytes)
        self.cpu_seconds = max(self.cpu_seconds, sample.cpu_seconds - self._cpu_start)
        return sample

    def __enter__(self) -> PeakTracker:
        first = self._proc.sample()
        self._cpu_start = first.cpu_seconds
        self.peak_rss_bytes = first.rss_bytes
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join(timeout=5)
        self._take()


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


def port_is_free(host: str, port: int) -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        try:
            sock.bind((host, port))
        except OSError:
            return False
    return True


def free_port(host: str = "127.0.0.1") -> int:
    """A port the kernel considers free right now (a race with other processes is possible; the
    launcher retries on a bind failure)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind((host, 0))
        return sock.getsockname()[1]
