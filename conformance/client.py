"""Small helpers the checks share: probe requests decoded into Python values, and byte helpers."""
from __future__ import annotations

import json
import os
import random

from gatecheck.fixtures import typed

from .http1 import build_request, exchange

__all__ = ["probe", "decode_probe", "random_bytes", "value_of"]


def probe(server, target: str = "/probe", *, method: str = "GET", headers=(), body: bytes = b"",
          version: str = "HTTP/1.1", timeout: float = 5.0) -> dict:
    """Send one raw request to a probe route and return the decoded probe document.

    The request goes out byte-exact (no client normalises the path), so checks control what the app
    should see."""
    data = build_request(method, target, headers, body, version=version, host=server.authority)
    result = exchange(server.address, data, methods=[method], timeout=timeout)
    resp = result.first
    assert resp.status == 200, f"probe {method} {target} answered {resp.status}: {resp.body[:300]!r}"
    return decode_probe(resp.body)


def decode_probe(body: bytes) -> dict:
    doc = json.loads(body)
    return doc


def value_of(doc: dict):
    """Decode one typed value from a probe document."""
    return typed.decode(doc)


def random_bytes(size: int, seed: int) -> bytes:
    """Deterministic pseudo-random bytes (all 256 values occur), so a failure is reproducible."""
    if size == 0:
        return b""
    rng = random.Random(seed)
    return rng.randbytes(size) if hasattr(rng, "randbytes") else os.urandom(size)
