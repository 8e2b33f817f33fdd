"""An HTTP/2 request as each interface sees it, and the fields HTTP/2 forbids (RFC 9113 §8.2–§8.3).

Gateway mapping (http.md §8): `:authority` → ASGI first `host` header / WSGI `HTTP_HOST` / RSGI
`authority`; `:path` → path and query; pseudo-headers never reach the app; repeated `cookie` fields are
kept apart for ASGI and joined with "; " for WSGI.
"""

from __future__ import annotations

import re

import pytest

from gatecheck import fixtures
from gatecheck.conformance.app import (
    TOKEN_HEADER,
    asgi_scope,
    h2_get,
    h2_never_logged,
    h2_probe,
    response_script,
    rsgi_attrs,
    rsgi_headers,
    run_script,
    script_target,
    wsgi_environ,
)
from gatecheck.conformance.client.h2 import H2Client
from gatecheck.conformance.client.h2 import is_refusal as refused
from gatecheck.conformance.spec.markers import interfaces, needs, spec
from gatecheck.conformance.spec.observables import observable_row

pytestmark = needs("h2c")

_ASGI = "ASGI WWW §HTTP Connection Scope"
_RSGI = "RSGI §HTTP connection scope"
_WSGI = "PEP 3333 §environ Variables"
_PATH = "/probe/a%20b"
_QUERY = "x=1&y=%20"


# -- version, authority, path -------------------------------------------------------------------


@interfaces("asgi")
@spec(_ASGI, "DEFINED")
def test_asgi_http_version_is_2(server):
    """An HTTP/2 request gives scope["http_version"] == "2"."""
    assert asgi_scope(h2_probe(server))["http_version"] == "2"


@interfaces("rsgi")
@spec(_RSGI, "DEFINED")
def test_rsgi_http_version_is_2(server):
    """An HTTP/2 request gives scope.http_version == "2"."""
    assert rsgi_attrs(h2_probe(server))["http_version"] == "2"


@interfaces("wsgi")
@spec(_WSGI, "POLICY")
def test_wsgi_server_protocol_names_http_2(server):
    """SERVER_PROTOCOL names HTTP/2 ("HTTP/2" or the CGI-shaped "HTTP/2.0"); suite policy, the value is unspecified."""
    assert wsgi_environ(h2_probe(server))["SERVER_PROTOCOL"] in ("HTTP/2", "HTTP/2.0")


@interfaces("asgi")
@spec(_ASGI, "MUST")
def test_asgi_authority_becomes_the_first_host_header(server):
    """`:authority` appears as a `host` header at the start of scope["headers"]."""
    headers = asgi_scope(h2_probe(server, headers=[("x-a", "1")]))["headers"]
    assert headers[0] == (b"host", server.authority.encode()), headers
    assert [v for n, v in headers if n == b"host"] == [server.authority.encode()], headers


@interfaces("asgi")
@spec(_ASGI, "MUST")
def test_asgi_authority_replaces_a_host_header(server):
    """With both `:authority` and an identical `host` field, the scope holds exactly one `host`, the authority."""
    headers = asgi_scope(h2_probe(server, headers=[("host", server.authority)]))["headers"]
    assert [v for n, v in headers if n == b"host"] == [server.authority.encode()], headers


@interfaces("wsgi")
@spec(f"{_WSGI}; RFC 9113 §8.3.1", "POLICY")
def test_wsgi_authority_becomes_http_host(server):
    """`:authority` becomes HTTP_HOST (the Host an HTTP/1.1 request would carry)."""
    assert wsgi_environ(h2_probe(server)).get("HTTP_HOST") == server.authority


@interfaces("rsgi")
@spec(_RSGI, "DEFINED")
def test_rsgi_authority_is_the_authority_pseudo_header(server):
    """scope.authority is the `:authority` of the HTTP/2 request (RSGI 1.3)."""
    assert rsgi_attrs(h2_probe(server))["authority"] == server.authority


