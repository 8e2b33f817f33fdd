"""ASGI extensions over HTTP/1.1 (asgiref extensions.rst, tls.rst; asgi.rst §Extensions).

An extension is a promise: when ``scope["extensions"]`` names it, its events work; when it does not, its
events are unknown events and send() should raise. Extensions a server does not advertise are reported as
*not supported*. ``http.response.debug`` is for test clients only and ``tls`` only for TLS connections.
"""

from __future__ import annotations

import base64
import time

import pytest

from gatecheck import fixtures
from gatecheck.conformance.app import new_token, probe, run_script, script_request, step, value_of, wait_steps
from gatecheck.conformance.client.http1 import Connection, build_request
from gatecheck.conformance.helpers.wire import assert_answered_in_order
from gatecheck.conformance.spec.markers import interfaces, needs, spec
from gatecheck.conformance.spec.results import UNSUPPORTED_PREFIX

pytestmark = [interfaces("asgi"), needs("http1")]

_EXT = "ASGI Extensions"
PATHSEND = "http.response.pathsend"
ZEROCOPY = "http.response.zerocopysend"
EARLY_HINT = "http.response.early_hint"
TRAILERS = "http.response.trailers"
PUSH = "http.response.push"


def _extensions(server, version: str = "HTTP/1.1") -> dict:
    return value_of(probe(server, version=version)["scope"]).get("extensions") or {}


def _require(server, name: str) -> None:
    if name not in _extensions(server):
        pytest.skip(f"{UNSUPPORTED_PREFIX} the server does not advertise {name} on HTTP/1.1")


def _ping(server) -> bytes:
    return build_request("GET", "/ping", host=server.authority)


def _b64(data: bytes) -> dict:
    return {"b64": base64.b64encode(data).decode("ascii")}


def _file(name: str) -> bytes:
    return (fixtures.STATIC_DIR / name).read_bytes()


# -- advertisement ------------------------------------------------------------------------------------


@spec(f"{_EXT} §Debug", "SHOULD NOT")
def test_debug_extension_is_never_advertised(server):
    """http.response.debug is for test clients: a server does not advertise it."""
    assert "http.response.debug" not in _extensions(server)


@pytest.mark.parametrize("version", ["HTTP/1.1", "HTTP/1.0"])
@spec("ASGI TLS §When to use", "MUST")
def test_tls_extension_is_absent_on_plain_connections(server, version):
    """The tls extension appears only for connections that use TLS, never on a plain-text connection."""
    assert "tls" not in _extensions(server, version)


_UNADVERTISED = {
    # extension: (steps, index of the extension's event)
    PATHSEND: ([["start", 200], ["pathsend", fixtures.STATIC_SMALL]], 1),
    ZEROCOPY: ([["start", 200], ["zerocopysend", fixtures.STATIC_SMALL]], 1),
    EARLY_HINT: ([["start", 200], ["send", {"type": EARLY_HINT, "links": [_b64(b"</x.css>; rel=preload")]}]], 1),
    PUSH: ([["start", 200], ["send", {"type": PUSH, "path": "/ping", "headers": []}]], 1),
}


@pytest.mark.parametrize("name", list(_UNADVERTISED))
@spec("ASGI Core §Extensions / §Error Handling", "SHOULD")
def test_unadvertised_extension_event_raises(server, name):
    """An extension's event the server did not advertise is an unknown event: send() raises."""
    if name in _extensions(server):
        pytest.skip(f"{name} is advertised: its event is valid here (see the checks for it)")
    steps, index = _UNADVERTISED[name]
    run = run_script(server, steps + [["body", "ok"]])
    found = step(run.events, index)
    assert found is not None, f"send({name}) never returned"
    assert found["ok"] is False, f"send({name}) was accepted although the server does not advertise {name}"


# -- http.response.pathsend ------------------------------------------------------------------------------


@pytest.mark.parametrize("name", [fixtures.STATIC_SMALL, fixtures.STATIC_JPEG])
@spec(f"{_EXT} §Path Send", "SHOULD")
def test_pathsend_keeps_the_app_headers(server, name):
    """pathsend sends the file's bytes exactly under the app's own status and headers (as a body would)."""
    _require(server, PATHSEND)
    data = _file(name)
    headers = [
        ["content-type", "application/x-gatecheck"],
        ["content-length", str(len(data))],
        ["x-gatecheck-app", "kept"],
    ]
    run = run_script(server, [["start", 203, headers], ["pathsend", name]], timeout=10, steps_timeout=5.0)
    resp = run.exchange.first
    assert resp.status == 203
    assert resp.header("content-type") == "application/x-gatecheck"
    assert resp.header("x-gatecheck-app") == "kept"
    assert resp.body == data, f"got {len(resp.body)} B, the file has {len(data)} B"


