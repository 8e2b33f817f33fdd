"""ASGI HTTP connection scope: every key, its type and its value (ASGI www.rst §HTTP Connection Scope)."""

from __future__ import annotations

import pytest

from gatecheck.conformance.app import probe, value_of
from gatecheck.conformance.spec.markers import interfaces, spec

pytestmark = interfaces("asgi")

_WWW = "ASGI WWW §HTTP Connection Scope"


def _scope(server, target="/probe", **kw) -> dict:
    doc = probe(server, target, **kw)
    return value_of(doc["scope"])


@spec("ASGI Core §Applications", "MUST")
def test_scope_is_a_dict(server):
    """The scope is a dict ("``scope`` must be a ``dict``")."""
    doc = probe(server)
    assert doc["scope_type"] == "dict", f"scope is a {doc['scope_type']}, not a dict"


@spec("ASGI Core §Strings and Unicode", "DEFINED")
def test_scope_keys_are_str(server):
    """Every key the spec mentions is a str: the scope's own keys, scope["asgi"]'s keys and the extension
    names in scope["extensions"]."""
    scope = _scope(server)
    keyed = {
        "scope": scope,
        'scope["asgi"]': scope.get("asgi") or {},
        'scope["extensions"]': scope.get("extensions") or {},
    }
    for where, mapping in keyed.items():
        for key in mapping:
            assert type(key) is str, f"key {key!r} in {where} is {type(key).__name__}, not str"


@spec(_WWW, "DEFINED")
def test_scope_type_is_http(server):
    """scope["type"] is "http" for an HTTP request."""
    assert _scope(server)["type"] == "http"


@spec("ASGI Core §Applications", "DEFINED")
def test_scope_asgi_version_is_3_0(server):
    """scope["asgi"] is a dict whose "version" is the str "3.0": the ASGI version of a server that calls a
    single-callable app."""
    scope = _scope(server)
    assert type(scope["asgi"]) is dict
    assert scope["asgi"].get("version") == "3.0"


@spec("ASGI WWW §Spec Versions", "DEFINED")
def test_scope_spec_version_is_a_known_version(server):
    """scope["asgi"]["spec_version"], when present, is one of the HTTP spec versions "2.0"…"2.5"."""
    scope = _scope(server)
    version = scope["asgi"].get("spec_version", "2.0")
    assert version in ("2.0", "2.1", "2.2", "2.3", "2.4", "2.5"), version


@pytest.mark.parametrize("version,expected", [("HTTP/1.1", "1.1"), ("HTTP/1.0", "1.0")])
@spec(_WWW, "DEFINED")
def test_http_version_matches_request(server, version, expected):
    """http_version is exactly "1.0" or "1.1" as the request said."""
    scope = _scope(server, version=version)
    assert scope["http_version"] == expected


@pytest.mark.parametrize("method", ["GET", "POST", "DELETE", "PATCH", "OPTIONS", "PURGE"])
@spec(_WWW, "DEFINED")
def test_method_is_upper_case_str(server, method):
    """method is the request method as an upper-case str, extension methods included."""
    body = b"x" if method in ("POST", "PATCH") else b""
    scope = _scope(server, method=method, body=body)
    assert scope["method"] == method


@spec(_WWW, "DEFINED")
def test_scheme_is_http_on_plain_listener(server):
    """scheme, when present, is "http" on a plain-text listener (never empty)."""
    scope = _scope(server)
    assert scope.get("scheme", "http") == "http"


@pytest.mark.parametrize(
    "raw,decoded",
    [
        ("/probe/plain", "/probe/plain"),
        ("/probe/a%20b", "/probe/a b"),
        ("/probe/caf%C3%A9", "/probe/café"),
        ("/probe/%E2%82%AC/%F0%9F%98%80", "/probe/€/😀"),
        ("/probe/a%2Fb", "/probe/a/b"),
        ("/probe/100%25", "/probe/100%"),
        ("/probe/a+b", "/probe/a+b"),
    ],
)
@spec(_WWW, "DEFINED")
def test_path_is_percent_and_utf8_decoded(server, raw, decoded):
    """path is the request path with percent-escapes and UTF-8 decoded into a str, query excluded."""
    scope = _scope(server, raw + "?q=1")
    assert type(scope["path"]) is str
    assert scope["path"] == decoded


