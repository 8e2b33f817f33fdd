"""The servers of a session: started once per target, restarted if a check kills one, stopped at the end.

A check receives a ``Served``: where the server listens, what it declared it can do, its event log
directory and its log. The pool is the only owner of server processes in a pytest session.
"""
from __future__ import annotations

import secrets
import tempfile
from pathlib import Path

import fixtures
from servers import ServerError, ServerHandle, start_server

from .targets import SessionTarget

__all__ = ["Served", "ServerPool", "TLS"]

#: what a ``tls=on`` target listens with: the suite's test certificate (start_server ignores it otherwise)
TLS = (fixtures.TLS_CERT, fixtures.TLS_KEY)


class Served:
    """One started target as the checks see it."""

    def __init__(self, session_target: SessionTarget, handle: ServerHandle, event_dir: Path) -> None:
        self.session_target = session_target
        self.handle = handle
        self.event_dir = event_dir
        self.restart_error: str = ""

    # where and what
    target = property(lambda self: self.handle.target)
    capabilities = property(lambda self: self.handle.capabilities)
    interface = property(lambda self: self.handle.target.interface)
    host = property(lambda self: self.handle.host)
    port = property(lambda self: self.handle.port)
    url = property(lambda self: self.handle.url)
    address = property(lambda self: (self.handle.host, self.handle.port))
    versions = property(lambda self: self.handle.versions)

    @property
    def authority(self) -> str:
        return f"{self.host}:{self.port}"

    # the app's event log
    @staticmethod
    def new_token() -> str:
        return "t" + secrets.token_hex(8)

    def events(self, token: str, timeout: float = 0.0) -> list:
        return fixtures.read_events(self.event_dir, token, timeout=timeout)

    def wait_for_event(self, token: str, name: str, timeout: float = 5.0):
        return fixtures.wait_for_event(self.event_dir, token, name, timeout=timeout)

    # the server's log
    def log_size(self) -> int:
        try:
            return self.handle.log_path.stat().st_size
        except OSError:
            return 0

    def log_since(self, offset: int, limit: int = 16384) -> str:
        try:
            with open(self.handle.log_path, "rb") as fh:
                fh.seek(offset)
                data = fh.read()
        except OSError:
            return ""
        text = data.decode("utf-8", "replace")
        return text if len(text) <= limit else "[...]\n" + text[-limit:]

    def alive(self) -> bool:
        return self.handle.alive()


class ServerPool:
    """Starts each target on first use, remembers start failures, stops everything at the end."""

    def __init__(self, log_dir: Path | None, ready_timeout: float) -> None:
        self.log_dir = Path(log_dir) if log_dir else Path(tempfile.mkdtemp(prefix="gatecheck-logs-"))
        self.log_dir.mkdir(parents=True, exist_ok=True)
        self.ready_timeout = ready_timeout
        self._served: dict = {}
        self._failed: dict = {}
        self.started: list = []  # every Served ever started, for the results file

    def get(self, st: SessionTarget) -> Served:
        if st.target in self._failed:
            raise self._failed[st.target]
        served = self._served.get(st.target)
        if served is None:
            served = self._start(st)
        return served

    def _start(self, st: SessionTarget) -> Served:
        event_dir = Path(tempfile.mkdtemp(prefix="events-", dir=self.log_dir))
        try:
            handle = start_server(
                st.target,
                app=fixtures.APPS[st.interface],
                log_dir=self.log_dir,
                env={fixtures.EVENT_DIR_ENV: str(event_dir)},
                ready_timeout=self.ready_timeout,
                tls=TLS,
            )
        except ServerError as exc:
            self._failed[st.target] = exc
            raise
        served = Served(st, handle, event_dir)
        self._served[st.target] = served
        self.started.append(served)
        return served

    def restart(self, served: Served) -> None:
        """Replace a dead server in place, so the checks after the one that killed it still run."""
        served.handle.stop()
        st = served.session_target
        try:
            served.handle = start_server(
                st.target,
                app=fixtures.APPS[st.interface],
                log_dir=self.log_dir,
                env={fixtures.EVENT_DIR_ENV: str(served.event_dir)},
                ready_timeout=self.ready_timeout,
                tls=TLS,
            )
            served.restart_error = ""
        except ServerError as exc:
            served.restart_error = str(exc)

    def release(self, target) -> None:
        """Stop ``target``'s server now (its checks are done); a later :meth:`get` would start a new one."""
        served = self._served.pop(target, None)
        if served is not None:
            served.handle.stop()

    def stop_all(self) -> None:
        for served in list(self._served.values()):
            served.handle.stop()
        self._served.clear()
