"""RSGI 1.6 HTTP protocol methods (RSGI §HTTP protocol interface, §Applications' additional methods,
§Version history).

Body: ``await protocol()`` and ``async for chunk in protocol`` hand the app the exact (de-chunked) body;
``client_disconnect()`` resolves once — and only once — the client is gone. Responses: every response
method sends the app's status, headers (repeated names included) and exact body; HEAD never carries a
body. The spec is silent on misuse (a second response, reading twice, bad ranges, missing files, an app
that raises or never responds): those checks are marked POLICY and ask only for a well-formed wire and no
hang. App hooks: ``__rsgi__`` is preferred over ``__call__``; ``__rsgi_init__``/``__rsgi_del__`` run with a
loop that is not running (checked on a private server this module starts and stops). The app side is
the fixture's ``/script`` RSGI interpreter (fixtures/apps/_rsgi_script.py) and its event log.
"""
from __future__ import annotations

import base64
import hashlib
import socket
import time

import pytest

import fixtures

from .client import probe, random_bytes, value_of
from .http1 import Connection, build_request
from .markers import interfaces, needs, spec
from .private import private_server
from .scripted import new_token, script_request, step, wait_steps
from .wire import REPLY_TIMEOUT, describe

pytestmark = [interfaces("rsgi"), needs("http1")]

_PROTO = "RSGI §HTTP protocol interface"
_PLAIN = [["content-type", "text/plain"]]
_OK = ["response_bytes", 200, [["content-type", "text/plain"], ["content-length", "2"]], "ok"]
_SMALL = (fixtures.STATIC_DIR / fixtures.STATIC_SMALL).read_bytes()
_DISCONNECT_WAIT = 3.0   # seconds a server gets to notice a client that left


def _send(server, steps: list, *, method: str = "GET", headers=(), body: bytes = b"", chunks=None,
          then: bytes = b"", count: int = 1, version: str = "HTTP/1.1", timeout: float = REPLY_TIMEOUT):
    """Send one scripted request (chunked when ``chunks`` is given, ``then`` pipelined after it); return
    (exchange, events once every step ran or the script ended)."""
    token = new_token()
    headers = list(headers)
    content_length = True
    if chunks is not None:
        body = b"".join(b"%x\r\n%s\r\n" % (len(c), c) for c in chunks if c) + b"0\r\n\r\n"
        headers.append(("Transfer-Encoding", "chunked"))
        content_length = False
    data = script_request(server, steps, token=token, method=method, headers=headers, body=body,
                          version=version, content_length=content_length)
    with Connection(server.address, timeout) as conn:
        conn.send(data + then)
        ex = conn.read_responses(count, methods=[method] + ["GET"] * (count - 1))
    return ex, wait_steps(server, token, len(steps), timeout=timeout)


def _ping(server) -> bytes:
    return build_request("GET", "/ping", host=server.authority)


def _result(event: dict | None, what: str):
    assert event is not None, f"{what} never ran"
    assert event.get("ok"), f"{what} raised {event.get('error')}"
    return event.get("result")


def _digest(value) -> tuple:
    """(length, sha256) of a body result, whether logged whole or truncated (TruncatedBytes)."""
    full = getattr(value, "full_len", None)
    if full is not None:
        return full, value.sha256
    return len(value), hashlib.sha256(value).hexdigest()


def _abandon(server, steps: list, *, sent: bytes, after: float = 0.3, read_first: bool = False) -> tuple:
    """Send ``sent`` for a scripted request, optionally wait for the first response bytes, then close the
    connection; return (token, time.time() of the close)."""
    token = new_token()
    with socket.create_connection(server.address, timeout=REPLY_TIMEOUT) as sock:
        sock.sendall(sent(token) if callable(sent) else sent)
        if read_first:
            sock.recv(4096)
        time.sleep(after)
        left = time.time()
    return token, left


def _partial_upload(server, steps: list):
    """A POST declaring 100 body bytes of which only 3 arrive before the client leaves."""
    return lambda token: script_request(server, steps, token=token, method="POST",
                                        headers=[("Content-Length", "100")], body=b"abc", content_length=False)


