"""Deliberately broken ASGI behaviour: the fixture app behind a wrapper that breaks exactly one rule.

Load ``tests.broken.asgi:<name>`` with any ASGI server (``tests.broken.asgi:control`` is the wrapper with
nothing broken). Each entry of ``BREAKS`` plays a server that gets one thing wrong — a scope key, a
request message, a response message it passes on — so the conformance check for that rule must fail
while every other rule still holds.

Rules of this module:

1. One entry, one broken rule; everything the entry does not name passes through untouched (lifespan
   always does, so a broken app still starts).
2. A break must not make a check *hang*: what it withholds it withholds for a bounded time, and a body
   it shortens gets a matching Content-Length.
"""
from __future__ import annotations

import asyncio
import os
import socket
import time
from urllib.parse import unquote_to_bytes

from gatecheck.fixtures.apps.asgi import app as fixture_app

from .chunks import reordered

__all__ = ["BREAKS", "VARIANTS", "control"]


# -- building blocks: edit the scope, what the app receives, or what the app sends ------------------

def _on_scope(edit, types=("http",)):
    def wrap(app):
        async def broken(scope, receive, send):
            if scope["type"] in types:
                scope = dict(scope, asgi=dict(scope.get("asgi") or {}))
                edit(scope)
            await app(scope, receive, send)
        return broken
    return wrap


def _on_receive(edit, types=("http",)):
    def wrap(app):
        async def broken(scope, receive, send):
            if scope["type"] not in types:
                return await app(scope, receive, send)

            async def receive_broken():
                return await edit(scope, await receive())
            await app(scope, receive_broken, send)
        return broken
    return wrap


def _on_send(make_sender, types=("http",), paths=None):
    """``make_sender(send)`` returns the broken send for one request (it may keep per-request state)."""
    def wrap(app):
        async def broken(scope, receive, send):
            if scope["type"] not in types or (paths and not scope["path"].startswith(paths)):
                return await app(scope, receive, send)
            await app(scope, receive, make_sender(send))
        return broken
    return wrap


def _set(key, value_of):
    def edit(scope):
        if key in scope:
            scope[key] = value_of(scope[key])
    return edit


# -- scope edits -------------------------------------------------------------------------------------

def _headers(edit):
    def apply(scope):
        scope["headers"] = edit([(bytes(n), bytes(v)) for n, v in scope["headers"]])
    return apply


def _upper_names(headers):
    # the event-log token stays readable so the harness still works; every other name is upper-cased
    return [(n if n == b"x-gatecheck-token" else n.upper(), v) for n, v in headers]


def _last_of_each_name(headers):
    last = {n: (n, v) for n, v in headers}
    return list(last.values())


def _utf8_reencoded(headers):
    return [(n, v.decode("latin-1").encode("utf-8")) for n, v in headers]


def _pseudo_header_leaks(headers):
    return [(b":method", b"GET")] + headers


def _host_moves_last(headers):
    return [h for h in headers if h[0] != b"host"] + [h for h in headers if h[0] == b"host"]


def _version(scope, frm, to):
    if scope.get("http_version") == frm:
        scope["http_version"] = to


def _asgi_key(key, value):
    def edit(scope):
        scope["asgi"][key] = value
    return edit


def _bytes_key(scope):
    scope[b"gatecheck"] = 1


def _ws_scheme_http(scope):
    scope["scheme"] = "http"


def _subprotocols_reversed(scope):
    scope["subprotocols"] = list(reversed(scope.get("subprotocols") or []))


# -- receive edits -----------------------------------------------------------------------------------

def _body_loses_a_byte(app):
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


async def _more_body_as_int(scope, message):
    if message["type"] == "http.request":
        message = dict(message, more_body=int(bool(message.get("more_body"))))
    return message


async def _body_as_bytearray(scope, message):
    if message["type"] == "http.request":
        message = dict(message, body=bytearray(message.get("body", b"")))
    return message


async def _swallow_disconnect(scope, message):
    # a server that never tells the app the client left: the app's receive() just waits (bounded)
    if message["type"] == "http.disconnect":
        await asyncio.sleep(60)
    return message


async def _ws_text_received_as_bytes(scope, message):
    if message["type"] == "websocket.receive" and message.get("text") is not None:
        message = {"type": "websocket.receive", "bytes": message["text"].encode("utf-8")}
    return message


async def _disconnect_code_1000(scope, message):
    if message["type"] == "websocket.disconnect":
        message = dict(message, code=1000)
    return message


_INSTANT_DISCONNECT = {"type": "http.disconnect"}


def _disconnect_when_body_done(app):
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

def _reorder_body_chunks(send):
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


