"""Errors raised by the servers layer.

Rules of this module:
- Every error is a ``ServerError`` and carries one message that says what was expected, what happened and
  what to try next. Callers print ``str(err)`` and exit non-zero; no traceback is needed to understand it.
- Errors about the *harness or its inputs* (bad target, missing package) are kept apart from errors about
  the *server's behaviour while starting* (exited, never ready), so a broken set-up never reads as a
  non-conforming server.
"""

from __future__ import annotations

__all__ = [
    "ServerError",
    "TargetError",
    "UnknownServer",
    "ServerNotInstalled",
    "PortInUse",
    "ServerStartError",
    "ServerExited",
    "ServerNotReady",
    "PortTaken",
]


class ServerError(Exception):
    """Base class: something prevented a server from being started or stopped."""


class TargetError(ServerError, ValueError):
    """A target string or option the user typed is malformed or not accepted by the adapter."""


class UnknownServer(TargetError):
    """No adapter has this name."""


class ServerNotInstalled(ServerError):
    """The server's package is not importable by the interpreter that would run it."""


class PortInUse(ServerError):
    """The requested port is already bound by another process."""


class ServerStartError(ServerError):
    """The server process was started but did not come up; the message carries the log tail."""

    def __init__(self, message: str, log_tail: str = "") -> None:
        self.log_tail = log_tail
        if log_tail:
            message = f"{message}\n--- server log (last lines) ---\n{log_tail.rstrip()}\n---"
        super().__init__(message)


class ServerExited(ServerStartError):
    """The server process exited before it answered."""


class ServerNotReady(ServerStartError):
    """The server process is alive but did not answer before the deadline."""


class PortTaken(ServerStartError):
    """Another process (not one of the server's) listens on the port the server was given, so an answer
    on that port may not come from the server."""
