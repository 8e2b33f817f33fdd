"""ASGI WebSocket mapping (ASGI www.rst §WebSocket, extensions.rst §Websocket Denial Response).

The app side is a fixture script (``/script?s=…``, fixtures/ROUTES.md); what the app was handed and what its
``send()`` calls did comes back through the event log; the wire is read with the raw client (helpers:
conformance/helpers/ws_asgi.py). A later spec version's behaviour is checked only where the server advertises it.

Evidence: a check whose rule is an absence (no code on the wire, no subprotocol) passes only when the
event log shows the app did what the check scripted and the wire shows the server's answer to it: a
well-formed HTTP response, a Close frame, or the connection ended after the app ended.
"""

from __future__ import annotations

import pytest

from gatecheck.conformance.app import ws_accepted, ws_script, ws_steps
from gatecheck.conformance.client.http1 import parse_responses
from gatecheck.conformance.client.ws import EOF, OP_CONT, OP_PING, OP_PONG, OP_TEXT
from gatecheck.conformance.helpers.ws_asgi import (
    client_close_disconnect,
    disconnect_message,
    late_send_step,
    probe_scope,
    require_denial,
    require_spec,
    spec_version,
)
from gatecheck.conformance.spec.markers import interfaces, needs, spec
from gatecheck.conformance.spec.observables import observable_params, observable_row
from gatecheck.conformance.spec.results import UNSUPPORTED_PREFIX

pytestmark = [interfaces("asgi"), needs("websockets")]

_WS = "ASGI WWW §WebSocket"
_SCOPE = "ASGI WWW §Websocket Connection Scope"
_NEVER_ON_WIRE = (1005, 1006, 1015)
_SEND_BOTH = {"type": "websocket.send", "text": "a", "bytes": {"b64": "YQ=="}}  # bytes and text: one too many
_HERE = "test_websocket_asgi.py::"  # the check ids' prefix, for the observables' table


# -- scope --------------------------------------------------------------------------------------------


@spec(_SCOPE, "DEFINED")
def test_scope_type_is_websocket(server):
    """The scope's type is "websocket"."""
    assert probe_scope(server)["type"] == "websocket"


@spec(_SCOPE, "DEFINED")
def test_scope_scheme_is_ws_on_plain_listener(server):
    """scheme, when present, is "ws" on a plain-text listener (never empty)."""
    scope = probe_scope(server)
    assert scope.get("scheme", "ws") == "ws", scope.get("scheme")


@spec(_SCOPE, "DEFINED")
def test_scope_http_version_is_1_1(server):
    """http_version, when present, is "1.1" for a WebSocket over HTTP/1.1."""
    scope = probe_scope(server)
    assert scope.get("http_version", "1.1") == "1.1", scope.get("http_version")


@spec(_SCOPE, "DEFINED")
def test_scope_path_is_decoded_without_query(server):
    """path is the str path without the query."""
    assert probe_scope(server, "/ws_probe?q=a%20b&x=%C3%A9")["path"] == "/ws_probe"


@spec(_SCOPE, "DEFINED")
def test_scope_query_string_is_raw_bytes(server):
    """query_string is the bytes after '?', still percent-encoded."""
    scope = probe_scope(server, "/ws_probe?q=a%20b&x=%C3%A9")
    assert scope.get("query_string") == b"q=a%20b&x=%C3%A9", scope.get("query_string")


@spec(_SCOPE, "DEFINED")
def test_scope_raw_path_is_the_path_bytes(server):
    """raw_path, when present and not None, is the path as received, without the query."""
    scope = probe_scope(server, "/ws_probe?q=a%20b&x=%C3%A9")
    assert scope.get("raw_path") in (None, b"/ws_probe"), scope.get("raw_path")


@spec(_SCOPE, "DEFINED")
def test_scope_headers_are_byte_pairs_of_the_handshake(server):
    """headers are [bytes, bytes] pairs holding the handshake's fields (Sec-WebSocket-Key among them)."""
    scope = probe_scope(server)
    assert all(type(n) is bytes and type(v) is bytes for n, v in scope["headers"]), scope["headers"]
    assert any(bytes(n).lower() == b"sec-websocket-key" for n, _ in scope["headers"]), scope["headers"]


