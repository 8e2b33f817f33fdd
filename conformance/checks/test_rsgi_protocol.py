"""RSGI 1.6 request side, app hooks and version (RSGI §HTTP protocol interface, §HTTP connection scope,
§Applications' additional methods).

Body: ``await protocol()`` and ``async for chunk in protocol`` hand the app the exact (de-chunked) body;
``client_disconnect()`` resolves once — and only once — the client is gone. Reading twice and aborted
uploads are unspecified: those checks are POLICY and ask only that nothing hangs and no body is handed out
twice or truncated as if complete. App hooks: ``__rsgi__`` is preferred over ``__call__``;
``__rsgi_init__``/``__rsgi_del__`` run with a loop that is not running (on a private server this module
starts and stops); every member up to the advertised ``rsgi_version`` exists. Response methods are in
test_rsgi_responses.py. The app side is the fixture's ``/script`` RSGI interpreter and its event log.
"""

from __future__ import annotations

import hashlib
import time

import pytest

from gatecheck import fixtures
from gatecheck.conformance.app import (
    new_token,
    probe,
    random_bytes,
    run_script,
    script_request,
    step,
    step_value,
    value_of,
    wait_step,
)
from gatecheck.conformance.app.private import private_server
from gatecheck.conformance.client.connect import connect
from gatecheck.conformance.client.http1 import Connection, read_raw
from gatecheck.conformance.helpers.support import body_not_read
from gatecheck.conformance.helpers.wire import REPLY_TIMEOUT, describe
from gatecheck.conformance.spec.markers import interfaces, needs, spec

pytestmark = [interfaces("rsgi"), needs("http1")]

_PROTO = "RSGI §HTTP protocol interface"
_PLAIN = [["content-type", "text/plain"]]
_OK = ["response_bytes", 200, [["content-type", "text/plain"], ["content-length", "2"]], "ok"]
_DISCONNECT_WAIT = 3.0  # seconds a server gets to notice a client that left


def _digest(value) -> tuple:
    """(length, sha256) of a body result, whether logged whole or truncated (TruncatedBytes)."""
    full = getattr(value, "full_len", None)
    if full is not None:
        return full, value.sha256
    return len(value), hashlib.sha256(value).hexdigest()


def _abandon(server, sent, *, after: float = 0.3, read_first: bool = False) -> str:
    """Open a connection, send ``sent(token)``, optionally wait for the first response bytes, then leave;
    return the token."""
    token = new_token()
    with connect(server, timeout=REPLY_TIMEOUT) as sock:
        sock.sendall(sent(token))
        if read_first:
            read_raw(sock, bool, timeout=REPLY_TIMEOUT, cap=4096)  # the first bytes, then leave
        time.sleep(after)
    return token


def _partial_upload(server, steps: list):
    """A POST declaring 100 body bytes of which only 3 arrive before the client leaves."""
    return lambda token: script_request(
        server,
        steps,
        token=token,
        method="POST",
        headers=[("Content-Length", "100")],
        body=b"abc",
        content_length=False,
    )


# -- request body ------------------------------------------------------------------------------

_BODIES = {"empty": b"", "text": b"hello rsgi", "binary": bytes(range(256)) * 4}


@pytest.mark.parametrize("body", list(_BODIES.values()), ids=list(_BODIES))
@spec(_PROTO, "DEFINED")
def test_await_protocol_returns_the_exact_body(server, body):
    """``await protocol()`` returns the whole request body as bytes, exactly (b"" for an empty body)."""
    _, ex, events = run_script(server, [["read_all"], _OK], method="POST", body=body, timeout=REPLY_TIMEOUT)
    got = step_value(step(events, 0), "await protocol()")
    assert type(got) is bytes and got == body, f"got {type(got).__name__} of {len(got)} B, sent {len(body)} B"


_CHUNKS = [b"hello", b" ", b"chunked ", b"\x00\xff" * 300, b"end"]