def _step_within(server, token: str, index: int, timeout: float) -> dict | None:
    deadline = time.monotonic() + timeout
    while True:
        found = step(fixtures.read_events(server.event_dir, token), index)
        if found is not None or time.monotonic() >= deadline:
            return found
        time.sleep(0.02)


# -- request body ------------------------------------------------------------------------------

_BODIES = {"empty": b"", "text": b"hello rsgi", "binary": bytes(range(256)) * 4}


@pytest.mark.parametrize("body", list(_BODIES.values()), ids=list(_BODIES))
@spec(_PROTO, "DEFINED")
def test_await_protocol_returns_the_exact_body(server, body):
    """``await protocol()`` returns the whole request body as bytes, exactly (b"" for an empty body)."""
    ex, events = _send(server, [["read_all"], _OK], method="POST", body=body)
    got = _result(step(events, 0), "await protocol()")
    assert type(got) is bytes and got == body, f"got {type(got).__name__} of {len(got)} B, sent {len(body)} B"


_CHUNKS = [b"hello", b" ", b"chunked ", b"\x00\xff" * 300, b"end"]


@spec(_PROTO, "DEFINED")
def test_await_protocol_returns_the_decoded_chunked_body(server):
    """For a chunked upload ``await protocol()`` returns the decoded body, without chunk framing."""
    _, events = _send(server, [["read_all"], _OK], method="POST", chunks=_CHUNKS)
    got = _result(step(events, 0), "await protocol()")
    assert _digest(got) == _digest(b"".join(_CHUNKS)), f"got {len(got)} B: {got[:60]!r}"


@pytest.mark.parametrize("framing", ["content-length", "chunked"])
@spec(_PROTO + " (1.2)", "DEFINED")
def test_async_iteration_chunks_concatenate_to_the_body(server, framing):
    """The chunks of ``async for chunk in protocol`` are bytes that concatenate to the request body."""
    body = b"".join(_CHUNKS)
    kw = {"chunks": _CHUNKS} if framing == "chunked" else {"body": body}
    _, events = _send(server, [["iter_body"], _OK], method="POST", **kw)
    got = _result(step(events, 0), "async for chunk in protocol")
    assert got["len"] == len(body) and got["sha256"] == hashlib.sha256(body).hexdigest(), got


@pytest.mark.parametrize("op", ["read_all", "iter_body"])
@spec(_PROTO, "DEFINED")
def test_large_upload_is_complete_and_in_order(server, op):
    """A 2 MiB upload reaches the app complete and in order, through either read style."""
    body = random_bytes(2 << 20, seed=63)
    _, events = _send(server, [[op], _OK], method="POST", body=body, timeout=20.0)
    got = _result(step(events, 0), op)
    if op == "iter_body":
        got_digest = (got["len"], got["sha256"])
    else:
        got_digest = _digest(got)
    assert got_digest == (len(body), hashlib.sha256(body).hexdigest()), got_digest


_TWICE = {"read-then-read": ["read_all", "read_all"], "read-then-iter": ["read_all", "iter_body"],
          "iter-then-read": ["iter_body", "read_all"]}


@pytest.mark.parametrize("ops", list(_TWICE.values()), ids=list(_TWICE))
@spec(_PROTO + " (reading twice)", "POLICY")
def test_reading_the_body_twice_never_hangs_or_repeats_it(server, ops):
    """A second body read after the body was consumed raises or yields nothing — it never hangs and never
    hands the body out again; the response still goes out. (The spec is silent; suite policy.)"""
    ex, events = _send(server, [[ops[0]], [ops[1]], _OK], method="POST", body=b"only once")
    _result(step(events, 0), ops[0])
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
    token, left = _abandon(server, [[op], _OK], sent=_partial_upload(server, [[op], _OK]))
    found = _step_within(server, token, 0, _DISCONNECT_WAIT)
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
    token, left = _abandon(server, steps, sent=_partial_upload(server, steps))
    found = _step_within(server, token, 0, _DISCONNECT_WAIT)
    assert found is not None, f"client_disconnect() still pending {_DISCONNECT_WAIT}s after the client left"
    assert found.get("ok"), f"client_disconnect() raised {found.get('error')}"


