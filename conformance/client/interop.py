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
   and a timeout on every :func:`ws_recv`. On ``wss`` websockets' reader thread reads while the caller's
   thread writes, on one TLS connection, and OpenSSL's connection object is not safe for that. As
   websockets leaves it (the socket blocking after the TLS handshake), three clients opening 3,000
   connections each to one Granian: twice, two of the three stuck for ever in the opening handshake,
   joining a reader blocked in a read that closing the socket does not end (the signature of earlier CI
   timeouts); a client alone: 14 handshakes in 5,000 waited 10 s for a 101; with a
   deadline on that socket, 4 in 1,500 ended in a false end of stream; a single-threaded client of the
   same exchange, none in 3,000. :func:`ws_client` therefore gives websockets a TLS context whose sockets
   take turns (:class:`_SerializedSSLSocket`): every TLS call runs under one lock on a socket that never
   blocks, and the waits for it to become readable or writable run outside the lock, in slices, within
   the timeout websockets set (none after its handshake: a read waits for the server, a send the server
   never reads ends at the check's deadline), ending once the socket is closed: none of 16,000 such
   connections failed or stuck, three clients at once included. On ``ws`` the socket websockets is
   handed keeps :data:`TIMEOUT`. The close is bounded as well (:func:`ws_close`,
   :data:`CLOSE_BOUND`): a close still running then (its thread stuck past every timeout websockets was
   given: seen on wss, on a loaded 2-core machine, before the sockets took turns)
   gets its socket shut and is left to end on its own (websockets' threads are daemons). Leaving
   :func:`ws_client` does not wait for more: the check's verdict was decided by the exchange inside it. A
   check whose verdict is the close itself gets :class:`ClientStuck`, an error (undecided), never a failure.
4. A client's exception is the check's failure, shown as ``<client> raised <type>: <message>``
   (:class:`ClientFailed`, an AssertionError); it is never a pass.
"""

from __future__ import annotations

import contextlib
import errno
import select
import socket
import ssl
import threading
import time
from typing import NamedTuple

import httpx
from websockets.exceptions import WebSocketException
from websockets.sync.client import connect as _ws_connect

from gatecheck.conformance.client.connect import connect, tls_context

__all__ = [
    "ClientFailed",
    "ClientStuck",
    "Fetched",
    "http_client",
    "fetch",
    "ws_client",
    "ws_close",
    "ws_recv",
    "ws_refused",
    "WS_MAX_SIZE",
    "TIMEOUT",
    "CLOSE_BOUND",
]

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


class _SerializedSSLSocket(ssl.SSLSocket):
    """A TLS socket two threads can share (rule 3): each TLS call under one lock, on a socket that never
    blocks; the waits between calls run outside the lock. ``settimeout`` sets how long a call may wait."""

    _SLICE = 0.2  # seconds a wait sleeps before it looks again (a socket closed by the other thread)
    _gate: threading.Lock | None = None  # set once the TLS handshake is done (``_create``)
    _wait: float | None = None  # what ``settimeout`` last set: how long a call may wait

    @classmethod
    def _create(cls, *args, **kwargs):
        sock = super()._create(*args, **kwargs)  # the TLS handshake, with the plain socket's own timeout
        sock._wait = ssl.SSLSocket.gettimeout(sock)
        ssl.SSLSocket.settimeout(sock, 0.0)
        sock._gate = threading.Lock()
        return sock

    def settimeout(self, value) -> None:
        if self._gate is None:  # still in _create: the handshake's own socket timeout
            super().settimeout(value)
        else:
            self._wait = value

    def gettimeout(self):
        return super().gettimeout() if self._gate is None else self._wait

    def setblocking(self, flag: bool) -> None:
        self.settimeout(None if flag else 0.0)

    def _turn(self, direction: int, call, *args):
        """``call(*args)`` under the lock, waited on (outside it) while TLS wants the socket, or while the
        socket itself would block (after ``shutdown`` the calls are the plain socket's) in ``direction``."""
        if self._gate is None:
            return call(*args)
        deadline = None if self._wait is None else time.monotonic() + self._wait
        while True:
            with self._gate:
                try:
                    return call(*args)
                except ssl.SSLWantReadError as exc:
                    want, error = select.POLLIN, exc
                except ssl.SSLWantWriteError as exc:
                    want, error = select.POLLOUT, exc
                except BlockingIOError as exc:
                    want, error = direction, exc
            if self._wait == 0.0:
                raise error
            self._await(want, deadline)

    def _await(self, want: int, deadline) -> None:
        left = None if deadline is None else deadline - time.monotonic()
        if left is not None and left <= 0:
            raise TimeoutError("timed out")
        fd = self.fileno()
        if fd < 0:
            raise OSError(errno.EBADF, "the socket was closed")
        poller = select.poll()
        poller.register(fd, want)
        poller.poll(1000 * (self._SLICE if left is None else min(left, self._SLICE)))

    def recv(self, buflen: int = 1024, flags: int = 0):
        return self._turn(select.POLLIN, super().recv, buflen, flags)

    def send(self, data, flags: int = 0) -> int:
        return self._turn(select.POLLOUT, super().send, data, flags)

    def sendall(self, data, flags: int = 0) -> None:
        view = memoryview(data).cast("B")
        while view:
            view = view[self.send(view, flags) :]

    def shutdown(self, how: int) -> None:
        with self._gate or contextlib.nullcontext():
            super().shutdown(how)

    def close(self) -> None:
        with self._gate or contextlib.nullcontext():
            super().close()


def _ws_tls_context() -> ssl.SSLContext:
    ctx = tls_context()
    ctx.sslsocket_class = _SerializedSSLSocket
    return ctx


class Fetched(NamedTuple):
    status: int
    http_version: str  # as httpx says it: "HTTP/1.1" or "HTTP/2"
    headers: httpx.Headers
    body: bytes


def http_client(server, *, http2: bool) -> httpx.Client:
    """An httpx client for ``server``: HTTP/1.1 only, or HTTP/2 only (``http2=True``: prior knowledge on
    ``http://``, ALPN on ``https://``), with :data:`TIMEOUT` on every operation."""
    tls = server.url.startswith("https:")
    return httpx.Client(
        base_url=server.url,
        http1=not http2,
        http2=http2,
        verify=tls_context() if tls else False,
        timeout=httpx.Timeout(TIMEOUT),
        trust_env=False,
        follow_redirects=False,
    )


def fetch(client: httpx.Client, method: str, target: str, *, content=None, cap: int, deadline: float = 60.0) -> Fetched:
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
                    raise AssertionError(
                        f"{method} {target}: the response body took over {deadline:.0f} s ({len(body)} B so far)"
                    )
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
        ws = _ws_connect(
            uri,
            sock=sock,
            ssl=_ws_tls_context() if tls else None,
            open_timeout=TIMEOUT,
            close_timeout=TIMEOUT,
            max_size=WS_MAX_SIZE,
        )
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
    """ "; websockets refused the server's frames: <why>" when it failed the connection on what the server
    sent (it then waits for the closing handshake, so a receive times out rather than raising), else ""."""
    refused = getattr(ws.protocol, "parser_exc", None)
    return f"; websockets refused the server's frames: {type(refused).__name__}: {refused}" if refused else ""
