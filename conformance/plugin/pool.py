"""The servers of a session: each target started once, restarted when it dies, stopped at the end.

Rules of this module:

1. The pool is the only owner of the session's server processes; one ``StartedServer`` per target.
2. A target that fails to start is not launched again: its first failure is the reason every later
   check of that target reports (the full message once, then a one-line reference to it).
3. A server found dead (during a check or between two) is restarted, and the restart reported (``on_restart``:
   the results and the summary say it); when the restart fails, that failure (with the log tail) becomes the
   target's reason, as in rule 2.
4. Once ``stopping`` is set (Ctrl-C, SIGTERM, the end of the session), nothing starts or restarts.
5. Its directories are its own: the event logs live in a scratch directory removed at the end (by the server
   reaper when the session is killed); the server logs too, unless the user named a ``--server-log-dir``,
   which is kept.
"""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path

from gatecheck.conformance.app.started import StartedServer
from gatecheck.conformance.plugin.targets import SessionTarget
from gatecheck.servers import Target
from gatecheck.servers.memory import DEFAULT_BOUND
from gatecheck.servers.reaper import remove_after_death, removed

__all__ = ["ServerPool", "StartFailed"]


class StartFailed(Exception):
    """A target's server could not be started (or restarted); ``str()`` is the message for the check."""


class ServerPool:
    """Starts each target on first use, remembers start failures, stops and cleans up at the end."""

    def __init__(self, log_dir: str | Path | None, ready_timeout: float, memory: int | None = DEFAULT_BOUND) -> None:
        self.keep_logs = log_dir is not None
        self.work_dir = Path(tempfile.mkdtemp(prefix="gatecheck-"))
        remove_after_death(str(self.work_dir))  # a killed session's scratch goes too
        self.log_dir = Path(log_dir) if log_dir else self.work_dir / "logs"
        self.log_dir.mkdir(parents=True, exist_ok=True)
        self.ready_timeout = ready_timeout
        self.memory = memory  # the bound on each server's resident memory (--server-memory)
        self.stopping = False
        self._servers: dict = {}
        self._failed: dict = {}  # target -> (first message, times reported)
        self.on_start = None  # called with each StartedServer once it is up (the results' targets)
        self.on_restart = None  # called with each StartedServer found dead, before it is started again

    def get(self, st: SessionTarget) -> StartedServer:
        """The ``StartedServer`` of ``st``, started now (or restarted, if it died) unless its target failed
        or the session is stopping (StartFailed then); a start failure is kept for :meth:`check`."""
        started = self._servers.get(st.target)
        if self.stopping and not (started is not None and started.alive()):
            raise StartFailed(f"the session is stopping: the server for {st.target} is not started again")
        if started is None:
            started = StartedServer(
                st.target,
                st.capabilities,
                session_target=st,
                log_dir=self.log_dir,
                work_dir=self.work_dir,
                event_dir=Path(tempfile.mkdtemp(prefix="events-", dir=self.work_dir)),
                memory=self.memory,
            )
            self._servers[st.target] = started
            self._launch(started, lambda: started.start(ready_timeout=self.ready_timeout))
        elif not started.alive() and st.target not in self._failed:
            if self.on_restart is not None and started.handle is not None:
                self.on_restart(started)  # reported before anything of the dead one is gone
            self._launch(started, started.restart)
        return started

    def _launch(self, started: StartedServer, how) -> None:
        verb = "restarted" if started.starts else "started"
        try:
            how()
        except Exception as exc:  # a ServerError, or anything else a launch raised: one reason, kept
            self._failed[started.target] = [f"the server for {started.target} could not be {verb}: {exc}", 0]
            return
        if self.on_start is not None:
            self.on_start(started)

    def check(self, target: Target) -> None:
        """Raise StartFailed when ``target`` cannot be served: the whole reason the first time, then one line."""
        failure = self._failed.get(target)
        if failure is None:
            started = self._servers.get(target)
            if started is not None and not started.alive():
                why = "the session is stopping" if self.stopping else "it exited as soon as it was (re)started"
                raise StartFailed(f"the server for {target} is not running: {why}")
            return
        failure[1] += 1
        if failure[1] == 1:
            raise StartFailed(failure[0])
        first_line = failure[0].splitlines()[0]
        raise StartFailed(f"{first_line} (not tried again; the first check of {target} shows the log)")

    def release(self, target: Target) -> None:
        """Stop ``target``'s server now (its checks are done); a later :meth:`get` would start a new one."""
        started = self._servers.pop(target, None)
        if started is not None:
            started.stop()

    def stop_all(self) -> None:
        self.stopping = True
        for started in list(self._servers.values()):
            started.stop()
        self._servers.clear()

    def cleanup(self) -> None:
        """Remove the scratch directory (the logs with it, unless they went to a --server-log-dir)."""
        shutil.rmtree(self.work_dir, ignore_errors=True)
        removed(str(self.work_dir))
