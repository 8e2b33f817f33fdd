"""The message-level breaks of tests/broken/asgi.py: what the app receives (request bodies, disconnects,
WebSocket messages) or sends (response bodies and headers, WebSocket frames) goes wrong in one way each,
and the whole-app wrappers that hide an app's failure. The rules of tests/broken/asgi.py hold here."""

from __future__ import annotations

import asyncio

from .asgi_blocks import last_of_each_name
from .chunks import reordered

__all__ = [
    "body_loses_a_byte",
    "more_body_as_int",
    "body_as_bytearray",
    "swallow_disconnect",
    "ws_text_received_as_bytes",
    "disconnect_code_1000",
    "disconnect_when_body_done",
    "reorder_body_chunks",
    "buffer_body",
    "response_short_by_one",
    "with_length",
    "pathsend_short_by_one",
    "dedup_response_headers",
    "send_errors_swallowed",
    "ws_text_as_bytes",
    "ws_close_reason_dropped",
    "non_list_headers_dropped",
    "body_key_required",
    "content_length_dropped",
    "content_encoding_dropped",
    "empty_body_ends_response",
    "unknown_keys_refused",
    "ws_close_code_dropped",
    "ws_empty_message_dropped",
    "errors_become_200",
    "finish_unfinished_responses",
    "ws_bytes_short_by_one",
]


# -- receive edits -----------------------------------------------------------------------------------


def body_loses_a_byte(app):
    """The first non-empty http.request body loses its last byte (however the body is split into messages)."""

    async def broken(scope, receive, send):
        if scope["type"] != "http":
            return await app(scope, receive, send)
        lost = False

        async def receive_broken():
            nonlocal lost
            message = await receive()
            if not lost and message["type"] == "http.request" and message.get("body"):
                lost = True
                message = dict(message, body=message["body"][:-1])
            return message

        await app(scope, receive_broken, send)

    return broken


async def more_body_as_int(scope, message):
    if message["type"] == "http.request":
        message = dict(message, more_body=int(bool(message.get("more_body"))))
    return message


async def body_as_bytearray(scope, message):
    if message["type"] == "http.request":
        message = dict(message, body=bytearray(message.get("body", b"")))
    return message


async def swallow_disconnect(scope, message):
    # a server that never tells the app the client left: the app's receive() just waits (bounded)
    if message["type"] == "http.disconnect":
        await asyncio.sleep(60)
    return message


async def ws_text_received_as_bytes(scope, message):
    if message["type"] == "websocket.receive" and message.get("text") is not None:
        message = {"type": "websocket.receive", "bytes": message["text"].encode("utf-8")}
    return message


async def disconnect_code_1000(scope, message):
    if message["type"] == "websocket.disconnect":
        message = dict(message, code=1000)
    return message


_INSTANT_DISCONNECT = {"type": "http.disconnect"}


def disconnect_when_body_done(app):
    """receive() answers http.disconnect at once after the last body message (the client is still there)."""

    async def broken(scope, receive, send):
        if scope["type"] != "http":
            return await app(scope, receive, send)
        done = False

        async def receive_broken():
            nonlocal done
            if done:
                return dict(_INSTANT_DISCONNECT)
            message = await receive()
            done = message["type"] == "http.request" and not message.get("more_body")
            return message

        await app(scope, receive_broken, send)

    return broken


# -- send edits --------------------------------------------------------------------------------------


def reorder_body_chunks(send):
    """The response body chunks are collected and sent out of order (``chunks.reordered``)."""
    chunks = []

    async def broken(message):
        if message["type"] != "http.response.body":
            return await send(message)
        chunks.append(bytes(message.get("body", b"")))
        if message.get("more_body"):
            return None
        for chunk in reordered(chunks):
            await send({"type": "http.response.body", "body": chunk, "more_body": True})
        return await send({"type": "http.response.body", "body": b"", "more_body": False})

    return broken


def buffer_body(send):
    """Body chunks are held until the last one: nothing is flushed while the app streams."""
    chunks = []

    async def broken(message):
        if message["type"] != "http.response.body":
            return await send(message)
        chunks.append(message.get("body", b""))
        if message.get("more_body"):
            return None
        return await send({"type": "http.response.body", "body": b"".join(chunks), "more_body": False})

    return broken


def response_short_by_one(send):
    """A whole response (start + one body) goes out one byte short, Content-Length to match."""
    start = {}

    async def broken(message):
        if message["type"] == "http.response.start":
            start.update(message)
            return None
        if message["type"] == "http.response.body" and start:
            body = bytes(message.get("body", b""))[:-1]
            await send(dict(start, headers=with_length(start.get("headers", []), len(body))))
            start.clear()
            return await send({"type": "http.response.body", "body": body})
        return await send(message)

    return broken


def with_length(headers, length: int) -> list:
    return [(n, str(length).encode() if bytes(n).lower() == b"content-length" else v) for n, v in headers]


