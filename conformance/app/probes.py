"""Probe documents as the checks read them: what the fixture app was handed, decoded with its exact types
(``fixtures/ROUTES.md``, *Probe documents*). ``view`` re-exports these."""

from __future__ import annotations

import json

from gatecheck.fixtures import typed

__all__ = ["decode_probe", "value_of", "asgi_scope", "wsgi_environ", "rsgi_attrs", "rsgi_headers", "app_view"]


def decode_probe(body: bytes) -> dict:
    return json.loads(body)


def value_of(doc: dict):
    """Decode one typed value from a probe document."""
    return typed.decode(doc)


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


def app_view(doc: dict) -> dict:
    """What the app was handed, interface-neutral: {"path", "query", "headers": [(name, value)]}.

    Names are lower-case str, values latin-1 str, as received in order; WSGI's HTTP_* keys come back as
    names with "-" (their order and duplicates are lost by the interface)."""
    kind = doc["interface"]
    if kind == "asgi":
        scope = asgi_scope(doc)
        headers = [(n.decode("latin-1").lower(), v.decode("latin-1")) for n, v in scope["headers"]]
        return {"path": scope["path"], "query": scope["query_string"].decode("latin-1"), "headers": headers}
    if kind == "rsgi":
        attrs = {k: value_of(v["value"]) for k, v in doc["scope"].items() if "value" in v}
        items = doc["headers"]["items"]
        pairs = value_of(items["value"]) if "value" in items else []
        headers = [(str(n).lower(), str(v)) for n, v in pairs]
        return {"path": attrs.get("path"), "query": attrs.get("query_string"), "headers": headers}
    env = wsgi_environ(doc)
    headers = [(k[5:].lower().replace("_", "-"), v) for k, v in env.items() if k.startswith("HTTP_")]
    for key in ("CONTENT_TYPE", "CONTENT_LENGTH"):
        if env.get(key):
            headers.append((key.lower().replace("_", "-"), env[key]))
    # PEP 3333: QUERY_STRING "may be empty or absent" when there is no query: absent reads as ""
    return {"path": env.get("PATH_INFO"), "query": env.get("QUERY_STRING", ""), "headers": headers}
