"""WSGI environ (PEP 3333 §environ Variables, §Unicode Issues; RFC 3875 §4.1)."""

from __future__ import annotations

import pytest

from gatecheck import fixtures
from gatecheck.conformance.app import new_token, probe, script_request, value_of
from gatecheck.conformance.app.private import private_server, with_workers
from gatecheck.conformance.client.http1 import Connection
from gatecheck.conformance.spec.markers import interfaces, needs, spec

pytestmark = interfaces("wsgi")

_ENV = "PEP 3333 §environ Variables"


def _doc(server, target="/probe", **kw) -> dict:
    return probe(server, target, **kw)


def _environ(server, target="/probe", **kw) -> dict:
    return value_of(_doc(server, target, **kw)["environ"])


@spec("PEP 3333 §Specification Details", "MUST")
def test_environ_is_a_builtin_dict(server):
    """environ is exactly a builtin dict, not a subclass or an emulation."""
    doc = _doc(server)
    assert doc["environ_is_dict"] is True, doc["environ_type"]


@spec(_ENV, "MUST")
def test_required_cgi_variables_are_present_str(server):
    """REQUEST_METHOD, SERVER_NAME, SERVER_PORT and SERVER_PROTOCOL are present, non-empty native str."""
    env = _environ(server)
    for key in ("REQUEST_METHOD", "SERVER_NAME", "SERVER_PORT", "SERVER_PROTOCOL"):
        assert key in env, f"{key} missing"
        assert type(env[key]) is str and env[key], f"{key} = {env[key]!r}"


@spec(_ENV + " / RFC 3875 §4.1.15", "MUST")
def test_server_port_is_the_listening_port_as_str(server):
    """SERVER_PORT is the port as a str ("8000", never the int 8000)."""
    env = _environ(server)
    assert env["SERVER_PORT"] == str(server.port)


@pytest.mark.parametrize("version", ["HTTP/1.1", "HTTP/1.0"])
@spec(_ENV, "DEFINED")
def test_server_protocol_is_the_request_version(server, version):
    """SERVER_PROTOCOL is the protocol version the client used."""
    assert _environ(server, version=version)["SERVER_PROTOCOL"] == version


def _cgi_values(server) -> dict:
    """The environ entries whose key has no dot (CGI and OS variables), for a request with UTF-8 in it."""
    env = _environ(server, "/probe/caf%C3%A9?q=%C3%A9", headers=[("X-Utf8", "caf\u00e9".encode().decode("latin-1"))])
    return {key: value for key, value in env.items() if "." not in key}


@spec(_ENV, "MUST")
def test_cgi_values_are_native_str(server):
    """Every environ value whose key has no dot is a native str."""
    for key, value in _cgi_values(server).items():
        assert type(value) is str, f"{key} is {type(value).__name__}"


@spec("PEP 3333 §Unicode Issues", "MUST NOT")
def test_cgi_values_are_within_latin1(server):
    """No str value whose key has no dot has a code point above U+00FF (UTF-8 sent arrives as latin-1 bytes)."""
    for key, value in _cgi_values(server).items():
        if type(value) is str:
            assert all(ord(ch) <= 0xFF for ch in value), f"{key} = {value!r} has code points above U+00FF"


@spec(_ENV, "MUST")
def test_wsgi_version_is_tuple_1_0(server):
    """wsgi.version is the tuple (1, 0)."""
    env = _environ(server)
    assert type(env["wsgi.version"]) is tuple and env["wsgi.version"] == (1, 0)


@spec(_ENV, "MUST")
def test_url_scheme_is_http_on_plain_listener(server):
    """wsgi.url_scheme is "http" on a plain-text listener."""
    assert _environ(server)["wsgi.url_scheme"] == "http"


@pytest.mark.parametrize("key", ["wsgi.multithread", "wsgi.multiprocess", "wsgi.run_once"])
@spec(_ENV, "MUST")
def test_concurrency_flags_are_present(server, key):
    """wsgi.multithread, wsgi.multiprocess and wsgi.run_once are present (any value: the text asks only that
    each "evaluate" true or false)."""
    assert key in _environ(server), f"{key} missing"


@spec(_ENV + " (run_once)", "POLICY")
def test_run_once_is_false_for_a_long_running_server(server):
    """POLICY (the text says when run_once should evaluate true, not that it be false otherwise; "Normally,
    this will only be true for a gateway based on CGI"): wsgi.run_once is false in a long-running server."""
    assert not _environ(server)["wsgi.run_once"]


