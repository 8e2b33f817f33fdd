"""Scripted requests with the framing checks need, and waits on named app events.

Extends ``conformance/scripted.py`` (targets, tokens, step readers) for the WSGI and RSGI protocol checks:

1. ``send`` puts one scripted request on a new connection exactly as asked — Content-Length or chunked
   body, any HTTP version, raw requests pipelined behind it — and reads the responses with a deadline.
2. ``events_until`` waits for an event by name (e.g. the WSGI iterable's ``wsgi.close``, logged *after*
   ``request.end``), never longer than its timeout, and never raises: a check reports what is missing.
3. ``outcome`` turns a step event into the value the app got back, failing with what the call raised.
"""
from __future__ import annotations

import time

from gatecheck import fixtures

from .http1 import Connection, Exchange, build_request
from .scripted import new_token, script_request
from .wire import REPLY_TIMEOUT

__all__ = ["send", "chunked", "ping", "events_until", "named", "outcome"]


def chunked(chunks) -> bytes:
    """A chunked message body carrying ``chunks`` (empty ones skipped), with the last-chunk."""
    return b"".join(b"%x\r\n%s\r\n" % (len(c), c) for c in chunks if c) + b"0\r\n\r\n"


def ping(server) -> bytes:
    """``GET /ping`` for this server, to pipeline behind a request: it must come back as 200 "ok"."""
    return build_request("GET", "/ping", host=server.authority)


def send(server, steps: list, *, method: str = "GET", headers=(), body: bytes = b"", chunks=None,
         then: bytes = b"", count: int = 1, version: str = "HTTP/1.1", token: str | None = "new",
         timeout: float = REPLY_TIMEOUT) -> tuple:
    """Send a scripted request (chunked when ``chunks`` is given; ``then`` pipelined behind it) and read up
    to ``count`` final responses; return (token, exchange). ``token=None`` sends no event-log token."""
    token = new_token() if token == "new" else token
    headers = list(headers)
    content_length = True
    if chunks is not None:
        body = chunked(chunks)
        headers.append(("Transfer-Encoding", "chunked"))
        content_length = False
    data = script_request(server, steps, token=token, method=method, headers=headers, body=body,
                          version=version, content_length=content_length)
    with Connection(server.address, timeout) as conn:
        conn.send(data + then)
        ex: Exchange = conn.read_responses(count, methods=[method] + ["GET"] * (count - 1))
    return token, ex


def events_until(server, token: str, names=("wsgi.close",), timeout: float = REPLY_TIMEOUT,
                 settle: float = 0.0) -> list:
    """The token's events once an event named in ``names`` was logged (or whatever is there at the
    deadline); with ``settle``, wait that much longer so a duplicate (a second close()) shows up too."""
    deadline = time.monotonic() + timeout
    while True:
        events = fixtures.read_events(server.event_dir, token)
        if any(e.get("event") in names for e in events) or time.monotonic() >= deadline:
            break
        time.sleep(0.02)
    if settle:
        time.sleep(settle)
        events = fixtures.read_events(server.event_dir, token)
    return events


def named(events: list, name: str) -> list:
    return [e for e in events if e.get("event") == name]


def outcome(event: dict | None, what: str):
    """The value a logged step returned; fails naming the call when it did not run or raised."""
    assert event is not None, f"{what} never ran (the app was not called, or stopped before it)"
    assert event.get("ok"), f"{what} raised {event.get('error')}"
    return event.get("result")
