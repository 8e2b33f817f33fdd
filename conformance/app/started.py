"""One started target, as the checks see it: the session's shared server and a check's private one alike.

A ``StartedServer`` is where a server listens, what it declared it can do, its app's event log and its own
log; it starts, restarts and stops its process through ``servers.start_server`` and the handle that
returns. It replaces the three wrappers of earlier versions (``ServerHandle`` inside ``Served`` inside
``Private``): checks read ``server.address``, ``server.authority``, ``server.events(token)`` ... and
``server.handle`` (the ``servers`` handle, for resource samples) from this one object.
"""
from __future__ import annotations

import secrets
import time
from pathlib import Path

from gatecheck import fixtures
from gatecheck.servers import ServerError, ServerHandle, ServerStartError, Target, app_for, start_server

__all__ = ["StartedServer", "TLS", "read_log"]

#: what a ``tls=on`` target listens with: the suite's test certificate (start_server ignores it otherwise)
TLS = (fixtures.TLS_CERT, fixtures.TLS_KEY)


class StartedServer:
    """A target's server process (``handle`` None until started, or when its start failed)."""

    def __init__(self, target: Target, capabilities, *, event_dir: Path, log_dir: Path, work_dir: Path,
                 session_target=None) -> None:
        self._target = target
        self._capabilities = capabilities
        self.session_target = session_target
        self.event_dir = event_dir     # the fixture app's event log (a fresh one per StartedServer)
        self.log_dir = log_dir         # where its log goes (and the logs of private servers it spawns)
        self.work_dir = work_dir       # scratch space removed at the end of the session
        self.handle: ServerHandle | None = None
        self.error: ServerError | None = None   # the last start failure
        self.started_at = 0.0          # time.time() just before the last launch
        self.ready_at = 0.0            # time.time() when its first HTTP round trip succeeded
        self.exit_code: int | None = None
        self.starts = 0
        self.last_check = ""           # the check that used it last (set by the plugin)
        self.stopping = False          # stop() was called
        self._launch: dict = {}

    # -- starting and stopping -----------------------------------------------------------------------

    def start(self, *, app: str | None = None, env: dict | None = None, ready_timeout: float = 30.0,
              port: int | None = None) -> None:
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
        self.handle, self.exit_code, self.stopping = None, None, False
        try:
            self.handle = start_server(
                self._target, app=launch["app"], log_dir=self.log_dir, port=launch["port"],
                env={fixtures.EVENT_DIR_ENV: str(self.event_dir), **launch["env"]},
                ready_timeout=launch["ready_timeout"], tls=TLS)
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
        if self.handle is not None and self.exit_code is None:
            self.stopping = True  # from now on its exit is ours (a check may stop it from another thread)
            self.exit_code = self.handle.stop(grace)
        return self.exit_code

    def alive(self) -> bool:
        return self.handle is not None and self.handle.alive()

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
        return fixtures.read_events(self.event_dir, token, timeout=timeout)

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