@interfaces("asgi")
@spec(_ASGI, "DEFINED")
def test_asgi_path_is_split_into_path_raw_path_and_query(server):
    """`:path` "/probe/a%20b?x=1&y=%20" gives path "/probe/a b", raw_path b"/probe/a%20b", query_string b"x=1&y=%20"."""
    scope = asgi_scope(h2_probe(server, f"{_PATH}?{_QUERY}"))
    assert scope["path"] == "/probe/a b"
    assert scope.get("raw_path") in (None, _PATH.encode()), scope.get("raw_path")
    assert scope["query_string"] == _QUERY.encode()


@interfaces("wsgi")
@spec(f"{_WSGI}; RFC 3875 §4.1.5, §4.1.7", "DEFINED")
def test_wsgi_path_is_split_into_path_info_and_query_string(server):
    """`:path` "/probe/a%20b?x=1&y=%20" gives PATH_INFO "/probe/a b" (decoded) and QUERY_STRING "x=1&y=%20" (raw)."""
    env = wsgi_environ(h2_probe(server, f"{_PATH}?{_QUERY}"))
    assert env.get("SCRIPT_NAME", "") + env["PATH_INFO"] == "/probe/a b"
    assert env["QUERY_STRING"] == _QUERY


@interfaces("rsgi")
@spec(_RSGI, "DEFINED")
def test_rsgi_path_is_split_into_path_and_query_string(server):
    """`:path` "/probe/a%20b?x=1&y=%20" gives a path without the query and query_string "x=1&y=%20"."""
    attrs = rsgi_attrs(h2_probe(server, f"{_PATH}?{_QUERY}"))
    assert attrs["path"] in ("/probe/a b", _PATH), attrs["path"]  # percent-decoding is unspecified in RSGI
    assert attrs["query_string"] == _QUERY


# -- regular fields and pseudo-headers ------------------------------------------------------------

_FIELDS = [("x-a", "1"), ("x-b", "2"), ("x-a", "3")]


@interfaces("asgi")
@spec(_ASGI, "MUST")
def test_asgi_pseudo_headers_map_to_scope_keys_and_never_to_headers(server):
    """`:method`/`:scheme` become method/scheme; no pseudo-header is in headers; names are lower-case, repeats kept in
    order."""
    scope = asgi_scope(h2_probe(server, method="PATCH", headers=_FIELDS))
    assert (scope["method"], scope.get("scheme", "http")) == ("PATCH", "http")
    names = [n for n, _ in scope["headers"]]
    assert not [n for n in names if n.startswith(b":")], scope["headers"]
    assert all(n == n.lower() for n in names), names
    assert [v for n, v in scope["headers"] if n == b"x-a"] == [b"1", b"3"], scope["headers"]


@interfaces("rsgi")
@spec(_RSGI, "DEFINED")
def test_rsgi_pseudo_headers_map_to_scope_and_never_to_headers(server):
    """`:method`/`:scheme` become method/scheme; no pseudo-header is in headers; get_all keeps repeats in order."""
    doc = h2_probe(server, method="PATCH", headers=_FIELDS)
    attrs, headers = rsgi_attrs(doc), rsgi_headers(doc)
    assert (attrs["method"], attrs["scheme"]) == ("PATCH", "http")
    assert not [n for n, _ in headers["items"] if n.startswith(":")], headers["items"]
    assert all(n == n.lower() for n, _ in headers["items"]), headers["items"]
    assert headers["get_all"].get("x-a") == ["1", "3"], headers["get_all"]