@spec(_SCOPE, "MUST")
def test_scope_headers_keep_duplicates_in_order(server):
    """Repeated handshake fields are all kept, in the order received (names compared without case)."""
    scope = probe_scope(server, headers=[("X-Dup", "one"), ("X-Dup", "two")])
    headers = [(bytes(n).lower(), bytes(v)) for n, v in scope["headers"]]
    assert [v for n, v in headers if n == b"x-dup"] == [b"one", b"two"], headers


@pytest.mark.parametrize("fields", [["b, a, c"], ["x", "y, z"]], ids=["one-header", "two-headers"])
@spec(_SCOPE, "DEFINED")
def test_scope_subprotocols_list_the_offers_in_order(server, fields):
    """subprotocols lists what the client offered, in order, also when split over two header fields."""
    scope = probe_scope(server, headers=[("Sec-WebSocket-Protocol", f) for f in fields])
    expected = [p.strip() for f in fields for p in f.split(",")]
    assert list(scope.get("subprotocols", [])) == expected


@spec("ASGI WWW §Connect", "MUST")
def test_first_receive_is_websocket_connect(server):
    """The first message an app receives on a WebSocket scope is websocket.connect."""
    scope = probe_scope(server)
    assert scope["__messages__"][0]["type"] == "websocket.connect"


# -- handshake gating ---------------------------------------------------------------------------------


@spec("ASGI WWW §Connect", "MUST")
def test_no_101_before_the_app_accepts(server):
    """The server sends no 101 until the app sends websocket.accept (the app waits 1 s first)."""
    conn, _ = ws_script(server, [["receive"], ["sleep", 1.0], ["accept"], ["close", 1000]], timeout=0.6)
    try:
        assert conn.handshake.response is None and not conn.handshake.raw, (
            f"response before accept: {conn.handshake.raw[:200]!r}"
        )
        hs = conn.read_handshake(conn.handshake.key, timeout=5.0)
        assert hs.status == 101, f"after accept: {hs.raw[:200]!r}"
    finally:
        conn.close()


@spec("ASGI WWW §Close", "MUST")
def test_close_before_accept_is_http_403(server):
    """websocket.close before accept rejects the handshake with HTTP 403 and no 101 (a row of dimension 5's
    table, conformance/spec/observables.py)."""
    row = observable_row(_HERE + "test_close_before_accept_is_http_403")
    conn, _ = ws_script(server, [list(s) for s in row.steps])
    conn.close()
    assert conn.handshake.status in row.allowed, conn.handshake.raw[:300]
    assert not conn.handshake.header_all("sec-websocket-accept")


@pytest.mark.parametrize("ending", ["return", "raise"])
@spec("ASGI WWW §Connect", "POLICY")
def test_app_ending_before_accept_is_refused_with_http_error(server, ending):
    """POLICY: an app that returns or raises without accepting gets the handshake refused with an HTTP error
    (403 is the consistent reading; any 4xx/5xx passes), promptly and without a 101."""
    conn, _ = ws_script(server, [["receive"], [ending]])
    conn.close()
    hs = conn.handshake
    assert hs.status is not None and 400 <= hs.status < 600, f"got {hs.status}: {hs.raw[:300]!r}"


# -- accept -------------------------------------------------------------------------------------------


@spec("ASGI WWW §Accept", "DEFINED")
def test_accept_subprotocol_is_sent_in_the_101(server):
    """websocket.accept with subprotocol "b" (offered "a, b") gives exactly one Sec-WebSocket-Protocol: b."""
    conn, _ = ws_script(server, [["receive"], ["accept", "b"], ["close", 1000]], protocols=["a", "b"])
    with ws_accepted(conn):
        assert conn.handshake.header_all("sec-websocket-protocol") == ["b"], conn.handshake.raw


