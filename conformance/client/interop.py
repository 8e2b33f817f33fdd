"""The field's own clients, as the interoperability checks use them: httpx and websockets.

    with http_client(server, http2=True) as client:             # httpx.Client on server.url (http or https)
        got = fetch(client, "POST", "/echo", content=body, cap=len(body))   # Fetched: status, version, body
    with ws_client(server, "/ws_echo") as ws:                     # websockets' sync ClientConnection (ws or wss)
        ws.send("hello"); answer = ws_recv(ws)

The raw clients beside this module send exactly the bytes a check names, malformed ones included; these
send what the field's clients send, with their defaults (websockets offers permessage-deflate, httpx
frames a body of unknown length as chunked), so a server that only a hand-written client tolerates shows.

Rules of this module:

1. Only well-formed exchanges go through here: anything malformed stays with ``http1``, ``h2`` and ``ws``.
2. Both clients trust exactly the suite's test certificate (``connect.tls_context``) and go nowhere but the
   target: httpx with ``trust_env=False`` (no proxy from the environment), websockets over a socket from
   ``connect.connect`` (the one way to open a socket; websockets adds TLS itself for ``wss``).
3. Every read is bounded: httpx's timeouts on each operation, plus a deadline and a byte cap on the
   whole response body in :func:`fetch`; websockets' ``open_timeout``, ``close_timeout`` and ``max_size``,
   and a timeout on every :func:`ws_recv`. websockets makes its socket blocking after the TLS handshake
   (``settimeout(None)``) and starts its reader thread then, so on ``wss`` that thread could enter a
   blocking ``recv`` (a TLS record after the 101: a session ticket, a partial record) before any later
   ``settimeout`` reaches it; a blocked ``recv`` is not woken when websockets closes the socket, and its
   send and close paths join that thread without a timeout. :func:`ws_client` gives websockets a TLS
   context whose sockets refuse to block (:class:`_BoundedSSLSocket`: ``settimeout(None)`` means
   :data:`TIMEOUT`), so every ``recv`` and ``send`` of that thread ends; on ``ws`` it keeps the
   socket websockets is handed, with its timeout. Its close is bounded as well (:func:`ws_close`,
   :data:`CLOSE_BOUND`): a close still running then (its thread stuck past every timeout websockets was
   given: seen on wss, on a loaded 2-core machine, 2026-11-27 and 28, before the sockets refused to block)
   gets its socket shut and is left to end on its own (websockets' threads are daemons). Leaving
   :func:`ws_client` does not wait for more: the check's verdict was decided by the exchange inside it. A
   check whose verdict is the close itself gets :class:`ClientStuck`, an error (undecided), never a failure.
4. A client's exception is the check's failure, shown as ``<client> raised <type>: <message>``
   (:class:`ClientFailed`, an AssertionError); it is never a pass.
"""
from __future__ import annotations

import contextlib
import socket
import ssl
import threading
import time
from typing import NamedTuple

import httpx
from websockets.exceptions import WebSocketException
from websockets.sync.client import connect as _ws_connect

from .connect import connect, tls_context

__all__ = ["ClientFailed", "ClientStuck", "Fetched", "http_client", "fetch", "ws_client", "ws_close", "ws_recv",
           "ws_refused", "WS_MAX_SIZE", "TIMEOUT", "CLOSE_BOUND"]

#: seconds for each of httpx's operations (connect, each read, each write) and websockets' open and close
TIMEOUT = 10.0
#: seconds a websockets close may take (its close timeout, then a bounded read) before it is left to end alone
CLOSE_BOUND = 2 * TIMEOUT + 5.0
#: the largest WebSocket message websockets accepts here (its frames and messages alike)
WS_MAX_SIZE = 4 << 20


class ClientFailed(AssertionError):
    """A field client raised: the exchange failed, with the client's own account of why."""


class ClientStuck(Exception):
    """A field client did not return within every deadline it was given (rule 3): the check is undecided."""


class _BoundedSSLSocket(ssl.SSLSocket):
    """A TLS socket that never blocks without a deadline: ``settimeout(None)`` sets :data:`TIMEOUT` (rule 3)."""

    def settimeout(self, value) -> None:
        super().settimeout(TIMEOUT if value is None else value)


def _ws_tls_context() -> ssl.SSLContext:
    ctx = tls_context()
    ctx.sslsocket_class = _BoundedSSLSocket
    return ctx


class Fetched(NamedTuple):
    status: int
    http_version: str      # as httpx says it: "HTTP/1.1" or "HTTP/2"
    headers: httpx.Headers
    body: bytes