@spec(_DISC, "DEFINED")
def test_client_disconnect_resolves_when_the_client_leaves_before_the_response(server):
    """``client_disconnect()`` resolves when the client leaves after a complete request, before any response."""
    steps = [["wait_disconnect", 10], _OK]
    token, left = _abandon(server, steps, sent=lambda t: script_request(server, steps, token=t))
    found = _step_within(server, token, 0, _DISCONNECT_WAIT)
    assert found is not None and found.get("ok"), (
        f"client_disconnect() did not resolve within {_DISCONNECT_WAIT}s of the client leaving: {found}")


@spec(_DISC, "DEFINED")
def test_client_disconnect_resolves_when_the_client_leaves_mid_stream(server):
    """``client_disconnect()`` resolves when the client leaves while a streamed response is under way."""
    steps = [["stream", 200, _PLAIN], ["send_bytes", "first"], ["wait_disconnect", 10], ["send_bytes", "x"]]
    token, left = _abandon(server, steps, sent=lambda t: script_request(server, steps, token=t), read_first=True)
    found = _step_within(server, token, 2, _DISCONNECT_WAIT)
    assert found is not None and found.get("ok"), (
        f"client_disconnect() did not resolve within {_DISCONNECT_WAIT}s of the client leaving: {found}")


@spec(_DISC, "DEFINED")
def test_client_disconnect_stays_pending_while_the_client_waits(server):
    """``client_disconnect()`` does not resolve while the client is still connected and waiting."""
    ex, events = _send(server, [["watch_disconnect", 10], ["sleep", 0.5], _OK])
    assert ex.first.body == b"ok", describe(ex)
    early = [e["event"] for e in events if e["event"] in ("watch.disconnect", "watch.error")]
    assert not early, f"client_disconnect() resolved while the client was waiting: {early}"


# -- response methods --------------------------------------------------------------------------

@pytest.mark.parametrize("status", [204, 200])
@spec(_PROTO, "DEFINED")
def test_response_empty_sends_the_status_without_body(server, status):
    """``response_empty(status, headers)`` sends that status and the app's headers with no body: a 204
    without Content-Length or Transfer-Encoding, a 200 framed as zero-length."""
    ex, _ = _send(server, [["response_empty", status, [["x-empty", "yes"]]]], then=_ping(server), count=2)
    resp = ex.first
    assert resp.status == status and resp.header("x-empty") == "yes" and resp.body == b"", describe(ex)
    if status == 204:
        assert not resp.header_all("content-length") and not resp.header_all("transfer-encoding"), describe(ex)
    assert len(ex.final) == 2 and ex.final[1].body == b"ok", f"stray bytes after the empty response: {describe(ex)}"


@spec(_PROTO, "DEFINED")
def test_response_bytes_sends_status_headers_and_exact_body(server):
    """``response_bytes`` sends the app's status, headers and the exact bytes (NUL, 0xFF, CR LF included)."""
    body = b"\x00\x01\r\n\xff0\r\n\r\nend"
    b64 = {"b64": base64.b64encode(body).decode()}
    ex, _ = _send(server, [["response_bytes", 202, [["x-a", "1"]], b64]], then=_ping(server), count=2)
    resp = ex.first
    assert resp.status == 202 and resp.header("x-a") == "1" and resp.body == body, describe(ex)
    assert len(ex.final) == 2 and ex.final[1].body == b"ok", describe(ex)


@spec(_PROTO + " (str encoding)", "POLICY")
def test_response_str_is_sent_utf8_encoded(server):
    """``response_str`` sends the text UTF-8 encoded. (The spec names no encoding; UTF-8 is the suite's
    reading.)"""
    text = "h\u00e9llo \u20ac \U0001f600"
    ex, _ = _send(server, [["response_str", 201, [["content-type", "text/plain; charset=utf-8"]], text]])
    assert ex.first.status == 201 and ex.first.body == text.encode("utf-8"), describe(ex)


