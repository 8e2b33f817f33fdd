"""Starting a target: resolve it, pick a loopback port, launch, wait until ready, hand back a handle.

    with start_server(Target.parse("granian:asgi"), app="gatecheck.fixtures.apps.asgi:app", log_dir=tmp) as srv:
        httpx.get(srv.url + "/ping")

Rules: loopback only unless ``allow_remote=True`` (checked on what the server's processes actually listen
on once it answered, since an option such as ``args=--host 0.0.0.0`` can override the host); a port we pick
ourselves is retried when another process grabs it between our check and the server's bind (the server
exits on its bind error, or a process not of the server's answered there: PortTaken); every failure is a
ServerError with the log tail.
"""

from __future__ import annotations

import os
import sys
import tempfile
import time
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Sequence

from .capabilities import Capabilities
from .errors import PortInUse, PortTaken, ServerExited, TargetError
from .memory import DEFAULT_BOUND, parse_size
from .probe import probe_for
from .process import PeakTracker, ResourceSample, ServerProcess, free_port, port_is_free
from .registry import get_adapter
from .staging import child_env as isolated_env
from .staging import child_root, hand_over
from .target import Target

__all__ = ["start_server", "ServerHandle", "resolve", "app_for", "python_for"]

_LOOPBACK = ("127.0.0.1", "::1", "localhost")


def resolve(target: Target | str) -> tuple:
    """(adapter, resolved target) — defaults filled in and options validated."""
    if isinstance(target, str):
        target = Target.parse(target)
    adapter = get_adapter(target.server)
    return adapter, adapter.resolve(target)


def app_for(adapter, target: Target, app: str | None = None) -> str:
    """The one place that chooses what a server is started with: ``app`` if given, else the adapter's own
    program (a framework's server, e.g. robyn), else the fixture app of the target's interface."""
    from gatecheck import fixtures

    if app:
        return app
    own = getattr(adapter, "own_app", "")
    if own:
        return own
    try:
        return fixtures.APPS[target.interface or ""]
    except KeyError:
        raise TargetError(
            f"target {target} names no interface, so there is no fixture app to serve; "
            f"give one, e.g. {target.server}:asgi"
        ) from None


def python_for(target: Target, python: str | os.PathLike | None = None) -> str:
    """The interpreter that runs the server: the ``python`` argument, the target's ``python=`` option,
    or the harness's own. A virtualenv directory means its ``bin/python``."""
    chosen = python or target.option("python") or sys.executable
    path = Path(chosen).expanduser()
    if path.is_dir():
        path = path / "bin" / "python"
    if not path.exists():
        raise TargetError(f"interpreter {str(path)!r} does not exist (from python={chosen!r})")
    if not path.is_file() or not os.access(path, os.X_OK):
        raise TargetError(
            f"interpreter {str(path)!r} is not an executable file (from python={chosen!r}); "
            f"give a Python interpreter or a virtualenv directory"
        )
    if str(path) != sys.executable:
        _check_is_python(str(path), chosen)
    return str(path)


@lru_cache(maxsize=None)
def _check_is_python(interpreter: str, chosen: str) -> None:
    """Run ``interpreter -c ...`` once: a TargetError if it is not a Python interpreter."""
    import subprocess

    code = "import sys; print('gatecheck-python', sys.version_info[0])"
    try:
        out = subprocess.run(
            [interpreter, "-c", code], capture_output=True, text=True, timeout=30, stdin=subprocess.DEVNULL
        )
        ok = out.stdout.startswith("gatecheck-python 3")
        why = f"it printed {(out.stdout + out.stderr).strip()[:120]!r}, exit code {out.returncode}"
    except (OSError, subprocess.TimeoutExpired) as exc:
        ok, why = False, str(exc)
    if not ok:
        raise TargetError(
            f"{interpreter!r} is not a Python 3 interpreter (from python={chosen!r}; running it "
            f"with -c failed: {why}); give a Python interpreter or a virtualenv directory"
        )


