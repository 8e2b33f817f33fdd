"""Waitress: a pure-Python WSGI server, HTTP/1.1 only, one process with a thread pool.

Its console script (``python -m waitress``, i.e. ``waitress-serve``) parses options with ``getopt``, which
stops at the first non-option word: a flag after the app is not read, and waitress-serve then prints its
usage and exits 0. So every option (and ``args=``) goes *before* the app, which is the last word.
No TLS (Waitress has none), no worker processes, no WebSocket (WSGI).
"""

from __future__ import annotations

from ..capabilities import Capabilities
from ._base import Adapter, Launch, flag


class WaitressAdapter(Adapter):
    name = "waitress"
    package = "waitress"
    module = "waitress"
    tox_env = "waitress"
    description = "Waitress: WSGI, HTTP/1.1, one process with a thread pool"
    default_interface = "wsgi"
    default_http = "h1"
    capabilities = Capabilities(interfaces=frozenset({"wsgi"}), http1=True, threads=True, http_modes=("h1",))
    OPTIONS = {
        "threads": flag("--threads", "worker threads (Waitress's default 4)", integer=True),
        "connection-limit": flag("--connection-limit", "simultaneous connections (default 100)", integer=True),
        "channel-timeout": flag(
            "--channel-timeout", "seconds an idle connection stays open (default 120)", integer=True
        ),
        "backlog": flag("--backlog", "listen backlog (default 1024)", integer=True),
    }
    ROLES = {"keep-alive-timeout": "channel-timeout"}

    def server_args(self, target, *, app, host, port):
        # The listener only: the app is appended by launch(), after the options (see the module docstring).
        return [f"--listen={host}:{port}"]

    def launch(self, target, *, app, host, port, python, tls=None):
        # tls: unused, Waitress has no tls option (resolve() refuses tls=on)
        argv = [python, "-m", self.module] + self.server_args(target, app=app, host=host, port=port)
        argv += self.option_args(target) + [app]
        return Launch(argv=argv, env=self.server_env(target), probe_http2=False)
