"""Interoperability through the field's own clients: the well-formed exchanges again, sent by httpx and websockets.

Every other check speaks through the suite's own clients (``conformance/client``), which send exactly the
bytes a check names. A server can pass all of them and still fail the clients people use: a framing httpx's
h11 or h2 refuses, a TLS or ALPN set-up it cannot complete, a WebSocket handshake or extension answer the
``websockets`` library rejects. Here the ordinary exchanges go through those clients, with their defaults:

- HTTP, through httpx over HTTP/1.1 (cleartext, and ``https`` on a TLS target) and over HTTP/2 (h2c with
  prior knowledge where the target serves it, ``h2`` by ALPN on a TLS target): a body echoed (1 KiB and
  1 MiB, sent with a Content-Length), a body of unknown length streamed up (chunked on HTTP/1.1), a response
  the app streams in pieces, the static files, the JSON document.
- WebSocket, through ``websockets`` (``ws``, and ``wss`` on a TLS target; its opening handshake is HTTP/1.1)
  to ``/ws_echo``: a text message, a binary one, a 1 MiB one, one sent in fragments, and a closing handshake
  the client starts with a code.

One exchange, one obligation: each parameter cites the rule the exchange shows (RFC 9112 §6 and §6.3, §7.1
for the chunked upload; RFC 9113 §8.1 on HTTP/2; RFC 6455 §5.2, §5.4, §5.5.1, §5.6). Evidence: a pass needs
the status and the body byte-exact (or every echoed message, or the server's Close frame) as the client
received them, and the HTTP version the exchange was meant to use; a client's exception fails the check
with the exception shown (``conformance/client/interop.py``). Malformed input stays with the raw clients.
"""

from __future__ import annotations

import hashlib
from typing import Callable, NamedTuple
from urllib.parse import quote

import pytest

from gatecheck import fixtures
from gatecheck.conformance.app import random_bytes, response_script, script_target
from gatecheck.conformance.client.interop import (
    CLOSE_BOUND,
    ClientStuck,
    fetch,
    http_client,
    ws_client,
    ws_close,
    ws_recv,
    ws_refused,
)
from gatecheck.conformance.helpers.support import body_not_read
from gatecheck.conformance.spec.markers import interfaces, needs, spec
from gatecheck.fixtures import payload_bytes

# -- HTTP exchanges ---------------------------------------------------------------------------------------

_STREAMED_PIECES = (1, 10, 100, 1000, 10_000, 65_536, 7, 30_000)  # sizes: reordered pieces change the bytes
_UPLOAD = 300_000


class Exchange(NamedTuple):
    """One well-formed exchange: the request a field client sends and the body that must come back."""

    method: str
    target: Callable  # server -> request target
    content: Callable  # () -> None, bytes, or an iterator of bytes (a body of unknown length)
    expected: Callable  # server -> the response body


def _pieces(data: bytes, sizes=(1, 4096, 7, 65_536, 100, 16_384)):
    """``data`` as an iterator of pieces (httpx then sends it without a Content-Length)."""
    pos, n = 0, 0
    while pos < len(data):
        size = sizes[n % len(sizes)]
        yield data[pos : pos + size]
        pos, n = pos + size, n + 1


def _streamed_target(server) -> str:
    chunks = [{"size": n} for n in _STREAMED_PIECES]
    return script_target(response_script(server.interface, 200, [("content-type", "application/octet-stream")], chunks))


def _echo(size: int, seed: int) -> Exchange:
    body = random_bytes(size, seed=seed)
    return Exchange("POST", lambda s: "/echo", lambda: body, lambda s: body)


def _file(name: str) -> Exchange:
    return Exchange(
        "GET", lambda s: "/file/" + quote(name), lambda: None, lambda s: (fixtures.STATIC_DIR / name).read_bytes()
    )


_UPLOADED = random_bytes(_UPLOAD, seed=31)
EXCHANGES = {
    "echo-1KiB": _echo(1024, 29),
    "echo-1MiB": _echo(1 << 20, 30),
    "upload-streamed": Exchange("POST", lambda s: "/echo", lambda: _pieces(_UPLOADED), lambda s: _UPLOADED),
    "response-streamed": Exchange(
        "GET", _streamed_target, lambda: None, lambda s: b"".join(payload_bytes(n) for n in _STREAMED_PIECES)
    ),
    **{
        f"file-{name}": _file(name) for name in (fixtures.STATIC_JPEG, fixtures.STATIC_SMALL, fixtures.STATIC_NON_ASCII)
    },
    "json": Exchange("GET", lambda s: "/json", lambda: None, lambda s: fixtures.JSON_BODY),
}

_H1_BODY = ("RFC 9112 §6", "DEFINED")
#: HTTP/1.1: a Content-Length body defines its length (§6.3); a body of unknown length is chunked (§7.1)
_H1 = {
    "echo-1KiB": ("RFC 9112 §6.3", "DEFINED"),
    "echo-1MiB": ("RFC 9112 §6.3", "DEFINED"),
    "upload-streamed": ("RFC 9112 §7.1", "MUST"),
}
_H2_BODY = ("RFC 9113 §8.1", "DEFINED")


def _http_params(clauses: dict, default: tuple) -> list:
    return [pytest.param(name, id=name, marks=spec(*clauses.get(name, default))) for name in EXCHANGES]


def _describe(data: bytes) -> str:
    return f"{len(data)} B (sha256 {hashlib.sha256(data).hexdigest()[:12]})"


