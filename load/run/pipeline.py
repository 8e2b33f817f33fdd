"""One pipeline for every server load/ measures, shared by the runner and the gate: start -> check the route
-> measure -> record.

Rules of this module:
- What a server is started with is a :class:`ServerSetup`: the resolved :class:`gatecheck.servers.Target`
  (parsed once from argv or a profile row, resolved once, by :func:`setup_for`), the app it serves and its
  environment. Nothing after :func:`setup_for` parses or splits a target again: it reads the object.
- The app a target serves is chosen by ``gatecheck.servers.app_for`` (the one place for every layer): the
  case's own app if it names one, else a framework adapter's own program (robyn), else the fixture app.
- :class:`Pipeline` holds the seams (``start_fn`` = ``servers.start_server``, ``check_fn`` =
  ``load.run.measure.check_route``, ``measure_fn`` = ``load.run.measure.measure``, and for WebSocket routes
  ``check_ws_fn``/``broadcast_fn`` = ``load.run.wsbroadcast``'s) with the CPU pinning, the oha
  binary and the output folder (``logs/``, ``bodies/``), so the runner and the gate start, check and measure
  servers the same way; the gate's tests pass fakes. The record step is ``load.records.results.append_record``.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Callable, Mapping, Optional, Sequence, Tuple

from gatecheck.servers import Target

__all__ = ["ServerSetup", "setup_for", "Pipeline"]

EnvItems = Tuple[Tuple[str, str], ...]


def _env_items(env: Mapping[str, str] | EnvItems | None) -> EnvItems:
    return tuple(sorted(dict(env or {}).items()))


@dataclass(frozen=True)
class ServerSetup:
    """A server as it is started: a resolved target, the app it serves and extra environment variables."""

    target: Target
    app: str
    env: EnvItems = ()

    @property
    def http2(self) -> bool:
        """The target speaks HTTP/2 only (h2c with prior knowledge), so oha must too."""
        return self.target.http == "h2"

    def with_env(self, extra: Mapping[str, str]) -> ServerSetup:
        """A copy whose environment also has ``extra`` (replacing what it names)."""
        return replace(self, env=_env_items({**dict(self.env), **extra})) if extra else self


def setup_for(
    target: Target, *, app: Optional[str] = None, env: Mapping[str, str] | EnvItems | None = None
) -> ServerSetup:
    """Resolve ``target`` (defaults filled in, options validated: ServerError otherwise) and choose its app."""
    from gatecheck.servers import app_for, resolve

    adapter, resolved = resolve(target)
    return ServerSetup(resolved, app_for(adapter, resolved, app), _env_items(env))


def _default_start(*args: Any, **kwargs: Any) -> Any:
    from gatecheck.servers import start_server

    return start_server(*args, **kwargs)


def _default_check(*args: Any, **kwargs: Any) -> None:
    from .measure import check_route

    check_route(*args, **kwargs)


def _default_measure(*args: Any, **kwargs: Any) -> Any:
    from .measure import measure

    return measure(*args, **kwargs)


def _default_check_ws(*args: Any, **kwargs: Any) -> None:
    from .wsbroadcast import check_broadcast

    check_broadcast(*args, **kwargs)


def _default_broadcast(*args: Any, **kwargs: Any) -> Any:
    from .wsbroadcast import broadcast

    return broadcast(*args, **kwargs)


@dataclass
class Pipeline:
    """Start, check and measure servers: where logs and request bodies go, which CPUs, which oha."""

    out_dir: Path
    server_cpus: Optional[Sequence[int]] = None
    oha_cpus: Optional[Sequence[int]] = None
    oha: Optional[Path] = None  # None: load.run.oha.find_oha
    python: Optional[str] = None  # the server's interpreter unless start() is given one
    request_timeout: float = 10.0
    start_fn: Callable[..., Any] = field(default=_default_start)
    check_fn: Callable[..., None] = field(default=_default_check)
    measure_fn: Callable[..., Any] = field(default=_default_measure)
    check_ws_fn: Callable[..., None] = field(default=_default_check_ws)
    broadcast_fn: Callable[..., Any] = field(default=_default_broadcast)

    @property
    def workdir(self) -> Path:
        """Where request body files are written."""
        return Path(self.out_dir) / "bodies"

    def start(
        self,
        setup: ServerSetup,
        *,
        python: Optional[str] = None,
        env: Optional[Mapping[str, str]] = None,
        wrap: Sequence[str] = (),
        ready_timeout: Optional[float] = None,
    ) -> Any:
        """Start ``setup``'s server (pinned to the server CPUs) from ``python`` (default: the pipeline's),
        with ``env`` added to the setup's own environment, under ``wrap`` when given (a counted server runs
        under valgrind: ``load.run.counting``); returns the server handle."""
        setup = setup.with_env(env or {})
        extra = {k: v for k, v in (("wrap", tuple(wrap)), ("ready_timeout", ready_timeout)) if v}
        return self.start_fn(
            setup.target,
            app=setup.app,
            log_dir=Path(self.out_dir) / "logs",
            env=dict(setup.env),
            cpus=list(self.server_cpus) if self.server_cpus else None,
            python=python or self.python,
            **extra,
        )

    def check(self, srv: Any, route: Any, *, http2: bool) -> None:
        """A few requests one by one: RouteCheckError unless each got the route's expected answer. A WebSocket
        route gets a small broadcast instead (``load.run.wsbroadcast.check_broadcast``: BroadcastError)."""
        if getattr(route, "kind", "http") == "ws":  # the gate's tests pass route names
            self.check_ws_fn(srv, route)
            return
        self.check_fn(srv, route, http2=http2, oha=self.oha, workdir=self.workdir)

    def measure(
        self,
        srv: Any,
        route: Any,
        concurrency: int,
        duration: Optional[float] = None,
        *,
        requests: Optional[int] = None,
        http2: bool = False,
        h2_parallel: int = 1,
    ) -> Any:
        """One oha run at ``concurrency`` for ``duration`` s (or ``requests``): a :class:`load.run.measure.LoadRun`."""
        return self.measure_fn(
            srv,
            route,
            concurrency,
            duration,
            requests=requests,
            http2=http2,
            h2_parallel=h2_parallel,
            oha_cpus=self.oha_cpus,
            server_cpus=self.server_cpus,
            oha=self.oha,
            request_timeout=self.request_timeout,
            workdir=self.workdir,
        )

    def broadcast(self, srv: Any, route: Any, clients: int, messages: int) -> Any:
        """One WebSocket broadcast run (``clients`` × ``messages``), the client pinned where oha would be: a
        :class:`load.run.wsbroadcast.BroadcastRun`."""
        return self.broadcast_fn(srv, route, clients, messages, client_cpus=self.oha_cpus, server_cpus=self.server_cpus)
