"""uvicorn-worker: gunicorn as the process manager, uvicorn's worker class (``uvicorn_worker.UvicornWorker``) as the
server, ASGI over HTTP/1.1 (the ``uvicorn-worker`` package, which took the class over from ``uvicorn.workers``).

A target of its own, not a gunicorn ``worker=`` value: the HTTP parser, the WebSocket and lifespan handling are
uvicorn's, so its deviations are uvicorn's, not gunicorn's, and it keeps its own expectation file. The command
is gunicorn's (``python -m gunicorn --worker-class uvicorn_worker.UvicornWorker``), TLS through gunicorn's
certificate flags, which the worker hands to uvicorn; so are gunicorn's ``--keep-alive`` and
``--forwarded-allow-ips`` (the worker builds uvicorn's ``Config`` with ``timeout_keep_alive=cfg.keepalive`` and
``forwarded_allow_ips=cfg.forwarded_allow_ips``).
"""

from __future__ import annotations

from ..capabilities import Capabilities
from ._base import flag, tls_option
from .gunicorn import GunicornAdapter

WORKER_CLASS = "uvicorn_worker.UvicornWorker"


class UvicornWorkerAdapter(GunicornAdapter):
    name = "uvicorn-worker"
    package = "uvicorn-worker"
    module = "gunicorn"
    tox_env = "uvicorn-worker"
    description = "gunicorn with uvicorn-worker's UvicornWorker: ASGI, HTTP/1.1, WebSocket"
    default_interface = "asgi"
    capabilities = Capabilities(
        interfaces=frozenset({"asgi"}),
        http1=True,
        tls=True,
        websockets=True,
        lifespan=True,
        workers=True,
        http_modes=("h1",),
    )
    OPTIONS = {
        "workers": flag("--workers", "gunicorn worker processes", integer=True),
        "keep-alive-timeout": flag("--keep-alive", "seconds an idle kept-alive connection stays open", integer=True),
        "forwarded-allow-ips": flag("--forwarded-allow-ips", "addresses whose X-Forwarded-* fields are trusted"),
        "tls": tls_option(),
    }

    def check_combination(self, target):
        pass

    def server_args(self, target, *, app, host, port):
        return ["--bind", f"{host}:{port}", "--graceful-timeout", "3", "--worker-class", WORKER_CLASS, app]