@spec(f"{_EXT} §Path Send", "POLICY")
def test_pathsend_of_a_missing_file_never_hangs(server):
    """POLICY (the spec is silent): pathsend of a missing file ends the exchange — an error, never a hang or a
    complete success."""
    _require(server, PATHSEND)
    missing = str(fixtures.STATIC_DIR / "gatecheck-missing-file.bin")
    steps = [["start", 200, [["content-length", "10"]]], ["send", {"type": PATHSEND, "path": missing}]]
    token = new_token()
    with Connection(server.address, 6) as conn:
        conn.send(script_request(server, steps, token=token))
        result = conn.read_responses(1, timeout=5)
        ended = result.closed or any(r.status >= 400 for r in result.final) or conn.wait_closed(3)
    assert ended, f"neither an error response nor a close within 8 s: {result.raw[:200]!r}"
    assert not [r for r in result.final if 200 <= r.status < 300], "a missing file was answered as a complete 200"
    sent = step(wait_steps(server, token, len(steps), timeout=3), 1)
    assert sent is not None, (
        f"no evidence the app's pathsend ran (a close before it proves nothing): {result.raw[:200]!r}"
    )


_PATHSEND_MISUSE = {
    # case: (steps, index of the invalid event)
    "before-start": ([["pathsend", fixtures.STATIC_SMALL], ["start", 200], ["body", "ok"]], 0),
    "after-partial-body": (
        [["start", 200], ["body", "x", True], ["pathsend", fixtures.STATIC_SMALL], ["body", "ok"]],
        2,
    ),
}


@pytest.mark.parametrize("case", list(_PATHSEND_MISUSE))
@spec(f"{_EXT} §Path Send / ASGI Core §Error Handling", "POLICY")
def test_pathsend_out_of_place_raises(server, case):
    """POLICY (the text says pathsend "cannot be mixed with http.response.body" but not what a server does when
    it is; the suite reads it as an invalid event): pathsend before the start, or mixed into a body already
    being sent, makes send() raise."""
    _require(server, PATHSEND)
    steps, index = _PATHSEND_MISUSE[case]
    run = run_script(server, steps)
    found = step(run.events, index)
    assert found is not None, "the pathsend step never returned"
    assert found["ok"] is False, f"pathsend {case.replace('-', ' ')} was accepted"


_AFTER_PATHSEND = {"second-pathsend": ["pathsend", fixtures.STATIC_SMALL], "body": ["body", "extra"]}


@pytest.mark.parametrize("case", list(_AFTER_PATHSEND))
@spec(f"{_EXT} §Path Send", "SHOULD")
def test_pathsend_completes_the_response(server, case):
    """pathsend completes the response as a last body would: a later pathsend or body adds nothing to it. The
    request sent after it shows stray bytes; if the server closes instead of answering it, that passes."""
    _require(server, PATHSEND)
    data = _file(fixtures.STATIC_SMALL)
    steps = [
        ["start", 200, [["content-length", str(len(data))]]],
        ["pathsend", fixtures.STATIC_SMALL],
        _AFTER_PATHSEND[case],
    ]
    run = run_script(server, steps, then=(_ping(server),))
    assert run.responses and run.responses[0].body == data
    if len(run.responses) > 1:
        assert run.responses[1].status == 200 and run.responses[1].body == b"ok", run.exchange.raw[-300:]
    assert not run.exchange.leftover, f"stray bytes after the response: {run.exchange.leftover[:200]!r}"


# -- http.response.zerocopysend ---------------------------------------------------------------------------


def _zerocopy_run(server):
    data = _file(fixtures.STATIC_JPEG)
    expected = b"head-" + data[100:1100] + data[:10] + b"-tail"
    steps = [
        ["start", 200, [["content-length", str(len(expected))]]],
        ["body", "head-", True],
        ["zerocopysend", fixtures.STATIC_JPEG, 100, 1000, True],
        ["zerocopysend", fixtures.STATIC_JPEG, 0, 10, True],
        ["body", "-tail"],
    ]
    return run_script(server, steps, timeout=10, steps_timeout=5.0), expected


@spec(f"{_EXT} §Zero Copy Send", "DEFINED")
def test_zerocopysend_honours_offset_and_count(server):
    """zerocopysend sends count bytes from offset, mixed with body events in order."""
    _require(server, ZEROCOPY)
    run, expected = _zerocopy_run(server)
    assert run.exchange.first.body == expected


@spec(f"{_EXT} §Zero Copy Send (closing)", "POLICY")
def test_zerocopysend_leaves_the_file_open(server):
    """POLICY (the text: "the ASGI application itself should actively close the used file descriptor - ASGI
    servers are not responsible for closing descriptors"; the suite reads that the server leaves it open):
    the app's file is still open after each zerocopysend returns."""
    _require(server, ZEROCOPY)
    run, _ = _zerocopy_run(server)
    for index in (2, 3):
        found = step(run.events, index)
        assert found and found["ok"] and found["result"]["fd_open_after_send"], (
            f"zerocopysend step {index}: {found} (the server closed the app's file)"
        )


