"""HTTP/2 streams at the gateway: multiplexing, flow control, resets reaching the app, trailers and push.

RFC 9113 §5 (streams), §6.9 (flow control), §6.4/§5.4.2 (RST_STREAM), §8.1 (trailers), §8.4 (push);
the disconnect each interface must see: ASGI `http.disconnect`, RSGI `client_disconnect()`, WSGI `close()`.
"""

from __future__ import annotations

import json
import time

import pytest

from gatecheck import fixtures
from gatecheck.conformance.app import (
    TOKEN_HEADER,
    asgi_scope,
    h2_probe,
    random_bytes,
    response_script,
    rsgi_attrs,
    rsgi_headers,
    script_target,
    wsgi_environ,
)
from gatecheck.conformance.app.private import private_server
from gatecheck.conformance.client.h2 import DATA, H2Client, SettingCodes
from gatecheck.conformance.spec.markers import interfaces, needs, spec

pytestmark = needs("h2c")

MIB10 = 10 * 1024 * 1024


def _client(server, **kw) -> H2Client:
    return H2Client(server.address, authority=server.authority, **kw)


# -- multiplexing ----------------------------------------------------------------------------------


@spec("RFC 9113 §5", "DEFINED")
def test_concurrent_streams_with_interleaved_bodies_are_byte_exact(server):
    """Twenty streams on one connection, request bodies sent interleaved in 4 KiB pieces, each echo their own body
    exactly."""
    with _client(server) as client:
        bodies = {}
        for n in range(20):
            body = random_bytes(40_000 + 997 * n, seed=n)
            sid = client.request("POST", "/echo", [("content-length", str(len(body)))], end_stream=False)
            bodies[sid] = body
        client.send_interleaved(bodies, chunk=4096, timeout=20)
        for sid, body in bodies.items():
            resp = client.response(sid, timeout=20)
            assert resp.status == 200, resp.describe()
            assert resp.body == body, f"stream {sid}: got {len(resp.body)} bytes, sent {len(body)}; content differs"


def _seen(server, doc: dict) -> tuple:
    """(path, value of x-stream) as the app saw them."""
    if server.interface == "asgi":
        scope = asgi_scope(doc)
        return scope["path"], [v.decode() for n, v in scope["headers"] if n == b"x-stream"]
    if server.interface == "wsgi":
        env = wsgi_environ(doc)
        return env["PATH_INFO"], [env.get("HTTP_X_STREAM")]
    return rsgi_attrs(doc)["path"], rsgi_headers(doc)["get_all"].get("x-stream")


@spec("ASGI WWW §HTTP; RFC 9113 §5", "DEFINED")
def test_each_stream_is_its_own_request(server):
    """Ten concurrent requests on one connection each reach the app as their own request: own path, own fields."""
    with _client(server) as client:
        sids = {client.request("GET", f"/probe/s{n}", [("x-stream", str(n))]): n for n in range(10)}
        for sid, n in sids.items():
            resp = client.response(sid)
            assert resp.status == 200, resp.describe()
            assert _seen(server, json.loads(resp.body)) == (f"/probe/s{n}", [str(n)])


# -- flow control ----------------------------------------------------------------------------------


@spec("RFC 9113 §6.9.1", "MUST NOT")
def test_no_data_while_the_client_window_is_zero(server):
    """With SETTINGS_INITIAL_WINDOW_SIZE 0 the server sends HEADERS but no DATA until a WINDOW_UPDATE; then the body
    completes."""
    with _client(server, settings={SettingCodes.INITIAL_WINDOW_SIZE: 0}, auto_window=False) as client:
        client.wait_settings()
        sid = client.request("GET", "/b10k")
        client.wait_headers(sid)
        client.idle(0.5)
        early = sum(f.length for f in client.frames_on(sid, DATA))
        assert early == 0, f"{early} DATA bytes sent into a zero window"
        client.grant(10240, sid)
        resp = client.response(sid)
    assert resp.status == 200 and resp.body == fixtures.payload_bytes(10240), resp.describe()
    assert client.h2_error is None, client.h2_error


