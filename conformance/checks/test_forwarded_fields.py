"""Forwarded fields (``X-Forwarded-Proto``, ``X-Forwarded-For``, ``Forwarded``) and what the app is handed.

Some servers believe these fields from loopback out of the box and map them into the scope. Whatever a server
believes, what it hands over stays what each interface defines: an HTTP scope's ``scheme`` is an HTTP URL
scheme and a WebSocket scope's a WebSocket one (``https`` on a WebSocket is neither ``ws`` nor ``wss``), the
client is one address (not a list of them), ``REMOTE_ADDR`` a network address and ``wsgi.url_scheme`` ``http``
or ``https``. With the server's trust option on (``Adapter.ROLES["trusted-proxies"]``: uvicorn's and
gunicorn's ``--forwarded-allow-ips``; other targets are *not supported*) the fields from a trusted peer are
mapped; from a peer it does not trust they change nothing.
"""

from __future__ import annotations

import ipaddress
import json

import pytest

from gatecheck.conformance.app import probe, value_of, ws_accepted, ws_open
from gatecheck.conformance.app.private import private_server, with_role
from gatecheck.conformance.client.wsframes import OP_TEXT
from gatecheck.conformance.spec.markers import interfaces, needs, spec

pytestmark = needs("http1")

_FOR = "203.0.113.7"
#: forwarded fields a client may send: (name, value) pairs
HTTP_CASES = {
    "x-forwarded-proto-https": [("X-Forwarded-Proto", "https")],
    "x-forwarded-proto-ws": [("X-Forwarded-Proto", "ws")],
    "x-forwarded-for": [("X-Forwarded-For", _FOR)],
    "x-forwarded-for-chain": [("X-Forwarded-For", f"{_FOR}, 198.51.100.2")],
    "forwarded": [("Forwarded", f"for={_FOR};proto=https")],
}
WS_CASES = {
    "x-forwarded-proto-https": [("X-Forwarded-Proto", "https")],
    "x-forwarded-proto-wss": [("X-Forwarded-Proto", "wss")],
    "forwarded": [("Forwarded", f"for={_FOR};proto=https")],
}
_BOTH = [("X-Forwarded-Proto", "https"), ("X-Forwarded-For", _FOR)]


def _ws_doc(server, headers) -> dict:
    conn = ws_accepted(ws_open(server, "/ws_probe", headers=headers))
    try:
        got = conn.read_message()
    finally:
        conn.close()
    assert isinstance(got, tuple) and got[0] == OP_TEXT, f"no probe document: {got!r}"
    return json.loads(got[1])


def seen(server, over: str, headers) -> tuple:
    """(scheme, client host, client port) as the app was handed them (port None where the interface has none)."""
    doc = probe(server, "/probe", headers=headers) if over == "http" else _ws_doc(server, headers)
    if doc["interface"] == "asgi":
        scope = value_of(doc["scope"])
        client = scope.get("client") or (None, None)
        return scope.get("scheme", "http" if over == "http" else "ws"), client[0], client[1]
    if doc["interface"] == "wsgi":
        env = value_of(doc["environ"])
        return env.get("wsgi.url_scheme"), env.get("REMOTE_ADDR"), None
    attrs = {k: value_of(v["value"]) for k, v in doc["scope"].items() if "value" in v}
    host, _, port = str(attrs.get("client", "")).rpartition(":")
    return attrs.get("scheme"), host.strip("[]") or None, port


def _address(host) -> bool:
    try:
        ipaddress.ip_address(host)
    except ValueError:
        return False
    return True


@pytest.mark.parametrize("headers", list(HTTP_CASES.values()), ids=list(HTTP_CASES))
@interfaces("asgi")
@spec("ASGI WWW §HTTP Connection Scope", "DEFINED")
def test_forwarded_fields_leave_the_http_scheme_an_http_scheme(server, headers):
    """With the server's defaults, an HTTP scope's scheme after forwarded fields is "http" or "https"."""
    scheme, _, _ = seen(server, "http", headers)
    assert scheme in ("http", "https"), f"scope['scheme'] == {scheme!r} after {headers}"


