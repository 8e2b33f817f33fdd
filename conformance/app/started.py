"""One started target, as the checks see it: the session's shared server and a check's private one alike.

A ``StartedServer`` is where a server listens, what it declared it can do, its app's event log and its own
log; it starts, restarts and stops its process through ``servers.start_server`` and the handle that
returns. It replaces the three wrappers of earlier versions (``ServerHandle`` inside ``Served`` inside
``Private``): checks read ``server.address``, ``server.authority``, ``server.events(token)`` ... and
``server.handle`` (the ``servers`` handle, for resource samples) from this one object.
"""

from __future__ import annotations

import re
import secrets
import signal
import time
from pathlib import Path

import psutil

from gatecheck import fixtures
from gatecheck.servers import ServerError, ServerHandle, ServerStartError, Target, app_for, get_adapter, start_server
from gatecheck.servers.memory import DEFAULT_BOUND

__all__ = ["StartedServer", "TLS", "read_log"]

#: what a ``tls=on`` target listens with: the suite's test certificate (start_server ignores it otherwise)
TLS = (fixtures.TLS_CERT, fixtures.TLS_KEY)


class StartedServer:
    """A target's server process (``handle`` None until started, or when its start failed)."""

    def __init__(
        self,
        target: Target,
        capabilities,
        *,
        event_dir: Path,
        log_dir: Path,
        work_dir: Path,
        session_target=None,
        memory: int | None = DEFAULT_BOUND,
    ) -> None:
        self._target = target
        self._capabilities = capabilities
        self.session_target = session_target
        self.event_dir = event_dir  # the fixture app's event log (a fresh one per StartedServer)
        self.log_dir = log_dir  # where its log goes (and the logs of private servers it spawns)
        self.work_dir = work_dir  # scratch space removed at the end of the session
        self.memory = memory  # the bound on its tree's resident memory (bytes; None: none)
        self.handle: ServerHandle | None = None
        self.error: ServerError | None = None  # the last start failure
        self.started_at = 0.0  # time.time() just before the last launch
        self.ready_at = 0.0  # time.time() when its first HTTP round trip succeeded
        self.exit_code: int | None = None
        self.starts = 0
        self.last_check = ""  # the check that used it last (set by the plugin; a restart names it)
        self.stopped_by_us = False  # stop() was called: an exit after it is not a crash
        self._launch: dict = {}

    # -- starting and stopping -----------------------------------------------------------------------

    def start(
        self, *, app: str | None = None, env: dict | None = None, ready_timeout: float = 30.0, port: int | None = None
    ) -> None:
        """Start the server and wait until ready; a failure is raised (a ServerError) and kept in ``error``."""
        app = app_for(None, self._target, app)  # the fixture app: checks judge what it reports
        self._launch = dict(app=app, env=dict(env or {}), ready_timeout=ready_timeout, port=port)
        self._start()

    def restart(self, grace: float = 5.0) -> None:
        """Stop what is left of the process (``grace`` as in ``stop``) and start it again the way it was first
        started."""
        self.stop(grace)
        self._start()

    def _start(self) -> None:
        launch = self._launch
        self.started_at = time.time()
        self.handle, self.exit_code, self.stopped_by_us = None, None, False
        try:
            self.handle = start_server(
                self._target,
                app=launch["app"],
                log_dir=self.log_dir,
                port=launch["port"],
                env={fixtures.EVENT_DIR_ENV: str(self.event_dir), **launch["env"]},
                ready_timeout=launch["ready_timeout"],
                tls=TLS,
                memory=self.memory,
            )
        except ServerError as exc:
            self.error = exc
            raise
        except OSError as exc:  # e.g. the command's program does not exist
            what = f"{exc.strerror}: {exc.filename!r}" if exc.filename else str(exc)
            self.error = ServerStartError(f"could not launch its command ({what})")
            raise self.error from None
        self.error = None
        self.starts += 1
        self.ready_at = time.time()

    def stop(self, grace: float = 5.0) -> int | None:
        """Stop the server and its tree (idempotent); return its exit code."""
        self.stopped_by_us = True
        if self.handle is not None and self.exit_code is None:
            self.exit_code = self.handle.stop(grace)
        return self.exit_code

    def alive(self) -> bool:
        return self.handle is not None and self.handle.alive()

    # -- crashes -------------------------------------------------------------------------------------

    def members(self) -> dict:
        """pid -> create time of every live process of the server (its leader, its workers)."""
        if self.handle is None:
            return {}
        found = {}
        for proc in self.handle.process.tree.live():
            try:
                found[proc.pid] = proc.create_time()
            except psutil.Error:
                continue
        return found

    def crash(self, before: dict | None = None, grace: float = 0.0) -> str | None:
        """What says the server died unasked, or None: the leader exited without :meth:`stop` (waited up to
        ``grace`` s), or a process of ``before`` (a :meth:`members` taken earlier) vanished while the leader
        lives on (a worker died; its master may already have replaced it)."""
        if self.handle is None or self.stopped_by_us:
            return None
        if self.handle.exited_within(grace):
            code = self.handle.process.popen.returncode
            return f"the server process exited (exit code {code}{_signal_name(code)})"
        if before:
            gone = self._faulted(sorted(pid for pid, created in before.items() if not _alive(pid, created)))
            if gone:
                return (
                    f"server process{'es' if len(gone) > 1 else ''} {', '.join(map(str, gone))} of "
                    f"{self.target} vanished (a worker died; the server itself lives on)"
                )
        return None

    def _faulted(self, gone: list) -> list:
        """The vanished workers that died: all of them, unless the adapter's master stops idle workers on
        purpose (``Adapter.WORKER_FAULT``); then those its log names as died."""
        if not gone:
            return gone
        try:
            pattern = getattr(get_adapter(self.target.server), "WORKER_FAULT", "")
        except Exception:  # a server with no adapter of its own (--server-cmd): every vanished worker died
            pattern = ""
        if not pattern:
            return gone
        log = self.last_log_lines(400)
        return [pid for pid in gone if re.search(pattern.format(pid=pid), log)]

    def last_log_lines(self, lines: int = 30) -> str:
        """The last lines the server logged (a crash often logs nothing while the check ran)."""
        return self.handle.log_tail(lines) if self.handle is not None else ""

    # -- what the fixture app refused ------------------------------------------------------------------

    def refusals(self, since: int = 0) -> list:
        """The fixture app's refusals (``fixtures.REFUSALS``) from the ``since``-th on: requests it could not
        run (a script it could not read, an invalid token), with what it was handed."""
        return fixtures.read_events(self.event_dir, fixtures.REFUSALS)[since:]

    # -- where and what ------------------------------------------------------------------------------

    @property
    def target(self) -> Target:
        return self.handle.target if self.handle is not None else self._target

    @property
    def capabilities(self):
        return self.handle.capabilities if self.handle is not None else self._capabilities

    interface = property(lambda self: self.target.interface)
    host = property(lambda self: self.handle.host)
    port = property(lambda self: self.handle.port)
    url = property(lambda self: self.handle.url)
    address = property(lambda self: (self.handle.host, self.handle.port))
    authority = property(lambda self: f"{self.handle.host}:{self.handle.port}")
    versions = property(lambda self: self.handle.versions if self.handle is not None else {})

    # -- the app's event log -------------------------------------------------------------------------

    @staticmethod
    def new_token() -> str:
        return "t" + secrets.token_hex(8)

    def events(self, token: str, timeout: float = 0.0) -> list:
        """The app's events for ``token`` (a script it refused raises ``CheckError``: ``view.refused``)."""
        from gatecheck.conformance.app.events import refused

        return refused(fixtures.read_events(self.event_dir, token, timeout=timeout))

    def wait_for_event(self, token: str, name: str, timeout: float = 5.0):
        return fixtures.wait_for_event(self.event_dir, token, name, timeout=timeout)

    def lifespan_events(self) -> list:
        """What the fixture app logged about lifespan (token ``lifespan``)."""
        return fixtures.read_events(self.event_dir, "lifespan")

    # -- the server's log ----------------------------------------------------------------------------

    def log_size(self) -> int:
        try:
            return self.handle.log_path.stat().st_size
        except (OSError, AttributeError):
            return 0

    def log_since(self, offset: int, limit: int = 16384) -> str:
        return read_log(self.handle.log_path, offset, limit) if self.handle is not None else ""

    def log_text(self) -> str:
        """The whole server log (or, when it never started, the logs in its directory or the start error)."""
        if self.handle is not None:
            return self.log_since(0, limit=1 << 20)
        logs = sorted(self.log_dir.glob("*.log"))
        text = "".join(p.read_text("utf-8", "replace") for p in logs)
        return text or str(self.error or "")

    def __repr__(self) -> str:
        state = "running" if self.alive() else ("failed" if self.error else "stopped")
        return f"<StartedServer {self.target} {state}>"


def _signal_name(code) -> str:
    if isinstance(code, int) and code < 0:
        try:
            return f", killed by {signal.Signals(-code).name}"
        except ValueError:
            return f", killed by signal {-code}"
    return ""


def _alive(pid: int, created: float) -> bool:
    try:
        proc = psutil.Process(pid)
        return proc.create_time() == created and proc.status() != psutil.STATUS_ZOMBIE
    except psutil.Error:
        return False


def read_log(path: Path, offset: int, limit: int = 16384) -> str:
    """A log from ``offset`` on, its last ``limit`` characters."""
    try:
        with open(path, "rb") as fh:
            fh.seek(offset)
            data = fh.read()
    except OSError:
        return ""
    text = data.decode("utf-8", "replace")
    return text if len(text) <= limit else "[...]\n" + text[-limit:]