@interfaces("wsgi")
@spec(f"{_WSGI}; RFC 3875 §4.1.18", "MUST")
def test_wsgi_pseudo_headers_map_to_cgi_variables_and_never_to_http_keys(server):
    """`:method`/`:scheme` become REQUEST_METHOD/wsgi.url_scheme; no pseudo-header becomes a key; repeats are
    comma-joined."""
    env = wsgi_environ(h2_probe(server, method="PATCH", headers=_FIELDS))
    assert (env["REQUEST_METHOD"], env["wsgi.url_scheme"]) == ("PATCH", "http")
    assert not [k for k in env if ":" in k or k.startswith("HTTP__")], sorted(env)
    assert re.split(r"\s*,\s*", env.get("HTTP_X_A", "")) == ["1", "3"], env.get("HTTP_X_A")


# -- cookies (RFC 9113 §8.2.3) ----------------------------------------------------------------------

_COOKIES = [("cookie", "a=1"), ("cookie", "b=2")]


@interfaces("asgi")
@spec(_ASGI, "MUST")
def test_asgi_keeps_repeated_cookie_fields_apart(server):
    """Two `cookie` fields reach scope["headers"] as two entries, in order (duplicates are preserved as received)."""
    headers = asgi_scope(h2_probe(server, headers=_COOKIES))["headers"]
    assert [v for n, v in headers if n == b"cookie"] == [b"a=1", b"b=2"], headers


@interfaces("wsgi")
@spec("RFC 9113 §8.2.3", "MUST")
def test_wsgi_joins_repeated_cookie_fields_with_semicolon_space(server):
    """Two `cookie` fields become HTTP_COOKIE "a=1; b=2" (joined with the two octets "; ")."""
    assert wsgi_environ(h2_probe(server, headers=_COOKIES)).get("HTTP_COOKIE") == "a=1; b=2"


@interfaces("rsgi")
@spec("RFC 9113 §8.2.3", "POLICY")
def test_rsgi_loses_no_cookie_field(server):
    """Every `cookie` field reaches the app: get_all("cookie") is ["a=1", "b=2"] or one value "a=1; b=2" (policy)."""
    values = rsgi_headers(h2_probe(server, headers=_COOKIES))["get_all"].get("cookie")
    assert values in (["a=1", "b=2"], ["a=1; b=2"]), values


@interfaces("wsgi")
@spec("RFC 3875 §4.1.2; wsgi.input_terminated", "MUST")
def test_wsgi_body_without_content_length_is_readable(server):
    """A body sent without `content-length` (normal on HTTP/2) can be read: CONTENT_LENGTH is its length, or
    wsgi.input_terminated is set."""
    doc = h2_probe(server, method="POST", body=b"hello, world")
    env = wsgi_environ(doc)
    assert doc["body_len"] == 12, (
        f"the app read {doc['body_len']} of 12 bytes; CONTENT_LENGTH="
        f"{env.get('CONTENT_LENGTH')!r}, wsgi.input_terminated={env.get('wsgi.input_terminated')!r}"
    )


# -- malformed requests never reach the app (RFC 9113 §8.1.1, §8.2) ---------------------------------


def _refused_before_the_app(server, extra: list) -> str:
    token = fixtures.new_token()
    with H2Client(server.address, authority=server.authority) as client:
        sid = client.request("GET", "/probe", [(TOKEN_HEADER, token)] + extra)
        result = client.stream_error_or_status(sid)
    assert refused(result), f"request with {extra} answered {result!r}; want a stream/connection error or 4xx"
    seen = h2_never_logged(server, token)
    assert seen == [], f"the app saw the malformed request: {seen}"
    return result


@pytest.mark.parametrize(
    "name,value",
    [
        ("connection", "keep-alive"),
        ("keep-alive", "timeout=5"),
        ("proxy-connection", "keep-alive"),
        ("transfer-encoding", "chunked"),
        ("upgrade", "websocket"),
        ("te", "gzip"),
    ],
    ids=lambda v: v,
)
@spec("RFC 9113 §8.2.2", "MUST")
def test_connection_specific_field_is_malformed(server, name, value):
    """A request with a connection-specific field (or `te` other than "trailers") is malformed: refused, never passed to
    the app."""
    _refused_before_the_app(server, [(name, value)])