@dataclass
class ServerHandle:
    """A running server: where it listens, what it can do, and its process."""

    target: Target
    capabilities: Capabilities
    host: str
    port: int
    process: ServerProcess
    python: str
    versions: dict = field(default_factory=dict)
    ready_seconds: float = 0.0
    tls: tuple | None = None  # (certificate path, key path) when the listener speaks TLS

    @property
    def url(self) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        scheme = "https" if self.tls else "http"
        return f"{scheme}://{host}:{self.port}"

    @property
    def pid(self) -> int:
        return self.process.pid

    @property
    def log_path(self) -> Path:
        return self.process.log_path

    def log_tail(self, lines: int = 40) -> str:
        return self.process.log_tail(lines)

    def sample(self) -> ResourceSample:
        return self.process.sample()

    def track_peak(self, interval: float = 0.2) -> PeakTracker:
        return self.process.track_peak(interval)

    def alive(self) -> bool:
        return self.process.alive()

    @property
    def memory_exceeded(self) -> str | None:
        """The log line of a server killed for passing its memory bound (``memory.py``); None otherwise."""
        return self.process.memory_exceeded

    def exited_within(self, seconds: float) -> bool:
        return self.process.exited_within(seconds)

    def stop(self, grace: float = 5.0) -> int | None:
        return self.process.stop(grace)

    def __enter__(self) -> ServerHandle:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()


def start_server(
    target: Target | str,
    *,
    app: str,
    log_dir: str | os.PathLike | None = None,
    host: str = "127.0.0.1",
    port: int | None = None,
    env: dict | None = None,
    cpus: Sequence[int] | None = None,
    python: str | os.PathLike | None = None,
    ready_timeout: float = 30.0,
    allow_remote: bool = False,
    tls: tuple | None = None,
    memory: int | str | None = DEFAULT_BOUND,
    wrap: Sequence[str] = (),
) -> ServerHandle:
    """Start ``target`` serving ``app`` and return once it answered one HTTP request.

    ``tls`` is (certificate path, key path) for a target with ``tls=on`` (ignored otherwise): servers
    ships no certificate of its own. ``memory`` bounds the resident memory of the server's process tree
    (bytes, a size such as ``"4G"``, or None/``"off"``: ``memory.py``); the target's ``memory=`` option wins.
    ``wrap`` is a command the server's command line runs under (e.g.
    valgrind and its options): the wrapper must exec the server in place, so the leader stays its process."""
    adapter, target = resolve(target)
    bound = _bound(target, memory)
    _check_where(host, port, ready_timeout, allow_remote)
    interpreter = python_for(target, python)
    version = adapter.ensure_installed(interpreter)
    log_dir = Path(log_dir) if log_dir else Path(tempfile.mkdtemp(prefix="gatecheck-"))
    if port is not None and not port_is_free(host, port):
        raise PortInUse(f"port {port} on {host} is already in use; pick another port or omit it to get a free one")
    child_env, cwd = _child_env(adapter.name, env)

    attempts = 1 if port is not None else 3
    for attempt in range(attempts):
        chosen = port if port is not None else free_port(host)
        launch = adapter.launch(target, app=app, host=host, port=chosen, python=interpreter, tls=tls)
        if launch.run_as:
            _hand_over_event_log(child_env, launch.run_as)
        proc = ServerProcess(
            [*wrap, *launch.argv],
            log_path=log_dir / f"{_log_stem(target)}-{chosen}.log",
            env={**child_env, **launch.env},
            cwd=cwd,
            cpus=cpus,
            port=chosen,
            memory=bound,
        )
        took = _wait_ready(
            proc, launch, host, chosen, ready_timeout, allow_remote, retry=port is None and attempt + 1 < attempts
        )
        if took is None:
            continue
        return _handle(adapter, target, launch, proc, host, chosen, interpreter, version, took, tls)
    raise AssertionError("unreachable: the last attempt raises")  # pragma: no cover


def _handle(
    adapter,
    target: Target,
    launch,
    proc: ServerProcess,
    host: str,
    port: int,
    interpreter: str,
    version: str,
    took: float,
    tls: tuple | None,
) -> ServerHandle:
    """The handle of a server that answered: what it is, where it listens, and the versions that run it."""
    versions = {adapter.package or adapter.name: version, "python": _python_version(interpreter)}
    return ServerHandle(
        target=target,
        capabilities=adapter.target_capabilities(target),
        host=host,
        port=port,
        process=proc,
        python=interpreter,
        versions=versions,
        ready_seconds=took,
        tls=tuple(tls) if launch.tls else None,
    )


