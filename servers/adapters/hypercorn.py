"""Hypercorn: ASGI and WSGI; HTTP/1.1 and h2c (prior knowledge and Upgrade) on one listener."""

from __future__ import annotations

from ..capabilities import Capabilities
from ._base import Adapter, flag, tls_option


class HypercornAdapter(Adapter):
    name = "hypercorn"
    package = "hypercorn"
    module = "hypercorn"
    tox_env = "hypercorn"
    description = "Hypercorn: ASGI and WSGI; HTTP/1.1, h2c, WebSocket"
    default_interface = "asgi"
    default_http = "auto"
    capabilities = Capabilities(
        interfaces=frozenset({"asgi", "wsgi"}),
        http1=True,
        h2c=True,
        h2c_upgrade=True,
        tls=True,
        websockets=True,
        lifespan=True,
        workers=True,
        loops=("asyncio", "uvloop"),
        http_modes=("auto",),
    )
    TLS_FLAGS = ("--certfile", "--keyfile")
    OPTIONS = {
        "workers": flag("--workers", "worker processes", integer=True),
        "worker-class": flag("--worker-class", "worker class (event loop)", choices=("asyncio", "uvloop", "trio")),
        "keep-alive-timeout": flag("--keep-alive", "seconds an idle kept-alive connection stays open", integer=True),
        "tls": tls_option(),
    }
    ROLES = {"keep-alive-timeout": "keep-alive-timeout"}

    def server_args(self, target, *, app, host, port):
        # An explicit "asgi:" / "wsgi:" prefix stops Hypercorn from guessing the interface.
        return ["--bind", f"{host}:{port}", f"{target.interface}:{app}"]
