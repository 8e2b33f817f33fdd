"""ASGI lifespan (lifespan.rst 2.0): the scope, startup before any connection, startup failure, apps that
raise, shutdown after the connections closed and waited for, and lifespan state as a shallow copy.

The fixture app logs every lifespan event to token ``lifespan`` (``fixtures/ROUTES.md``); checks that need a
misbehaving lifespan start a private server with ``GATECHECK_LIFESPAN=<mode>`` (``conformance/app/private.py``),
once per target per module, and assert on what that run recorded.
"""

from __future__ import annotations

import os
import signal
import subprocess
import threading
import time

import pytest

from gatecheck import fixtures
from gatecheck.conformance.app import new_token, run_script, script_request
from gatecheck.conformance.app.private import private_server, with_workers
from gatecheck.conformance.client.http1 import Connection, build_request, exchange
from gatecheck.conformance.spec.markers import interfaces, needs, spec
from gatecheck.servers import ServerExited
from gatecheck.servers.process import free_port

pytestmark = [interfaces("asgi"), needs("http1", "lifespan")]

_LS = "ASGI Lifespan"


def _lifespan(events: list, name: str) -> list:
    return [e for e in events if e.get("event") == name]


def _ping(address, authority, token: str | None = None, timeout: float = 5.0):
    headers = [(fixtures.TOKEN_HEADER, token)] if token else []
    return exchange(address, build_request("GET", "/ping", headers, host=authority), timeout=timeout).first


# -- the lifespan scope (session server) -------------------------------------------------------------


def _session_lifespan(server) -> list:
    events = fixtures.read_events(server.event_dir, "lifespan", timeout=2.0)
    if not _lifespan(events, "lifespan.scope"):
        pytest.fail("the server never called the app with a lifespan scope although it declares lifespan")
    return events


def _session_scope(server) -> dict:
    scope = _lifespan(_session_lifespan(server), "lifespan.scope")[0]["scope"]
    assert type(scope) is dict, f"the lifespan scope is a {type(scope).__name__}, not a dict"
    return scope


@spec(f"{_LS} §Scope", "DEFINED")
def test_lifespan_scope_type_is_lifespan(server):
    """The lifespan scope's type is "lifespan"."""
    assert _session_scope(server).get("type") == "lifespan"


@spec("ASGI Core §Applications (lifespan)", "DEFINED")
def test_lifespan_scope_asgi_version_is_3_0(server):
    """The lifespan scope's asgi is a dict whose version is "3.0" (the app is a single callable)."""
    scope = _session_scope(server)
    assert type(scope.get("asgi")) is dict and scope["asgi"].get("version") == "3.0", scope.get("asgi")


@spec(f"{_LS} §Scope", "DEFINED")
def test_lifespan_spec_version_is_1_0_or_2_0(server):
    """asgi["spec_version"] of a lifespan scope, when present, is a lifespan version: "1.0" or "2.0"."""
    scope = _lifespan(_session_lifespan(server), "lifespan.scope")[0]["scope"]
    assert scope["asgi"].get("spec_version", "1.0") in ("1.0", "2.0"), scope["asgi"]


@spec(f"{_LS} §Lifespan State", "DEFINED")
def test_lifespan_state_starts_as_an_empty_dict(server):
    """The lifespan scope's state, when present, is an empty dict for the app to fill."""
    scope = _lifespan(_session_lifespan(server), "lifespan.scope")[0]["scope"]
    if "state" not in scope:
        pytest.skip("not supported: no state in the lifespan scope (optional)")
    assert scope["state"] == {} and type(scope["state"]) is dict, scope["state"]


@spec(f"{_LS} §Startup / ASGI Core §Events", "DEFINED")
def test_lifespan_startup_message_is_a_typed_event(server):
    """receive() on the lifespan scope first returns {"type": "lifespan.startup"} (str keys only)."""
    startup = _lifespan(_session_lifespan(server), "lifespan.startup")
    assert startup, "no lifespan.startup message reached the app"
    message = startup[0]["message"]
    assert type(message) is dict and all(type(k) is str for k in message)
    assert message["type"] == "lifespan.startup"


