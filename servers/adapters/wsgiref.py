"""wsgiref: the stdlib's reference WSGI server (``wsgiref.simple_server``), HTTP/1.0 framing, one process.

It has no command line of its own: the target runs the launcher script ``servers/launchers/wsgiref_server.py``
(by path, with the target's interpreter), which does what its documentation shows, ``make_server(host, port,
app).serve_forever()``: one request at a time on one thread; ``threading=on`` serves each connection on its own
thread (``socketserver.ThreadingMixIn``). Its version is the interpreter's: wsgiref ships with Python.
"""

from __future__ import annotations

import subprocess
from functools import lru_cache

from ..capabilities import Capabilities
from ..launchers import script
from ..staging import child_env, child_root
from ._base import Adapter, Launch, Option


class WsgirefAdapter(Adapter):
    name = "wsgiref"
    package = "wsgiref"  # the stdlib's: its version is the interpreter's (version() below)
    module = "wsgiref"  # what the launcher imports: it runs a script by path, not ``python -m``
    tox_env = "wsgiref"
    description = "wsgiref.simple_server (stdlib reference server): WSGI, one request at a time unless threading=on"
    default_interface = "wsgi"
    default_http = "h1"
    WORKERS_OPTION = ""
    capabilities = Capabilities(interfaces=frozenset({"wsgi"}), http1=True, threads=True, http_modes=("h1",))
    OPTIONS = {
        "threading": Option(
            "a thread per connection (socketserver.ThreadingMixIn; default off)",
            lambda v: ["--threading", v],
            ("on", "off"),
        )
    }

    def server_args(self, target, *, app, host, port):
        return ["--host", host, "--port", str(port), "--app", app]

    def launch(self, target, *, app, host, port, python, tls=None):
        # tls: unused, wsgiref has no TLS (resolve() refuses tls=on)
        argv = [python, script("wsgiref_server")] + self.server_args(target, app=app, host=host, port=port)
        return Launch(argv=argv + self.option_args(target), env=self.server_env(target), probe_http2=False)

    def version(self, python=None):
        import sys

        return _python_version(python or sys.executable)

    def install_hint(self) -> str:
        return "wsgiref is in the standard library of every Python 3 interpreter"


@lru_cache(maxsize=None)
def _python_version(python: str) -> str | None:
    code = "import platform; print(platform.python_version())"
    try:
        out = subprocess.run(
            [python, "-c", code],
            capture_output=True,
            text=True,
            timeout=30,
            stdin=subprocess.DEVNULL,
            env=child_env(),
            cwd=child_root(),
        )
    except (OSError, subprocess.TimeoutExpired):
        return None
    return (out.stdout.strip() or None) if out.returncode == 0 else None