def _buffer_body(send):
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


def _response_short_by_one(send):
    """A whole response (start + one body) goes out one byte short, Content-Length to match."""
    start = {}

    async def broken(message):
        if message["type"] == "http.response.start":
            start.update(message)
            return None
        if message["type"] == "http.response.body" and start:
            body = bytes(message.get("body", b""))[:-1]
            await send(dict(start, headers=_with_length(start.get("headers", []), len(body))))
            start.clear()
            return await send({"type": "http.response.body", "body": body})
        return await send(message)
    return broken


def _with_length(headers, length: int) -> list:
    return [(n, str(length).encode() if bytes(n).lower() == b"content-length" else v) for n, v in headers]


def _pathsend_short_by_one(send):
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
                await send(dict(held, headers=_with_length(held.get("headers", []), len(body))))
                return await send({"type": "http.response.body", "body": body})
            await send(held)
        return await send(message)
    return broken


def _dedup_response_headers(send):
    async def broken(message):
        if message["type"] == "http.response.start":
            message = dict(message, headers=_last_of_each_name(list(message.get("headers", []))))
        return await send(message)
    return broken


def _send_errors_swallowed(send):
    """send() never raises: an invalid event or a send after disconnect is silently dropped."""
    async def broken(message):
        try:
            return await send(message)
        except Exception:
            return None
    return broken


def _ws_text_as_bytes(send):
    async def broken(message):
        if message["type"] == "websocket.send" and message.get("text") is not None:
            message = {"type": "websocket.send", "bytes": message["text"].encode("utf-8")}
        return await send(message)
    return broken


def _ws_close_reason_dropped(send):
    async def broken(message):
        if message["type"] == "websocket.close":
            message = {k: v for k, v in message.items() if k != "reason"}
        return await send(message)
    return broken


def _non_list_headers_dropped(send):
    """Response headers in any iterable but a list are dropped (the start goes out with none)."""
    async def broken(message):
        if message["type"] == "http.response.start" and not isinstance(message.get("headers", []), list):
            message = dict(message, headers=[])
        return await send(message)
    return broken


def _body_key_required(send):
    """A body message without "body" raises (the server reads message["body"], ignoring the default)."""
    async def broken(message):
        if message["type"] == "http.response.body" and "body" not in message:
            raise KeyError("body")
        return await send(message)
    return broken


def _content_length_dropped(send):
    async def broken(message):
        if message["type"] == "http.response.start":
            message = dict(message, headers=[(n, v) for n, v in message.get("headers", [])
                                             if bytes(n).lower() != b"content-length"])
        return await send(message)
    return broken


def _content_encoding_dropped(send):
    async def broken(message):
        if message["type"] == "http.response.start":
            message = dict(message, headers=[(n, v) for n, v in message.get("headers", [])
                                             if bytes(n).lower() != b"content-encoding"])
        return await send(message)
    return broken


def _empty_body_ends_response(send):
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


def _unknown_keys_refused(send):
    known = {"type", "status", "headers", "trailers", "body", "more_body"}

    async def broken(message):
        if message["type"].startswith("http.response.") and set(message) - known:
            raise ValueError(f"unexpected keys {sorted(set(message) - known)}")
        return await send(message)
    return broken


def _ws_close_code_dropped(send):
    async def broken(message):
        if message["type"] == "websocket.close":
            message = {"type": "websocket.close"}
        return await send(message)
    return broken


def _ws_empty_message_dropped(send):
    """A websocket.send with an empty payload puts no frame on the wire (as daphne 4.2 does)."""
    async def broken(message):
        if message["type"] == "websocket.send" and not (message.get("bytes") or message.get("text")):
            return None
        return await send(message)
    return broken


# -- lifespan ----------------------------------------------------------------------------------------

_LIFESPAN = {}


def _state_not_copied(app):
    """Every request gets the lifespan state dict itself instead of a copy of it."""
    async def broken(scope, receive, send):
        if scope["type"] == "lifespan" and "state" in scope:
            _LIFESPAN["state"] = scope["state"]
        elif scope["type"] == "http" and "state" in _LIFESPAN:
            scope = dict(scope, state=_LIFESPAN["state"])
        await app(scope, receive, send)
    return broken


def _state_fresh(scope):
    if "state" in scope:
        scope["state"] = {}  # a new dict instead of a copy of what lifespan startup put there


def _state_prefilled(scope):
    if "state" in scope:
        scope["state"]["gatecheck_leftover"] = True


def _add_extension(name, value):
    def edit(scope):
        scope["extensions"] = dict(scope.get("extensions") or {}, **{name: value})
    return edit


# -- resources held past the request ----------------------------------------------------------------