@pytest.mark.parametrize("headers", list(WS_CASES.values()), ids=list(WS_CASES))
@interfaces("asgi")
@needs("websockets")
@spec("ASGI WWW §Websocket Connection Scope", "DEFINED")
def test_forwarded_fields_leave_the_websocket_scheme_a_websocket_scheme(server, headers):
    """With the server's defaults, a WebSocket scope's scheme after forwarded fields is "ws" or "wss"."""
    scheme, _, _ = seen(server, "ws", headers)
    assert scheme in ("ws", "wss"), f"the WebSocket scope['scheme'] == {scheme!r} after {headers}"


@pytest.mark.parametrize("headers", list(HTTP_CASES.values()), ids=list(HTTP_CASES))
@interfaces("asgi")
@spec("ASGI WWW §HTTP Connection Scope", "DEFINED")
def test_forwarded_fields_leave_the_client_one_address(server, headers):
    """With the server's defaults, the host of the scope's client after forwarded fields is one IP address
    (the port's type has its own check in test_asgi_scope.py)."""
    _, host, port = seen(server, "http", headers)
    assert host is None or _address(host), f"scope['client'] == {(host, port)!r} after {headers}"


@pytest.mark.parametrize("headers", list(HTTP_CASES.values()), ids=list(HTTP_CASES))
@interfaces("wsgi")
@spec("RFC 3875 §4.1.8", "MUST")
def test_forwarded_fields_leave_remote_addr_an_address(server, headers):
    """With the server's defaults, REMOTE_ADDR after forwarded fields is one network address."""
    _, host, _ = seen(server, "http", headers)
    assert _address(host), f"REMOTE_ADDR == {host!r} after {headers}"


@pytest.mark.parametrize("headers", list(HTTP_CASES.values()), ids=list(HTTP_CASES))
@interfaces("wsgi")
@spec("PEP 3333 §environ Variables", "MUST")
def test_forwarded_fields_leave_wsgi_url_scheme_http_or_https(server, headers):
    """With the server's defaults, wsgi.url_scheme after forwarded fields is "http" or "https"."""
    scheme, _, _ = seen(server, "http", headers)
    assert scheme in ("http", "https"), f"wsgi.url_scheme == {scheme!r} after {headers}"


_OVER = {"http": ("https", "http"), "ws": ("wss", "ws")}


def _over_params() -> list:
    return [pytest.param(over, id=over, marks=[needs("websockets")] if over == "ws" else []) for over in _OVER]


@pytest.mark.parametrize("over", _over_params())
@spec("RFC 7239 §8.1", "POLICY")
def test_trusted_proxy_fields_are_mapped(server, over):
    """POLICY (the interfaces name what the scope holds, not when to believe a proxy; a server told to trust
    loopback does): with its trust option naming 127.0.0.1, X-Forwarded-Proto https gives the scheme https (wss
    on a WebSocket); the client is the forwarded address, or the peer where the server maps the scheme only."""
    if over == "ws" and server.interface == "wsgi":
        pytest.skip("not applicable: WSGI has no WebSocket")
    with private_server(server, target=with_role(server, "trusted-proxies", "127.0.0.1")) as priv:
        scheme, host, _ = seen(priv, over, _BOTH)
    assert scheme == _OVER[over][0] and host in (_FOR, "127.0.0.1"), (
        f"trusting 127.0.0.1, {_BOTH} gave {(scheme, host)}"
    )


@pytest.mark.parametrize("over", _over_params())
@spec("RFC 7239 §8.1", "POLICY")
def test_untrusted_proxy_fields_change_nothing(server, over):
    """POLICY: with its trust option naming another address, X-Forwarded-Proto and X-Forwarded-For from
    loopback change nothing: the scheme stays http (ws) and the client 127.0.0.1."""
    if over == "ws" and server.interface == "wsgi":
        pytest.skip("not applicable: WSGI has no WebSocket")
    with private_server(server, target=with_role(server, "trusted-proxies", "192.0.2.1")) as priv:
        scheme, host, _ = seen(priv, over, _BOTH)
    assert (scheme, host) == (_OVER[over][1], "127.0.0.1"), f"trusting 192.0.2.1 only, {_BOTH} gave {(scheme, host)}"