_REPEATED = [["set-cookie", "a=1"], ["x-other", "o"], ["set-cookie", "b=2"]]
_BY_METHOD = {
    "response_bytes": [["response_bytes", 200, _REPEATED, "x"]],
    "response_str": [["response_str", 200, _REPEATED, "x"]],
    "response_empty": [["response_empty", 200, _REPEATED]],
    "response_file": [["response_file", 200, _REPEATED, fixtures.STATIC_SMALL]],
    "response_stream": [["stream", 200, _REPEATED], ["send_bytes", "x"]],
}


@pytest.mark.parametrize("steps", list(_BY_METHOD.values()), ids=list(_BY_METHOD))
@spec(_PROTO, "DEFINED")
def test_repeated_header_names_are_all_sent_in_order(server, steps):
    """Every header tuple the app passes is sent, a repeated name such as set-cookie once per tuple, in order."""
    ex, _ = _send(server, steps)
    assert ex.first.header_all("set-cookie") == ["a=1", "b=2"], describe(ex)
    assert ex.first.header("x-other") == "o", describe(ex)


@pytest.mark.parametrize("status", [200, 201, 299, 404, 418, 503])
@spec(_PROTO, "DEFINED")
def test_response_status_is_sent_as_given(server, status):
    """The int status passed to a response method is the status code on the wire."""
    ex, _ = _send(server, [["response_bytes", status, _PLAIN, "s"]])
    assert ex.first.status == status, describe(ex)


@spec(_PROTO + " (1.1)", "DEFINED")
def test_stream_sends_every_chunk_in_order(server):
    """``response_stream`` then ``send_bytes``/``send_str`` calls deliver every chunk, in order."""
    steps = [["stream", 200, _PLAIN], ["send_bytes", "one,"], ["send_str", "tw\u00f6,"], ["send_bytes", ""],
             ["send_bytes", "three"]]
    ex, _ = _send(server, steps, then=_ping(server), count=2)
    assert ex.first.body == "one,tw\u00f6,three".encode(), describe(ex)
    if len(ex.final) == 2:
        assert ex.final[1].body == b"ok", describe(ex)


# -- files -------------------------------------------------------------------------------------

def _refused(ex, events, index: int) -> bool:
    """The response call raised, or the server answered an error status."""
    call = step(events, index)
    raised = call is not None and not call.get("ok")
    return raised or (bool(ex.final) and ex.final[0].status >= 400)


_BAD_RANGES = {"inverted": (10, 5), "empty": (5, 5)}


@pytest.mark.parametrize("start,end", list(_BAD_RANGES.values()), ids=list(_BAD_RANGES))
@spec(_PROTO + " (1.6, invalid range)", "POLICY")
def test_response_file_range_refuses_an_empty_or_inverted_range(server, start, end):
    """``response_file_range`` with start >= end raises or answers an error; it never sends file bytes as
    a success, and never hangs. (Unspecified; suite policy.)"""
    steps = [["response_file_range", 206, _PLAIN, fixtures.STATIC_SMALL, start, end]]
    ex, events = _send(server, steps)
    assert ex.final, f"no response within {REPLY_TIMEOUT}s: {describe(ex)}"
    assert _refused(ex, events, 0), f"range [{start}, {end}) was answered as a success: {describe(ex)}"


@spec(_PROTO + " (1.6, range beyond EOF)", "POLICY")
def test_response_file_range_beyond_eof_never_sends_more_than_the_file(server):
    """A range reaching past the end of the file is refused, or sends exactly the bytes up to EOF, validly
    framed; no hang. (Unspecified; suite policy.)"""
    start = len(_SMALL) - 10
    ex, events = _send(server, [["response_file_range", 206, _PLAIN, fixtures.STATIC_SMALL, start, start + 100]],
                       then=_ping(server), count=2)
    assert ex.final, f"no response within {REPLY_TIMEOUT}s: {describe(ex)}"
    if not _refused(ex, events, 0):
        assert ex.final[0].body == _SMALL[start:], describe(ex)
        assert len(ex.final) == 2 and ex.final[1].body == b"ok", describe(ex)