@spec(_PROTO, "DEFINED")
def test_await_protocol_returns_the_decoded_chunked_body(server):
    """For a chunked upload ``await protocol()`` returns the decoded body, without chunk framing."""
    _, ex, events = run_script(server, [["read_all"], _OK], method="POST", chunks=_CHUNKS, timeout=REPLY_TIMEOUT)
    if ex.final:
        body_not_read(server, ex.final[0], b"ok")  # a 411: not supported
    got = step_value(step(events, 0), "await protocol()")
    assert _digest(got) == _digest(b"".join(_CHUNKS)), f"got {len(got)} B: {got[:60]!r}"


@pytest.mark.parametrize("framing", ["content-length", "chunked"])
@spec(_PROTO + " (1.2)", "DEFINED")
def test_async_iteration_chunks_concatenate_to_the_body(server, framing):
    """The chunks of ``async for chunk in protocol`` are bytes that concatenate to the request body."""
    body = b"".join(_CHUNKS)
    kw = {"chunks": _CHUNKS} if framing == "chunked" else {"body": body}
    _, ex, events = run_script(server, [["iter_body"], _OK], method="POST", **kw, timeout=REPLY_TIMEOUT)
    if framing == "chunked" and ex.final:
        body_not_read(server, ex.final[0], b"ok")  # a 411: not supported
    got = step_value(step(events, 0), "async for chunk in protocol")
    assert got["len"] == len(body) and got["sha256"] == hashlib.sha256(body).hexdigest(), got


@pytest.mark.parametrize("op", ["read_all", "iter_body"])
@spec(_PROTO, "DEFINED")
def test_large_upload_is_complete_and_in_order(server, op):
    """A 2 MiB upload reaches the app complete and in order, through either read style."""
    body = random_bytes(2 << 20, seed=63)
    _, _, events = run_script(server, [[op], _OK], method="POST", body=body, timeout=20.0)
    got = step_value(step(events, 0), op)
    if op == "iter_body":
        got_digest = (got["len"], got["sha256"])
    else:
        got_digest = _digest(got)
    assert got_digest == (len(body), hashlib.sha256(body).hexdigest()), got_digest


_TWICE = {
    "read-then-read": ["read_all", "read_all"],
    "read-then-iter": ["read_all", "iter_body"],
    "iter-then-read": ["iter_body", "read_all"],
}


@pytest.mark.parametrize("ops", list(_TWICE.values()), ids=list(_TWICE))
@spec(_PROTO + " (reading twice)", "POLICY")
def test_reading_the_body_twice_never_hangs_or_repeats_it(server, ops):
    """A second body read after the body was consumed raises or yields nothing — it never hangs and never
    hands the body out again; the response still goes out. (The spec is silent; suite policy.)"""
    _, ex, events = run_script(
        server, [[ops[0]], [ops[1]], _OK], method="POST", body=b"only once", timeout=REPLY_TIMEOUT
    )
    step_value(step(events, 0), ops[0])
    second = step(events, 1)
    assert second is not None, "the second read never returned"
    if second.get("ok"):
        result = second["result"]
        length = result["len"] if isinstance(result, dict) else len(result)
        assert length == 0, f"the second {ops[1]} returned the body again: {result!r:.200}"
    assert ex.first.status == 200 and ex.first.body == b"ok", describe(ex)


@pytest.mark.parametrize("op", ["read_all", "iter_body"])
@spec(_PROTO + " (aborted upload)", "POLICY")
def test_aborted_upload_is_not_presented_as_a_complete_body(server, op):
    """When the client leaves after 3 of 100 declared body bytes, the body read raises: it never ends
    normally with a truncated body, and never hangs. (RFC 9112 §8: the message is incomplete; suite
    policy for RSGI, which does not say how.)"""
    token = _abandon(server, _partial_upload(server, [[op], _OK]))
    found = wait_step(server, token, 0, _DISCONNECT_WAIT)
    assert found is not None, f"{op} was still waiting {_DISCONNECT_WAIT}s after the client left"
    if found.get("ok"):
        result = found["result"]
        length = result["len"] if isinstance(result, dict) else len(result)
        pytest.fail(f"{op} ended normally with {length} of 100 declared bytes, as if the body were complete")


# -- client_disconnect -------------------------------------------------------------------------

_DISC = _PROTO + " (1.5)"