@spec("ASGI Lifespan (intro)", "SHOULD")
def test_lifespan_runs_in_the_worker_that_serves_requests(server):
    """Lifespan runs in the same process and thread (event loop) as the requests it prepares (with several
    workers: a startup ran in the process and thread of the request)."""
    token = new_token()
    assert _ping(server.address, server.authority, token).status == 200
    request = [e for e in server.events(token, timeout=2) if e["event"] == "request.start"][0]
    ran = sorted({(e["pid"], e["tid"]) for e in _lifespan(_session_lifespan(server), "lifespan.startup")})
    assert (request["pid"], request["tid"]) in ran, (
        f"lifespan ran in (pid, thread) {ran}, the request in pid {request['pid']} thread {request['tid']}"
    )


# -- lifespan state (session server) ----------------------------------------------------------------


def _state(server, steps, pid: int | None = None) -> tuple:
    """(the last step's result, the pid that ran it); with ``pid``, from a request served by that process
    (state is per process: with several workers, new connections are sent until one lands there, at most 40)."""
    for _ in range(40):
        run = run_script(server, steps + [["start", 200], ["body", "ok"]])
        found = run.step(len(steps) - 1)
        assert found is not None, f"the state step never ran: {[e['event'] for e in run.events]}"
        if pid is None or found["pid"] == pid:
            break
    else:
        pytest.fail(f"40 requests on new connections, none served by pid {pid} (the previous request's process)")
    if not found["ok"] and "no 'state' dict" in found["error"]["message"]:
        pytest.skip("not supported: the server passes no state into request scopes")
    assert found["ok"], found["error"]
    return found["result"], found["pid"]


@spec(f"{_LS} §Lifespan State", "DEFINED")
def test_state_set_at_startup_is_visible_in_requests(server):
    """A key the app put into the lifespan state at startup is in every request scope's state."""
    state, _ = _state(server, [["state_get"]])
    assert state.get("gatecheck", {}).get("started") is True, f"request state lacks the startup key: {state}"


@spec(f"{_LS} §Lifespan State", "DEFINED")
def test_key_added_in_one_request_is_invisible_in_the_next(server):
    """Each request gets a copy of the state: a top-level key added in request A is absent in request B."""
    key = "added_" + new_token()
    _, pid = _state(server, [["state_set", key, 1], ["state_get"]])
    later, _ = _state(server, [["state_get"]], pid=pid)
    assert key not in later, "a key added to one request's state leaked into the next request"


@spec(f"{_LS} §Lifespan State", "DEFINED")
def test_state_copy_is_shallow(server):
    """The copy is shallow: a mutable value stored at startup is shared, so appending to it shows everywhere."""
    marker = new_token()
    _, pid = _state(server, [["state_append", marker]])
    later, _ = _state(server, [["state_get"]], pid=pid)
    assert marker in later["gatecheck"]["shared_list"], (
        f"a mutation of the shared startup list is not visible in the next request: {later['gatecheck']}"
    )


# -- startup ordering and failure (private servers) ---------------------------------------------------


@spec(f"{_LS} §Startup Complete", "MUST")
def test_no_request_reaches_the_app_before_startup_complete(server):
    """No request is handed to the app until the app sent lifespan.startup.complete (startup takes 1.5 s here)."""
    port, token = free_port(), new_token()
    done, box = threading.Event(), {}

    def launch():
        try:
            with private_server(server, env={fixtures.LIFESPAN_ENV: "slow:1.5"}, port=port) as priv:
                box["priv"] = priv
                done.wait(20)
        except Exception as exc:  # reported below
            box["error"] = exc
        done.set()

    thread = threading.Thread(target=launch, daemon=True)
    thread.start()
    try:
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline and not done.is_set():
            try:
                if _ping(("127.0.0.1", port), f"127.0.0.1:{port}", token, timeout=3).status == 200:
                    break
            except OSError:
                time.sleep(0.05)
        while time.monotonic() < deadline and "priv" not in box and not done.is_set():
            time.sleep(0.05)  # start_server returns once its own readiness probe got through
    finally:
        done.set()
        thread.join(30)
    assert "priv" in box, f"the server did not start: {box.get('error')}"
    starts = _lifespan(box["priv"].lifespan_events(), "lifespan.startup")
    assert starts, "the app never got lifespan.startup"
    requests = fixtures.read_events(box["priv"].event_dir, token)
    first = min((e["t"] for e in requests if e["event"] == "request.start"), default=None)
    assert first is not None, "no request reached the app"
    earliest_complete = starts[0]["t"] + 1.5  # the app sleeps 1.5 s before it sends startup.complete
    assert first >= earliest_complete - 0.05, (
        f"a request reached the app {earliest_complete - first:.2f} s before startup.complete was sent"
    )


