"""Granian: the Rust-core reference server for RSGI, ASGI and WSGI."""

from __future__ import annotations

from ..capabilities import Capabilities
from ._base import Adapter, Option, flag, switch, tls_option

_HTTP_FLAG = {"h1": "1", "h2": "2", "auto": "auto"}


class GranianAdapter(Adapter):
    name = "granian"
    package = "granian"
    module = "granian"
    tox_env = "granian"
    description = "Granian (Rust core): RSGI, ASGI and WSGI; HTTP/1.1 and HTTP/2"
    default_interface = "rsgi"
    default_http = "auto"
    capabilities = Capabilities(
        interfaces=frozenset({"rsgi", "asgi", "wsgi"}),
        http1=True,
        h2c=True,
        tls=True,
        websockets=True,
        lifespan=True,
        pathsend=True,
        workers=True,
        threads=True,
        loops=("auto", "asyncio", "uvloop", "rloop"),
        http_modes=("auto", "h1", "h2"),
    )
    TLS_FLAGS = ("--ssl-certificate", "--ssl-keyfile")
    OPTIONS = {
        "workers": flag("--workers", "worker processes", integer=True),
        "runtime-threads": flag("--runtime-threads", "Rust runtime threads per worker", integer=True),
        "runtime-blocking-threads": flag(
            "--runtime-blocking-threads", "runtime I/O blocking threads per worker (ASGI/RSGI)", integer=True
        ),
        "blocking-threads": flag("--blocking-threads", "blocking threads per worker (WSGI)", integer=True),
        "runtime-mode": flag("--runtime-mode", "single- or multi-threaded runtime", choices=("auto", "st", "mt")),
        "loop": flag("--loop", "event loop", choices=("auto", "asyncio", "uvloop", "rloop")),
        "task-impl": flag("--task-impl", "async task implementation", choices=("asyncio", "rust")),
        "ws": switch("--ws", "--no-ws", "WebSocket handling"),
        "backpressure": flag("--backpressure", "max concurrent requests per worker", integer=True),
        "keep-alive": switch("--http1-keep-alive", "--no-http1-keep-alive", "HTTP/1 keep-alive"),
        "header-read-timeout": Option(
            "seconds to read a request head, which bounds an idle kept-alive connection too",
            lambda v: ["--http1-header-read-timeout", str(int(v) * 1000)],
            integer=True,
        ),
        "tls": tls_option(),
    }
    ROLES = {"keep-alive-timeout": "header-read-timeout"}

    def server_args(self, target, *, app, host, port):
        return [
            "--interface",
            target.interface,
            "--host",
            host,
            "--port",
            str(port),
            "--http",
            _HTTP_FLAG[target.http],
            "--no-access-log",
            app,
        ]

    def target_capabilities(self, target):
        caps = super().target_capabilities(target)
        if target.option("ws") == "off":
            from dataclasses import replace

            caps = replace(caps, websockets=False)
        return caps
