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
4. A private server that exits on its own while it is in use (not stopped by its check, through ``stop()`` or
   after setting ``stopping``, and not one that may refuse to start) is a death the plugin charges to the
   running check when it fails, as an error (``private_deaths``), never a failure of the check's rule, never
   known: its check could not finish.

    with private_server(server, env={fixtures.LIFESPAN_ENV: "raise"}) as priv:
        resp = exchange(priv.address, build_request("GET", "/ping", host=priv.authority)).first
"""
from __future__ import annotations

import contextlib
import tempfile
from pathlib import Path

from gatecheck.servers import ServerError, get_adapter

from gatecheck.conformance.app.started import StartedServer
from gatecheck.conformance.spec.results import not_supported

__all__ = ["private_server", "with_workers", "private_deaths"]

_EXIT_GRACE = 0.5     # seconds a private server under a failing check gets to finish exiting
_OPEN: list = []      # the private servers inside their ``with`` now
_DEATHS: list = []    # what was found of those that exited on their own, not yet taken by the plugin


@contextlib.contextmanager
def private_server(server, *, app: str | None = None, env: dict | None = None, target=None,
                   port: int | None = None, ready_timeout: float = 20.0, expect_failure: bool = False):
    """Start ``target`` (default: the session server's own target) serving ``app`` (default: the
    fixture app for its interface) with extra ``env`` (on ``port``, default a free one); yield a
    :class:`StartedServer` (``handle`` None when it failed to start and ``expect_failure`` is set);
    always stop it. Its log goes under the session's log directory (``--server-log-dir`` when given)."""
    target = target if target is not None else server.target
    log_root, work_root = getattr(server, "log_dir", None), getattr(server, "work_dir", None)
    priv = StartedServer(target, server.capabilities, log_dir=Path(tempfile.mkdtemp(prefix="private-", dir=log_root)),
                         event_dir=Path(tempfile.mkdtemp(prefix="private-events-", dir=work_root)),
                         work_dir=Path(work_root) if work_root else Path(tempfile.gettempdir()))
    watched, failing = not expect_failure, False
    try:
        try:
            priv.start(app=app, env=env, port=port, ready_timeout=ready_timeout)
        except ServerError:
            if not expect_failure:
                raise
        if watched:
            _OPEN.append(priv)
        yield priv
    except BaseException:
        failing = True
        raise
    finally:
        if watched:  # a server dying under a failing check closes its sockets first: it gets _EXIT_GRACE to exit
            _note_if_dead(priv, _EXIT_GRACE if failing else 0.0)
            if priv in _OPEN:
                _OPEN.remove(priv)
        priv.stop()


def private_deaths() -> list:
    """What is known of each private server that exited on its own since the last call (each once: a line
    with its exit code and the end of its log), the ones still in use looked at now."""
    for priv in list(_OPEN):
        _note_if_dead(priv)
    taken = list(_DEATHS)
    _DEATHS.clear()
    return taken


def _note_if_dead(priv: StartedServer, wait: float = 0.0) -> None:
    if priv.handle is None or priv.stopping or not priv.handle.exited_within(wait):
        return  # never started, stopped by its check (or noted already), or still running
    tail = "\n".join(priv.log_text().splitlines()[-20:])
    code = priv.stop()  # what is left of its tree goes now; its exit code is kept
    _DEATHS.append(f"the private server {priv.target} exited on its own during this check (exit code {code}); "
                   f"its log ends:\n{tail}")


def with_workers(server, count: int):
    """The session server's target asked for ``count`` worker processes (its adapter's option); a target
    that cannot be asked (a command template) makes the check *unsupported*."""
    target = get_adapter(server.target.server).with_workers(server.target, count)
    if target is None:
        not_supported(f"{server.target.server} targets cannot be asked for {count} worker processes")
    return target
