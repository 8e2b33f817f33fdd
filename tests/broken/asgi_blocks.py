"""The building blocks of tests/broken/asgi.py's breaks: wrappers that edit the scope, what the app
receives, or what it sends, and the scope edits, lifespan-state edits and per-request leaks built on them.
The rules of tests/broken/asgi.py hold here (one break, one rule; nothing hangs)."""

from __future__ import annotations

import os

__all__ = [
    "on_scope",
    "on_receive",
    "on_send",
    "set_key",
    "edit_headers",
    "upper_names",
    "last_of_each_name",
    "utf8_reencoded",
    "pseudo_header_leaks",
    "host_moves_last",
    "swap_version",
    "asgi_key",
    "bytes_key",
    "ws_scheme_http",
    "subprotocols_reversed",
    "state_not_copied",
    "state_shared_per_connection",
    "forwarded_verbatim",
    "state_fresh",
    "state_prefilled",
    "add_extension",
    "holds_per_request",
    "descriptor",
    "mebibyte",
]


# -- building blocks: edit the scope, what the app receives, or what the app sends ------------------


def on_scope(edit, types=("http",)):
    def wrap(app):
        async def broken(scope, receive, send):
            if scope["type"] in types:
                scope = dict(scope, asgi=dict(scope.get("asgi") or {}))
                edit(scope)
            await app(scope, receive, send)

        return broken

    return wrap


def on_receive(edit, types=("http",)):
    def wrap(app):
        async def broken(scope, receive, send):
            if scope["type"] not in types:
                return await app(scope, receive, send)

            async def receive_broken():
                return await edit(scope, await receive())

            await app(scope, receive_broken, send)

        return broken

    return wrap


def on_send(make_sender, types=("http",), paths=None):
    """``make_sender(send)`` returns the broken send for one request (it may keep per-request state)."""

    def wrap(app):
        async def broken(scope, receive, send):
            if scope["type"] not in types or (paths and not scope["path"].startswith(paths)):
                return await app(scope, receive, send)
            await app(scope, receive, make_sender(send))

        return broken

    return wrap


def set_key(key, value_of):
    def edit(scope):
        if key in scope:
            scope[key] = value_of(scope[key])

    return edit


# -- scope edits -------------------------------------------------------------------------------------


def edit_headers(edit):
    def apply(scope):
        scope["headers"] = edit([(bytes(n), bytes(v)) for n, v in scope["headers"]])

    return apply


def upper_names(headers):
    # the event-log token stays readable so the harness still works; every other name is upper-cased
    return [(n if n == b"x-gatecheck-token" else n.upper(), v) for n, v in headers]


def last_of_each_name(headers):
    last = {n: (n, v) for n, v in headers}
    return list(last.values())


def utf8_reencoded(headers):
    return [(n, v.decode("latin-1").encode("utf-8")) for n, v in headers]


def pseudo_header_leaks(headers):
    return [(b":method", b"GET")] + headers


def host_moves_last(headers):
    return [h for h in headers if h[0] != b"host"] + [h for h in headers if h[0] == b"host"]


def swap_version(scope, frm, to):
    if scope.get("http_version") == frm:
        scope["http_version"] = to


def asgi_key(key, value):
    def edit(scope):
        scope["asgi"][key] = value

    return edit


def bytes_key(scope):
    scope[b"gatecheck"] = 1


def ws_scheme_http(scope):
    scope["scheme"] = "http"


def subprotocols_reversed(scope):
    scope["subprotocols"] = list(reversed(scope.get("subprotocols") or []))


# -- lifespan ----------------------------------------------------------------------------------------

_LIFESPAN = {}


def state_not_copied(app):
    """Every request gets the lifespan state dict itself instead of a copy of it."""

    async def broken(scope, receive, send):
        if scope["type"] == "lifespan" and "state" in scope:
            _LIFESPAN["state"] = scope["state"]
        elif scope["type"] == "http" and "state" in _LIFESPAN:
            scope = dict(scope, state=_LIFESPAN["state"])
        await app(scope, receive, send)

    return broken


def state_shared_per_connection(app):
    """The requests of one connection (one client address) share the first one's state copy."""
    copies = {}

    async def broken(scope, receive, send):
        if scope["type"] == "http" and "state" in scope and scope.get("client"):
            scope = dict(scope, state=copies.setdefault(tuple(scope["client"]), scope["state"]))
        await app(scope, receive, send)

    return broken


def forwarded_verbatim(scope):
    """X-Forwarded-Proto becomes the scheme and X-Forwarded-For the client's host, as sent, on any scope."""
    fields = {bytes(n).lower(): bytes(v).decode("latin-1") for n, v in scope.get("headers", ())}
    if b"x-forwarded-proto" in fields:
        scope["scheme"] = fields[b"x-forwarded-proto"]
    if b"x-forwarded-for" in fields:
        scope["client"] = (fields[b"x-forwarded-for"], 0)


def state_fresh(scope):
    if "state" in scope:
        scope["state"] = {}  # a new dict instead of a copy of what lifespan startup put there


def state_prefilled(scope):
    if "state" in scope:
        scope["state"]["gatecheck_leftover"] = True


def add_extension(name, value):
    def edit(scope):
        scope["extensions"] = dict(scope.get("extensions") or {}, **{name: value})

    return edit


# -- resources held past the request ----------------------------------------------------------------

_HELD = []


def holds_per_request(take):
    """Every HTTP request leaves something behind for good (``take()``: a descriptor, a mebibyte...)."""

    def wrap(app):
        async def broken(scope, receive, send):
            if scope["type"] == "http":
                _HELD.append(take())
            await app(scope, receive, send)

        return broken

    return wrap


def descriptor():
    return os.open(os.devnull, os.O_RDONLY)


def mebibyte():
    return b"\xa5" * (1 << 20)  # written, so resident
