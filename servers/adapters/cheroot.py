"""cheroot: the CherryPy project's pure-Python WSGI server, HTTP/1.1 only, one process with a thread pool.

cheroot ships no ``cheroot`` console script for a WSGI app in every version, but ``python -m cheroot``
(``cheroot.cli``, argparse) takes ``--bind HOST:PORT`` and the app as ``module:attribute`` in all the versions
gatecheck tests (>= 11). argparse reads options on either side of the app; the app stays last anyway.
No TLS through this command line (cheroot's TLS adapters need Python code), no worker processes, no
WebSocket (WSGI).
"""

from __future__ import annotations

from ..capabilities import Capabilities
from ._base import Adapter, flag


class CherootAdapter(Adapter):
    name = "cheroot"
    package = "cheroot"
    module = "cheroot"
    tox_env = "cheroot"
    description = "cheroot (CherryPy's server): WSGI, HTTP/1.1, one process with a thread pool"
    default_interface = "wsgi"
    default_http = "h1"
    capabilities = Capabilities(interfaces=frozenset({"wsgi"}), http1=True, threads=True, http_modes=("h1",))
    OPTIONS = {
        "threads": flag("--threads", "minimum worker threads (cheroot's default 10)", integer=True),
        "max-threads": flag("--max-threads", "maximum worker threads (default: unbounded)", integer=True),
        "timeout": flag("--timeout", "seconds an accepted connection may stay idle (default 10)", integer=True),
        "request-queue-size": flag("--request-queue-size", "listen backlog (default 5)", integer=True),
    }

    def server_args(self, target, *, app, host, port):
        return ["--bind", f"{host}:{port}", app]
