"""RSGI HTTP scope and headers object (RSGI 1.6 §HTTP connection scope)."""

from __future__ import annotations

import re

import pytest

from gatecheck.conformance.app import probe, value_of
from gatecheck.conformance.spec.markers import interfaces, spec

pytestmark = interfaces("rsgi")

_SCOPE = "RSGI §HTTP connection scope"
_ADDR = re.compile(r"^(?P<host>.+):(?P<port>\d+)$")


def _attrs(server, target="/probe", **kw) -> dict:
    doc = probe(server, target, **kw)
    attrs = {}
    for name, result in doc["scope"].items():
        assert "error" not in result, f"scope.{name} raised {result['error']}"
        attrs[name] = value_of(result["value"])
    return attrs


def _headers(server, headers) -> dict:
    return probe(server, "/probe", headers=headers)["headers"]


def _ok(result):
    assert "error" not in result, f"raised {result['error']}"
    return value_of(result["value"])


@spec(_SCOPE, "DEFINED")
def test_proto_is_http(server):
    """scope.proto is the str "http" for an HTTP request."""
    assert _attrs(server)["proto"] == "http"


@spec(_SCOPE, "DEFINED")
def test_rsgi_version_is_a_known_version_str(server):
    """scope.rsgi_version is a str naming an RSGI spec version ("major.minor", e.g. "1.6")."""
    version = _attrs(server)["rsgi_version"]
    assert type(version) is str
    assert re.fullmatch(r"\d+\.\d+", version), version


@pytest.mark.parametrize("version,expected", [("HTTP/1.1", "1.1"), ("HTTP/1.0", "1")])
@spec(_SCOPE, "DEFINED")
def test_http_version_is_one_of_the_defined_values(server, version, expected):
    """scope.http_version is "1.1" for HTTP/1.1 and "1" for HTTP/1.0 (the defined set is "1", "1.1", "2")."""
    assert _attrs(server, version=version)["http_version"] == expected


@spec(_SCOPE, "DEFINED")
def test_server_is_address_and_listening_port(server):
    """scope.server is a str "{address}:{port}" with the listening port."""
    value = _attrs(server)["server"]
    assert type(value) is str
    match = _ADDR.match(value)
    assert match, value
    assert int(match["port"]) == server.port


@spec(_SCOPE, "DEFINED")
def test_client_is_address_and_port(server):
    """scope.client is a str "{address}:{port}" naming the loopback peer."""
    value = _attrs(server)["client"]
    assert type(value) is str
    match = _ADDR.match(value)
    assert match, value
    assert match["host"].strip("[]") in ("127.0.0.1", "::ffff:127.0.0.1")
    assert 0 < int(match["port"]) < 65536


@spec(_SCOPE, "DEFINED")
def test_scheme_is_http_on_plain_listener(server):
    """scope.scheme is "http" on a plain-text listener."""
    assert _attrs(server)["scheme"] == "http"


@pytest.mark.parametrize("method", ["GET", "POST", "PUT", "DELETE", "PURGE"])
@spec(_SCOPE, "DEFINED")
def test_method_is_upper_case(server, method):
    """scope.method is the request method, upper-cased."""
    body = b"x" if method in ("POST", "PUT") else b""
    assert _attrs(server, method=method, body=body)["method"] == method


_TARGETS = [
    ("/probe", "/probe", ""),
    ("/probe/a?x=1&y=2", "/probe/a", "x=1&y=2"),
    ("/probe/b?", "/probe/b", ""),
    ("/probe/c?a=%20&b=c%2Fd", "/probe/c", "a=%20&b=c%2Fd"),
]


@pytest.mark.parametrize("target,path,query", _TARGETS)
@spec(_SCOPE, "DEFINED")
def test_path_excludes_the_query(server, target, path, query):
    """scope.path is the str target without the query."""
    attrs = _attrs(server, target)
    assert type(attrs["path"]) is str and attrs["path"] == path, attrs["path"]


@pytest.mark.parametrize("target,path,query", _TARGETS)
@spec(_SCOPE, "DEFINED")
def test_query_string_is_the_rest(server, target, path, query):
    """scope.query_string is the str after '?' ("" if none)."""
    attrs = _attrs(server, target)
    assert type(attrs["query_string"]) is str and attrs["query_string"] == query, attrs["query_string"]


@spec(_SCOPE, "DEFINED")
def test_authority_is_empty_before_http2(server):
    """scope.authority is empty (None or "") on HTTP/1.x: it carries the HTTP/2 :authority."""
    assert _attrs(server)["authority"] in (None, "")


@spec("RSGI §HTTP connection scope (1.3)", "DEFINED")
def test_header_names_are_lower_case(server):
    """Header names are always lower-case, whatever casing the client sent."""
    doc = _headers(server, [("X-MiXeD", "v")])
    keys = _ok(doc["keys"])
    assert "x-mixed" in keys and "X-MiXeD" not in keys, keys
    assert _ok(doc["per_name"]["x-mixed"]["get"]) == "v"


@spec("RSGI §HTTP connection scope (1.4)", "DEFINED")
def test_get_all_returns_repeated_values_in_order(server):
    """headers.get_all(name) returns every value of a repeated field, in received order."""
    doc = _headers(server, [("X-Dup", "one"), ("X-Other", "o"), ("X-Dup", "two")])
    assert _ok(doc["per_name"]["x-dup"]["get_all"]) == ["one", "two"]


@spec(_SCOPE, "DEFINED")
def test_headers_object_supports_the_mapping_protocol(server):
    """headers supports [], in, get (with default), keys/values/items, iteration and len."""
    doc = _headers(server, [("X-One", "1"), ("X-Two", "2")])
    items = _ok(doc["items"])
    keys = _ok(doc["keys"])
    values = _ok(doc["values"])
    assert ("x-one", "1") in [tuple(i) for i in items]
    assert "x-two" in keys and "2" in values
    assert _ok(doc["per_name"]["x-one"]["getitem"]) == "1"
    assert _ok(doc["per_name"]["x-one"]["contains"]) is True
    assert _ok(doc["absent"]["contains"]) is False
    assert _ok(doc["absent"]["get"]) is None
    assert _ok(doc["absent"]["get_default"]) == "default"
    assert "x-one" in _ok(doc["iter"])
    assert _ok(doc["len"]) >= 2


@spec(_SCOPE, "DEFINED")
def test_missing_header_lookup_raises_key_error(server):
    """headers[name] for an absent name raises KeyError, as a Mapping does."""
    doc = _headers(server, [])
    result = doc["absent"]["getitem"]
    assert "error" in result, f"headers['x-gatecheck-absent'] returned {result.get('value')}"
    assert "KeyError" in result["error"]["mro"], result["error"]
