"""One raw HTTP/1.1 request to the fixture's probe route and what the app was handed: the round trips of
``checks/test_properties.py`` (a failing example notes the raw request that reproduces it)."""

from __future__ import annotations

from hypothesis import note

from gatecheck.conformance.app import app_view, decode_probe, events_of, new_token
from gatecheck.conformance.client.http1 import Connection, build_request
from gatecheck.conformance.helpers.wire import describe
from gatecheck.conformance.spec.results import not_supported
from gatecheck.fixtures import TOKEN_HEADER, typed

__all__ = ["probe", "view_of", "path_probe", "utf8_view", "served_or_refused", "query_seen"]


def probe(server, target: str, headers=(), body: bytes = b"", method: str = "GET"):
    data = build_request(method, target, headers, body, host=server.authority)
    note(f"raw request: {data[:2000]!r}")
    with Connection(server.address, 10.0) as conn:
        conn.send(data)
        ex = conn.read_responses(1, methods=[method])
    return data, ex


def view_of(server, ex, data) -> dict:
    resp = ex.first
    assert resp.status == 200, f"{describe(ex)}\nrequest: {data[:500]!r}"
    doc = decode_probe(resp.body)
    view = app_view(doc)
    if doc["interface"] == "asgi":
        scope = typed.decode(doc["scope"])
        view["raw_path"] = scope.get("raw_path")
    return view


def path_probe(server, target: str):
    """The probe of ``target`` and whether the server refused it itself: a 4xx before its app ran (Apache
    refuses an encoded slash or NUL with its own 404), a refusal no path mapping can be read from."""
    token = new_token()
    data, ex = probe(server, target, [(TOKEN_HEADER, token)])
    status = ex.final[0].status if ex.final else 0
    return data, ex, 400 <= status < 500 and not events_of(server, token)


def utf8_view(server, target: str):
    data, ex, refused = path_probe(server, target)
    if refused:
        not_supported(
            f"the server refused the path itself ({ex.final[0].status}, its app never ran): how it "
            f"would map it cannot be seen; request {data[:200]!r}"
        )
    return data, view_of(server, ex, data)


def served_or_refused(server, target: str):
    """The view of a path served 200, or None when refused with 400 (or the server's own 4xx before its app
    ran); never a 5xx or a dropped connection."""
    data, ex, refused = path_probe(server, target)
    assert ex.final, f"no response: {describe(ex)}; request {data[:300]!r}"
    assert ex.final[0].status in (200, 400) or refused, f"{describe(ex)}; request {data[:300]!r}"
    return data, (view_of(server, ex, data) if ex.final[0].status == 200 else None)


def query_seen(server, query: str) -> None:
    data, ex = probe(server, "/probe/q?" + query)
    got = view_of(server, ex, data)["query"]
    assert got == query, f"query {got!r} != {query!r}; request {data[:300]!r}"