@spec("RFC 9113 §6.9.1", "MUST NOT")
def test_large_response_never_exceeds_a_small_window(server):
    """A 10 MiB response to a client granting 16 KiB at a time stays inside the stream and connection windows,
    byte-exact."""
    window = 16384
    with _client(server, settings={SettingCodes.INITIAL_WINDOW_SIZE: window}, auto_window=False, timeout=5) as client:
        client.wait_settings()
        sid = client.request("GET", script_target(response_script(server.interface, 200, chunks=[{"size": MIB10}])))
        state = client.streams[sid]
        granted_stream, granted_conn = window, 65535
        deadline = time.monotonic() + 40
        seen = on_stream = 0
        while not state.done and not client.closed:
            assert time.monotonic() < deadline, f"only {len(state.data)} of {MIB10} bytes after 40 s"
            client.read_once(1.0)
            for frame in client.frames[seen:]:
                if frame.type == DATA:
                    assert frame.stream_id == sid, f"DATA on unexpected stream: {frame}"
                    on_stream += frame.length
            seen = len(client.frames)
            assert on_stream <= granted_stream, f"{on_stream} DATA bytes sent, stream window granted {granted_stream}"
            assert on_stream <= granted_conn, f"{on_stream} DATA bytes sent, connection window granted {granted_conn}"
            if granted_stream == on_stream and not state.done:
                client.grant(window, sid)
                granted_stream += window
            if granted_conn - on_stream < window:
                client.grant(window)
                granted_conn += window
        assert client.h2_error is None, client.h2_error
        assert state.status == 200, state.describe()
        assert len(state.data) == MIB10 and state.data == fixtures.payload_bytes(MIB10), "body differs"


@spec("RFC 9113 §5.2.2; RFC 9113 §6.9", "MUST")
def test_upload_larger_than_the_initial_window_completes(server):
    """A 10 MiB upload completes: the server reads promptly and grants window; the echo is byte-exact."""
    body = random_bytes(MIB10, seed=7)
    with _client(server, timeout=10) as client:
        sid = client.request("POST", "/echo", [("content-length", str(len(body)))], body, timeout=40)
        resp = client.response(sid, timeout=30)
    assert resp.status == 200, resp.describe()
    assert len(resp.body) == len(body) and resp.body == body, f"echo of {len(resp.body)} bytes differs"


# -- RST_STREAM reaches the app (RFC 9113 §6.4) --------------------------------------------------------

#: steps that wait for the client to go away, mid-request and mid-response, per interface
_WAIT = {
    "asgi": {
        "request": [["wait_disconnect", 10]],
        "response": [["start", 200], ["body", "x", True], ["wait_disconnect", 10]],
    },
    "rsgi": {
        "request": [["wait_disconnect", 10]],
        "response": [["stream", 200], ["send_bytes", "x"], ["wait_disconnect", 10]],
    },
    "wsgi": {
        "request": [["read", 65536], ["start_response", "200 OK"], ["yield", "x"]],
        "response": [["start_response", "200 OK"], ["repeat", 120, [["yield", "x"], ["sleep", 0.05]]]],
    },
}


_APP_EVENT = 3.0  # seconds for a network event (a request, a reset, a lost connection) to reach the app


@pytest.fixture(scope="module")
def spare(server):
    """A private server of the check's target for the disconnect checks: an app left waiting forever
    (a read that never returns) must not take a worker thread from the session's server."""
    with private_server(server) as priv:
        yield priv


def _saw_disconnect(spare, token: str) -> dict:
    """Wait for the interface's disconnect signal in the spare's event log; return the event. The deadline is
    the one a request has to reach the app (``_start``, ``_APP_EVENT``): the server relays either network event
    to the app alike. When it never comes, the spare is restarted before the check fails: the app it left
    waiting must not run on beside the next checks (granian's WSGI read() after a reset spins a CPU until the
    server stops)."""
    name, match = {
        "asgi": ("disconnect", {}),
        "rsgi": ("step", {"op": "wait_disconnect", "ok": True}),
        "wsgi": ("wsgi.close", {}),
    }[spare.interface]
    try:
        event = fixtures.wait_for_event(spare.event_dir, token, name, _APP_EVENT, **match)
    except TimeoutError:
        spare.restart(grace=0.2)  # a clean-up, not a verdict: the spinning app would burn the grace's CPU too
        raise
    if spare.interface == "asgi":
        assert event["message"]["type"] == "http.disconnect", event
    return event


