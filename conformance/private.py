"""A private server for one check (or one module): same target as the session's, its own app, env and log.

Some checks need a server the session's shared one cannot be: another app (the ASGI 2 double callable),
another environment (``GATECHECK_LIFESPAN=fail``), or one the check will stop itself (shutdown order).
Rules of this module:

1. Always a context manager: the server is stopped on every exit path, by its own handle (SIGTERM to its
   process group, then SIGKILL) — never by name.
2. It gets a fresh event directory, so the ``lifespan`` token and every other token are its own.
3. A start failure is returned, not raised, when ``expect_failure`` is set: checks about servers that
   *should* refuse to start (startup failed) look at the exit and the log instead.

    with private_server(server, env={fixtures.LIFESPAN_ENV: "raise"}) as priv:
        resp = exchange(priv.address, build_request("GET", "/ping", host=priv.authority)).first
"""
from __future__ import annotations

import contextlib
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

import fixtures
from servers import ServerError, ServerHandle, start_server

from .served import TLS

__all__ = ["Private", "private_server"]


@dataclass
class Private:
    """A privately started server (``handle`` None when it failed to start)."""

    handle: ServerHandle | None
    event_dir: Path
    log_dir: Path
    error: ServerError | None = None
    started_at: float = 0.0       # time.time() just before the launch
    ready_at: float = 0.0         # time.time() when the first HTTP round trip succeeded
    exit_code: int | None = field(default=None)

    address = property(lambda self: (self.handle.host, self.handle.port))
    authority = property(lambda self: f"{self.handle.host}:{self.handle.port}")
    host = property(lambda self: self.handle.host)
    port = property(lambda self: self.handle.port)

    def events(self, token: str, timeout: float = 0.0) -> list:
        return fixtures.read_events(self.event_dir, token, timeout=timeout)

    def lifespan_events(self) -> list:
        """What the fixture app logged about lifespan (token ``lifespan``)."""
        return fixtures.read_events(self.event_dir, "lifespan")

    def log_text(self) -> str:
        """The whole server log (or the start error's log tail when it never started)."""
        if self.handle is not None:
            try:
                return self.handle.log_path.read_text("utf-8", "replace")
            except OSError:
                return ""
        logs = sorted(self.log_dir.glob("*.log"))
        text = "".join(p.read_text("utf-8", "replace") for p in logs)
        return text or str(self.error or "")

    def stop(self, grace: float = 5.0) -> int | None:
        """Stop the server (idempotent); return its exit code."""
        if self.handle is not None and self.exit_code is None:
            self.exit_code = self.handle.stop(grace)
        return self.exit_code


@contextlib.contextmanager
def private_server(server, *, app: str | None = None, env: dict | None = None, target=None,
                   port: int | None = None, ready_timeout: float = 20.0, expect_failure: bool = False):
    """Start ``target`` (default: the session server's own target) serving ``app`` (default: the
    fixture app for its interface) with extra ``env`` (on ``port``, default a free one); yield a
    :class:`Private`; always stop it."""
    target = target if target is not None else server.target
    app = app or fixtures.APPS[target.interface]
    base = Path(tempfile.mkdtemp(prefix="private-"))
    event_dir = base / "events"
    log_dir = base / "logs"
    event_dir.mkdir()
    log_dir.mkdir()
    child_env = {fixtures.EVENT_DIR_ENV: str(event_dir), **(env or {})}
    started_at = time.time()
    try:
        handle = start_server(target, app=app, log_dir=log_dir, env=child_env, port=port,
                              ready_timeout=ready_timeout, tls=TLS)
    except ServerError as exc:
        if not expect_failure:
            raise
        yield Private(None, event_dir, log_dir, error=exc, started_at=started_at)
        return
    priv = Private(handle, event_dir, log_dir, started_at=started_at, ready_at=time.time())
    try:
        yield priv
    finally:
        priv.stop()
