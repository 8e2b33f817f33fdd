"""RSGI WebSocket protocol (RSGI §Websocket connection scope, §Websocket protocol interface).

The app side is a fixture script (``/script?s=…``, fixtures/ROUTES.md): ``accept``, ``receive``,
``send_str``/``send_bytes`` and ``close(status)`` are called exactly as the steps say, and each call's outcome
comes back through the event log. Where RSGI is silent (what ``close(status)`` means before and after
``accept``) the checks are POLICY readings from the spec digest: an HTTP status before, a close code after.

Evidence: a check whose rule is an absence passes only when the event log shows the app did what the
check scripted and the wire shows the server's answer (a Close frame, or the connection ended after it).
"""

from __future__ import annotations

import json

import pytest

from gatecheck.conformance.app import value_of, ws_accepted, ws_open, ws_script, ws_steps
from gatecheck.conformance.client.ws import EOF, OP_BINARY, OP_TEXT, accept_for
from gatecheck.conformance.spec.markers import interfaces, needs, spec
from gatecheck.conformance.spec.observables import observable_params

pytestmark = [interfaces("rsgi"), needs("websockets")]

_SCOPE = "RSGI §Websocket connection scope"
_PROTO = "RSGI §Websocket protocol interface"
_NEVER_ON_WIRE = (1005, 1006, 1015)


def _probe_scope(server) -> dict:
    """The WebSocket scope the probe app saw for ``/ws_probe?q=1``."""
    conn = ws_accepted(ws_open(server, "/ws_probe?q=1"))
    try:
        got = conn.read_message()
    finally:
        conn.close()
    assert isinstance(got, tuple) and got[0] == OP_TEXT, f"no probe document: {got!r}"
    return {k: value_of(v.get("value")) if "value" in v else v for k, v in json.loads(got[1])["scope"].items()}


@spec(_SCOPE, "DEFINED")
def test_scope_proto_is_ws(server):
    """The WebSocket scope's proto is "ws"."""
    assert _probe_scope(server)["proto"] == "ws"


@spec(_SCOPE, "DEFINED")
def test_scope_scheme_is_http_on_plain_listener(server):
    """The WebSocket scope's scheme is "http" on a plain-text listener (RSGI names "http" or "https")."""
    scheme = _probe_scope(server)["scheme"]
    assert scheme == "http", scheme


@spec(_SCOPE, "DEFINED")
def test_scope_method_is_get(server):
    """The WebSocket scope's method is the handshake's "GET"."""
    method = _probe_scope(server)["method"]
    assert method == "GET", method


@spec(_SCOPE, "DEFINED")
def test_scope_http_version_is_1_1(server):
    """The WebSocket scope's http_version is "1.1" for an HTTP/1.1 handshake."""
    version = _probe_scope(server)["http_version"]
    assert version == "1.1", version


@spec(_SCOPE, "DEFINED")
def test_scope_path_excludes_the_query(server):
    """The WebSocket scope's path is the target without the query."""
    path = _probe_scope(server)["path"]
    assert path == "/ws_probe", path


@spec(_SCOPE, "DEFINED")
def test_scope_query_string_is_the_rest(server):
    """The WebSocket scope's query_string is the str after '?'."""
    query = _probe_scope(server)["query_string"]
    assert query == "q=1", query


@spec(_PROTO, "DEFINED")
def test_accept_completes_the_handshake(server):
    """await protocol.accept() answers the handshake with 101 and the right Sec-WebSocket-Accept."""
    conn, token = ws_script(server, [["accept"], ["close", 1000]])
    with ws_accepted(conn):
        assert conn.handshake.header_all("sec-websocket-accept") == [accept_for(conn.handshake.key)]
    assert ws_steps(server, token)[0]["ok"]


@spec(_PROTO, "DEFINED")
def test_message_kinds_and_data_types(server):
    """A text frame is received as kind 2 with str data, binary as kind 1 with bytes, a client Close as kind 0."""
    conn, token = ws_script(server, [["accept"], ["receive"], ["receive"], ["receive"]])
    with ws_accepted(conn):
        conn.send_text("héllo ✓")
        conn.send_binary(b"\x00\xffbin")
        conn.send_close(1000)
        conn.read_frames_until_close()
    steps = ws_steps(server, token)
    text, binary, closed = (steps[i]["result"] for i in (1, 2, 3))
    assert text["kind"] == 2 and text["data"] == "héllo ✓", text
    assert binary["kind"] == 1 and binary["data"] == b"\x00\xffbin", binary
    assert closed["kind"] == 0, closed


