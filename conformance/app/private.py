"""A private server for one check (or one module): same target as the session's, its own app, env and log.

Some checks need a server the session's shared one cannot be: another app (the ASGI 2 double callable),
another environment (``GATECHECK_LIFESPAN=fail``), or one the check will stop itself (shutdown order).
Rules of this module:

1. Always a context manager: the server is stopped on every exit path, by its own handle (SIGTERM to its
   process group, then SIGKILL) — never by name.
2. It gets a fresh event directory, so the ``lifespan`` token and every other token are its own; its log
   goes under the session's log directory, its events under the session's scratch directory (both removed
   at the end unless ``--server-log-dir`` keeps the logs).
3. A start failure is returned, not raised, when ``expect_failure`` is set: checks about servers that
   *should* refuse to start (startup failed) look at the exit and the log instead.
4. Every private server started is remembered (:func:`take_started`) until the session's plugin takes the list
   after the check: one that exited unasked while the check ran (``expect_failure`` aside: such a server is
   meant to exit; one its check stopped, ``stopped_by_us``, did not exit unasked) crashed of the check's
   requests, unless no connection of the check reached it since it was launched: it was found dead before
   the check used it, and the check is an error (never known, never a plain failure). The fixture app's
   refusals in its event log are read too. A server dying under a failing check closes its sockets first: it
   gets ``_EXIT_GRACE`` to finish exiting before it is judged.

    with private_server(server, env={fixtures.LIFESPAN_ENV: "raise"}) as priv:
        resp = exchange(priv.address, build_request("GET", "/ping", host=priv.authority)).first
"""

from __future__ import annotations

import contextlib
import tempfile
from pathlib import Path

from gatecheck.conformance.app.started import StartedServer
from gatecheck.conformance.spec.results import not_supported
from gatecheck.servers import ServerError, get_adapter
from gatecheck.servers.memory import DEFAULT_BOUND

__all__ = ["private_server", "with_workers", "with_role", "take_started", "PrivateRun"]

_EXIT_GRACE = 0.5  # seconds a private server under a failing check gets to finish exiting


class PrivateRun:
    """What the plugin needs of one private server once the check is over: the server, and how it ended."""

    def __init__(self, started: StartedServer, may_exit: bool) -> None:
        self.started, self.may_exit = started, may_exit
        self.crash: str | None = None  # set when it is stopped: it had exited unasked (rule 4)
        self.log_tail = ""
        self.address: tuple = ()  # where it listened (for the plugin: did the check connect to it)


_STARTED: list = []


def take_started() -> list:
    """The :class:`PrivateRun` of every private server started since the last call (rule 4)."""
    runs = list(_STARTED)
    _STARTED.clear()
    return runs


@contextlib.contextmanager
def private_server(
    server,
    *,
    app: str | None = None,
    env: dict | None = None,
    target=None,
    port: int | None = None,
    ready_timeout: float = 20.0,
    expect_failure: bool = False,
):
    """Start ``target`` (default: the session server's own target) serving ``app`` (default: the
    fixture app for its interface) with extra ``env`` (on ``port``, default a free one); yield a
    :class:`StartedServer` (``handle`` None when it failed to start and ``expect_failure`` is set);
    always stop it. Its log goes under the session's log directory (``--server-log-dir`` when given)."""
    target = target if target is not None else server.target
    log_root, work_root = getattr(server, "log_dir", None), getattr(server, "work_dir", None)
    priv = StartedServer(
        target,
        server.capabilities,
        log_dir=Path(tempfile.mkdtemp(prefix="private-", dir=log_root)),
        event_dir=Path(tempfile.mkdtemp(prefix="private-events-", dir=work_root)),
        work_dir=Path(work_root) if work_root else Path(tempfile.gettempdir()),
        memory=getattr(server, "memory", DEFAULT_BOUND),
    )
    run = PrivateRun(priv, may_exit=expect_failure)
    _STARTED.append(run)
    failing = False
    try:
        try:
            priv.start(app=app, env=env, port=port, ready_timeout=ready_timeout)
        except ServerError:
            if not expect_failure:
                raise
        yield priv
    except BaseException:
        failing = True
        raise
    finally:
        if not run.may_exit:
            run.crash = priv.crash(grace=_EXIT_GRACE if failing else 0.0)
            run.log_tail = priv.last_log_lines() if run.crash else ""
            run.address = priv.address if priv.handle is not None else ()
        priv.stop()


def with_workers(server, count: int):
    """The session server's target asked for ``count`` worker processes (its adapter's option); a target
    that cannot be asked (a command template) makes the check *unsupported*."""
    target = get_adapter(server.target.server).with_workers(server.target, count)
    if target is None:
        not_supported(f"{server.target.server} targets cannot be asked for {count} worker processes")
    return target


def with_role(server, role: str, value: str):
    """The session server's target with the option that plays ``role`` (``Adapter.ROLES``: a keep-alive timeout,
    the trusted proxies) set to ``value``; a server without such an option makes the check *unsupported*."""
    target = get_adapter(server.target.server).with_role(server.target, role, value)
    if target is None:
        not_supported(f"{server.target.server} targets have no {role} option gatecheck can set")
    return target