_MISSING = {"response_file": [["response_file", 200, _PLAIN, {"missing": "file.txt"}]],
            "response_file_range": [["response_file_range", 206, _PLAIN, {"missing": "range.txt"}, 0, 5]]}


@pytest.mark.parametrize("steps", list(_MISSING.values()), ids=list(_MISSING))
@spec(_PROTO + " (missing file)", "POLICY")
def test_missing_file_is_an_error_not_a_hang(server, steps):
    """A file response for a path that does not exist raises or answers an error status — promptly, never
    a success, never a hang. (Unspecified; suite policy.)"""
    ex, events = _send(server, steps)
    assert ex.final, f"no response within {REPLY_TIMEOUT}s: {describe(ex)}"
    assert _refused(ex, events, 0), f"a missing file was answered as a success: {describe(ex)}"


# -- HEAD --------------------------------------------------------------------------------------

_HEAD = {
    "response_bytes": [["response_bytes", 200, _PLAIN, "body"]],
    "response_str": [["response_str", 200, _PLAIN, "body"]],
    "response_empty": [["response_empty", 200, _PLAIN]],
    "response_file": [["response_file", 200, _PLAIN, fixtures.STATIC_SMALL]],
    "response_file_range": [["response_file_range", 206, _PLAIN, fixtures.STATIC_SMALL, 0, 10]],
    "response_stream": [["stream", 200, _PLAIN], ["send_bytes", "body"], ["send_str", "more"]],
}


@pytest.mark.parametrize("steps", list(_HEAD.values()), ids=list(_HEAD))
@spec("RFC 9110 §9.3.2", "MUST NOT")
def test_head_is_answered_without_body_by_every_response_method(server, steps):
    """A HEAD request answered through any response method carries no body bytes: the response pipelined
    behind it parses cleanly."""
    ex, _ = _send(server, steps, method="HEAD", then=_ping(server), count=2)
    assert len(ex.final) == 2, f"expected 2 responses: {describe(ex)}"
    assert ex.final[0].body == b"" and ex.final[1].status == 200 and ex.final[1].body == b"ok", describe(ex)


# -- misbehaving apps --------------------------------------------------------------------------

@spec(_PROTO + " (app error)", "POLICY")
def test_app_raising_before_responding_gets_a_server_error(server):
    """An app that raises before calling a response method gets a 5xx for the client, and the server goes
    on serving. (Unspecified; suite policy.)"""
    ex, _ = _send(server, [["raise", "before responding"]])
    assert ex.final and 500 <= ex.first.status < 600, describe(ex)
    after, _ = _send(server, [_OK])
    assert after.first.body == b"ok", describe(after)


@spec(_PROTO + " (no response)", "POLICY")
def test_app_returning_without_responding_gets_a_server_error(server):
    """An app that returns without calling any response method gets a 5xx for the client, not a hang.
    (Unspecified; suite policy.)"""
    ex, _ = _send(server, [["log", "returns without responding"]])
    assert ex.final and 500 <= ex.first.status < 600, describe(ex)


_SECOND = {
    "bytes-after-bytes": [["response_bytes", 200, [["content-length", "5"]], "first"],
                          ["response_bytes", 500, [["content-length", "6"]], "second"]],
    "bytes-after-stream": [["stream", 200, _PLAIN], ["send_bytes", "first"],
                           ["response_bytes", 500, [["content-length", "6"]], "second"], ["send_bytes", "-more"]],
}


@pytest.mark.parametrize("steps", list(_SECOND.values()), ids=list(_SECOND))
@spec(_PROTO + " (second response)", "POLICY")
def test_second_response_call_does_not_corrupt_the_wire(server, steps):
    """A second response method call after a response started is ignored or raises: the wire carries one
    well-formed response for the request, and the next pipelined request is answered. (Suite policy.)"""
    ex, _ = _send(server, steps, then=_ping(server), count=2)
    first = ex.first
    assert first.status == 200 and first.body.startswith(b"first"), describe(ex)
    assert b"second" not in ex.raw, f"the second response reached the wire: {describe(ex)}"
    if len(ex.final) == 2:
        assert ex.final[1].body == b"ok", describe(ex)
    else:
        assert ex.closed, describe(ex)


