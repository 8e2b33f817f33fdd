"""gunicorn: WSGI with sync, gthread or gevent workers; ASGI with its own asgi worker (gunicorn >= 24).

``worker=gevent`` needs gevent in the server's environment (gunicorn says so in its log when it is missing).
gunicorn with uvicorn's worker class is the ``uvicorn-worker`` target (``uvicorn_worker.py``).
"""

from __future__ import annotations

from ..capabilities import Capabilities
from ..errors import TargetError
from ._base import Adapter, flag, tls_option

_WSGI_WORKERS = ("sync", "gthread", "gevent")
_ASGI_WORKERS = ("asgi",)


class GunicornAdapter(Adapter):
    name = "gunicorn"
    package = "gunicorn"
    module = "gunicorn"
    tox_env = "gunicorn"
    description = "gunicorn: WSGI (sync, gthread, gevent workers); ASGI through its asgi worker (gunicorn >= 24)"
    default_interface = "wsgi"
    default_http = "h1"
    capabilities = Capabilities(
        interfaces=frozenset({"wsgi", "asgi"}),
        http1=True,
        tls=True,
        websockets=True,
        lifespan=True,
        workers=True,
        threads=True,
        http_modes=("h1",),
    )
    TLS_FLAGS = ("--certfile", "--keyfile")
    OPTIONS = {
        "worker": flag("--worker-class", "worker class (gevent: needs gevent)", choices=_WSGI_WORKERS + _ASGI_WORKERS),
        "workers": flag("--workers", "worker processes", integer=True),
        "threads": flag("--threads", "threads per worker (gthread)", integer=True),
        "worker-connections": flag(
            "--worker-connections", "simultaneous clients per worker (gevent; default 1000)", integer=True
        ),
        "keep-alive-timeout": flag("--keep-alive", "seconds an idle kept-alive connection stays open", integer=True),
        "forwarded-allow-ips": flag("--forwarded-allow-ips", "addresses whose forwarded fields are trusted"),
        "tls": tls_option(),
    }
    ROLES = {"keep-alive-timeout": "keep-alive-timeout", "trusted-proxies": "forwarded-allow-ips"}

    def check_combination(self, target):
        worker = target.option("worker")
        if target.interface == "asgi":
            if worker not in (None, "asgi"):
                raise TargetError(
                    f"gunicorn serves ASGI only with worker=asgi, not worker={worker} "
                    f"(uvicorn's worker class: the uvicorn-worker target)"
                )
            if not _has_asgi_worker():
                raise TargetError(
                    "the installed gunicorn has no asgi worker (it arrived in gunicorn 24); "
                    "the uvicorn-worker target runs uvicorn's worker class"
                )
        elif worker == "asgi":
            raise TargetError("gunicorn worker=asgi serves ASGI; use gunicorn:asgi")

    def server_args(self, target, *, app, host, port):
        args = ["--bind", f"{host}:{port}", "--graceful-timeout", "3"]
        if target.interface == "asgi" and target.option("worker") is None:
            args += ["--worker-class", "asgi"]
        return args + [app]


def _has_asgi_worker() -> bool:
    try:
        from gunicorn.workers import SUPPORTED_WORKERS
    except ImportError:
        # Not importable here (e.g. a server in another interpreter): let the server itself decide.
        return True
    return "asgi" in SUPPORTED_WORKERS