def _round_trip(server, name: str, *, http2: bool) -> None:
    """Run exchange ``name`` through httpx; fail unless it used the HTTP version asked for and the response
    is a 200 carrying exactly the expected body."""
    exchange = EXCHANGES[name]
    expected = exchange.expected(server)
    version = "HTTP/2" if http2 else "HTTP/1.1"
    content = exchange.content()
    with http_client(server, http2=http2) as client:
        got = fetch(client, exchange.method, exchange.target(server), content=content, cap=len(expected) + 65_536)
    # over HTTP/1.1 an HTTP/1.0 answer is still this exchange (its version is test_response_version_*'s rule)
    spoke = got.http_version == version or (not http2 and got.http_version.startswith("HTTP/1."))
    assert spoke, f"httpx spoke {got.http_version}, not {version}"
    if content is not None and not isinstance(content, bytes):
        body_not_read(server, got, expected)  # a body without Content-Length: a 411 or the WSGI read gap
    assert got.status == 200, f"{version} {exchange.method}: status {got.status}, body {got.body[:200]!r}"
    if got.body != expected:
        first = next(
            (i for i, (a, b) in enumerate(zip(got.body, expected)) if a != b), min(len(got.body), len(expected))
        )
        raise AssertionError(
            f"over {version} through httpx: expected {_describe(expected)}, got "
            f"{_describe(got.body)}; first difference at byte {first}"
        )


@needs("http1")
@pytest.mark.parametrize("name", _http_params(_H1, _H1_BODY))
def test_httpx_http11_round_trip(server, name):
    """httpx over HTTP/1.1 (cleartext): the exchange answers 200 with the expected body, byte-exact."""
    _round_trip(server, name, http2=False)


@needs("h2c")
@pytest.mark.parametrize("name", _http_params({}, _H2_BODY))
def test_httpx_h2c_round_trip(server, name):
    """httpx over HTTP/2 with prior knowledge (h2c): the exchange answers 200 with the expected body."""
    _round_trip(server, name, http2=True)


@needs("tls", "http1")
@pytest.mark.parametrize("name", _http_params(_H1, _H1_BODY))
def test_httpx_https_http11_round_trip(server, name):
    """httpx over HTTP/1.1 on TLS (ALPN http/1.1, the test certificate verified): 200, the body byte-exact."""
    _round_trip(server, name, http2=False)


@needs("tls", "h2c")
@pytest.mark.parametrize("name", _http_params({}, _H2_BODY))
def test_httpx_https_h2_round_trip(server, name):
    """httpx over HTTP/2 on TLS (ALPN h2, the test certificate verified): 200, the body byte-exact."""
    _round_trip(server, name, http2=True)


# -- WebSocket exchanges ----------------------------------------------------------------------------------

_TEXT = "interop ✓ ünïcödé 𝄞 " * 40
_BINARY = bytes(range(256)) * 4
_LARGE = random_bytes(1 << 20, seed=32)
_FRAGMENTS = [random_bytes(n, seed=33 + n) for n in (65_536, 1, 70_000, 4096)]
#: the code the client closes with (a private-use code: any server must answer it with a Close)
_CLOSE_CODE = 4000

_WS = {
    "text": ("RFC 6455 §5.6", "DEFINED"),
    "binary": ("RFC 6455 §5.6", "DEFINED"),
    "1MiB": ("RFC 6455 §5.2", "DEFINED"),
    "fragmented": ("RFC 6455 §5.4", "MUST"),
    "close": ("RFC 6455 §5.5.1", "MUST"),
}
_WS_PARAMS = [pytest.param(name, id=name, marks=spec(*clause)) for name, clause in _WS.items()]


#: message -> (what the client sends: a list goes out as one fragment per item, what must come back)
_MESSAGES = {
    "text": (_TEXT, _TEXT),
    "binary": (_BINARY, _BINARY),
    "1MiB": (_LARGE, _LARGE),
    "fragmented": (_FRAGMENTS, b"".join(_FRAGMENTS)),
}


def _size(message) -> int:
    return len(message.encode() if isinstance(message, str) else message)


def _echoed(ws, sent, expected) -> None:
    ws.send(iter(sent) if isinstance(sent, list) else sent)
    got = ws_recv(ws)
    if got != expected:
        kind, want = ("text" if isinstance(m, str) else "binary" for m in (got, expected))
        raise AssertionError(
            f"sent a {want} message of {_size(expected)} B, got a {kind} message of {_size(got)} B back: {got[:80]!r}"
        )


def _close_handshake(ws) -> None:
    """Show the connection alive (one echo), close with a code, and require the server's Close frame."""
    _echoed(ws, "alive", "alive")
    if not ws_close(ws, _CLOSE_CODE, "interop"):
        raise ClientStuck(
            f"websockets' close did not return within {CLOSE_BOUND:g} s, past every deadline it was "
            "given (a client defect): the check could not decide"
        )
    assert ws.protocol.close_rcvd is not None, (
        f"no valid Close frame answered the client's Close {_CLOSE_CODE} within the client's close timeout "
        f"(websockets records close code {ws.close_code}{ws_refused(ws)})"
    )


def _ws_exchange(server, name: str) -> None:
    with ws_client(server, "/ws_echo") as ws:
        if name == "close":
            _close_handshake(ws)
        else:
            _echoed(ws, *_MESSAGES[name])


@interfaces("asgi", "rsgi")
@needs("http1", "websockets")
@pytest.mark.parametrize("name", _WS_PARAMS)
def test_websockets_round_trip(server, name):
    """websockets (ws://) to /ws_echo: each message comes back whole, of its kind; a Close is answered."""
    _ws_exchange(server, name)


@interfaces("asgi", "rsgi")
@needs("tls", "http1", "websockets")
@pytest.mark.parametrize("name", _WS_PARAMS)
def test_websockets_wss_round_trip(server, name):
    """websockets over TLS (wss://, the test certificate verified): the same exchanges as over ws://."""
    _ws_exchange(server, name)
