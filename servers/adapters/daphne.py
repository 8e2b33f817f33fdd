"""Daphne: the Django Channels ASGI server (HTTP/1.1 and WebSocket on plain listeners)."""

from __future__ import annotations

from ..capabilities import Capabilities
from ._base import Adapter


class DaphneAdapter(Adapter):
    name = "daphne"
    package = "daphne"
    module = "daphne"
    tox_env = "daphne"
    description = "Daphne: ASGI, HTTP/1.1, WebSocket (HTTP/2 only over TLS)"
    default_interface = "asgi"
    default_http = "h1"
    # Daphne does not implement the lifespan protocol.
    capabilities = Capabilities(interfaces=frozenset({"asgi"}), http1=True, websockets=True, http_modes=("h1",))
    OPTIONS = {}

    def server_args(self, target, *, app, host, port):
        return ["--bind", host, "--port", str(port), app]
