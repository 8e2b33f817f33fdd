"""Request bodies reach the app byte-exact and come back the same, whole or streamed.

Every interface must hand the app the exact request body: RFC 9112 §6.3 (Content-Length framing),
§7.1 (chunked decoding), ASGI www §Request (http.request chunks concatenate to the body), RSGI §HTTP protocol
interface (``await protocol()`` and ``async for``), PEP 3333 §Input and Error Streams.
"""

from __future__ import annotations

import hashlib
import random

import pytest

from gatecheck.conformance.app import random_bytes
from gatecheck.conformance.client.http1 import build_request, exchange, persistent
from gatecheck.conformance.helpers.support import body_not_read
from gatecheck.conformance.spec.markers import needs, spec

pytestmark = needs("http1")

SIZES = [0, 1, 1000, 65535, 65536, 65537, 300_000, 1 << 20]
_IDS = [f"{s}B" for s in SIZES]

_BODY_CLAUSE = {
    "asgi": "ASGI WWW §Request",
    "rsgi": "RSGI §HTTP protocol interface",
    "wsgi": "PEP 3333 §Input and Error Streams",
}


def _post(server, route: str, body: bytes, *, chunks=None, timeout: float = 20.0):
    headers = [("Content-Type", "application/octet-stream")]
    if chunks is None:
        data = build_request("POST", route, headers + [("Content-Length", str(len(body)))], body, host=server.authority)
    else:
        framed = b"".join(f"{len(c):x}\r\n".encode() + c + b"\r\n" for c in chunks if c) + b"0\r\n\r\n"
        data = build_request(
            "POST",
            route,
            headers + [("Transfer-Encoding", "chunked")],
            framed,
            host=server.authority,
            content_length=False,
        )
    return exchange(server.address, data, methods=["POST"], timeout=timeout).first


def _assert_same(got: bytes, sent: bytes):
    if got != sent:
        first = next((i for i, (a, b) in enumerate(zip(got, sent)) if a != b), min(len(got), len(sent)))
        raise AssertionError(
            f"echo differs: sent {len(sent)} B (sha256 {hashlib.sha256(sent).hexdigest()[:12]}), "
            f"got {len(got)} B (sha256 {hashlib.sha256(got).hexdigest()[:12]}); first difference at byte {first}"
        )


def _random_chunks(body: bytes, seed: int) -> list:
    rng = random.Random(seed)
    chunks, pos = [], 0
    while pos < len(body):
        size = rng.choice([1, 7, 100, 4096, 16384, 65536, 100_000])
        chunks.append(body[pos : pos + size])
        pos += size
    return chunks


@pytest.mark.parametrize("size", SIZES, ids=_IDS)
@spec("RFC 9112 §6.3", "DEFINED")
def test_echo_returns_content_length_body_byte_exact(server, size):
    """A Content-Length body of any size reaches the app whole and comes back byte-exact."""
    body = random_bytes(size, seed=size)
    resp = _post(server, "/echo", body)
    assert resp.status == 200, resp.body[:200]
    _assert_same(resp.body, body)


@pytest.mark.parametrize("size", SIZES, ids=_IDS)
@spec("RFC 9112 §6.3", "DEFINED")
def test_iterated_echo_returns_body_byte_exact(server, size):
    """The body read chunk by chunk and streamed back chunk by chunk comes back byte-exact."""
    body = random_bytes(size, seed=size + 1)
    resp = _post(server, "/echo_iter", body)
    assert resp.status == 200, resp.body[:200]
    _assert_same(resp.body, body)


@pytest.mark.parametrize("size", [0, 1, 5000, 200_000, 1 << 20], ids=lambda s: f"{s}B")
@spec("RFC 9112 §7.1", "MUST")
def test_chunked_request_body_is_decoded_for_echo(server, size):
    """A chunked request body (random chunk sizes) is de-chunked before the app reads it."""
    body = random_bytes(size, seed=size + 2)
    resp = _post(server, "/echo", body, chunks=_random_chunks(body, seed=size))
    body_not_read(server, resp, body)  # a 411, or a WSGI app with no way to read it: not supported
    assert resp.status == 200, resp.body[:200]
    _assert_same(resp.body, body)


@pytest.mark.parametrize("size", [1, 5000, 200_000, 1 << 20], ids=lambda s: f"{s}B")
@spec("RFC 9112 §7.1", "MUST")
def test_chunked_request_body_is_decoded_for_iterated_echo(server, size):
    """A chunked request body read chunk by chunk by the app is the decoded body, in order."""
    body = random_bytes(size, seed=size + 3)
    resp = _post(server, "/echo_iter", body, chunks=_random_chunks(body, seed=size + 1))
    body_not_read(server, resp, body)  # a 411, or a WSGI app with no way to read it: not supported
    assert resp.status == 200, resp.body[:200]
    _assert_same(resp.body, body)


@spec("RFC 9110 §8.6", "SHOULD")
def test_echo_response_declares_its_length(server):
    """The whole-body echo is framed with a Content-Length equal to the body (the app sets it)."""
    body = random_bytes(5000, seed=9)
    resp = _post(server, "/echo", body)
    assert resp.framing == "length" and resp.header("content-length") == "5000"


@spec("RFC 9112 §6.3", "SHOULD")
def test_streamed_response_to_http11_is_self_delimited(server):
    """A response streamed without Content-Length to an HTTP/1.1 client is chunked (or length-framed); a
    close-delimited one (RFC 9112 §6.3 rule 8) passes only on a connection the server says it closes
    (Connection: close, §9.6, or an HTTP/1.0 response without keep-alive, §9.3), never on one the client must
    take as persistent."""
    body = random_bytes(100_000, seed=10)
    resp = _post(server, "/echo_iter", body)
    if resp.framing == "close":
        assert not persistent(resp, framing=False), (
            "close-delimited response to an HTTP/1.1 request without Connection: close: the client had "
            "to take the connection as persistent and cannot tell a complete response from a cut one"
        )
        _assert_same(resp.body, body)
        return
    assert resp.framing in ("chunked", "length"), resp.framing
    # the app's own echo (a start of what was sent) is the evidence that this is its streamed response; whether
    # all of it came back is the echo checks' business
    assert resp.body and body.startswith(resp.body), f"not the app's echo: {len(resp.body)} B {resp.body[:40]!r}"