@spec(_DISC, "DEFINED")
def test_client_disconnect_resolves_when_the_client_aborts_the_upload(server):
    """``client_disconnect()`` resolves when the client leaves in the middle of sending the body."""
    steps = [["wait_disconnect", 10], _OK]
    token = _abandon(server, _partial_upload(server, steps))
    found = wait_step(server, token, 0, _DISCONNECT_WAIT)
    assert found is not None, f"client_disconnect() still pending {_DISCONNECT_WAIT}s after the client left"
    assert found.get("ok"), f"client_disconnect() raised {found.get('error')}"


@spec(_DISC, "DEFINED")
def test_client_disconnect_resolves_when_the_client_leaves_before_the_response(server):
    """``client_disconnect()`` resolves when the client leaves after a complete request, before any response."""
    steps = [["wait_disconnect", 10], _OK]
    token = _abandon(server, lambda t: script_request(server, steps, token=t))
    found = wait_step(server, token, 0, _DISCONNECT_WAIT)
    assert found is not None and found.get("ok"), (
        f"client_disconnect() did not resolve within {_DISCONNECT_WAIT}s of the client leaving: {found}"
    )


@spec(_DISC, "DEFINED")
def test_client_disconnect_resolves_when_the_client_leaves_mid_stream(server):
    """``client_disconnect()`` resolves when the client leaves while a streamed response is under way."""
    steps = [["stream", 200, _PLAIN], ["send_bytes", "first"], ["wait_disconnect", 10], ["send_bytes", "x"]]
    token = _abandon(server, lambda t: script_request(server, steps, token=t), read_first=True)
    found = wait_step(server, token, 2, _DISCONNECT_WAIT)
    assert found is not None and found.get("ok"), (
        f"client_disconnect() did not resolve within {_DISCONNECT_WAIT}s of the client leaving: {found}"
    )


@spec(_DISC, "DEFINED")
def test_client_disconnect_stays_pending_while_the_client_waits(server):
    """``client_disconnect()`` does not resolve while the client is still connected and waiting."""
    _, ex, events = run_script(server, [["watch_disconnect", 10], ["sleep", 0.5], _OK], timeout=REPLY_TIMEOUT)
    assert ex.first.body == b"ok", describe(ex)
    early = [e["event"] for e in events if e["event"] in ("watch.disconnect", "watch.error")]
    assert not early, f"client_disconnect() resolved while the client was waiting: {early}"


@spec("RSGI §HTTP connection scope", "DEFINED")
def test_app_is_called_once_per_request_on_a_kept_alive_connection(server):
    """The app is called once per HTTP request, also for requests that reuse a kept-alive connection."""
    token = new_token()
    data = b"".join(script_request(server, [["response_bytes", 200, _PLAIN, f"r{i}"]], token=token) for i in range(3))
    with Connection(server.address, REPLY_TIMEOUT) as conn:
        conn.send(data)
        ex = conn.read_responses(3)
    assert [r.body for r in ex.final] == [b"r0", b"r1", b"r2"], describe(ex)
    time.sleep(0.1)
    starts = [e for e in fixtures.read_events(server.event_dir, token) if e["event"] == "request.start"]
    assert len(starts) == 3, f"the app ran {len(starts)} times for 3 requests"


# -- app hooks and version ---------------------------------------------------------------------


@spec("RSGI §Applications' additional methods (__rsgi__)", "SHOULD")
def test_rsgi_method_is_preferred_over_call(server):
    """An app object with both ``__rsgi__`` and ``__call__`` is invoked through ``__rsgi__``."""
    assert probe(server)["entry"] == "__rsgi__"


_EXIT_GRACE = 20.0  # seconds a server has after SIGTERM to shut down (and call __rsgi_del__) before SIGKILL


