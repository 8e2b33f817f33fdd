"""uWSGI: a C application server embedding Python; WSGI over HTTP/1.1 in two modes.

- ``mode=router`` (default, ``--http``): uWSGI's HTTP router process parses HTTP and forwards each request
  to the worker over the uwsgi protocol. It closes the connection after every response unless
  ``keep-alive=on`` (``--http-keepalive``: persistent, non-pipelined connections).
- ``mode=socket`` (``--http-socket``): the worker parses HTTP itself, no router in front; the connection is
  closed after every response (``--http11-socket`` would keep it open: ``keep-alive=on`` selects it).

What every target gets: ``--master`` (a master supervises the worker), ``--die-on-term`` (SIGTERM stops
uWSGI; without it uWSGI 2.0 treats SIGTERM as a brutal reload and keeps running), ``--need-app`` (exit when
the app cannot be loaded, instead of serving 500s), ``--lazy-apps`` (the app is imported in each worker
after the fork, not in the master, as the other servers' workers do), ``--enable-threads`` (the app's own
Python threads run) and ``--disable-logging`` (no per-request log lines). One worker process with one
thread unless ``processes=``/``threads=`` say otherwise.

uWSGI is a program, not a Python module: the command is the ``uwsgi`` executable next to the target's
interpreter (pip installs it there; it is built from source, with a C compiler and the interpreter's
headers). When that interpreter belongs to a virtualenv, ``--virtualenv`` points the embedded Python at it.
No TLS (uWSGI's needs an OpenSSL build), no HTTP/2, no WebSocket through the WSGI fixture.
"""

from __future__ import annotations

from pathlib import Path

from ..capabilities import Capabilities
from ..errors import ServerNotInstalled
from ._base import Adapter, Launch, Option, flag

# (mode, keep-alive) -> the listener flag, plus the router's keep-alive switch
_LISTENER = {
    ("router", "off"): ["--http"],
    ("router", "on"): ["--http-keepalive", "--http"],
    ("socket", "off"): ["--http-socket"],
    ("socket", "on"): ["--http11-socket"],
}
_FIXED = ["--master", "--die-on-term", "--need-app", "--lazy-apps", "--enable-threads", "--disable-logging"]


class UwsgiAdapter(Adapter):
    name = "uwsgi"
    package = "uwsgi"
    module = "uwsgi"  # the executable's name (see the module docstring), not a Python module
    tox_env = "uwsgi"
    description = "uWSGI: WSGI, HTTP/1.1 through its HTTP router (mode=router) or in the worker (mode=socket)"
    default_interface = "wsgi"
    default_http = "h1"
    WORKERS_OPTION = "processes"
    capabilities = Capabilities(
        interfaces=frozenset({"wsgi"}), http1=True, workers=True, threads=True, http_modes=("h1",)
    )
    OPTIONS = {
        # mode and keep-alive choose the listener flags in server_args; they render no flags of their own
        "mode": Option(
            "router (--http, a router process in front) or socket (--http-socket, in the worker)",
            lambda v: [],
            ("router", "socket"),
        ),
        "keep-alive": Option(
            "persistent connections: router --http-keepalive, socket --http11-socket", lambda v: [], ("on", "off")
        ),
        "processes": flag("--processes", "worker processes (default 1)", integer=True),
        "threads": flag("--threads", "threads per worker (default 1)", integer=True),
    }

    def server_args(self, target, *, app, host, port):
        mode = target.option("mode") or "router"
        keep_alive = target.option("keep-alive") or "off"
        return _LISTENER[mode, keep_alive] + [f"{host}:{port}", "--module", app] + _FIXED

    def launch(self, target, *, app, host, port, python, tls=None):
        # tls: unused, uWSGI has no tls option here (resolve() refuses tls=on)
        argv = [str(uwsgi_executable(python))] + self.server_args(target, app=app, host=host, port=port)
        venv = _virtualenv_of(python)
        if venv:
            argv += ["--virtualenv", str(venv)]
        argv += self.option_args(target)
        return Launch(argv=argv, env=self.server_env(target), probe_http2=False)

    def ensure_installed(self, python=None):
        version = super().ensure_installed(python)
        if python and not uwsgi_executable(python).exists():
            raise ServerNotInstalled(
                f"uwsgi {version} is installed for {python} but its executable {uwsgi_executable(python)} is "
                f"missing: {self.install_hint()}"
            )
        return version


def uwsgi_executable(python: str) -> Path:
    """The ``uwsgi`` program pip installed beside ``python`` (its scripts directory)."""
    return Path(python).parent / "uwsgi"


def _virtualenv_of(python: str) -> Path | None:
    """The virtualenv ``python`` belongs to (its ``pyvenv.cfg`` one level above bin/), or None."""
    root = Path(python).parent.parent
    return root if (root / "pyvenv.cfg").exists() else None