def _wait_ready(
    proc: ServerProcess, launch, host: str, port: int, ready_timeout: float, allow_remote: bool, *, retry: bool
) -> float | None:
    """Seconds until ``proc`` answered; None when it lost its port to a clash and another attempt may follow
    (``retry``). Any other failure stops it and is raised."""
    try:
        probe = probe_for(launch.probe_http2, launch.tls)
        return proc.wait_ready(host, port, probe, timeout=ready_timeout, loopback_only=not allow_remote)
    except (ServerExited, PortTaken) as exc:
        proc.stop()
        if retry and (isinstance(exc, PortTaken) or _looks_like_port_clash(exc.log_tail)):
            time.sleep(0.1)
            return None
        raise
    except BaseException:
        proc.stop()
        raise


def _bound(target: Target, memory: int | str | None) -> int | None:
    """The memory bound in bytes (None: none): the target's ``memory=`` option, else ``memory``."""
    given = target.option("memory", memory)
    try:
        return parse_size(given) if given is not None else None
    except ValueError as exc:
        raise TargetError(str(exc)) from None


def _hand_over_event_log(env: dict, user: str) -> None:
    """A server whose processes drop to ``user`` writes the fixture app's event log as that user."""
    from gatecheck import fixtures

    hand_over(env.get(fixtures.EVENT_DIR_ENV), user)


def _check_where(host: str, port: int | None, ready_timeout: float, allow_remote: bool) -> None:
    """Refuse a port that is not one, a readiness deadline that is not positive, a non-loopback host."""
    if port is not None and not (isinstance(port, int) and 1 <= port <= 65535):
        raise TargetError(f"port {port!r} is not a TCP port (1-65535); omit it to get a free one")
    if not ready_timeout > 0:
        raise TargetError(f"ready timeout {ready_timeout!r} s: give a number of seconds greater than 0")
    if host not in _LOOPBACK and not allow_remote:
        raise TargetError(f"refusing to listen on {host!r}: gatecheck uses loopback only unless allow_remote=True")


def _child_env(adapter_name: str, env: dict | None) -> tuple[dict, str]:
    """The server's environment and working directory.

    The server sees its own environment and the staged fixture apps only (servers/staging.py); a command
    target runs where the user runs gatecheck (its command line may name files relative to it) and keeps
    the user's PYTHONPATH after the fixture apps (its modules may live there)."""
    child_env = isolated_env()
    if adapter_name == "command" and os.environ.get("PYTHONPATH"):
        child_env["PYTHONPATH"] += os.pathsep + os.environ["PYTHONPATH"]
    child_env["PYTHONUNBUFFERED"] = "1"
    # stdio as tox and a UTF-8 locale other than C.UTF-8 give it (strict errors), so that a server whose
    # wsgi.errors is sys.stdout meets the same stream in and outside tox (C.UTF-8 alone gives surrogateescape)
    child_env.setdefault("PYTHONIOENCODING", "utf-8")
    cwd = os.getcwd() if adapter_name == "command" else child_root()
    child_env.update(env or {})
    return child_env, cwd


def _log_stem(target: Target) -> str:
    """A file-name-safe stem for the target's log; long ids (a long --server-cmd) are cut and hashed."""
    stem = target.id.replace(":", "_")
    if len(stem) > 80:
        import hashlib

        stem = f"{stem[:64]}-{hashlib.sha1(stem.encode()).hexdigest()[:12]}"
    return stem


def _looks_like_port_clash(log_tail: str) -> bool:
    text = log_tail.lower()
    return "address already in use" in text or "addrinuse" in text or "errno 98" in text


def _python_version(interpreter: str) -> str:
    if interpreter == sys.executable:
        return ".".join(map(str, sys.version_info[:3]))
    import subprocess

    try:
        out = subprocess.run(
            [interpreter, "-c", "import sys; print('.'.join(map(str, sys.version_info[:3])))"],
            capture_output=True,
            text=True,
            timeout=30,
            stdin=subprocess.DEVNULL,
        )
        return out.stdout.strip() or "unknown"
    except (OSError, subprocess.TimeoutExpired):
        return "unknown"
