"""Turning the command line into the session's targets.

    --server granian:asgi --server uvicorn:asgi          (repeatable)
    --server-cmd "myserver --port {port} {app}" --interface asgi [--http h1] [--features h2c,websockets]

With neither, the session checks Granian's three interfaces with its defaults.
"""

from __future__ import annotations

import shlex
from dataclasses import dataclass

from gatecheck.servers import Capabilities, Target, TargetError, resolve

__all__ = ["SessionTarget", "targets_from_options", "DEFAULT_TARGETS"]

DEFAULT_TARGETS = ("granian:rsgi", "granian:asgi", "granian:wsgi")


@dataclass(frozen=True)
class SessionTarget:
    """A resolved target with what it declares it can do, known before any server starts."""

    target: Target
    capabilities: Capabilities

    @property
    def id(self) -> str:
        return self.target.id

    @property
    def interface(self) -> str:
        return self.target.interface


def targets_from_options(
    servers: list, server_cmd: str | None, interface: str | None, http: str | None, features: str | None
) -> list:
    texts = list(servers or [])
    result = []
    for text in texts:
        result.append(_session_target(Target.parse(text)))
    if server_cmd:
        if not interface:
            raise TargetError("--server-cmd needs --interface asgi|rsgi|wsgi")
        try:
            shlex.split(server_cmd)
        except ValueError as exc:
            raise TargetError(f"--server-cmd {server_cmd!r}: {exc} (an unbalanced quote?)") from None
        options = [("cmd", server_cmd)]
        if features:
            options.append(("features", features))
        result.append(_session_target(Target("command", interface, http or "h1", tuple(options))))
    elif interface or features:
        raise TargetError("--interface and --features go with --server-cmd")
    if not result:
        result = [_session_target(Target.parse(t)) for t in DEFAULT_TARGETS]
    seen = set()
    unique = []
    for st in result:
        if st.target not in seen:
            seen.add(st.target)
            unique.append(st)
    ids: dict = {}
    for st in unique:
        other = ids.setdefault(st.id, st.target)
        if other != st.target:
            raise TargetError(
                f"two targets are both called {st.id!r} ({other} and {st.target}); "
                f"give them distinct names with the name= option (e.g. name=second)"
            )
    return unique


def _session_target(target: Target) -> SessionTarget:
    adapter, resolved = resolve(target)
    if not resolved.interface:
        # e.g. robyn: a framework with its own server and app, there for load profiles only
        raise TargetError(
            f"{target}: {adapter.name} serves no asgi/rsgi/wsgi app, so no check applies to it ({adapter.description})"
        )
    return SessionTarget(resolved, adapter.target_capabilities(resolved))
