"""What happened while a check's requests were in flight, besides what the check asserted: the server died of
them, or the fixture app refused them.

Rules of this module:

1. A crash is a finding of the check whose request was in flight: the session's server exited unasked, one of
   its processes (a worker) vanished, or a private server of the check exited unasked. The check's outcome is
   "crashed" (whatever its call said, known deviations included), with the server's exit status, what it
   logged during the check and its last log lines (a segfault often logs nothing during the check).
   A private server that exited unasked while no connection of the check had reached it since it was launched
   was found dead before the check used it: no request of the check was in flight, so it is an error of the
   check (it could not run), never known, never a plain failure of the rule.
2. A fixture refusal is an error of the check: the fixture app logged (``fixtures.REFUSALS``) that it could
   not run a request of the check (a script it could not read, an invalid token), with what it was handed.
   The check's own verdict (a pass on that answer, or a failure citing an unrelated clause) is replaced by an
   error that names the cause; it is never a pass and never "known".
3. A server its memory bound killed is told with the check during which its resident memory first rose by more
   than ``RISE``, the check before that one (a request can leave a thread growing after its check ended) and the
   largest rises (each check's before and after, as the bound's watch sampled them): the check running at the
   kill is seldom the one that drove it there.
4. Each is judged once per check: after the call, or, when the server died only after the call's report, in
   the teardown (``watch.py``). A server that dies a while after the request that killed it (one that logs the
   fault, then exits) is charged to the check running when it exits; the message says when it logged nothing
   during that check, so a reader looks at the check before.
"""

from __future__ import annotations

import weakref

import pytest

from gatecheck.conformance.app.private import take_started
from gatecheck.conformance.client import transcript
from gatecheck.conformance.plugin.outcomes import Verdict
from gatecheck.conformance.spec.results import check_id_of
from gatecheck.servers.memory import describe

__all__ = ["begin", "after_call", "crash_in_teardown", "refusal_message"]

_STATE = pytest.StashKey[dict]()
RISE = 64 << 20  # bytes: a rise of resident memory during one check that the story of a kill names
_RISES: "weakref.WeakKeyDictionary" = weakref.WeakKeyDictionary()  # server process -> [(check, before, after)]
_EXIT_GRACE = 0.05  # seconds: waited only when a call failed and its server still runs


def begin(item, started) -> None:
    """Before the check: what its server is made of, and how many refusals its app logged so far."""
    take_started()  # private servers of earlier checks were judged with them
    item.stash[_STATE] = {
        "started": started,
        "handle": started.handle,
        "members": started.members(),
        "refusals": len(started.refusals()),
        "offset": started.log_size(),
        "reported": False,
        "resident": started.handle.process.resident if started.handle is not None else None,
    }


def after_call(item, pool, failed: bool) -> Verdict | None:
    """The verdict that replaces the call's (rules 1 and 2), or None."""
    state = item.stash.get(_STATE, None)
    privates = take_started()
    if state is None or pool.stopping:
        return None
    _note_rise(item, state)
    crash = _session_crash(state, _EXIT_GRACE if failed else 0.0)
    if crash is None:
        dead = next((run for run in privates if run.crash), None)
        if dead is not None and not _used(dead):
            return Verdict("error", _unused_message(dead))
        crash = _private_message(dead) if dead is not None else None
    if crash is not None:
        state["reported"] = True
        return Verdict("crashed", crash)
    refused = state["started"].refusals(state["refusals"]) if state["handle"] is not None else []
    for run in privates:
        refused += run.started.refusals()
    return Verdict("error", refusal_message(refused)) if refused else None


def crash_in_teardown(item, pool) -> str | None:
    """The crash message once, when the session's server died after the call's report (rule 3)."""
    state = item.stash.get(_STATE, None)
    if state is None or state["reported"] or pool.stopping:
        return None
    state["reported"] = True
    return _session_crash(state, 0.0, members=False)


def _session_crash(state: dict, grace: float, members: bool = True) -> str | None:
    started, handle = state["started"], state["handle"]
    if handle is None or started.handle is not handle:
        return None
    what = started.crash(state["members"] if members else None, grace)
    if what is None:
        return None
    during = started.log_since(state["offset"]).strip()
    earlier = (
        ""
        if during
        else (
            " It logged nothing during this check: if its last lines show a fault, the "
            "request of an earlier check may have caused it."
        )
    )
    return (
        f"crashed: {what} while this check's request was in flight.{earlier}{_memory_story(handle)}\n"
        f"logged during the check:\n{during or '(nothing)'}\nlast log lines:\n{started.last_log_lines() or '(none)'}"
    )


def _note_rise(item, state: dict) -> None:
    handle = state["handle"]
    after = handle.process.resident if handle is not None else None
    if state["resident"] is not None and after is not None:
        _RISES.setdefault(handle.process, []).append((check_id_of(item), state["resident"], after))


def _memory_story(handle) -> str:
    """Rule 3: for a server its memory bound killed, where its memory went; "" otherwise."""
    rises = _RISES.get(handle.process, []) if handle.memory_exceeded else []
    if not rises:
        return ""
    first = next((n for n, r in enumerate(rises) if r[2] - r[1] >= RISE), None)
    top = sorted(rises, key=lambda r: r[2] - r[1], reverse=True)[:3]
    said = ""
    if first is not None:
        check, before, after = rises[first]
        said = (
            f" Its resident memory first rose by more than {describe(RISE)} in one check during {check} "
            f"({describe(before)} → {describe(after)})" + (f", right after {rises[first - 1][0]}." if first else ".")
        )
    return (
        said
        + " The largest rises in one check: "
        + "; ".join(f"{check} {describe(before)} → {describe(after)}" for check, before, after in top)
    )


def _private_message(run) -> str:
    return (
        f"crashed: the check's private server {run.started.target}: {run.crash} while the check's request was "
        f"in flight.\nlast log lines:\n{run.log_tail or '(none)'}"
    )


def _used(run) -> bool:
    """Whether a connection of the check reached the private server since it was launched (its readiness
    probe is not the check's: the servers layer sends it, unrecorded)."""
    return bool(run.address) and transcript.connected_since(run.address, run.started.started_at)


def _unused_message(run) -> str:
    return (
        f"the check's private server {run.started.target} was found dead before the check used it: {run.crash} "
        f"before any connection of the check reached it, so the check could not run (no request of it was in "
        f"flight).\nlast log lines:\n{run.log_tail or '(none)'}"
    )


def refusal_message(refused: list) -> str:
    """One message for the fixture app's refusals (rule 2): the first reason and what the app was handed."""
    first = refused[0]
    query = repr(first.get("query"))
    query = query if len(query) <= 160 else query[:150] + "...'"
    more = f" (and {len(refused) - 1} more)" if len(refused) > 1 else ""
    return (
        f"the fixture app could not run a request of this check{more}: {first.get('reason')}; it was handed "
        f"the query string {query} for path {first.get('path')!r} ({first.get('interface')}). The check has no "
        f"evidence either way: its rule is not judged (a server that does not hand the app the query as sent "
        f"breaks another rule)"
    )
