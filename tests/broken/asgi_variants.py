"""Variants of tests/broken/asgi.py: behaviours the texts allow that uvicorn does not show (not breaks: for
the harness's tests of checks that must accept them). The rules of tests/broken/asgi.py hold here."""

from __future__ import annotations

import asyncio
import os
import socket
import time

from .asgi_blocks import on_send

__all__ = [
    "ws_local_close_refused",
    "invalid_start_raises_then_malformed",
    "shut_down_unanswered",
    "ws_unoffered_accept_refused",
    "mid_response_error_poisons",
    "ABANDONED_WORK",
    "burn",
    "abandoned_stream_keeps_working",
    "VARIANTS",
]


# -- variants: behaviours the texts allow, unlike uvicorn's (not breaks: for checks that must accept them) ----


def ws_local_close_refused(app):
    """The app's websocket.close with a code that never goes on the wire (1005, 1006, 1015) raises, as
    daphne's autobahn does, and nothing is sent; the connection is then held 6 s after the app returns (no
    Close frame, no EOF: bounded, rule 2)."""

    async def variant(scope, receive, send):
        if scope["type"] != "websocket":
            return await app(scope, receive, send)
        refused = []

        async def refusing(message):
            if message["type"] == "websocket.close" and message.get("code") in (1005, 1006, 1015):
                refused.append(message["code"])
                raise ValueError(f"invalid close code {message['code']}")
            await send(message)

        await app(scope, receive, refusing)
        if refused:
            await asyncio.sleep(6)

    return variant


def invalid_start_raises_then_malformed(send):
    """An http.response.start without an int status raises (as it should); the start the app sends after it
    goes out with a second, differing Content-Length, so the answer on the wire does not parse (as gunicorn
    27's asgi worker sends the body with no status-line after a start that raised)."""
    raised = []

    async def variant(message):
        if message["type"] == "http.response.start" and not isinstance(message.get("status"), int):
            raised.append(message)
            raise TypeError("http.response.start needs an int status")
        if message["type"] == "http.response.start" and raised:
            message = {**message, "headers": [*message.get("headers", []), (b"content-length", b"999")]}
        await send(message)

    return variant


def shut_down_unanswered(client) -> None:
    """Shut down this process's TCP connection to ``client`` (host, port) without sending a byte: the socket is
    found by its peer among the process's descriptors (Linux /proc); only a duplicate descriptor is closed."""
    for fd in map(int, os.listdir("/proc/self/fd")):
        try:
            sock = socket.socket(fileno=os.dup(fd))
        except OSError:
            continue  # not a socket, or gone since the listing
        try:
            if sock.type == socket.SOCK_STREAM and sock.getpeername()[:2] == tuple(client):
                sock.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass  # a listener, or not connected
        finally:
            sock.close()


def ws_unoffered_accept_refused(app):
    """The app's websocket.accept with a subprotocol the client did not offer raises, and the connection is
    closed without an HTTP response (as hypercorn 0.18 does); the subprotocol never reaches the wire."""

    async def variant(scope, receive, send):
        if scope["type"] != "websocket":
            return await app(scope, receive, send)
        refused = []

        async def refusing(message):
            unoffered = message.get("subprotocol") not in (None, *scope.get("subprotocols", ()))
            if refused or (message["type"] == "websocket.accept" and unoffered):
                refused.append(message["type"])
                shut_down_unanswered(scope["client"])
                raise ValueError(f"refused {message['type']}: subprotocol {message.get('subprotocol')!r} not offered")
            await send(message)

        await app(scope, receive, refusing)

    return variant


_POISONED = []


def mid_response_error_poisons(app):
    """Once an HTTP app raised after http.response.start, no later app's exception or return is acted on:
    each later WebSocket app that raises or returns is held 6 s instead (as daphne 4.2, whose reaper of
    finished apps dies on that first exception). HTTP requests are unaffected."""

    async def variant(scope, receive, send):
        if scope["type"] == "http":
            started = []

            async def tracking(message):
                started.append(message["type"] == "http.response.start")
                await send(message)

            try:
                return await app(scope, receive, tracking)
            except Exception:
                if any(started):
                    _POISONED.append(scope["path"])
                raise
        if scope["type"] != "websocket" or not _POISONED:
            return await app(scope, receive, send)
        try:
            await app(scope, receive, send)
        except Exception:
            pass
        await asyncio.sleep(6)

    return variant


#: seconds the abandoned_stream_keeps_working app call burns CPU after its client left (the tests read it)
ABANDONED_WORK = 6.0


def burn(seconds: float) -> None:
    until = time.monotonic() + seconds
    while time.monotonic() < until:
        sum(range(1000))


def abandoned_stream_keeps_working(app):
    """After an app streamed over 1 MiB (the never-reads check's app, stalled by a client that reads nothing,
    gets about that far before the client leaves), the app call goes on working (a thread busy for
    ABANDONED_WORK s) before it returns, without growing (as hypercorn 0.18's WSGI worker runs an abandoned
    app to its end, whose output it holds until then)."""

    async def variant(scope, receive, send):
        if scope["type"] != "http":
            return await app(scope, receive, send)
        sent = [0]

        async def counting(message):
            sent[0] += len(message.get("body", b"")) if message["type"] == "http.response.body" else 0
            await send(message)

        try:
            await app(scope, receive, counting)
        finally:
            if sent[0] > 1024 * 1024:
                await asyncio.to_thread(burn, ABANDONED_WORK)

    return variant


#: variant name -> the wrapper
VARIANTS = {
    "abandoned_stream_keeps_working": abandoned_stream_keeps_working,
    "mid_response_error_poisons": mid_response_error_poisons,
    "ws_unoffered_accept_refused": ws_unoffered_accept_refused,
    "ws_local_close_refused": ws_local_close_refused,
    "invalid_start_raises_then_malformed": on_send(invalid_start_raises_then_malformed),
}