@spec(_PROTO, "DEFINED")
def test_send_str_and_send_bytes_make_text_and_binary_frames(server):
    """transport.send_str sends a text frame and send_bytes a binary frame, with identical payloads."""
    conn, _ = ws_script(
        server, [["accept"], ["send_str", "héllo ✓"], ["send_bytes", {"b64": "AP9iaW4="}], ["close", 1000]]
    )
    with ws_accepted(conn):
        first, second = conn.read_message(), conn.read_message()
    assert first == (OP_TEXT, "héllo ✓".encode()), first
    assert second == (OP_BINARY, b"\x00\xffbin"), second


@pytest.mark.parametrize(
    "row", observable_params("test_websocket_rsgi.py::test_close_before_accept_is_that_http_status")
)
def test_close_before_accept_is_that_http_status(server, row):
    """POLICY: protocol.close(status) before accept() refuses the handshake with that HTTP status, no 101 (rows
    of dimension 5's table, conformance/spec/observables.py)."""
    conn, _ = ws_script(server, [list(s) for s in row.steps])
    conn.close()
    assert conn.handshake.status in row.allowed, conn.handshake.raw[:300]
    assert not conn.handshake.header_all("sec-websocket-accept")


@pytest.mark.parametrize(
    "row", observable_params("test_websocket_rsgi.py::test_close_after_accept_sends_that_close_code")
)
def test_close_after_accept_sends_that_close_code(server, row):
    """POLICY: protocol.close(code) after accept() sends a Close frame carrying that code (rows of dimension
    5's table, conformance/spec/observables.py)."""
    conn, _ = ws_script(server, [list(s) for s in row.steps])
    with ws_accepted(conn):
        _, close, end = conn.read_frames_until_close()
    assert close is not None and close.close_code in row.allowed, f"{row.app}: {close!r} ({end})"


@pytest.mark.parametrize("code", _NEVER_ON_WIRE)
@spec("RFC 6455 §7.4.1", "MUST NOT")
def test_close_with_local_only_code_never_reaches_the_wire(server, code):
    """protocol.close(1005 | 1006 | 1015) after accept never puts that code in a Close frame. Evidence: the
    app's close step ran (event log) and the server answered it with a Close frame or by ending the
    connection; silence shows nothing."""
    conn, token = ws_script(server, [["accept"], ["close", code]])
    with ws_accepted(conn):
        _, close, end = conn.read_frames_until_close()
    assert 1 in ws_steps(server, token), "the app's close step never ran"
    assert close is not None or end == EOF, (
        f"neither a Close frame nor a closed connection after the app's close ({end})"
    )
    assert close is None or close.close_code not in _NEVER_ON_WIRE, f"server sent {close!r}"


@pytest.mark.parametrize("ending", ["return", "raise"])
@spec(_SCOPE, "SHOULD")
def test_app_ending_after_accept_closes_the_socket(server, ending):
    """When the app returns or raises after accept() without closing, the server closes the WebSocket
    (evidence: a Close frame, or the connection ending, after the event log shows the app ended)."""
    conn, token = ws_script(server, [["accept"], [ending]])
    with ws_accepted(conn):
        _, close, end = conn.read_frames_until_close(5.0)
        server.wait_for_event(token, "script.end", 5.0)
        assert close is not None or end == EOF, f"socket still open 5 s after the app ended ({end})"


@spec(_SCOPE, "SHOULD")
def test_tcp_drop_ends_a_waiting_receive(server):
    """A client that drops the TCP connection without a Close ends a pending receive() promptly: it returns
    kind 0 or raises (the app learns the socket is gone), rather than waiting on."""
    conn, token = ws_script(server, [["accept"], ["wait_disconnect", 30]])
    ws_accepted(conn).abort()
    step = ws_steps(server, token, timeout=5.0)[1]
    if step["ok"]:
        assert step["result"]["kind"] == 0, step
    else:
        assert "TimeoutError" not in step["error"]["type"], step