@pytest.mark.parametrize("query", ["", "a=1&b=2", "x=%20%2F&y=a+b", "caf%C3%A9=1"])
@spec(_ENV + " / RFC 3875 §4.1.7", "DEFINED")
def test_query_string_is_raw(server, query):
    """QUERY_STRING is the raw, still percent-encoded query ("" or absent when there is none)."""
    env = _environ(server, "/probe" + (f"?{query}" if query else ""))
    assert env.get("QUERY_STRING", "") == query


@pytest.mark.parametrize(
    "raw,expected",
    [("/probe/a%20b", "/probe/a b"), ("/probe/caf%C3%A9", "/probe/caf\u00c3\u00a9"), ("/probe/100%25", "/probe/100%")],
)
@spec("RFC 3875 §4.1.5 via PEP 3333 §Unicode Issues", "DEFINED")
def test_path_info_is_percent_decoded_latin1(server, raw, expected):
    """SCRIPT_NAME + PATH_INFO is the path percent-decoded, its bytes carried as latin-1 code points (how the
    server splits the two is its own business)."""
    env = _environ(server, raw)
    assert env.get("SCRIPT_NAME", "") + env.get("PATH_INFO", "") == expected, (
        env.get("SCRIPT_NAME"),
        env.get("PATH_INFO"),
    )


@spec(_ENV, "SHOULD")
def test_request_headers_become_http_variables(server):
    """A request header X-Foo-Bar becomes HTTP_X_FOO_BAR; an absent header has no variable."""
    env = _environ(server, headers=[("X-Foo-Bar", "baz")])
    assert env.get("HTTP_X_FOO_BAR") == "baz"
    assert "HTTP_X_GATECHECK_ABSENT" not in env


@spec("RFC 3875 §4.1.18", "MUST")
def test_repeated_headers_are_joined_with_commas(server):
    """A repeated field arrives as one HTTP_ variable, its values comma-joined in order."""
    env = _environ(server, headers=[("X-Dup", "one"), ("X-Dup", "two")])
    value = env.get("HTTP_X_DUP", "")
    assert [part.strip() for part in value.split(",")] == ["one", "two"], value


@spec(_ENV, "MUST")
def test_content_type_and_length_are_cgi_variables(server):
    """A request's Content-Type and Content-Length appear as CONTENT_TYPE and CONTENT_LENGTH."""
    env = _environ(server, method="POST", headers=[("Content-Type", "text/plain")], body=b"hello")
    assert env.get("CONTENT_TYPE") == "text/plain", env.get("CONTENT_TYPE")
    assert env.get("CONTENT_LENGTH") == "5", env.get("CONTENT_LENGTH")


@spec("RFC 3875 §4.1.18", "SHOULD")
def test_content_type_and_length_are_cgi_variables_only(server):
    """Content-Type and Content-Length are not repeated as HTTP_CONTENT_TYPE/HTTP_CONTENT_LENGTH."""
    env = _environ(server, method="POST", headers=[("Content-Type", "text/plain")], body=b"hello")
    assert "HTTP_CONTENT_TYPE" not in env and "HTTP_CONTENT_LENGTH" not in env, sorted(env)


@spec(_ENV + " (other CGI variables)", "SHOULD")
def test_remote_addr_is_the_peer(server):
    """REMOTE_ADDR is present and is the client's IP address (RFC 3875 §4.1.8 defines it)."""
    assert _environ(server).get("REMOTE_ADDR") in ("127.0.0.1", "::ffff:127.0.0.1")


@spec("PEP 3333 §Input and Error Streams", "MUST")
def test_input_and_error_streams_have_the_required_methods(server):
    """wsgi.input has read, readline, readlines, __iter__; wsgi.errors has write, writelines, flush."""
    doc = _doc(server)
    for method in ("read", "readline", "readlines", "__iter__"):
        assert doc["input_methods"][method], f"wsgi.input lacks {method}"
    for method in ("write", "writelines", "flush"):
        assert doc["errors_methods"][method], f"wsgi.errors lacks {method}"


# -- environ across requests (appended with the WSGI protocol checks) -------------------------


def _script_steps(server, token: str) -> list:
    return [s for s in fixtures.read_events(server.event_dir, token) if s.get("event") == "step"]