@pytest.fixture(scope="module")
def failed_startup(server):
    """One start with GATECHECK_LIFESPAN=fail per target: (error or None, whole log, answered a request)."""
    with private_server(server, env={fixtures.LIFESPAN_ENV: "fail"}, ready_timeout=10, expect_failure=True) as priv:
        answered = priv.handle is not None
        if answered:
            time.sleep(0.5)
        return priv.error, priv.log_text(), answered


@spec(f"{_LS} §Startup Complete / §Startup Failed", "MUST")
def test_failed_startup_never_serves_requests(server, failed_startup):
    """After lifespan.startup.failed the server does not process connections (it never got startup.complete)."""
    _, log, answered = failed_startup
    assert not answered, "the server answered HTTP requests although the app's startup failed"


@spec(f"{_LS} §Startup Failed", "SHOULD")
def test_failed_startup_makes_the_server_exit(server, failed_startup):
    """After lifespan.startup.failed the server exits."""
    error, log, answered = failed_startup
    assert isinstance(error, ServerExited), "the server kept running after startup failed" + (
        f": {error}" if error else " and served requests"
    )


@spec(f"{_LS} §Startup Failed", "SHOULD")
def test_failed_startup_message_is_logged(server, failed_startup):
    """The message of lifespan.startup.failed appears in the server's log."""
    _, log, _ = failed_startup
    assert "startup failed on purpose" in log, f"the app's message is not in the log:\n{log[-1500:]}"


@pytest.fixture(scope="module", params=["reject", "raise"])
def raising_lifespan(request, server):
    """A target whose app raises on the lifespan scope (reject) or on lifespan.startup (raise): served one
    request, then stopped. Returns (mode, /ping response or the error, lifespan events, exit code)."""
    mode = request.param
    with private_server(server, env={fixtures.LIFESPAN_ENV: mode}, ready_timeout=10, expect_failure=True) as priv:
        if priv.handle is None:
            return mode, priv.error, priv.lifespan_events(), None
        resp = _ping(priv.address, priv.authority)
        code = priv.stop()
        return mode, resp, priv.lifespan_events(), code


@spec(f"{_LS} §Scope", "MUST")
def test_app_raising_in_lifespan_does_not_stop_serving(server, raising_lifespan):
    """If the app raises on the lifespan scope or on lifespan.startup, the server still serves requests."""
    mode, resp, _, _ = raising_lifespan
    assert not isinstance(resp, Exception), f"GATECHECK_LIFESPAN={mode}: the server did not come up: {resp}"
    assert resp.status == 200 and resp.body == b"ok"


@spec(f"{_LS} §Scope", "MUST")
def test_app_raising_in_lifespan_gets_no_more_lifespan_events(server, raising_lifespan):
    """After the app raised in lifespan, the server sends it no further lifespan events (no second scope, no
    shutdown)."""
    mode, resp, events, _ = raising_lifespan
    if isinstance(resp, Exception):
        pytest.fail(f"GATECHECK_LIFESPAN={mode}: the server did not come up: {resp}")
    per_pid: dict = {}
    for event in _lifespan(events, "lifespan.scope"):
        per_pid[event["pid"]] = per_pid.get(event["pid"], 0) + 1
    assert all(n == 1 for n in per_pid.values()), f"lifespan scopes per worker: {per_pid}"
    assert not _lifespan(events, "lifespan.shutdown"), "lifespan.shutdown was sent after the app raised"


# -- shutdown (private server) ------------------------------------------------------------------------


def _terminate(priv, timeout: float = 8.0) -> None:
    """Stop the server the way an operator does (``kill <pid>``: SIGTERM to its main process only) and wait
    for it to exit; the private-server cleanup still kills whatever is left. The check stops it: its exit is
    no crash."""
    priv.stopped_by_us = True
    popen = priv.handle.process.popen
    try:
        os.kill(popen.pid, signal.SIGTERM)
        popen.wait(timeout)
    except (ProcessLookupError, subprocess.TimeoutExpired):
        pass


