"""Scripted requests: ``/script?s=<json>`` targets, a token per check, and readers for the event log.

Rules of this module:

1. It builds request *targets* and reads *events*; the bytes on the wire stay with ``conformance.http1``
   (HTTP) and ``conformance.ws`` (WebSocket), so a check still controls exactly what is sent.
2. Event readers never wait unboundedly: every wait has a deadline and a failure lists the events seen.
3. Step events are matched by their ``index`` (the step's position after ``repeat`` expansion) or by a
   ``label`` option, never by counting lines, so extra log lines (watchers, disconnects) cannot shift them.

    steps = [["start", 200], ["body", "a", True], ["sleep", 1], ["body", "b"]]
    tok = new_token()
    data = script_request(server, steps, token=tok)           # bytes for http1.Connection.send
    events = wait_steps(server, tok, count=len(steps))          # every step has run (or timed out)
    assert step(events, 3)["ok"]
"""
from __future__ import annotations

import json
import secrets
import time
from urllib.parse import quote

from gatecheck import fixtures

from .http1 import Connection, Exchange, build_request

__all__ = ["script_target", "script_request", "run_script", "ScriptRun", "new_token", "events_of", "steps_of", "step", "step_ok",
           "wait_events", "wait_event", "wait_steps", "event_names", "first_time"]


def new_token() -> str:
    """A fresh event-log token for one check (the apps accept ``[A-Za-z0-9_-]{1,64}``)."""
    return "c" + secrets.token_hex(8)


def script_target(steps: list, path: str = "/script") -> str:
    """The request target that makes the fixture app run ``steps`` (JSON, percent-encoded)."""
    text = json.dumps(steps, separators=(",", ":"))
    return f"{path}?s={quote(text, safe='')}"


def script_request(server, steps: list, *, token: str | None, method: str = "GET", headers=(),
                   body: bytes = b"", version: str = "HTTP/1.1", content_length: bool = True) -> bytes:
    """A complete HTTP/1.x request for a scripted route, carrying ``token`` (None: no event log)."""
    all_headers = list(headers)
    if token is not None:
        all_headers.append((fixtures.TOKEN_HEADER, token))
    return build_request(method, script_target(steps), all_headers, body, version=version,
                         host=server.authority, content_length=content_length)


class ScriptRun:
    """One scripted exchange: what came back on the connection and what the app logged."""

    def __init__(self, token: str, exchange: Exchange, events: list) -> None:
        self.token, self.exchange, self.events = token, exchange, events

    @property
    def responses(self) -> list:
        return self.exchange.final

    def step(self, index: int) -> dict | None:
        return step(self.events, index)


def run_script(server, steps: list, *, then: tuple = (), method: str = "GET", headers=(), body: bytes = b"",
               version: str = "HTTP/1.1", timeout: float = 5.0, steps_timeout: float = 5.0) -> ScriptRun:
    """Send one scripted request (plus the raw requests in ``then``, pipelined on the same connection),
    read up to 1 + len(then) responses (or until close/timeout), then wait for the script's steps."""
    token = new_token()
    data = script_request(server, steps, token=token, method=method, headers=headers, body=body,
                          version=version)
    methods = [method] + ["GET"] * len(then)
    with Connection(server.address, timeout) as conn:
        conn.send(data + b"".join(then))
        result = conn.read_responses(1 + len(then), methods=methods)
    events = wait_steps(server, token, len(steps), timeout=steps_timeout)
    return ScriptRun(token, result, events)


def events_of(server, token: str) -> list:
    """The events logged so far for ``token`` (decoded), oldest first."""
    return fixtures.read_events(server.event_dir, token)


def steps_of(events: list) -> list:
    return [e for e in events if e.get("event") == "step"]


def step(events: list, index: int | None = None, *, label: str | None = None) -> dict | None:
    """The step event with that index (or label), or None if it has not run (yet)."""
    for event in steps_of(events):
        if label is not None and event.get("label") == label:
            return event
        if label is None and event.get("index") == index:
            return event
    return None


def step_ok(events: list, index: int) -> bool | None:
    """True/False for a step that ran, None for one that did not run."""
    found = step(events, index)
    return None if found is None else bool(found.get("ok"))


def event_names(events: list) -> list:
    return [e.get("event") for e in events]


def first_time(events: list, name: str, **match) -> float | None:
    """The wall-clock time (``time.time()`` in the app) of the first event called ``name``."""
    for event in events:
        if event.get("event") == name and all(event.get(k) == v for k, v in match.items()):
            return event["t"]
    return None


def wait_events(server, token: str, predicate, timeout: float = 5.0, what: str = "condition") -> list:
    """Poll the event log until ``predicate(events)``; TimeoutError (with the events seen) otherwise."""
    return fixtures.wait_for_events(server.event_dir, token, predicate, timeout, what)


def wait_event(server, token: str, name: str, timeout: float = 5.0, **match) -> dict:
    return fixtures.wait_for_event(server.event_dir, token, name, timeout, **match)


def wait_steps(server, token: str, count: int, timeout: float = 5.0) -> list:
    """Wait until steps 0..count-1 have all logged (or the script ended or raised); return the events.

    Unlike :func:`wait_events` this does not raise at the deadline: a script the server stopped
    (connection killed, app cancelled) simply has fewer steps, which the check then reports.
    """
    deadline = time.monotonic() + timeout
    while True:
        events = events_of(server, token)
        done = {e.get("index") for e in steps_of(events)}
        ended = any(e.get("event") in ("script.end", "request.end") for e in events)
        if all(i in done for i in range(count)) or ended or time.monotonic() >= deadline:
            return events
        time.sleep(0.02)
