"""Vanishing clients: a client that resets mid-request or mid-response; the app is told and nothing leaks.

Rules of this module:

1. Every check ends by proving the server still answers a normal request on a new connection, and that
   the server tree's descriptors and memory came back (conformance/helpers/usage.py).
2. Where a spec names how the app learns that its client left (ASGI ``http.disconnect``, RSGI
   ``client_disconnect``, WSGI ``close()``), the fixture event log is the proof; elsewhere the reading is
   suite POLICY and says so.
3. A server may wait for a whole request body before calling the app; then no app waits for the body,
   and a check of what the app was told accepts that the app was never invoked.
"""

from __future__ import annotations

import time

from gatecheck.conformance.app import new_token, script_target
from gatecheck.conformance.client.connect import connect
from gatecheck.conformance.client.http1 import build_request, read_raw
from gatecheck.conformance.helpers.usage import abort, open_many
from gatecheck.conformance.helpers.wire import assert_serves, request
from gatecheck.conformance.spec.markers import interfaces, spec


def _vanish_after(server, steps: list, *, prefix: bytes = b"", read_first: int = 0, method="GET") -> str:
    """Send a tracked request to ``steps`` (+ ``prefix`` body bytes), optionally read ``read_first``
    bytes of the response, then reset the connection. Returns the token."""
    token = new_token()
    headers = [("x-gatecheck-token", token)]
    if prefix:
        headers.append(("Content-Length", "100000"))
    sock = connect(server, timeout=5.0)
    try:
        sock.sendall(
            build_request(method, script_target(steps), headers, host=server.authority, content_length=False) + prefix
        )
        got, _ = read_raw(sock, lambda buf: len(buf) >= read_first, timeout=5.0)
        if read_first:
            assert len(got) >= read_first, f"response did not start: {got[:200]!r}"
        else:
            _app_started(server, token)
    finally:
        abort(sock)
    return token


def _app_started(server, token: str) -> None:
    """Wait (at most 1 s) until the app's script started, so the reset meets an app at its waiting step; a
    server that waits for the whole body never calls the app, and ``_first_step`` accepts that."""
    try:
        server.wait_for_event(token, "script.start", timeout=1.0)
    except TimeoutError:
        pass


def _first_step(server, token: str, timeout: float):
    """The script's first step once the script ended; None if the app was never invoked at all (a server
    may wait for the whole body before calling the app: then no app waits, and nothing is to be told)."""
    try:
        server.wait_for_event(token, "script.end", timeout=timeout)
    except TimeoutError:
        if not server.events(token):
            return None
        raise
    return next(e for e in server.events(token) if e["event"] == "step" and e["index"] == 0)


_BODY_CUT = dict(prefix=b"x" * 1000, method="POST")  # 1 000 of the announced 100 000 bytes, then a reset


@interfaces("asgi")
@spec("ASGI WWW §Disconnect", "DEFINED")
def test_asgi_client_vanishing_mid_body_is_http_disconnect(server, usage):
    """A client that resets after 1 000 of 100 000 body bytes makes the app's receive() return
    http.disconnect within 5 s (or the app was never invoked for the incomplete request)."""
    step = _first_step(server, _vanish_after(server, [["receive_all"]], **_BODY_CUT), 5.0)
    assert step is None or step["ok"] and step["result"]["last"].get("type") == "http.disconnect", step
    assert_serves(server)
    usage.check()


@interfaces("rsgi")
@spec("RSGI §HTTP protocol interface", "DEFINED")
def test_rsgi_client_vanishing_mid_body_resolves_client_disconnect(server, usage):
    """A client that resets after 1 000 of 100 000 body bytes resolves the app's client_disconnect()
    within 5 s."""
    step = _first_step(server, _vanish_after(server, [["wait_disconnect", 10]], **_BODY_CUT), 5.0)
    assert step is None or step["ok"], f"client_disconnect() did not resolve: {step}"
    assert_serves(server)
    usage.check()