# -- http.response.early_hint -----------------------------------------------------------------------------

_LINKS = [b"</style.css>; rel=preload; as=style", b"</app.js>; rel=preload; as=script"]


def _early_hint_steps() -> list:
    return [
        ["start", 200, [["content-length", "2"]]],
        ["send", {"type": EARLY_HINT, "links": [_b64(link) for link in _LINKS]}],
        ["body", "ok"],
    ]


@spec(f"{_EXT} §Early Hints / RFC 9110 §15.2", "SHOULD")
def test_early_hint_is_a_103_with_the_links_or_ignored(server):
    """An early hint becomes a 103 carrying the Link values before the final response, or is ignored."""
    _require(server, EARLY_HINT)
    run = run_script(server, _early_hint_steps())
    assert step(run.events, 1) and step(run.events, 1)["ok"], "send(early_hint) raised although advertised"
    interim = [r for r in run.exchange.responses if r.interim]
    assert all(r.status == 103 for r in interim), [r.status for r in interim]
    for hint in interim:
        assert [v.encode() for v in hint.header_all("link")] == _LINKS, hint.header_all("link")
    assert run.exchange.first.status == 200 and run.exchange.first.body == b"ok"


@spec("RFC 9110 §15.2 via ASGI Extensions §Early Hints", "MUST NOT")
def test_early_hint_is_never_sent_to_http_1_0(server):
    """No 1xx response goes to an HTTP/1.0 client, whatever the app's early hints say."""
    _require(server, EARLY_HINT)
    run = run_script(server, _early_hint_steps(), version="HTTP/1.0")
    assert not [r for r in run.exchange.responses if r.interim], "a 1xx response was sent to an HTTP/1.0 client"
    assert run.exchange.first.body == b"ok"


# -- http.response.trailers -------------------------------------------------------------------------------


def _trailer_steps(pause: float = 0.0) -> list:
    steps = [["start", 200, [["trailer", "x-gatecheck-trailer"]], True], ["body", "ok"]]
    if pause:
        steps.append(["sleep", pause, {"label": "pause"}])
    return steps + [["trailers", [["x-gatecheck-trailer", "done"]]]]


@spec(f"{_EXT} §HTTP Trailers", "DEFINED")
def test_trailers_are_sent_when_the_client_accepts_them(server):
    """With TE: trailers in the request, the app's trailer fields follow the body in the chunked trailer section."""
    _require(server, TRAILERS)
    run = run_script(server, _trailer_steps(), headers=[("TE", "trailers")])
    resp = run.exchange.first
    assert resp.body == b"ok" and resp.framing == "chunked", (resp.framing, resp.body)
    assert (b"x-gatecheck-trailer", b"done") in [(k.lower(), v) for k, v in resp.trailers], resp.trailers


@spec(f"{_EXT} §HTTP Trailers", "DEFINED")
def test_trailers_are_not_sent_without_te_trailers(server):
    """Without TE: trailers in the request the server sends no trailer fields."""
    _require(server, TRAILERS)
    run = run_script(server, _trailer_steps())
    resp = run.exchange.first
    assert resp.body == b"ok"
    assert not [k for k, _ in resp.trailers if k.lower() == b"x-gatecheck-trailer"], resp.trailers


@spec("ASGI WWW §Response Start (trailers)", "MUST")
def test_response_waits_for_the_trailers(server):
    """With trailers: True the response is not complete until http.response.trailers (sent 1.5 s later here)."""
    _require(server, TRAILERS)
    token = new_token()
    steps = _trailer_steps(pause=1.5)
    with Connection(server.address, 6) as conn:
        conn.send(script_request(server, steps, token=token, headers=[("TE", "trailers")]))
        result = conn.read_responses(1, timeout=5)
        completed_at = time.time()
    paused = step(wait_steps(server, token, len(steps)), label="pause")
    assert result.final and paused is not None
    assert completed_at >= paused["t"], "the response completed before the app sent its trailers"


# -- http.response.push -----------------------------------------------------------------------------------


@spec(f"{_EXT} §HTTP/2 Server Push / RFC 9113 §8.4", "DEFINED")
def test_push_on_http_1_1_pushes_nothing_and_keeps_the_response(server):
    """A push event on an HTTP/1.1 connection (push is HTTP/2 only) is accepted and changes nothing on the wire."""
    _require(server, PUSH)
    steps = [
        ["start", 200, [["content-length", "2"]]],
        ["send", {"type": PUSH, "path": "/ping", "headers": []}],
        ["body", "ok"],
    ]
    run = run_script(server, steps, then=(_ping(server),))
    assert run.responses, run.exchange.raw[:300]
    assert_answered_in_order(run.exchange, [b"ok", b"ok"])