def http_client(server, *, http2: bool) -> httpx.Client:
    """An httpx client for ``server``: HTTP/1.1 only, or HTTP/2 only (``http2=True``: prior knowledge on
    ``http://``, ALPN on ``https://``), with :data:`TIMEOUT` on every operation."""
    tls = server.url.startswith("https:")
    return httpx.Client(base_url=server.url, http1=not http2, http2=http2, verify=tls_context() if tls else False,
                        timeout=httpx.Timeout(TIMEOUT), trust_env=False, follow_redirects=False)


def fetch(client: httpx.Client, method: str, target: str, *, content=None, cap: int,
          deadline: float = 60.0) -> Fetched:
    """One request through ``client``; the response with its whole body, read within ``deadline`` seconds
    and at most ``cap`` bytes (more fails the check, naming the cap). ``content`` as httpx takes it: bytes
    (sent with a Content-Length) or an iterator of bytes (chunked on HTTP/1.1, DATA frames on HTTP/2)."""
    start = time.monotonic()
    try:
        with client.stream(method, target, content=content) as resp:
            body = bytearray()
            for piece in resp.iter_raw():
                body += piece
                if len(body) > cap:
                    raise AssertionError(f"{method} {target}: the response body passed the cap of {cap} B")
                if time.monotonic() - start > deadline:
                    raise AssertionError(f"{method} {target}: the response body took over {deadline:.0f} s "
                                         f"({len(body)} B so far)")
            return Fetched(resp.status_code, resp.http_version, resp.headers, bytes(body))
    except (httpx.HTTPError, httpx.StreamError) as exc:
        raise ClientFailed(f"httpx {method} {target} raised {type(exc).__name__}: {exc}") from exc


@contextlib.contextmanager
def ws_client(server, path: str):
    """An open websockets client connection to ``path`` (``wss`` on a TLS target), closed on leaving."""
    tls = server.url.startswith("https:")
    uri = f"{'wss' if tls else 'ws'}://{server.authority}{path}"
    sock = connect(server, timeout=TIMEOUT)
    try:
        ws = _ws_connect(uri, sock=sock, ssl=_ws_tls_context() if tls else None, open_timeout=TIMEOUT,
                         close_timeout=TIMEOUT, max_size=WS_MAX_SIZE)
    except (WebSocketException, OSError, TimeoutError) as exc:
        sock.close()
        raise ClientFailed(f"websockets could not open {uri}: {type(exc).__name__}: {exc}") from exc
    ws.__enter__()  # websockets' own context: entered here, its exit is ws_close's bounded close (rule 3)
    try:
        yield ws
    except BaseException as exc:
        with contextlib.suppress(Exception):
            ws_close(ws, 1011)  # as websockets' own ``with`` closes on an exception
        if isinstance(exc, (WebSocketException, OSError)):
            raise ClientFailed(f"websockets on {uri} raised {type(exc).__name__}: {exc}") from exc
        raise
    ws_close(ws)


def ws_close(ws, code: int = 1000, reason: str = "") -> bool:
    """``ws.close(code, reason)`` within :data:`CLOSE_BOUND` seconds: True when it returned, False when it was
    still running then (its socket is then shut and it is left to end on its own, rule 3). What the close
    raised is raised here."""
    outcome: list = []

    def close() -> None:
        try:
            ws.close(code, reason)
            outcome.append(None)
        except BaseException as exc:  # handed to the caller below
            outcome.append(exc)

    closer = threading.Thread(target=close, name="websockets-close", daemon=True)
    closer.start()
    closer.join(CLOSE_BOUND)
    if closer.is_alive():
        with contextlib.suppress(OSError):
            ws.socket.shutdown(socket.SHUT_RDWR)
        with contextlib.suppress(OSError):
            ws.socket.close()
        return False
    if outcome and outcome[0] is not None:
        raise outcome[0]
    return True


def ws_recv(ws, timeout: float = TIMEOUT):
    """The next message (str or bytes) within ``timeout`` seconds; silence, a closed connection or frames
    websockets refused (a message past ``max_size``, a protocol error) fail."""
    try:
        return ws.recv(timeout)
    except TimeoutError:
        raise AssertionError(f"no message within {timeout:.0f} s{ws_refused(ws)}") from None
    except WebSocketException as exc:
        raise ClientFailed(f"websockets recv raised {type(exc).__name__}: {exc}{ws_refused(ws)}") from exc


def ws_refused(ws) -> str:
    """"; websockets refused the server's frames: <why>" when it failed the connection on what the server
    sent (it then waits for the closing handshake, so a receive times out rather than raising), else ""."""
    refused = getattr(ws.protocol, "parser_exc", None)
    return f"; websockets refused the server's frames: {type(refused).__name__}: {refused}" if refused else ""