_HELD = []


def _holds_per_request(take):
    """Every HTTP request leaves something behind for good (``take()``: a descriptor, a mebibyte...)."""
    def wrap(app):
        async def broken(scope, receive, send):
            if scope["type"] == "http":
                _HELD.append(take())
            await app(scope, receive, send)
        return broken
    return wrap


def _descriptor():
    return os.open(os.devnull, os.O_RDONLY)


def _mebibyte():
    return b"\xa5" * (1 << 20)  # written, so resident


# -- app-level behaviour a server must supply ---------------------------------------------------------

def _errors_become_200(app):
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
            await send({"type": "http.response.start", "status": 200,
                        "headers": [(b"content-length", b"2")]})
            await send({"type": "http.response.body", "body": b"ok"})
    return broken


def _finish_unfinished_responses(app, on_error: bool = False):
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


#: name -> wrapper(app) -> broken app; each breaks the one rule its name says
BREAKS = {
    # HTTP connection scope
    "http_version_1": _on_scope(lambda s: _version(s, "1.1", "1")),
    "http_version_2_as_1_1": _on_scope(lambda s: _version(s, "2", "1.1")),
    "asgi_version_2": _on_scope(_asgi_key("version", "2.0")),
    "spec_version_unknown": _on_scope(_asgi_key("spec_version", "2.9")),
    "scope_bytes_key": _on_scope(_bytes_key),
    "method_lower": _on_scope(_set("method", str.lower)),
    "scheme_https": _on_scope(lambda s: s.update(scheme="https")),
    "scheme_http": _on_scope(lambda s: s.update(scheme="http")),
    "path_not_decoded": _on_scope(lambda s: s.update(path=bytes(s["raw_path"]).decode("latin-1"))),
    "raw_path_short": _on_scope(_set("raw_path", lambda v: bytes(v)[:-1])),
    "query_string_str": _on_scope(_set("query_string", lambda v: bytes(v).decode("latin-1"))),
    "root_path_bytes": _on_scope(lambda s: s.update(root_path=s.get("root_path", "").encode())),
    "header_names_upper": _on_scope(_headers(_upper_names)),
    "header_repeats_merged": _on_scope(_headers(_last_of_each_name)),
    "header_values_reencoded": _on_scope(_headers(_utf8_reencoded)),
    "ws_header_values_reencoded": _on_scope(_headers(_utf8_reencoded), types=("websocket",)),
    "pseudo_header_leaks": _on_scope(_headers(_pseudo_header_leaks)),
    "host_header_last": _on_scope(_headers(_host_moves_last)),
    "client_port_str": _on_scope(_set("client", lambda c: (c[0], str(c[1])))),
    "server_port_off_by_one": _on_scope(_set("server", lambda s: (s[0], s[1] + 1))),
    "extension_not_a_dict": _on_scope(_add_extension("gatecheck.bogus", True)),
    # extensions
    "debug_extension_advertised": _on_scope(_add_extension("http.response.debug", {})),
    "tls_extension_on_plain": _on_scope(_add_extension("tls", {"server_cert": None, "tls_version": 0x0304})),
    "pathsend_short_by_one": _on_send(_pathsend_short_by_one),
    # lifespan
    "lifespan_asgi_version_2": _on_scope(_asgi_key("version", "2.0"), types=("lifespan",)),
    "lifespan_state_prefilled": _on_scope(_state_prefilled, types=("lifespan",)),
    "lifespan_state_not_copied": _state_not_copied,
    "state_not_from_lifespan": _on_scope(_state_fresh),
    # request messages
    "body_loses_a_byte": _body_loses_a_byte,
    "more_body_as_int": _on_receive(_more_body_as_int),
    "body_as_bytearray": _on_receive(_body_as_bytearray),
    "disconnect_swallowed": _on_receive(_swallow_disconnect),
    "disconnect_too_early": _disconnect_when_body_done,
    # response messages
    "echo_iter_reordered": _on_send(_reorder_body_chunks, paths=("/echo_iter",)),
    "body_buffered": _on_send(_buffer_body),
    "file_short_by_one": _on_send(_response_short_by_one, paths=("/file/",)),
    "response_repeats_merged": _on_send(_dedup_response_headers),
    "non_list_headers_dropped": _on_send(_non_list_headers_dropped),
    "body_key_required": _on_send(_body_key_required),
    "content_length_dropped": _on_send(_content_length_dropped, paths=("/echo",)),
    "content_encoding_dropped": _on_send(_content_encoding_dropped),
    "empty_body_ends_response": _on_send(_empty_body_ends_response),
    "unknown_keys_refused": _on_send(_unknown_keys_refused),
    "send_never_raises": _on_send(_send_errors_swallowed),
    "errors_become_200": _errors_become_200,
    "unfinished_response_completed": _finish_unfinished_responses,
    "errors_after_start_complete_the_response": lambda app: _finish_unfinished_responses(app, on_error=True),
    # resources
    "leaks_a_descriptor_per_request": _holds_per_request(_descriptor),
    "leaks_a_mebibyte_per_request": _holds_per_request(_mebibyte),
    # WebSocket
    "ws_scheme_http": _on_scope(_ws_scheme_http, types=("websocket",)),
    "ws_subprotocols_reversed": _on_scope(_subprotocols_reversed, types=("websocket",)),
    "ws_text_as_bytes": _on_send(_ws_text_as_bytes, types=("websocket",)),
    "ws_close_code_dropped": _on_send(_ws_close_code_dropped, types=("websocket",)),
    "ws_empty_message_dropped": _on_send(_ws_empty_message_dropped, types=("websocket",)),
    "ws_close_reason_dropped": _on_send(_ws_close_reason_dropped, types=("websocket",)),
    "ws_text_received_as_bytes": _on_receive(_ws_text_received_as_bytes, types=("websocket",)),
    "ws_query_string_decoded": _on_scope(lambda s: s.update(query_string=unquote_to_bytes(bytes(s["query_string"]))),
                                         types=("websocket",)),
    "ws_disconnect_code_1000": _on_receive(_disconnect_code_1000, types=("websocket",)),
}