def pathsend_short_by_one(send):
    """A pathsend goes out as a body one byte short of the file, Content-Length to match."""
    start = {}

    async def broken(message):
        if message["type"] == "http.response.start":
            start.update(message)  # held until it is known whether a pathsend follows
            return None
        if start:
            held = dict(start)
            start.clear()
            if message["type"] == "http.response.pathsend":
                with open(message["path"], "rb") as fh:
                    body = fh.read()[:-1]
                await send(dict(held, headers=with_length(held.get("headers", []), len(body))))
                return await send({"type": "http.response.body", "body": body})
            await send(held)
        return await send(message)

    return broken


def dedup_response_headers(send):
    async def broken(message):
        if message["type"] == "http.response.start":
            message = dict(message, headers=last_of_each_name(list(message.get("headers", []))))
        return await send(message)

    return broken


def send_errors_swallowed(send):
    """send() never raises: an invalid event or a send after disconnect is silently dropped."""

    async def broken(message):
        try:
            return await send(message)
        except Exception:
            return None

    return broken


def ws_text_as_bytes(send):
    async def broken(message):
        if message["type"] == "websocket.send" and message.get("text") is not None:
            message = {"type": "websocket.send", "bytes": message["text"].encode("utf-8")}
        return await send(message)

    return broken


def ws_close_reason_dropped(send):
    async def broken(message):
        if message["type"] == "websocket.close":
            message = {k: v for k, v in message.items() if k != "reason"}
        return await send(message)

    return broken


def non_list_headers_dropped(send):
    """Response headers in any iterable but a list are dropped (the start goes out with none)."""

    async def broken(message):
        if message["type"] == "http.response.start" and not isinstance(message.get("headers", []), list):
            message = dict(message, headers=[])
        return await send(message)

    return broken


def body_key_required(send):
    """A body message without "body" raises (the server reads message["body"], ignoring the default)."""

    async def broken(message):
        if message["type"] == "http.response.body" and "body" not in message:
            raise KeyError("body")
        return await send(message)

    return broken


def content_length_dropped(send):
    async def broken(message):
        if message["type"] == "http.response.start":
            message = dict(
                message,
                headers=[(n, v) for n, v in message.get("headers", []) if bytes(n).lower() != b"content-length"],
            )
        return await send(message)

    return broken


def content_encoding_dropped(send):
    async def broken(message):
        if message["type"] == "http.response.start":
            message = dict(
                message,
                headers=[(n, v) for n, v in message.get("headers", []) if bytes(n).lower() != b"content-encoding"],
            )
        return await send(message)

    return broken


def empty_body_ends_response(send):
    """A body message with b"" ends the response, whatever its more_body says."""
    done = []

    async def broken(message):
        if done and message["type"] == "http.response.body":
            return None
        if message["type"] == "http.response.body" and not message.get("body"):
            done.append(True)
            message = dict(message, more_body=False)
        return await send(message)

    return broken


def unknown_keys_refused(send):
    known = {"type", "status", "headers", "trailers", "body", "more_body"}

    async def broken(message):
        if message["type"].startswith("http.response.") and set(message) - known:
            raise ValueError(f"unexpected keys {sorted(set(message) - known)}")
        return await send(message)

    return broken


def ws_close_code_dropped(send):
    async def broken(message):
        if message["type"] == "websocket.close":
            message = {"type": "websocket.close"}
        return await send(message)

    return broken


def ws_empty_message_dropped(send):
    """A websocket.send with an empty payload puts no frame on the wire (as daphne 4.2 does)."""

    async def broken(message):
        if message["type"] == "websocket.send" and not (message.get("bytes") or message.get("text")):
            return None
        return await send(message)

    return broken


# -- app-level behaviour a server must supply ---------------------------------------------------------


def errors_become_200(app):
    """An exception before http.response.start is answered 200 (a server that hides app failures)."""

    async def broken(scope, receive, send):
        if scope["type"] != "http":
            return await app(scope, receive, send)
        started = False

        async def send_tracking(message):
            nonlocal started
            started = started or message["type"] == "http.response.start"
            await send(message)

        try:
            await app(scope, receive, send_tracking)
        except Exception:
            if started:
                raise
            await send({"type": "http.response.start", "status": 200, "headers": [(b"content-length", b"2")]})
            await send({"type": "http.response.body", "body": b"ok"})

    return broken


def finish_unfinished_responses(app, on_error: bool = False):
    """An app that returns mid-body (``on_error``: or raises mid-body) gets its response completed for it
    (the truncation, or the failure, becomes invisible)."""

    async def broken(scope, receive, send):
        if scope["type"] != "http":
            return await app(scope, receive, send)
        state = {"open": False}

        async def send_tracking(message):
            if message["type"] == "http.response.body":
                state["open"] = bool(message.get("more_body"))
            await send(message)

        try:
            await app(scope, receive, send_tracking)
        except Exception:
            if not (on_error and state["open"]):
                raise
        if state["open"]:
            await send({"type": "http.response.body", "body": b"", "more_body": False})

    return broken


# -- breaks the field's own clients must catch (conformance/checks/test_interop.py) ---------------------------------


def ws_bytes_short_by_one(send):
    """Every binary WebSocket message the app sends loses its last byte."""

    async def broken(message):
        if message["type"] == "websocket.send" and message.get("bytes"):
            message = {"type": "websocket.send", "bytes": bytes(message["bytes"])[:-1]}
        return await send(message)

    return broken
