"""Twisted Web's WSGI resource: ``twist web --wsgi``, HTTP/1.1, one process, the app on the reactor's thread pool.

Run as ``python -m twisted web --listen tcp:port=PORT:interface=HOST --wsgi package.module.app``: ``--wsgi`` takes
the app's fully qualified name with dots, so ``module:attribute`` becomes ``module.attribute``. Logs are plain
text at ``warn`` and above (Twisted's default is JSON at ``info``, a line per request). No TLS and no HTTP/2
through this command line (both need an ``ssl:`` listener; h2 only over TLS).
"""

from __future__ import annotations

from ..capabilities import Capabilities
from ._base import Adapter


class TwistedAdapter(Adapter):
    name = "twisted"
    package = "twisted"
    module = "twisted"
    tox_env = "twisted"
    description = "Twisted Web (twist web --wsgi): WSGI, HTTP/1.1, the app on the reactor's thread pool"
    default_interface = "wsgi"
    default_http = "h1"
    WORKERS_OPTION = ""
    capabilities = Capabilities(interfaces=frozenset({"wsgi"}), http1=True, threads=True, http_modes=("h1",))
    OPTIONS = {}

    def server_args(self, target, *, app, host, port):
        interface = host.replace(":", "\\:")  # strports escapes the colons of an IPv6 address
        return [
            "--log-format",
            "text",
            "--log-level",
            "warn",
            "web",
            "--listen",
            f"tcp:port={port}:interface={interface}",
            "--wsgi",
            app.replace(":", "."),
        ]
