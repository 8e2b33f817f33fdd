"""gevent.pywsgi: gevent's WSGI server (``gevent.pywsgi.WSGIServer``), HTTP/1.1, one process, a greenlet per
connection.

gevent ships no command line for it, so the target runs the launcher script ``servers/launchers/gevent_pywsgi.py``
(by path, with the target's interpreter): ``monkey.patch_all()`` first (``monkey=off`` leaves the stdlib alone),
then the app, then ``WSGIServer((host, port), app).serve_forever()``. TLS with the launcher's certificate.
gunicorn's gevent worker is another target: ``gunicorn:wsgi?worker=gevent``.
"""

from __future__ import annotations

from ..capabilities import Capabilities
from ..launchers import script
from ._base import Adapter, Launch, Option, flag, tls_option


class GeventAdapter(Adapter):
    name = "gevent"
    package = "gevent"
    module = "gevent"  # what the launcher imports: it runs a script by path, not ``python -m``
    tox_env = "gevent"
    description = "gevent.pywsgi: WSGI, HTTP/1.1, a greenlet per connection (monkey-patched by default)"
    default_interface = "wsgi"
    default_http = "h1"
    WORKERS_OPTION = ""
    capabilities = Capabilities(interfaces=frozenset({"wsgi"}), http1=True, tls=True, http_modes=("h1",))
    TLS_FLAGS = ("--certfile", "--keyfile")
    OPTIONS = {
        "monkey": Option(
            "gevent.monkey.patch_all() before the app is imported (default on)",
            lambda v: ["--monkey", v],
            ("on", "off"),
        ),
        "spawn": flag("--spawn", "requests served at once (a gevent pool; default unbounded)", integer=True),
        "tls": tls_option(),
    }

    def server_args(self, target, *, app, host, port):
        return ["--host", host, "--port", str(port), "--app", app]

    def launch(self, target, *, app, host, port, python, tls=None):
        argv = [python, script("gevent_pywsgi")] + self.server_args(target, app=app, host=host, port=port)
        argv += self.tls_args(target, tls) + self.option_args(target)
        return Launch(argv=argv, env=self.server_env(target), probe_http2=False, tls=self.uses_tls(target))