@pytest.mark.parametrize("offered", [[], ["a"]], ids=["none-offered", "other-offered"])
@spec("RFC 6455 §4.2.2", "MUST")
def test_subprotocol_the_client_did_not_offer_never_reaches_the_wire(server, offered):
    """An app accepting with a subprotocol the client did not offer never puts it in a 101. Evidence: the app's
    log shows its accept ran (the server was handed the subprotocol), and then either a well-formed HTTP
    response (a 101 without that subprotocol, or a refusal), or a refused accept (the app's send raised) and
    the connection closed with not one byte sent (hypercorn). Silence, garbage, a close before the accept,
    or an accept that returned followed by a close without an answer fail."""
    conn, token = ws_script(server, [["receive"], ["accept", "gatecheck.c"], ["close", 1000]], protocols=offered)
    conn.close()
    hs, steps = conn.handshake, ws_steps(server, token)
    assert 1 in steps, "the app's accept step never ran"
    refused = steps[1].get("ok") is False and hs.response is None and hs.closed and not hs.raw
    assert hs.response is not None or refused, (
        f"no HTTP response to the handshake ({'closed' if hs.closed else 'open'}, the app's accept "
        f"{'raised' if steps[1].get('ok') is False else 'returned'}): {hs.raw[:200]!r}"
    )
    if hs.status == 101:
        assert all(v in offered for v in conn.handshake.header_all("sec-websocket-protocol")), conn.handshake.raw


@spec("ASGI WWW §Spec Versions", "DEFINED")
def test_accept_headers_are_sent_in_the_101(server):
    """Spec 2.1+: headers given with websocket.accept appear in the 101 response."""
    require_spec(server, "2.1")
    steps = [["receive"], ["accept", None, [["x-gatecheck-accept", "yes"], ["set-cookie", "ws=1"]]], ["close", 1000]]
    conn, _ = ws_script(server, steps)
    with ws_accepted(conn):
        assert conn.handshake.header_all("x-gatecheck-accept") == ["yes"], conn.handshake.raw
        assert conn.handshake.header_all("set-cookie") == ["ws=1"], conn.handshake.raw


# -- messages -----------------------------------------------------------------------------------------


@spec("ASGI WWW §Receive", "DEFINED")
def test_text_arrives_as_text_and_binary_as_bytes(server):
    """A text frame arrives as websocket.receive text (str), a binary one as bytes; the other key is None."""
    conn, token = ws_script(server, [["receive"], ["accept"], ["receive"], ["receive"], ["close", 1000]])
    with ws_accepted(conn):
        conn.send_text("héllo ✓")
        conn.send_binary(b"\x00\xffbin")
        conn.read_frames_until_close()
    steps = ws_steps(server, token)
    text, binary = steps[2]["result"], steps[3]["result"]
    assert text["type"] == "websocket.receive" and text.get("text") == "héllo ✓", text
    assert text.get("bytes") is None, text
    assert binary.get("bytes") == b"\x00\xffbin" and binary.get("text") is None, binary


@pytest.mark.parametrize("message", [_SEND_BOTH, {"type": "websocket.send"}], ids=["both", "neither"])
@spec("ASGI Core §Error Handling", "SHOULD")
def test_send_with_both_or_neither_payload_raises(server, message):
    """websocket.send needs exactly one of bytes/text: a message with both or neither raises from send()."""
    conn, token = ws_script(server, [["receive"], ["accept"], ["send", message], ["close", 1000]])
    with ws_accepted(conn):
        conn.read_frames_until_close()
    step = ws_steps(server, token)[2]
    assert step["ok"] is False, f"send({message}) did not raise: {step}"


@spec(_WS, "SHOULD")
def test_fragmented_message_is_one_receive(server):
    """A message sent in three fragments reaches the app as one websocket.receive."""
    conn, token = ws_script(server, [["receive"], ["accept"], ["receive"], ["close", 1000]])
    with ws_accepted(conn):
        conn.send_frame(OP_TEXT, b"frag", fin=False)
        conn.send_frame(OP_CONT, b"men", fin=False)
        conn.send_frame(OP_CONT, b"ted")
        conn.read_frames_until_close()
    assert ws_steps(server, token)[2]["result"].get("text") == "fragmented"