# -- breaks the field's own clients must catch (conformance/test_interop.py) ---------------------------------

def _ws_bytes_short_by_one(send):
    """Every binary WebSocket message the app sends loses its last byte."""
    async def broken(message):
        if message["type"] == "websocket.send" and message.get("bytes"):
            message = {"type": "websocket.send", "bytes": bytes(message["bytes"])[:-1]}
        return await send(message)
    return broken


def _after_completion(then):
    """A send that hands every message to ``send`` until the response completed, then calls ``then(message)``."""
    def make(send):
        done = []

        async def sender(message):
            if done:
                return await then(message)
            if message.get("type") == "http.response.body" and not message.get("more_body", False):
                done.append(True)
            return await send(message)
        return sender
    return make


async def _ignored(message):
    return None


async def _refused(message):
    raise RuntimeError(f"{message.get('type')} after the response completed")


BREAKS.update({
    # the letter of ASGI ("any further messages on the channel will be ignored"), as a control for uvicorn,
    # which raises; and the raise made explicit, as the break
    "late_messages_ignored": _on_send(_after_completion(_ignored)),
    "late_messages_raise": _on_send(_after_completion(_refused)),
    "json_short_by_one": _on_send(_response_short_by_one, paths=("/json",)),
    "ws_bytes_short_by_one": _on_send(_ws_bytes_short_by_one, types=("websocket",)),
})




async def _unchanged(scope, message):
    return message


def _passthrough(send):
    return send


_ALL = ("http", "websocket")

#: the fixture app through every building block, with nothing broken (the control of every break)
control = _on_scope(lambda scope: None, _ALL)(_on_receive(_unchanged, _ALL)(_on_send(_passthrough, _ALL)(fixture_app)))



# -- variants: behaviours the texts allow, unlike uvicorn's (not breaks: for checks that must accept them) ----

def _ws_local_close_refused(app):
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


def _invalid_start_raises_then_malformed(send):
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


def _shut_down_unanswered(client) -> None:
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


def _ws_unoffered_accept_refused(app):
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
                _shut_down_unanswered(scope["client"])
                raise ValueError(f"refused {message['type']}: subprotocol {message.get('subprotocol')!r} not offered")
            await send(message)
        await app(scope, receive, refusing)
    return variant


_POISONED = []


def _mid_response_error_poisons(app):
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


def _burn(seconds: float) -> None:
    until = time.monotonic() + seconds
    while time.monotonic() < until:
        sum(range(1000))


def _abandoned_stream_keeps_working(app):
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
                await asyncio.to_thread(_burn, ABANDONED_WORK)
    return variant


#: variant name -> the wrapper
VARIANTS = {"abandoned_stream_keeps_working": _abandoned_stream_keeps_working,
            "mid_response_error_poisons": _mid_response_error_poisons,
            "ws_unoffered_accept_refused": _ws_unoffered_accept_refused,
            "ws_local_close_refused": _ws_local_close_refused,
            "invalid_start_raises_then_malformed": _on_send(_invalid_start_raises_then_malformed)}

globals().update({name: wrap(fixture_app) for name, wrap in {**BREAKS, **VARIANTS}.items()})