@spec("RSGI §HTTP connection scope", "DEFINED")
def test_app_is_called_once_per_request_on_a_kept_alive_connection(server):
    """The app is called once per HTTP request, also for requests that reuse a kept-alive connection."""
    token = new_token()
    data = b"".join(script_request(server, [["response_bytes", 200, _PLAIN, f"r{i}"]], token=token)
                    for i in range(3))
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


@pytest.fixture(scope="module")
def hook_run(server):
    """Start a private server, make one request, stop it; return (hook events, time of the request)."""
    with private_server(server) as priv:
        token = new_token()
        sent_at = time.time()
        data = script_request(priv, [_OK], token=token)
        with Connection(priv.address, REPLY_TIMEOUT) as conn:
            conn.send(data)
            ex = conn.read_responses(1)
        assert ex.first.body == b"ok", describe(ex)
        request_events = fixtures.read_events(priv.event_dir, token, timeout=REPLY_TIMEOUT)
        priv.stop()
        hooks = fixtures.read_events(priv.event_dir, "rsgi-hooks")
    started = [e["t"] for e in request_events if e["event"] == "request.start"]
    return hooks, started[0] if started else sent_at


@spec("RSGI §Applications' additional methods (__rsgi_init__)", "DEFINED")
def test_rsgi_init_runs_before_the_first_request_with_a_loop_not_running(server, hook_run):
    """``__rsgi_init__(loop)`` is called before the first request is handled, with a loop that is not running."""
    hooks, first_request = hook_run
    inits = [e for e in hooks if e["event"] == "rsgi.init"]
    assert inits, f"__rsgi_init__ was never called; hook events: {hooks}"
    assert inits[0]["t"] <= first_request, "__rsgi_init__ ran after the first request"
    assert all(e["loop_running"] is False for e in inits), [(e["loop_running"], e["loop_type"]) for e in inits]


@spec("RSGI §Applications' additional methods (__rsgi_del__)", "DEFINED")
def test_rsgi_del_runs_on_shutdown_with_a_loop_not_running(server, hook_run):
    """``__rsgi_del__(loop)`` is called when the server shuts down, with a loop that is not running."""
    hooks, first_request = hook_run
    dels = [e for e in hooks if e["event"] == "rsgi.del"]
    assert dels, f"__rsgi_del__ was never called on a graceful shutdown; hook events: {hooks}"
    assert all(e["t"] >= first_request for e in dels), "__rsgi_del__ ran before the request"
    assert all(e["loop_running"] is False for e in dels), [(e["loop_running"], e["loop_type"]) for e in dels]


_MEMBERS = {  # version -> members of the HTTP protocol object introduced by it (RSGI §Version history)
    "1.0": ("__call__", "response_empty", "response_str", "response_bytes", "response_file"),
    "1.1": ("response_stream",),
    "1.2": ("__aiter__",),
    "1.5": ("client_disconnect",),
    "1.6": ("response_file_range",),
}


@spec("RSGI §Version history", "DEFINED")
def test_every_member_up_to_the_advertised_version_exists(server):
    """The protocol object has every member introduced up to the scope's ``rsgi_version`` (and the stream
    transport has send_bytes and send_str from 1.1)."""
    version = value_of(probe(server)["scope"]["rsgi_version"]["value"])
    steps = [["members"], ["stream", 200, _PLAIN], ["members", "transport"], ["send_bytes", "x"]]
    _, events = _send(server, steps)
    protocol = set(_result(step(events, 0), "dir(protocol)"))
    transport = set(_result(step(events, 2), "dir(transport)"))
    as_tuple = tuple(int(p) for p in version.split("."))
    wanted = [m for v, names in _MEMBERS.items() if tuple(int(p) for p in v.split(".")) <= as_tuple for m in names]
    missing = [m for m in wanted if m not in protocol]
    if as_tuple >= (1, 1):
        missing += [f"transport.{m}" for m in ("send_bytes", "send_str") if m not in transport]
    assert not missing, f"rsgi_version {version} but missing {missing}"
