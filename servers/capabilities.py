"""What a server (and one target of it) can do.

An adapter declares ``Capabilities`` for its server as a whole; ``adapter.target_capabilities(target)``
narrows them to one started configuration (``granian:asgi:h2?ws=off`` has no HTTP/1.1 and no WebSocket).
Checks ask for features by name (``needs("h2c", "websockets")``); a missing one is reported as
*not supported*, never as a pass.
"""

from __future__ import annotations

from dataclasses import dataclass, field, fields

__all__ = ["Capabilities", "FEATURES"]

# Feature names a check may require, with their meaning (shown by ``python -m gatecheck.servers``).
FEATURES = {
    "http1": "serves HTTP/1.1 on the plain listener",
    "h2c": "serves HTTP/2 over cleartext with prior knowledge",
    "h2c_upgrade": "accepts 'Upgrade: h2c' from HTTP/1.1",
    "tls": "can serve TLS (and ALPN h2 when HTTP/2 is on)",
    "websockets": "serves WebSocket connections (ASGI/RSGI)",
    "lifespan": "runs the ASGI lifespan protocol",
    "pathsend": "advertises the ASGI http.response.pathsend extension",
    "workers": "can run several worker processes",
    "threads": "can run several threads per worker",
}


@dataclass(frozen=True)
class Capabilities:
    interfaces: frozenset = field(default_factory=frozenset)
    http1: bool = True
    h2c: bool = False
    h2c_upgrade: bool = False
    tls: bool = False
    websockets: bool = False
    lifespan: bool = False
    pathsend: bool = False
    workers: bool = False
    threads: bool = False
    loops: tuple = ()
    http_modes: tuple = ("h1",)

    def has(self, feature: str) -> bool:
        if feature not in FEATURES:
            raise KeyError(f"unknown feature {feature!r}; known: {', '.join(FEATURES)}")
        return bool(getattr(self, feature))

    def missing(self, *features: str) -> list[str]:
        """The features of ``features`` this server lacks, in the order asked."""
        return [f for f in features if not self.has(f)]

    def features(self) -> list[str]:
        return [f.name for f in fields(self) if f.name in FEATURES and getattr(self, f.name)]