def _start(client, interface: str, event_dir, token, phase: str) -> int:
    steps = _WAIT[interface][phase]
    if phase == "request":
        sid = client.request("POST", script_target(steps), [(TOKEN_HEADER, token)], b"abc", end_stream=False)
        try:
            fixtures.wait_for_event(event_dir, token, "script.start", _APP_EVENT)
        except TimeoutError:
            client.reset(sid)
            pytest.skip(
                "the server buffers the request body before it calls the app: "
                "a reset mid-request never meets a running app"
            )
    else:
        sid = client.request("GET", script_target(steps), [(TOKEN_HEADER, token)])
        client.wait_data(sid, 1)
    return sid


@pytest.mark.parametrize("phase", ["request", "response"])
@spec("RFC 9113 §6.4; ASGI WWW §Disconnect; RSGI client_disconnect; PEP 3333 close()", "DEFINED")
def test_reset_reaches_the_app_as_a_disconnect(server, spare, phase):
    """RST_STREAM(CANCEL) mid-request or mid-response reaches the app: ASGI http.disconnect, RSGI client_disconnect(),
    WSGI close() before the iterable ends."""
    token = fixtures.new_token()
    with H2Client(spare.address, authority=spare.authority) as client:
        sid = _start(client, server.interface, spare.event_dir, token, phase)
        client.reset(sid)
        event = _saw_disconnect(spare, token)
    if server.interface == "wsgi" and phase == "response":
        assert event["exhausted"] is False and event["items"] < 100, f"iteration went on after the reset: {event}"


@pytest.mark.parametrize("phase", ["request", "response"])
@spec("RFC 9113 §5.4.1; ASGI WWW §Disconnect; RSGI client_disconnect; PEP 3333 close()", "DEFINED")
def test_connection_loss_reaches_the_app_as_a_disconnect(server, spare, phase):
    """The TCP connection closing mid-request or mid-response (no RST_STREAM, no GOAWAY) reaches the app like a reset:
    ASGI http.disconnect, RSGI client_disconnect(), WSGI close()."""
    token = fixtures.new_token()
    client = H2Client(spare.address, authority=spare.authority)
    try:
        _start(client, server.interface, spare.event_dir, token, phase)
    finally:
        client.close()
    event = _saw_disconnect(spare, token)
    if server.interface == "wsgi" and phase == "response":
        assert event["exhausted"] is False and event["items"] < 100, f"iteration went on after the close: {event}"


@spec("RFC 9113 §5.1; RFC 9113 §6.4", "DEFINED")
def test_reset_stream_leaves_other_streams_intact(server, spare):
    """Resetting one stream mid-response leaves a half-sent upload on another stream and a new stream after it
    intact."""
    token = fixtures.new_token()
    upload = random_bytes(200_000, seed=3)
    with H2Client(spare.address, authority=spare.authority) as client:
        other = client.request("POST", "/echo", [("content-length", str(len(upload)))], end_stream=False)
        client.send_body(other, upload[:100_000], end_stream=False)
        victim = _start(client, server.interface, spare.event_dir, token, "response")
        client.reset(victim)
        client.send_body(other, upload[100_000:], end_stream=True)
        later = client.request("GET", "/b10k")
        resp_other, resp_later = client.response(other), client.response(later)
    assert resp_other.status == 200 and resp_other.body == upload, resp_other.describe()
    assert resp_later.status == 200 and resp_later.body == fixtures.payload_bytes(10240), resp_later.describe()


# -- trailers and push, where the server advertises them (ASGI extensions) ----------------------------