@pytest.fixture(scope="module")
def hook_run(server):
    """Start a private server, make one request, stop it; return (hook events, time of the request). A server
    that had to be killed after ``_EXIT_GRACE`` shows nothing of its shutdown: the checks are then an error that
    says so (whether it would have called ``__rsgi_del__`` is unknown), never a failure."""
    with private_server(server) as priv:
        token = new_token()
        sent_at = time.time()
        data = script_request(priv, [_OK], token=token)
        with Connection(priv.address, REPLY_TIMEOUT) as conn:
            conn.send(data)
            ex = conn.read_responses(1)
        assert ex.first.body == b"ok", describe(ex)
        request_events = fixtures.read_events(priv.event_dir, token, timeout=REPLY_TIMEOUT)
        handle = priv.handle
        code = priv.stop(grace=_EXIT_GRACE)
        if handle.process.killed:
            pytest.fail(
                f"the server did not exit within {_EXIT_GRACE:g} s of SIGTERM and was killed (SIGKILL, "
                f"exit code {code}): its shutdown, and whether it calls __rsgi_del__, could not be seen; "
                f"its log ends:\n{handle.log_tail(15)}",
                pytrace=False,
            )
        hooks = fixtures.read_events(priv.event_dir, "rsgi-hooks")
    started = [e["t"] for e in request_events if e["event"] == "request.start"]
    return hooks, started[0] if started else sent_at


_INIT = "RSGI §Applications' additional methods (__rsgi_init__)"
_DEL = "RSGI §Applications' additional methods (__rsgi_del__)"


def _hooks(hooks: list, name: str) -> list:
    found = [e for e in hooks if e["event"] == name]
    assert found, f"{name.replace('rsgi.', '__rsgi_')}__ was never called; hook events: {hooks}"
    return found


@spec(_INIT, "DEFINED")
def test_rsgi_init_runs_before_the_first_request(server, hook_run):
    """``__rsgi_init__(loop)`` is called during startup, before the first request is handled."""
    hooks, first_request = hook_run
    assert _hooks(hooks, "rsgi.init")[0]["t"] <= first_request, "__rsgi_init__ ran after the first request"


@spec(_INIT, "DEFINED")
def test_rsgi_init_gets_a_loop_not_running(server, hook_run):
    """``__rsgi_init__(loop)`` gets an event loop that is not running."""
    inits = _hooks(hook_run[0], "rsgi.init")
    assert all(e["loop_running"] is False for e in inits), [(e["loop_running"], e["loop_type"]) for e in inits]


@spec(_DEL, "DEFINED")
def test_rsgi_del_runs_on_shutdown(server, hook_run):
    """``__rsgi_del__(loop)`` is called when the server shuts down (after the request)."""
    hooks, first_request = hook_run
    assert all(e["t"] >= first_request for e in _hooks(hooks, "rsgi.del")), "__rsgi_del__ ran before the request"


@spec(_DEL, "DEFINED")
def test_rsgi_del_gets_a_loop_not_running(server, hook_run):
    """``__rsgi_del__(loop)`` gets an event loop that is not running."""
    dels = _hooks(hook_run[0], "rsgi.del")
    assert all(e["loop_running"] is False for e in dels), [(e["loop_running"], e["loop_type"]) for e in dels]


_MEMBERS = {  # version -> members of the HTTP protocol object introduced by it (the spec file's git history)
    "1.0": ("__call__", "response_empty", "response_str", "response_bytes", "response_file"),
    "1.1": ("response_stream",),
    "1.2": ("__aiter__",),
    "1.5": ("client_disconnect",),
    "1.6": ("response_file_range",),
}


@spec(_PROTO + " (members by version)", "DEFINED")
def test_every_member_up_to_the_advertised_version_exists(server):
    """The protocol object has every member introduced up to the scope's ``rsgi_version`` (and the stream
    transport has send_bytes and send_str from 1.1)."""
    version = value_of(probe(server)["scope"]["rsgi_version"]["value"])
    steps = [["members"], ["stream", 200, _PLAIN], ["members", "transport"], ["send_bytes", "x"]]
    _, _, events = run_script(server, steps, timeout=REPLY_TIMEOUT)
    protocol = set(step_value(step(events, 0), "dir(protocol)"))
    transport = set(step_value(step(events, 2), "dir(transport)"))
    as_tuple = tuple(int(p) for p in version.split("."))
    wanted = [m for v, names in _MEMBERS.items() if tuple(int(p) for p in v.split(".")) <= as_tuple for m in names]
    missing = [m for m in wanted if m not in protocol]
    if as_tuple >= (1, 1):
        missing += [f"transport.{m}" for m in ("send_bytes", "send_str") if m not in transport]
    assert not missing, f"rsgi_version {version} but missing {missing}"
