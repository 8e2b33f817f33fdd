"""The fixture routes a load profile can name, and what a correct answer to each looks like.

Rules of this module:
- One row per route of the fixture contract (``fixtures/apps``); profiles refer to routes by these names.
- A route knows its request (method, path, body size) and its expected answer (status and body size), so the
  runner can check a route answers correctly before loading it: a benchmark of a broken route is worthless.
- Request bodies are deterministic bytes written once per run directory (``body_file``).
- ``{jpeg}`` in a path stands for the static JPEG of ``fixtures/static``, found when the route is resolved.
- The payload sizes and the static folder are fixtures' own (``gatecheck.fixtures.SIZES``, ``STATIC_DIR``),
  imported, never re-derived here.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from pathlib import Path

from gatecheck import fixtures

__all__ = ["RouteSpec", "ROUTES", "route", "RouteError"]


class RouteError(LookupError):
    """An unknown route name, or a route whose static file is missing."""


@dataclass(frozen=True)
class RouteSpec:
    """One request to load a server with, and the answer that makes it a valid benchmark."""

    name: str
    path: str
    method: str = "GET"
    body_size: int = 0
    expect_status: int = 200
    expect_size: int | None = None  # response body bytes; None: not checked (e.g. JSON spacing varies)
    label: str = ""  # how the seed tables name it, e.g. "get 1KB"
    kind: str = "http"  # "ws": a WebSocket route, loaded by load.run.wsbroadcast instead of oha

    def __post_init__(self) -> None:
        if not self.path.startswith("/"):
            raise ValueError(f"route path must start with '/': {self.path!r}")
        if self.kind not in ("http", "ws"):
            raise ValueError(f"route {self.name!r}: kind must be 'http' or 'ws', got {self.kind!r}")
        if self.method not in ("GET", "POST", "PUT", "HEAD"):
            raise ValueError(f"unsupported method {self.method!r}")
        if self.body_size and self.method == "GET":
            raise ValueError(f"route {self.name!r}: a GET with a body")

    def body_file(self, directory: Path) -> Path | None:
        """Write (once) and return the request body file for oha ``-D``; None when there is no body."""
        if not self.body_size:
            return None
        directory.mkdir(parents=True, exist_ok=True)
        path = directory / f"body-{self.body_size}.bin"
        if not path.exists() or path.stat().st_size != self.body_size:
            pattern = b"gatecheck-body-0123456789abcdef\n"
            data = (pattern * (self.body_size // len(pattern) + 1))[: self.body_size]
            path.write_bytes(data)
        return path

    def resolve(self, static: Path | None = None) -> RouteSpec:
        """Fill ``{jpeg}`` with the fixture JPEG's name and its size as the expected body size."""
        if "{jpeg}" not in self.path:
            return self
        folder = static or fixtures.STATIC_DIR
        jpegs = sorted(p for p in folder.glob("*") if p.suffix.lower() in (".jpg", ".jpeg")) if folder.is_dir() else []
        if not jpegs:
            raise RouteError(f"route {self.name!r} needs a JPEG in {folder}, found none")
        jpeg = jpegs[0]
        return replace(self, path=self.path.replace("{jpeg}", jpeg.name), expect_size=jpeg.stat().st_size)

    def to_dict(self) -> dict:
        return {
            "name": self.name,
            "method": self.method,
            "path": self.path,
            "body_size": self.body_size,
            "expect_status": self.expect_status,
            "expect_size": self.expect_size,
            "kind": self.kind,
        }


def _sizes() -> list[RouteSpec]:
    """The payload and echo routes at each of fixtures' sizes (``1k`` -> /b1k, /s1k, echo1k, echo_iter1k)."""
    rows = []
    for suffix, size in fixtures.SIZES.items():
        label = suffix.upper() + "B"  # 10B, 1KB, 10KB, 100KB, as the seed tables write them
        rows.append(RouteSpec(f"b{suffix}", f"/b{suffix}", expect_size=size, label=f"get {label}"))
        rows.append(RouteSpec(f"s{suffix}", f"/s{suffix}", expect_size=size, label=f"get {label} (str)"))
        rows.append(RouteSpec(f"echo{suffix}", "/echo", "POST", size, expect_size=size, label=f"echo {label}"))
        rows.append(
            RouteSpec(f"echo_iter{suffix}", "/echo_iter", "POST", size, expect_size=size, label=f"echo {label} (iter)")
        )
    return rows


ROUTES: dict[str, RouteSpec] = {
    r.name: r
    for r in _sizes()
    + [
        RouteSpec("json", "/json", label="json"),
        RouteSpec("ping", "/ping", label="ping"),
        RouteSpec("io10", "/io10", label="10ms"),
        RouteSpec("io100", "/io100", label="100ms"),
        RouteSpec("file", "/file/{jpeg}", label="file"),
        RouteSpec("pathsend", "/pathsend/{jpeg}", label="file (pathsend)"),
        RouteSpec("ws_broadcast", "/ws_broadcast", label="broadcast", kind="ws"),
    ]
}


def route(name: str) -> RouteSpec:
    """The route called ``name``; RouteError lists the known names."""
    try:
        return ROUTES[name]
    except KeyError:
        raise RouteError(f"unknown route {name!r}; known routes: {', '.join(sorted(ROUTES))}") from None