def _extensions(server) -> dict:
    return asgi_scope(h2_probe(server)).get("extensions") or {}


def _need_extension(server, name: str) -> None:
    if name not in _extensions(server):
        pytest.skip(f"not supported: {server.target} does not advertise {name} on HTTP/2")


_TRAILER_SCRIPT = script_target(
    [["start", 200, [["trailer", "x-checksum"]], True], ["body", "abc"], ["trailers", [["x-checksum", "c0ffee"]]]]
)


@interfaces("asgi")
@spec("RFC 9113 §8.1; ASGI EXT §HTTP Trailers", "MUST NOT")
def test_asgi_trailers_are_a_final_headers_frame(server):
    """With `te: trailers`, http.response.trailers goes out as a last HEADERS frame with END_STREAM and no
    pseudo-header."""
    _need_extension(server, "http.response.trailers")
    with _client(server) as client:
        resp = client.response(client.request("GET", _TRAILER_SCRIPT, [("te", "trailers")]))
        last = client.frames_on(resp.stream_id)[-1]
    assert resp.status == 200 and resp.body == b"abc", resp.describe()
    assert resp.trailers == [(b"x-checksum", b"c0ffee")], resp.trailers
    assert last.name == "HEADERS" and last.flags & 0x1, f"stream ended with {last}, not HEADERS+END_STREAM"


@interfaces("asgi")
@spec("ASGI EXT §HTTP Trailers", "DEFINED")
def test_asgi_trailers_are_not_sent_without_te_trailers(server):
    """Without `te: trailers` in the request the server does not send the app's trailers."""
    _need_extension(server, "http.response.trailers")
    with _client(server) as client:
        state = client.response(client.request("GET", _TRAILER_SCRIPT))
    assert state.status == 200 and state.body == b"abc", state.describe()
    assert state.trailers is None, state.trailers


_PUSH_SCRIPT = script_target(
    [["start", 200], ["send", {"type": "http.response.push", "path": "/b10", "headers": []}], ["body", "abc"]]
)


@interfaces("asgi")
@spec("RFC 9113 §8.4; RFC 9113 §6.5.2", "MUST NOT")
def test_asgi_push_is_not_sent_when_the_client_disabled_it(server):
    """A client with SETTINGS_ENABLE_PUSH 0 gets no PUSH_PROMISE, even when the app asks for a push."""
    _need_extension(server, "http.response.push")
    with _client(server, settings={SettingCodes.ENABLE_PUSH: 0}) as client:
        state = client.response(client.request("GET", _PUSH_SCRIPT))
        client.idle(0.2)
    assert state.status == 200 and state.body == b"abc", state.describe()
    assert not [f for f in client.frames if f.name == "PUSH_PROMISE"], client.frames


@interfaces("asgi")
@spec("ASGI EXT §HTTP/2 Server Push; RFC 9113 §8.4", "SHOULD")
def test_asgi_push_promises_a_safe_request_on_the_same_authority(server):
    """With push enabled, http.response.push becomes a PUSH_PROMISE for GET /b10 on the parent's :authority, before the
    parent's DATA, and the promised stream is answered."""
    _need_extension(server, "http.response.push")
    with _client(server, settings={SettingCodes.ENABLE_PUSH: 1}) as client:
        state = client.response(client.request("GET", _PUSH_SCRIPT))
        assert state.pushes, f"no PUSH_PROMISE; frames: {client.frames}"
        promise = state.pushes[0]
        pushed = client.response(promise.pushed_stream_id)
        order = [f.name for f in client.frames_on(state.stream_id) if f.name in ("PUSH_PROMISE", "DATA")]
    request = dict(promise.headers)
    assert request.get(b":method") == b"GET" and request.get(b":path") == b"/b10", promise.headers
    assert request.get(b":authority") == server.authority.encode(), promise.headers
    assert order[0] == "PUSH_PROMISE", f"parent stream frames in order: {order}"
    assert pushed.status == 200 and pushed.body == fixtures.payload_bytes(10), pushed.describe()