@interfaces("wsgi")
@spec("PEP 3333 §Input and Error Streams", "POLICY")
def test_wsgi_client_vanishing_mid_body_ends_the_read(server, usage):
    """POLICY: a client that resets after 1 000 of 100 000 body bytes makes the app's wsgi.input read end
    within 5 s, short or with an error — not wait for bytes that will not come."""
    step = _first_step(server, _vanish_after(server, [["read_body"]], **_BODY_CUT), 5.0)
    assert step is None or not step["ok"] or step["result"]["len"] < 100000, step
    assert_serves(server)
    usage.check()


def _assert_told_mid_response(server, steps: list) -> None:
    """The client resets after the first response bytes; the app's disconnect watcher fired, or a send
    raised, before the script ended."""
    token = _vanish_after(server, steps, read_first=5)
    server.wait_for_event(token, "script.end", timeout=10.0)
    events = server.events(token)
    send_failed = any(
        e["event"] == "step" and not e["ok"] and e["op"] in ("body", "send_bytes", "send_str") for e in events
    )
    names = [e["event"] for e in events]
    assert "watch.disconnect" in names or send_failed, f"the app was never told: {names[-12:]}"


@interfaces("asgi")
@spec("ASGI WWW §Disconnect", "DEFINED")
def test_asgi_client_vanishing_mid_response_is_told_to_the_app(server, usage):
    """A client that resets after the first chunk of a streamed response is reported to the app (receive()
    returns http.disconnect, or send() raises) and the app's instance ends."""
    _assert_told_mid_response(
        server,
        [
            ["start", 200, []],
            ["watch_disconnect", 10],
            ["body", "first", True],
            ["sleep", 0.3],
            ["repeat", 20, [["body", {"size": 1024}, True], ["sleep", 0.05]]],
            ["body", ""],
        ],
    )
    assert_serves(server)
    usage.check()


@interfaces("rsgi")
@spec("RSGI §HTTP protocol interface", "DEFINED")
def test_rsgi_client_vanishing_mid_response_is_told_to_the_app(server, usage):
    """A client that resets after the first chunk of a streamed response is reported to the app
    (client_disconnect() resolves, or send_bytes raises) and the app's instance ends."""
    _assert_told_mid_response(
        server,
        [
            ["stream", 200, []],
            ["watch_disconnect", 10],
            ["send_str", "first"],
            ["sleep", 0.3],
            ["repeat", 20, [["send_bytes", {"size": 1024}], ["sleep", 0.05]]],
        ],
    )
    assert_serves(server)
    usage.check()


@interfaces("wsgi")
@spec("PEP 3333 §Specification Details", "MUST")
def test_wsgi_client_vanishing_mid_response_closes_the_iterable(server, usage):
    """A client that resets after the first chunk of a streamed response: the server stops iterating and
    calls the iterable's close()."""
    token = _vanish_after(
        server,
        [
            ["start_response", "200 OK", []],
            ["yield", "first"],
            ["sleep", 0.3],
            ["repeat", 20, [["yield", {"size": 1024}], ["sleep", 0.05]]],
        ],
        read_first=5,
    )
    server.wait_for_event(token, "wsgi.close", timeout=10.0)
    assert_serves(server)
    usage.check()


@spec("RFC 9112 §9.5", "SHOULD")
def test_many_vanishing_clients_leave_nothing_behind(server, usage):
    """200 clients that reset mid-request-line, mid-headers or mid-body leave no descriptors or memory behind
    (RFC 9112 §9.5: implementations SHOULD monitor connections for closure so resources are reclaimed)."""
    fragments = [
        b"GET /pi",
        b"GET /ping HTTP/1.1\r\nHost: x\r\nX-Half: ",
        request(server, "POST", "/echo", [("Content-Length", "5000")]) + b"z" * 100,
    ]
    socks = open_many(server, 200, fragments)  # one bound for all 200 connects (a full backlog makes each wait)
    try:
        time.sleep(0.2)
        usage.sample_peak()
    finally:
        for sock in socks:
            abort(sock)
    assert_serves(server)
    usage.check()