@spec("RFC 9113 §8.2.1", "MUST")
def test_uppercase_field_name_is_malformed(server):
    """A request with an upper-case field name is malformed: refused, never passed to the app."""
    _refused_before_the_app(server, [("X-Upper", "1")])


@spec("RFC 9113 §8.2.2", "POLICY")
def test_te_trailers_is_served(server):
    """`te: trailers`, the one allowed `te` value, is a well-formed request and is answered normally."""
    resp = h2_get(server, "/ping", [("te", "trailers")])
    assert (resp.status, resp.body) == (200, b"ok"), resp.describe()


# -- responses: what the server puts on the wire for the app's headers ------------------------------


@interfaces("rsgi", "wsgi")
@spec("RFC 9113 §8.2", "MUST")
def test_app_response_field_names_go_out_lower_case(server):
    """Mixed-case response header names from the app are sent lower-case (upper-case names are malformed on HTTP/2)."""
    headers = [["X-Mixed-Case", "1"], ["Content-Type", "text/plain"]]
    resp = h2_get(server, script_target(response_script(server.interface, 200, headers, ["ok"], read_body=True)))
    assert resp.status == 200, resp.describe()
    names = [n for n, _ in resp.headers]
    assert all(n == n.lower() for n in names), names
    assert resp.header(b"x-mixed-case") == [b"1"], resp.headers


@pytest.mark.parametrize(
    "name,value",
    [("connection", "close"), ("keep-alive", "timeout=5"), ("transfer-encoding", "chunked")],
    ids=lambda v: v,
)
@spec("RFC 9113 §8.2.2", "MUST NOT")
def test_app_connection_specific_response_field_is_not_sent(server, name, value):
    """A connection-specific field the app puts in its response never goes out on HTTP/2 (dropped, or the response
    fails). Evidence: a response, or a RST_STREAM, on the stream."""
    resp = h2_get(
        server, script_target(response_script(server.interface, 200, [[name, value]], ["ok"], read_body=True))
    )
    assert resp.status is not None or resp.reset_code is not None, f"no answer on the stream: {resp.describe()}"
    assert resp.header(name.encode()) == [], f"{name} sent on HTTP/2: {resp.headers}"
    if resp.status == 200:
        assert resp.body == b"ok", resp.describe()


@spec("RFC 9110 §9.3.2; RFC 9110 §8.6", "MUST NOT")
def test_head_response_has_no_content(server):
    """A HEAD response carries no DATA payload; a content-length, if sent, is the GET body's length (1024)."""
    with H2Client(server.address, authority=server.authority) as client:
        resp = client.response(client.request("HEAD", "/b1k"))
        data = sum(f.length for f in client.frames_on(resp.stream_id) if f.type == 0)
    assert resp.status == 200, resp.describe()
    assert data == 0 and resp.body == b"", f"HEAD answered with {data} DATA bytes"
    assert resp.header(b"content-length") in ([], [b"1024"]), resp.headers


@interfaces("wsgi")
@spec("PEP 3333 §The start_response() Callable", "SHOULD")
def test_wsgi_exc_info_before_headers_replaces_status_and_headers(server):
    """Over HTTP/2 too, start_response(..., exc_info) before anything was sent replaces the stored status and
    headers: the stream's :status is the one the error handler names (a row of dimension 5's table,
    conformance/spec/observables.py)."""
    row = observable_row("test_h2_mapping.py::test_wsgi_exc_info_before_headers_replaces_status_and_headers")
    resp = run_script(server, [list(s) for s in row.steps], over="h2", wait=False).exchange
    assert resp.status in row.allowed, resp.describe()
    assert resp.header(b"x-second") == [b"2"] and resp.header(b"x-first") == [], resp.describe()
    assert resp.body == b"error page", resp.describe()
