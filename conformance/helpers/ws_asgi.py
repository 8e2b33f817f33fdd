"""What test_websocket_asgi.py's checks read from an ASGI WebSocket app: the websocket.disconnect message it
received (after a Close frame of the client's), what its send() did after that close, the scope the probe app
saw, the spec_version and extensions the server advertises (a check of a later version's behaviour is *not
supported* below it). Moved out of the check module to keep it small."""

from __future__ import annotations

import json

import pytest

from gatecheck.conformance.app import value_of, ws_accepted, ws_open, ws_script, ws_steps
from gatecheck.conformance.client.ws import OP_TEXT
from gatecheck.conformance.spec.results import UNSUPPORTED_PREFIX
from gatecheck.fixtures import typed

__all__ = [
    "disconnect_message",
    "probe_scope",
    "spec_version",
    "require_spec",
    "require_denial",
    "client_close_disconnect",
    "late_send_step",
]


def disconnect_message(server, token, timeout=5.0) -> dict:
    """The websocket.disconnect message the app received; an int subclass (IntEnum) code counts as its int."""
    message = dict(server.wait_for_event(token, "disconnect", timeout)["message"])
    code = message.get("code")
    if isinstance(code, typed.Opaque) and code.base == "int":
        message["code"] = code.value
    return message


def probe_scope(server, target="/ws_probe", **kw) -> dict:
    """The scope /ws_probe saw, with the messages it received under ``"__messages__"``."""
    conn = ws_accepted(ws_open(server, target, **kw))
    try:
        got = conn.read_message()
        assert isinstance(got, tuple) and got[0] == OP_TEXT, f"no probe document: {got!r}"
        doc = json.loads(got[1])
    finally:
        conn.close()
    return value_of(doc["scope"]) | {"__messages__": value_of(doc["request_messages"])}


_SPEC_CACHE: dict = {}


def spec_version(server) -> tuple:
    """The WebSocket scope's asgi.spec_version as a tuple (default "2.0"), probed once per target."""
    key = str(server.target)
    if key not in _SPEC_CACHE:
        _SPEC_CACHE[key] = str(probe_scope(server).get("asgi", {}).get("spec_version", "2.0"))
    return tuple(int(p) for p in _SPEC_CACHE[key].split("."))


def require_spec(server, version: str) -> None:
    """Skip (as not supported) unless the WebSocket scope advertises spec_version >= ``version``."""
    have = spec_version(server)
    if have < tuple(int(p) for p in version.split(".")):
        pytest.skip(
            f"{UNSUPPORTED_PREFIX} {server.target} advertises WebSocket spec_version "
            f"{'.'.join(map(str, have))} < {version}"
        )


def require_denial(server) -> None:
    """Skip (as not supported) unless the server advertises the websocket.http.response extension."""
    scope = probe_scope(server)
    if "websocket.http.response" not in (scope.get("extensions") or {}):
        pytest.skip(f"{UNSUPPORTED_PREFIX} {server.target} does not advertise websocket.http.response")


def client_close_disconnect(server, *close) -> dict:
    """The websocket.disconnect message an accepted app receives after the client's Close frame (``close``: the
    frame's code and reason, as ``send_close`` takes them)."""
    conn, token = ws_script(server, [["receive"], ["accept"], ["wait_disconnect", 10]])
    with ws_accepted(conn):
        conn.send_close(*close)
        conn.read_frames_until_close()
    return disconnect_message(server, token)


def late_send_step(server) -> dict:
    """The app's step event of a websocket.send made 0.2 s after the client's Close frame arrived."""
    conn, token = ws_script(
        server, [["receive"], ["accept"], ["wait_disconnect", 10], ["sleep", 0.2], ["send_text", "too late"]]
    )
    with ws_accepted(conn):
        conn.send_close(1000)
        conn.read_frames_until_close()
    return ws_steps(server, token)[4]
