"""HTTP/2 requests for the checks: probe documents over h2, per-interface scripts, outcome words.

Rules of this module:

1. Every request here goes over :class:`conformance.h2client.H2Client` (prior knowledge, timeouts).
2. Scripts are the fixture apps' ``/script`` vocabulary (fixtures/ROUTES.md); the three interfaces
   differ in their ops, so a helper takes the interface and returns the steps for it.
"""
from __future__ import annotations

import json

from .client import value_of
from .h2client import H2Client, StreamState
from .scripts import script_target

__all__ = ["h2_probe", "h2_get", "asgi_scope", "wsgi_environ", "rsgi_attrs", "rsgi_headers",
           "respond_script", "big_response_script", "outcome", "refused", "REFUSED_OUTCOMES"]

TOKEN = "x-gatecheck-token"


def h2_get(server, path: str, headers=(), *, method: str = "GET", body: bytes = b"",
           raw_headers: list | None = None, timeout: float = 5.0) -> StreamState:
    """One request on a fresh connection; the stream's final state."""
    with H2Client(server.address, authority=server.authority, timeout=timeout) as client:
        sid = client.request(method, path, headers, body, raw_headers=raw_headers)
        return client.response(sid)


def h2_probe(server, path: str = "/probe", headers=(), *, method: str = "GET", body: bytes = b"",
             raw_headers: list | None = None) -> dict:
    """The probe document for one HTTP/2 request (the request must be answered 200)."""
    resp = h2_get(server, path, headers, method=method, body=body, raw_headers=raw_headers)
    assert resp.status == 200, f"h2 probe {method} {path}: {resp.describe()} {resp.body[:300]!r}"
    return json.loads(resp.body)


def asgi_scope(doc: dict) -> dict:
    return value_of(doc["scope"])


def wsgi_environ(doc: dict) -> dict:
    return value_of(doc["environ"])


def rsgi_attrs(doc: dict) -> dict:
    attrs = {}
    for name, result in doc["scope"].items():
        assert "error" not in result, f"scope.{name} raised {result['error']}"
        attrs[name] = value_of(result["value"])
    return attrs


def rsgi_headers(doc: dict) -> dict:
    """``items`` (list of (name, value)) and ``get_all`` per name from the RSGI headers object."""
    headers = doc["headers"]
    assert "error" not in headers["items"], f"headers.items() raised {headers['items']['error']}"
    items = [tuple(pair) for pair in value_of(headers["items"]["value"])]
    get_all = {}
    for name, results in headers["per_name"].items():
        result = results["get_all"]
        get_all[name] = value_of(result["value"]) if "value" in result else result["error"]
    return {"items": items, "get_all": get_all}


def respond_script(interface: str, status: int, headers: list, body: str) -> str:
    """A /script target whose app answers ``status`` with ``headers`` and ``body`` (one piece)."""
    if interface == "asgi":
        steps = [["receive_all"], ["start", status, headers], ["body", body]]
    elif interface == "rsgi":
        steps = [["read_all"], ["response_bytes", status, headers, body]]
    else:
        reason = {200: "OK"}.get(status, "Whatever")
        steps = [["read_body"], ["start_response", f"{status} {reason}", headers], ["yield", body]]
    return script_target(steps)


def big_response_script(interface: str, size: int) -> str:
    """A /script target answering 200 with ``size`` payload bytes (fixtures.payload_bytes) in one piece."""
    if interface == "asgi":
        steps = [["start", 200], ["body", {"size": size}]]
    elif interface == "rsgi":
        steps = [["response_bytes", 200, [], {"size": size}]]
    else:
        steps = [["start_response", "200 OK"], ["yield", {"size": size}]]
    return script_target(steps)


#: how a server may refuse a malformed request: a stream error, a connection error (RFC 9113 §5.4.1
#: lets an endpoint treat any stream error as one), or an HTTP error response first (§8.1.1).
REFUSED_OUTCOMES = ("reset:PROTOCOL_ERROR", "goaway:PROTOCOL_ERROR")


def outcome(client: H2Client, stream_id: int) -> str:
    """'reset:<code>', 'goaway:<code>', 'status:<n>' or 'closed' for one request."""
    return client.stream_error_or_status(stream_id)


def refused(result: str) -> bool:
    return result in REFUSED_OUTCOMES or (result.startswith("status:4"))