@pytest.fixture(scope="module")
def shutdown_run(server):
    """SIGTERM a server (shutdown takes the app 0.5 s) while a 1 s streamed response is in flight."""
    token, pid = new_token(), None
    steps = [["start", 200], ["body", "first-", True], ["sleep", 1.0], ["body", "last"]]
    with private_server(server, env={fixtures.LIFESPAN_ENV: "shutdown_slow:0.5"}) as priv:
        conn, stopper = Connection(priv.address, 8), None
        try:
            conn.send(script_request(priv, steps, token=token))
            pid = fixtures.wait_for_event(priv.event_dir, token, "step", 5, index=1)["pid"]
            stopper = threading.Thread(target=_terminate, args=(priv,), daemon=True)
            stopped_at = time.time()
            stopper.start()
            result = conn.read_responses(1, timeout=8)
            conn.wait_closed(5)
            closed_at = time.time()
        finally:
            conn.close()
            if stopper is not None:
                stopper.join(20)
        exited_at = time.time()
        # with several workers, the lifespan of the process that served the in-flight request
        events = [e for e in priv.lifespan_events() if e.get("pid") == pid]
        return {
            "result": result,
            "stopped_at": stopped_at,
            "closed_at": closed_at,
            "exited_at": exited_at,
            "events": events,
        }


@spec(f"{_LS} §Shutdown", "DEFINED")
def test_shutdown_is_sent_after_connections_closed(server, shutdown_run):
    """lifespan.shutdown is sent only after the server closed its active connections (here: one in flight)."""
    shutdowns = _lifespan(shutdown_run["events"], "lifespan.shutdown")
    assert shutdowns, "the app never got lifespan.shutdown"
    assert shutdowns[0]["t"] >= shutdown_run["closed_at"] - 0.1, (
        f"lifespan.shutdown came {shutdown_run['closed_at'] - shutdowns[0]['t']:.2f} s before the in-flight "
        "connection was closed"
    )


@spec(f"{_LS} §Shutdown Complete", "MUST")
def test_server_waits_for_shutdown_complete(server, shutdown_run):
    """The server does not terminate before the app sent lifespan.shutdown.complete (it takes 0.5 s here)."""
    assert _lifespan(shutdown_run["events"], "lifespan.shutdown"), "the app never got lifespan.shutdown"
    completes = _lifespan(shutdown_run["events"], "lifespan.shutdown.complete")
    assert completes, "the server terminated while the app was still shutting down"


@spec(f"{_LS} §Shutdown", "POLICY")
def test_in_flight_response_completes_on_graceful_stop(server, shutdown_run):
    """POLICY (the spec only orders shutdown after connections close): SIGTERM lets an in-flight response finish."""
    result = shutdown_run["result"]
    assert result.final and result.first.body == b"first-last", f"the in-flight response was cut: {result.raw[-200:]!r}"


@spec(f"{_LS} §Shutdown Failed", "SHOULD")
def test_failed_shutdown_message_is_logged(server):
    """The message of lifespan.shutdown.failed appears in the server's log."""
    with private_server(server, env={fixtures.LIFESPAN_ENV: "shutdown_fail"}) as priv:
        _terminate(priv)
        events, log = priv.lifespan_events(), priv.log_text()
    assert _lifespan(events, "lifespan.shutdown"), "the app never got lifespan.shutdown"
    assert "shutdown failed on purpose" in log, f"the app's message is not in the log:\n{log[-1500:]}"


@needs("workers")
@spec("ASGI Lifespan (intro)", "SHOULD")
def test_lifespan_runs_once_per_worker_process(server):
    """With two worker processes, each runs its own lifespan startup (one per event loop serving requests)."""
    with private_server(server, target=with_workers(server, 2)) as priv:
        deadline = time.monotonic() + 10
        pids: set = set()
        while time.monotonic() < deadline:
            pids = {e["pid"] for e in _lifespan(priv.lifespan_events(), "lifespan.startup.complete")}
            if len(pids) >= 2:
                break
            time.sleep(0.1)
    assert len(pids) == 2, f"lifespan startup completed in {len(pids)} process(es) for 2 workers: {sorted(pids)}"