@spec(_WS, "SHOULD")
def test_ping_is_answered_without_the_app(server):
    """A ping is answered by the server; the app's next receive() is the following data message."""
    conn, token = ws_script(server, [["receive"], ["accept"], ["receive"], ["close", 1000]])
    with ws_accepted(conn):
        conn.send_frame(OP_PING, b"ping!")
        frame = conn.read_frame()
        assert getattr(frame, "opcode", None) == OP_PONG and frame.payload == b"ping!", frame
        conn.send_text("after ping")
        conn.read_frames_until_close()
    assert ws_steps(server, token)[2]["result"].get("text") == "after ping"


# -- close ------------------------------------------------------------------------------------------


@pytest.mark.parametrize("row", observable_params(_HERE + "test_app_close_code_reaches_the_client"))
def test_app_close_code_reaches_the_client(server, row):
    """websocket.close after accept sends a Close frame with the app's code (1000 when omitted); the rows
    are dimension 5's (conformance/spec/observables.py)."""
    conn, _ = ws_script(server, [list(s) for s in row.steps])
    with ws_accepted(conn):
        _, close, end = conn.read_frames_until_close()
    assert close is not None and close.close_code in row.allowed, f"{row.app}: {close!r} ({end})"


@spec("ASGI WWW §Spec Versions", "DEFINED")
def test_app_close_reason_reaches_the_client(server):
    """Spec 2.3+: the reason of websocket.close is the reason of the Close frame."""
    require_spec(server, "2.3")
    conn, _ = ws_script(server, [["receive"], ["accept"], ["close", 4001, "gatecheck bye ✓"]])
    with ws_accepted(conn):
        _, close, end = conn.read_frames_until_close()
    assert close is not None and close.close_code == 4001, f"{close!r} ({end})"
    assert close.close_reason == "gatecheck bye ✓".encode(), close


@pytest.mark.parametrize("code", _NEVER_ON_WIRE)
@spec("RFC 6455 §7.4.1", "MUST NOT")
def test_app_close_with_local_only_code_never_reaches_the_wire(server, code):
    """An app asking to close with 1005, 1006 or 1015 never makes the server send that code. Evidence: the
    app's close step ran (event log) and the server answered it with a Close frame, by ending the connection,
    or by refusing the message (the app's send raised: nothing of it can reach the wire); silence alone
    shows nothing."""
    conn, token = ws_script(server, [["receive"], ["accept"], ["close", code]])
    with ws_accepted(conn):
        _, close, end = conn.read_frames_until_close()
    steps = ws_steps(server, token)
    assert 2 in steps, "the app's close step never ran"
    assert close is None or close.close_code not in _NEVER_ON_WIRE, f"server sent {close!r}"
    refused = steps[2].get("ok") is False
    assert close is not None or end == EOF or refused, (
        f"neither a Close frame, nor a closed connection, nor a refusal (the app's close returned) ({end})"
    )


@pytest.mark.parametrize("code", [1000, 1001, 3000, 4999])
@spec("ASGI WWW §Disconnect", "DEFINED")
def test_disconnect_carries_the_client_close_code(server, code):
    """The client's Close code arrives as websocket.disconnect code."""
    assert client_close_disconnect(server, code, "bye").get("code") == code


@spec("ASGI WWW §Disconnect", "SHOULD")
def test_disconnect_without_close_code_is_1005(server):
    """A client Close without a status code arrives as websocket.disconnect code 1005."""
    assert client_close_disconnect(server, None).get("code") == 1005


@spec("RFC 6455 §7.1.5", "DEFINED")
def test_tcp_drop_is_disconnect_1006(server):
    """A client that drops the TCP connection without a Close frame is reported with code 1006."""
    conn, token = ws_script(server, [["receive"], ["accept"], ["wait_disconnect", 10]])
    ws_accepted(conn).abort()
    assert disconnect_message(server, token).get("code") == 1006


@spec("ASGI WWW §Spec Versions", "DEFINED")
def test_disconnect_carries_the_client_reason(server):
    """Spec 2.5+: the client's close reason arrives as websocket.disconnect reason."""
    require_spec(server, "2.5")
    assert client_close_disconnect(server, 4002, "gatecheck réason").get("reason") == "gatecheck réason"


