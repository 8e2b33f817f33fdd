"""One request to the fixture app's probe routes, over HTTP/1.x (byte-exact) or HTTP/2, and its decoded probe
document (``view`` re-exports these)."""

from __future__ import annotations

from gatecheck.conformance.app.probes import decode_probe
from gatecheck.conformance.client.h2 import H2Client, StreamState
from gatecheck.conformance.client.http1 import build_request, exchange

__all__ = ["probe", "h2_get", "h2_probe"]


def probe(
    server,
    target: str = "/probe",
    *,
    method: str = "GET",
    headers=(),
    body: bytes = b"",
    version: str = "HTTP/1.1",
    timeout: float = 5.0,
) -> dict:
    """Send one raw HTTP/1.x request to a probe route and return the decoded probe document.

    The request goes out byte-exact (no client normalises the path), so checks control what the app
    should see."""
    data = build_request(method, target, headers, body, version=version, host=server.authority)
    resp = exchange(server.address, data, methods=[method], timeout=timeout).first
    assert resp.status == 200, f"probe {method} {target} answered {resp.status}: {resp.body[:300]!r}"
    return decode_probe(resp.body)


def h2_get(
    server,
    path: str,
    headers=(),
    *,
    method: str = "GET",
    body: bytes = b"",
    raw_headers: list | None = None,
    timeout: float = 5.0,
    tls: bool = False,
) -> StreamState:
    """One HTTP/2 request on a fresh connection (prior knowledge, or ALPN h2 with ``tls``); the stream's
    final state."""
    with H2Client(server.address, authority=server.authority, timeout=timeout, tls=tls) as client:
        sid = client.request(method, path, headers, body, raw_headers=raw_headers)
        return client.response(sid)


def h2_probe(
    server, path: str = "/probe", headers=(), *, method: str = "GET", body: bytes = b"", raw_headers: list | None = None
) -> dict:
    """The probe document for one HTTP/2 request (the request must be answered 200)."""
    resp = h2_get(server, path, headers, method=method, body=body, raw_headers=raw_headers)
    assert resp.status == 200, f"h2 probe {method} {path}: {resp.describe()} {resp.body[:300]!r}"
    return decode_probe(resp.body)
