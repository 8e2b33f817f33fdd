"""uvicorn: ASGI over HTTP/1.1 (h11 or httptools parser; asyncio or uvloop)."""

from __future__ import annotations

from dataclasses import replace

from ..capabilities import Capabilities
from ._base import Adapter, flag, tls_option


class UvicornAdapter(Adapter):
    name = "uvicorn"
    package = "uvicorn"
    module = "uvicorn"
    tox_env = "uvicorn"
    description = "uvicorn: ASGI, HTTP/1.1 (h11 or httptools), WebSocket"
    default_interface = "asgi"
    default_http = "h1"
    capabilities = Capabilities(
        interfaces=frozenset({"asgi"}),
        http1=True,
        tls=True,
        websockets=True,
        lifespan=True,
        workers=True,
        loops=("asyncio", "uvloop"),
        http_modes=("h1",),
    )
    TLS_FLAGS = ("--ssl-certfile", "--ssl-keyfile")
    OPTIONS = {
        "impl": flag("--http", "HTTP/1.1 parser", choices=("h11", "httptools")),
        "loop": flag("--loop", "event loop", choices=("asyncio", "uvloop")),
        "workers": flag("--workers", "worker processes", integer=True),
        "ws": flag("--ws", "WebSocket implementation", choices=("websockets", "websockets-sansio", "wsproto", "none")),
        "lifespan": flag("--lifespan", "lifespan protocol", choices=("on", "off", "auto")),
        "keep-alive-timeout": flag(
            "--timeout-keep-alive", "seconds an idle kept-alive connection stays open", integer=True
        ),
        "forwarded-allow-ips": flag("--forwarded-allow-ips", "addresses whose X-Forwarded-* fields are trusted"),
        "tls": tls_option(),
    }
    ROLES = {"keep-alive-timeout": "keep-alive-timeout", "trusted-proxies": "forwarded-allow-ips"}

    def server_args(self, target, *, app, host, port):
        # Lifespan stays at uvicorn's default ("auto": run it, keep serving if the app rejects it), so the
        # checks see uvicorn as deployed; lifespan=on makes a lifespan failure fatal, by uvicorn's design.
        return ["--host", host, "--port", str(port), "--no-access-log", app]

    def target_capabilities(self, target):
        caps = super().target_capabilities(target)
        if target.option("ws") == "none":
            caps = replace(caps, websockets=False)
        if target.option("lifespan") == "off":
            caps = replace(caps, lifespan=False)
        return caps