@spec("ASGI WWW §Disconnect", "DEFINED")
def test_receive_after_server_close_is_disconnect(server):
    """After the app's websocket.close, a receive() returns websocket.disconnect."""
    conn, token = ws_script(server, [["receive"], ["accept"], ["close", 1000], ["receive"]])
    with ws_accepted(conn):
        conn.read_frames_until_close()
        conn.send_close(1000)
        conn.wait_closed(3.0)
    step = ws_steps(server, token)[3]
    assert step["ok"] and step["result"]["type"] == "websocket.disconnect", step


@pytest.mark.parametrize("ending", ["return", "raise"])
@spec(_WS, "SHOULD")
def test_app_ending_after_accept_closes_the_socket(server, ending):
    """When the app returns or raises after accepting, the server closes the WebSocket (evidence: a Close
    frame, or the connection ending, after the event log shows the app ended)."""
    conn, token = ws_script(server, [["receive"], ["accept"], [ending]])
    with ws_accepted(conn):
        _, close, end = conn.read_frames_until_close(5.0)
        server.wait_for_event(token, "script.end", 5.0)
        assert close is not None or end == EOF, f"socket still open 5 s after the app ended ({end})"


@spec("ASGI WWW §Disconnected Client", "SHOULD")
def test_send_after_client_close_raises_oserror(server):
    """Spec 2.4+: send() after the client closed raises an OSError subclass."""
    require_spec(server, "2.4")
    step = late_send_step(server)
    assert step["ok"] is False and step["error"]["is_oserror"], f"send after close: {step}"


@spec("ASGI Core §Error Handling", "SHOULD")
def test_send_after_client_close_is_a_noop_before_2_4(server):
    """Before spec 2.4, send() after the client closed is a no-op (no exception)."""
    if spec_version(server) >= (2, 4):
        pytest.skip(f"{UNSUPPORTED_PREFIX} {server.target} advertises spec_version >= 2.4 (raises instead)")
    assert late_send_step(server)["ok"] is True


# -- denial response extension --------------------------------------------------------------------------


@spec("ASGI EXT §Websocket Denial Response", "SHOULD")
def test_denial_response_is_sent_instead_of_the_handshake(server):
    """A denial (websocket.http.response.start + body) is sent as that HTTP response, without
    Sec-WebSocket-Accept, and the connection is closed afterwards."""
    require_denial(server)
    conn, _ = ws_script(server, [["receive"], ["deny", 451, [["x-gatecheck-denied", "yes"]], "denied by app"]])
    try:
        hs = conn.handshake
        assert hs.status == 451, hs.raw[:300]
        assert hs.response.body == b"denied by app" and hs.header_all("x-gatecheck-denied") == ["yes"]
        assert not hs.header_all("sec-websocket-accept"), hs.raw[:300]
        assert conn.wait_closed(5.0), "connection still open 5 s after the denial response"
    finally:
        conn.close()


@spec("ASGI EXT §Websocket Denial Response", "DEFINED")
def test_websocket_send_during_denial_never_becomes_a_frame(server):
    """A websocket.send between the denial's start and body raises or is dropped: never a WebSocket frame."""
    require_denial(server)
    start = {
        "type": "websocket.http.response.start",
        "status": 403,
        "headers": [[{"b64": "Y29udGVudC1sZW5ndGg="}, {"b64": "Ng=="}]],
    }
    body = {"type": "websocket.http.response.body", "body": {"b64": "ZGVuaWVk"}}
    conn, _ = ws_script(server, [["receive"], ["send", start], ["send_text", "not a frame"], ["send", body]])
    try:
        assert conn.handshake.status == 403 and conn.handshake.response.body == b"denied", conn.handshake.raw
        conn.wait_closed(1.5)
        _, leftover = parse_responses(conn.buffer, closed=True)
        assert b"not a frame" not in conn.buffer and not leftover, f"extra bytes: {conn.buffer[:200]!r}"
    finally:
        conn.close()
