"""The fixture app's event log as the checks read it: a token's events, its step events, and waits with a deadline
(``view`` re-exports these).

Every reader returns what is there at its deadline rather than waiting unboundedly, matches step events by their
``index`` or ``label``, and raises :class:`CheckError` when the log shows the app refused the script (the app
could not read it: no evidence either way).
"""

from __future__ import annotations

import time

from gatecheck import fixtures
from gatecheck.conformance.spec.results import CheckError

__all__ = [
    "events_of",
    "refused",
    "steps_of",
    "named",
    "step",
    "step_value",
    "wait_event",
    "wait_step",
    "wait_steps",
    "events_until",
]

#: how long a scripted exchange waits for its replies, and for its steps, by default
_REPLY_TIMEOUT = 3.0
_STEPS_TIMEOUT = 5.0


def events_of(server, token: str) -> list:
    """The events logged so far for ``token`` (decoded), oldest first. A script the app refused (``script.error``:
    it could not read it) raises :class:`CheckError` naming what the app was handed (rule 5)."""
    return refused(fixtures.read_events(server.event_dir, token))


def refused(events: list) -> list:
    """``events``, unless they show the fixture app refused the script (rule 5): then :class:`CheckError`."""
    for event in events:
        if event.get("event") == "script.error":
            query = repr(event.get("query"))
            query = query if len(query) <= 160 else query[:150] + "...'"
            raise CheckError(
                f"the fixture app could not run this check's script: {event.get('message')}; it was "
                f"handed the query string {query}. The check has no evidence either way"
            )
    return events


def steps_of(events: list) -> list:
    return named(events, "step")


def named(events: list, name: str) -> list:
    return [e for e in events if e.get("event") == name]


def step(events: list, index: int | None = None, *, label: str | None = None) -> dict | None:
    """The step event with that index (or label), or None if it has not run (yet)."""
    for event in steps_of(events):
        if label is not None and event.get("label") == label:
            return event
        if label is None and event.get("index") == index:
            return event
    return None


def step_value(event: dict | None, what: str):
    """The value a logged step returned; fails naming the call when it did not run or raised."""
    assert event is not None, f"{what} never ran (the app was not called, or stopped before it)"
    assert event.get("ok"), f"{what} raised {event.get('error')}"
    return event.get("result")


def wait_event(server, token: str, name: str, timeout: float = 5.0, **match) -> dict:
    """The first event called ``name`` (matching ``match``); TimeoutError with the events seen otherwise (or
    :class:`CheckError` when the app refused the script, rule 5)."""
    try:
        return fixtures.wait_for_event(server.event_dir, token, name, timeout, **match)
    except TimeoutError:
        refused(fixtures.read_events(server.event_dir, token))
        raise


def _poll(server, token: str, enough, timeout: float) -> list:
    """The token's events once ``enough(events)`` holds, or whatever is there at the deadline."""
    deadline = time.monotonic() + timeout
    while True:
        events = events_of(server, token)
        if enough(events) or time.monotonic() >= deadline:
            return events
        time.sleep(0.02)


def wait_step(server, token: str, index: int, timeout: float) -> dict | None:
    """The step event with that index once it is logged, or None at the deadline."""
    return step(_poll(server, token, lambda events: step(events, index) is not None, timeout), index)


def wait_steps(server, token: str, count: int, timeout: float = _STEPS_TIMEOUT) -> list:
    """Wait until steps 0..count-1 have all logged (or the script ended or raised); return the events.

    This does not raise at the deadline: a script the server stopped (connection killed, app cancelled)
    simply has fewer steps, which the check then reports."""

    def enough(events: list) -> bool:
        done = {e.get("index") for e in steps_of(events)}
        ended = any(e.get("event") in ("script.end", "request.end", "script.error") for e in events)
        return all(i in done for i in range(count)) or ended

    return _poll(server, token, enough, timeout)


def events_until(
    server, token: str, names=("wsgi.close",), timeout: float = _REPLY_TIMEOUT, settle: float = 0.0
) -> list:
    """The token's events once an event named in ``names`` was logged (or whatever is there at the
    deadline); with ``settle``, wait that much longer so a duplicate (a second close()) shows up too."""
    events = _poll(server, token, lambda evs: any(e.get("event") in names for e in evs), timeout)
    if settle:
        time.sleep(settle)
        events = events_of(server, token)
    return events
