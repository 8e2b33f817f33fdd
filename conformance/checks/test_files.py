"""File responses: RSGI response_file, ASGI in-memory and http.response.pathsend, WSGI wsgi.file_wrapper.

The bytes on the wire must be the file's bytes exactly, with the app's headers (RSGI §HTTP protocol
interface: file responses leave headers to the app; ASGI extensions §Path Send; PEP 3333 §Optional
Platform-Specific File Handling).
"""

from __future__ import annotations

from urllib.parse import quote

import pytest

from gatecheck import fixtures
from gatecheck.conformance.app import probe, value_of
from gatecheck.conformance.client.http1 import Connection, build_request, exchange
from gatecheck.conformance.spec.markers import interfaces, needs, spec

pytestmark = needs("http1")

FILES = [fixtures.STATIC_JPEG, fixtures.STATIC_SMALL, fixtures.STATIC_NON_ASCII]


def _get(server, target: str, method: str = "GET"):
    data = build_request(method, target, host=server.authority)
    return exchange(server.address, data, methods=[method], timeout=10).first


def _assert_file_served(server, name: str) -> None:
    """GET /file/<name> returns the file's bytes exactly, with the app's Content-Type and Content-Length."""
    expected = (fixtures.STATIC_DIR / name).read_bytes()
    resp = _get(server, "/file/" + quote(name))
    assert resp.status == 200, resp.body[:200]
    assert resp.body == expected, f"got {len(resp.body)} B, file has {len(expected)} B"
    assert resp.header("content-length") == str(len(expected))
    assert resp.header("content-type"), "the app's content-type is missing"


@interfaces("rsgi")
@pytest.mark.parametrize("name", FILES)
@spec("RSGI §HTTP protocol interface", "DEFINED")
def test_file_response_is_byte_exact_with_app_headers(server, name):
    """RSGI response_file: GET /file/<name> returns the file's bytes exactly, with the app's Content-Type and
    Content-Length (the protocol leaves file headers to the app)."""
    _assert_file_served(server, name)


@interfaces("asgi")
@pytest.mark.parametrize("name", FILES)
@spec("ASGI WWW §Response Body", "DEFINED")
def test_asgi_file_body_is_byte_exact_with_app_headers(server, name):
    """ASGI: the file read into http.response.body reaches the client byte-exact, with the app's headers."""
    _assert_file_served(server, name)


@interfaces("wsgi")
@pytest.mark.parametrize("name", FILES)
@spec("PEP 3333 §Buffering and Streaming", "MUST")
def test_wsgi_file_wrapper_is_byte_exact_with_app_headers(server, name):
    """WSGI wsgi.file_wrapper: every block of the file is transmitted, byte-exact, with the app's headers."""
    _assert_file_served(server, name)


@pytest.mark.parametrize("name", [fixtures.STATIC_JPEG])
@spec("RFC 9110 §9.3.2", "MUST NOT")
def test_head_file_response_has_no_body(server, name):
    """HEAD of a file response carries the headers but no body bytes; the connection stays usable."""
    size = (fixtures.STATIC_DIR / name).stat().st_size
    with Connection(server.address, timeout=10) as conn:
        conn.send(build_request("HEAD", "/file/" + quote(name), host=server.authority))
        head = conn.read_responses(1, methods=["HEAD"]).first
        assert head.status == 200
        assert head.header("content-length") in (None, str(size))
        if not conn.may_send():
            # The server ends the connection after the response (allowed: "close", or an HTTP/1.0 response,
            # RFC 9112 §9.3); the client sends nothing more (§9.6), and nothing may follow the head.
            conn.wait_closed(timeout=5)
            assert conn.buffer == b"", f"bytes after the HEAD response: {conn.buffer[:100]!r}"
            return
        conn.send(build_request("GET", "/ping", host=server.authority))
        ping = conn.read_responses(1, methods=["GET"]).first
        assert ping.status == 200 and ping.body == b"ok", "a stray body byte after HEAD corrupted the next response"


@interfaces("asgi")
@pytest.mark.parametrize("name", FILES)
@spec("ASGI Extensions §Path Send", "SHOULD")
def test_pathsend_sends_the_file_byte_exact(server, name):
    """When http.response.pathsend is advertised, the file at that path is sent exactly, with app headers."""
    scope = value_of(probe(server)["scope"])
    if "http.response.pathsend" not in (scope.get("extensions") or {}):
        pytest.skip("not supported: the server does not advertise http.response.pathsend")
    expected = (fixtures.STATIC_DIR / name).read_bytes()
    resp = _get(server, "/pathsend/" + quote(name))
    assert resp.status == 200, resp.body[:200]
    assert resp.body == expected
    assert resp.header("content-length") == str(len(expected))


@interfaces("rsgi")
@pytest.mark.parametrize("start,end", [(0, 1), (0, 1000), (1000, 2000), (5, 49_000)])
@spec("RSGI §HTTP protocol interface (1.6)", "DEFINED")
def test_response_file_range_sends_exactly_the_range(server, start, end):
    """response_file_range(206, headers, file, start, end) sends bytes [start, end) of the file."""
    data = (fixtures.STATIC_DIR / fixtures.STATIC_JPEG).read_bytes()
    end = min(end, len(data))
    resp = _get(server, f"/file_range/{fixtures.STATIC_JPEG}?start={start}&end={end}")
    assert resp.status == 206, resp.body[:200]
    assert resp.body == data[start:end], f"got {len(resp.body)} B, expected {end - start} B"