@needs("http1")
@spec(_ENV, "SHOULD")
def test_multithread_is_true_when_requests_run_concurrently_in_threads(server):
    """wsgi.multithread is true whenever the server does run the app concurrently in several threads of one
    process (observed with four overlapping slow requests). Threads are told apart by the OS thread id the app
    logs (``ntid``): ``threading.get_ident()`` tells greenlets apart, and greenlets sharing one thread are no
    threads."""
    steps = [
        ["environ_get", "wsgi.multithread"],
        ["sleep", 0.4],
        ["start_response", "200 OK", [["Content-Type", "text/plain"]]],
        ["return_list", ["ok"]],
    ]
    tokens = [new_token() for _ in range(4)]
    conns = [Connection(server.address, 10.0) for _ in tokens]
    try:
        for conn, token in zip(conns, tokens):
            conn.send(script_request(server, steps, token=token))
        for conn in conns:
            conn.read_responses(1)
    finally:
        for conn in conns:
            conn.close()
    runs = []
    for token in tokens:
        got = _script_steps(server, token)
        assert len(got) >= 2, f"request {token} did not run its steps: {got}"
        runs.append((got[0]["pid"], got[0].get("ntid", got[0]["tid"]), got[0]["t"], got[1]["t"], got[0]["result"]))
    overlapping = any(
        a[0] == b[0] and a[1] != b[1] and a[2] < b[3] and b[2] < a[3] for i, a in enumerate(runs) for b in runs[i + 1 :]
    )
    if overlapping:
        assert all(r[4] for r in runs), f"requests ran concurrently in threads but wsgi.multithread = {runs[0][4]!r}"


@needs("http1", "workers")
@spec(_ENV, "SHOULD")
def test_multiprocess_is_true_when_the_server_runs_several_worker_processes(server):
    """With two worker processes asked for, the app may be invoked by another process at any time, so every
    request's wsgi.multiprocess is true (requests on fresh connections, until both workers answered or 40)."""
    steps = [
        ["environ_get", "wsgi.multiprocess"],
        ["start_response", "200 OK", [["Content-Type", "text/plain"]]],
        ["return_list", ["ok"]],
    ]
    runs = []
    with private_server(server, target=with_workers(server, 2)) as priv:
        for _ in range(40):
            token = new_token()
            with Connection(priv.address, 10.0) as conn:
                conn.send(script_request(priv, steps, token=token))
                ex = conn.read_responses(1)
            assert ex.final and ex.final[0].status == 200, f"no 200 for a plain scripted request: {ex.raw[:300]!r}"
            got = _script_steps(priv, token)
            assert got, f"request {token} did not run its steps"
            runs.append((got[0]["pid"], got[0]["result"]))
            if len({pid for pid, _ in runs}) >= 2:
                break
    pids = sorted({pid for pid, _ in runs})
    assert all(value for _, value in runs), (
        f"wsgi.multiprocess = {[v for _, v in runs if not v][0]!r} with 2 worker processes (served by pids {pids})"
    )


@needs("http1")
@spec("PEP 3333 §Specification Details", "DEFINED")
def test_environ_changes_do_not_leak_into_the_next_request(server):
    """The app may modify environ freely: keys it adds or changes never appear in a later request's environ,
    on the same kept-alive connection or a new one."""
    ok = [["start_response", "200 OK", [["Content-Type", "text/plain"]]], ["return_list", ["ok"]]]
    first = [
        ["environ_set", "gatecheck.leak", "yes"],
        ["environ_set", "HTTP_X_GATECHECK_LEAK", "yes"],
        ["environ_set", "PATH_INFO", "/leaked"],
    ] + ok
    second = [
        ["environ_get", "gatecheck.leak"],
        ["environ_get", "HTTP_X_GATECHECK_LEAK"],
        ["environ_get", "PATH_INFO"],
    ] + ok
    token = new_token()
    with Connection(server.address, 5.0) as conn:
        conn.send(script_request(server, first, token=None))
        ex = conn.read_responses(1)
        assert ex.final and ex.final[0].status == 200, ex.raw[:300]
        reusable = conn.may_send()  # open, and the response did not end it (RFC 9112 §9.3)
        if reusable:
            conn.send(script_request(server, second, token=token))
            conn.read_responses(1)
    if not reusable:
        with Connection(server.address, 5.0) as conn:
            conn.send(script_request(server, second, token=token))
            conn.read_responses(1)
    got = [s.get("result") for s in _script_steps(server, token)[:3]]
    assert got == [None, None, "/script"], f"environ of the next request: {got}"