@pytest.mark.parametrize("raw", ["/probe/a%20b", "/probe/caf%C3%A9", "/probe/a%2Fb/%25", "/probe/x;p=1"])
@spec(_WWW, "DEFINED")
def test_raw_path_is_the_received_bytes(server, raw):
    """raw_path, when present, is the path exactly as received, as bytes, without the query."""
    scope = _scope(server, raw + "?x=%20")
    if scope.get("raw_path") is None:
        return  # optional: "if missing defaults to None"
    assert type(scope["raw_path"]) is bytes
    assert scope["raw_path"] == raw.encode()


@pytest.mark.parametrize("query", ["", "a=1", "a=1&a=2&b", "x=%20%2F%C3%A9&y=a+b", "=&&==", "caf%C3%A9=%E2%82%AC"])
@spec(_WWW, "DEFINED")
def test_query_string_is_raw_bytes(server, query):
    """query_string is the bytes after '?', still percent-encoded; b"" when absent."""
    target = "/probe" + (f"?{query}" if query else "")
    scope = _scope(server, target)
    assert type(scope["query_string"]) is bytes
    assert scope["query_string"] == query.encode()


@spec(_WWW, "DEFINED")
def test_root_path_is_str(server):
    """root_path, when present, is a str (default "")."""
    scope = _scope(server)
    assert type(scope.get("root_path", "")) is str


@spec(_WWW, "DEFINED")
def test_headers_are_byte_pairs(server):
    """headers is an iterable of [name, value] two-item iterables of bytes."""
    scope = _scope(server, headers=[("X-One", "1")])
    for pair in scope["headers"]:
        pair = tuple(pair)
        assert len(pair) == 2 and all(type(p) is bytes for p in pair), pair


@spec(_WWW, "MUST")
def test_headers_are_byte_pairs_with_duplicates_in_order(server):
    """Repeated header fields are all kept, in the order received (names compared without case)."""
    scope = _scope(server, headers=[("X-Dup", "one"), ("X-Other", "o"), ("X-Dup", "two"), ("x-dup", "three")])
    as_bytes = [tuple(p if type(p) is bytes else str(p).encode("latin-1") for p in pair) for pair in scope["headers"]]
    dups = [value for name, value in as_bytes if name.lower() == b"x-dup"]
    assert dups == [b"one", b"two", b"three"], dups


@spec(_WWW, "SHOULD")
def test_header_names_are_lower_case(server):
    """Header names should be lower-cased."""
    scope = _scope(server, headers=[("X-MiXeD-CaSe", "v")])
    names = [pair[0] for pair in scope["headers"]]
    assert b"x-mixed-case" in names, names


@spec("ASGI WWW §WSGI encoding differences", "DEFINED")
def test_header_values_are_passed_as_received(server):
    """Header values are the bytes the client sent (obs-text included), not re-encoded."""
    scope = _scope(server, headers=[(b"X-Bytes", b"caf\xc3\xa9 \xff")])
    values = [pair[1] for pair in scope["headers"] if pair[0].lower() == b"x-bytes"]
    assert values == [b"caf\xc3\xa9 \xff"]


@spec(_WWW, "DEFINED")
def test_client_is_host_and_int_port(server):
    """client, when present, is [host str, port int] of the remote end (loopback here); a missing or None
    client passes (optional: "if missing defaults to None")."""
    scope = _scope(server)
    client = scope.get("client")
    if client is None:
        return
    host, port = client
    assert type(host) is str and host in ("127.0.0.1", "::ffff:127.0.0.1")
    assert type(port) is int and 0 < port < 65536


@spec(_WWW, "DEFINED")
def test_server_is_host_and_int_port_of_the_listener(server):
    """server, when present, is [host str, port int] of the listening socket; a missing or None server
    passes (optional: "if missing defaults to None")."""
    scope = _scope(server)
    srv = scope.get("server")
    if srv is None:
        return
    host, port = srv
    assert type(host) is str and type(port) is int
    assert port == server.port


@spec("ASGI Core §Extensions", "DEFINED")
def test_extensions_is_a_dict(server):
    """extensions, when present, is a dict (a missing one passes: extensions are optional)."""
    extensions = _scope(server).get("extensions")
    assert extensions is None or type(extensions) is dict, type(extensions).__name__


@spec("ASGI Core §Extensions", "SHOULD")
def test_extension_values_are_dicts(server):
    """Each entry in extensions is itself a dict."""
    extensions = _scope(server).get("extensions")
    if not isinstance(extensions, dict):
        return  # no extensions (or not a dict: test_extensions_is_a_dict says so)
    for name, value in extensions.items():
        assert type(value) is dict, f"extension {name!r} is {type(value).__name__}, not dict"
