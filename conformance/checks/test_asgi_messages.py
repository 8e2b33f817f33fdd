"""ASGI HTTP messages over HTTP/1.1: http.request, http.disconnect, http.response.start/body (ASGI www.rst §HTTP).

Request side: the body arrives de-chunked in http.request messages whose bodies concatenate to it, the last
one with more_body False. Disconnect: receive() answers http.disconnect once the response is sent or the
client has gone, and not before. Response side: omitted keys take their defaults, the server owns the
transfer coding, every body message is flushed before send() returns, and messages after the response
completed change nothing on the wire. Every script and event name comes from ``fixtures/apps/_asgi_script.py``.

Application shapes (tables in conformance/spec/dimensions.py): the response headers go out
in every container the text's ``Iterable`` allows (a list of lists or of tuples, a tuple, another iterable),
and the body in every shape of body messages the defaults allow. The letter (dimension 6, INFO; table in
conformance/spec/observables.py): messages after completion are ignored, and every receive() after the response
returns http.disconnect. Helpers: conformance/helpers/asgi_http.py.
"""

from __future__ import annotations

import gzip
import hashlib
import time

import pytest

from gatecheck.conformance.app import (
    new_token,
    ping,
    random_bytes,
    run_script,
    script_request,
    step,
    value_of,
    wait_event,
    wait_steps,
)
from gatecheck.conformance.client.http1 import Connection
from gatecheck.conformance.helpers.asgi_http import (
    DEFAULT_BODY,
    DEFAULTS,
    TE_CASES,
    assert_ping,
    b64,
    bodiless_request_messages,
    close_as,
    events_of_kept_alive,
    first_chunk_arrival,
    message_records,
    te_response,
    upload,
)
from gatecheck.conformance.helpers.wire import assert_answered_in_order, describe, held_follow_up
from gatecheck.conformance.spec.dimensions import ASGI_BODY_SHAPES, ASGI_HEADER_SHAPES
from gatecheck.conformance.spec.markers import interfaces, needs, spec
from gatecheck.conformance.spec.observables import LATE_MESSAGES, letter_params
from gatecheck.conformance.spec.results import not_supported

pytestmark = [interfaces("asgi"), needs("http1")]

_REQ = "ASGI WWW §Request"
_DISC = "ASGI WWW §Disconnect"
_START = "ASGI WWW §Response Start"
_BODY = "ASGI WWW §Response Body"
_HERE = "test_asgi_messages.py::"  # the check ids' prefix, for the letter's table


# -- http.request ---------------------------------------------------------------------------------

_UPLOADS = ["content-length", "chunked-one-write", "chunked-separate-writes"]
# the content-length upload is under the body key's definition; the chunked ones under "should be de-chunked"
_UPLOADS_BY_CLAUSE = [
    pytest.param(
        how,
        marks=spec(_REQ, "DEFINED")
        if how == "content-length"
        else spec("ASGI WWW §HTTP Connection Scope (chunked)", "SHOULD"),
    )
    for how in _UPLOADS
]
_CHUNKS = [random_bytes(700, seed=1), random_bytes(1, seed=2), random_bytes(3000, seed=3)]


@pytest.mark.parametrize("how", _UPLOADS_BY_CLAUSE)
def test_request_bodies_concatenate_to_the_decoded_body(server, how):
    """The bodies of the http.request messages concatenate to the request body, de-chunked when it was chunked."""
    doc = upload(server, how, _CHUNKS)
    body = b"".join(_CHUNKS)
    assert doc["body_len"] == len(body), f"app received {doc['body_len']} B, client sent {len(body)} B"
    assert doc["body_sha256"] == hashlib.sha256(body).hexdigest(), "received bytes differ from the sent body"
    kinds = [m.get("type") for m in value_of(doc["request_messages"])]
    assert kinds and all(k == "http.request" for k in kinds), kinds


@pytest.mark.parametrize("how", _UPLOADS)
@spec(_REQ, "DEFINED")
def test_more_body_is_true_until_the_last_request_message(server, how):
    """Every http.request but the last has more_body True; the last has more_body False (or omits it)."""
    messages = value_of(upload(server, how, _CHUNKS)["request_messages"])
    flags = [m.get("more_body", False) for m in messages]
    assert all(type(f) is bool for f in flags), f"more_body must be a bool: {flags!r}"
    assert flags[-1] is False, f"last http.request has more_body {flags[-1]!r}"
    assert all(flags[:-1]), f"an http.request before the last one has more_body False: {flags}"


@pytest.mark.parametrize("how", _UPLOADS)
@spec("ASGI Core §Events", "MUST")
def test_request_message_keys_are_str(server, how):
    """Every key of every http.request message is a str."""
    for record in message_records(server, how, _CHUNKS):
        for key, _ in record["items"]:
            assert key["type"] == "str", f"message key of type {key['type']}"


_MESSAGE_TYPES = {"type": "str", "body": "bytes", "more_body": "bool"}


@pytest.mark.parametrize("how", _UPLOADS)
@spec(_REQ, "DEFINED")
def test_request_message_values_have_their_types(server, how):
    """In http.request messages type is a str, body bytes and more_body a bool (when present)."""
    for record in message_records(server, how, _CHUNKS):
        for key, value in record["items"]:
            wanted = _MESSAGE_TYPES.get(key.get("value"))
            assert wanted is None or value["type"] == wanted, f"{key.get('value')} is {value['type']}, not {wanted}"


@pytest.mark.parametrize("how", ["GET", "POST-content-length-0", "POST-chunked-empty"])
@spec(_REQ, "DEFINED")
def test_request_without_body_gives_empty_request_messages(server, how):
    """A request without a body yields http.request messages whose bodies are all b"" (or absent), the last
    with more_body False (one such message is what servers send; the text does not forbid more)."""
    messages = bodiless_request_messages(server, how)
    assert messages, "the app got no http.request message"
    assert all(m["type"] == "http.request" and m.get("body", b"") == b"" for m in messages), messages
    assert messages[-1].get("more_body", False) is False, messages


# -- http.disconnect ------------------------------------------------------------------------------


@spec(_DISC, "DEFINED")
def test_receive_waits_while_the_request_is_open(server):
    """After the last http.request, receive() returns nothing while the response is unsent and the client connected."""
    steps = [["receive_all"], ["watch_disconnect", 0.6], ["sleep", 0.9], ["start", 200], ["body", "x"]]
    run = run_script(server, steps, timeout=6, steps_timeout=5.0)
    assert run.exchange.first.status == 200
    names = [e["event"] for e in run.events]
    assert "watch.timeout" in names, f"receive() returned while the request was still open (events: {names})"


@spec(_DISC, "DEFINED")
def test_receive_after_the_response_returns_disconnect(server):
    """receive() called after the response was sent returns http.disconnect, even on a kept-alive connection."""
    steps = [["receive_all"], ["start", 200, [["content-length", "4"]]], ["body", "done"], ["wait_disconnect", 3]]
    events = events_of_kept_alive(server, steps, timeout=6, steps_timeout=5)
    found = step(events, 3)
    assert found is not None, "the receive() after the response never returned"
    assert found["ok"], f"receive() after the response did not return http.disconnect: {found.get('error')}"
    assert found["result"]["type"] == "http.disconnect", found["result"]


_AGAIN = 3  # receive() calls after the first http.disconnect


@spec(_DISC, "INFO")
def test_receive_after_disconnect_keeps_returning_disconnect(server):
    """INFO (dimension 6, conformance/spec/observables.py): the text says http.disconnect is what receive() returns
    when "called after a response has been sent", which every later call is too; a server whose later
    receive() raises or waits contradicts that letter, breaking no must/should (apps that stop at the first
    http.disconnect never see it). Evidence: the app's log shows each receive() and what it returned."""
    again = [["receive", {"label": f"again-{n}"}] for n in range(_AGAIN)]
    steps = [
        ["receive_all"],
        ["start", 200, [["content-length", "4"]]],
        ["body", "done"],
        ["wait_disconnect", 3],
        *again,
    ]
    events = events_of_kept_alive(server, steps, timeout=8, steps_timeout=6)
    first = step(events, 3)
    if not (first is not None and first["ok"] and first["result"]["type"] == "http.disconnect"):
        not_supported(
            "the first receive() after the response did not return http.disconnect (test_receive_after_"
            f"the_response_returns_disconnect judges that): no later call to judge ({first})"
        )
    for n in range(_AGAIN):
        found = step(events, label=f"again-{n}")
        assert found is not None, f"receive() #{n + 2} after the response never returned (it waits)"
        assert found["ok"], f"receive() #{n + 2} after the response raised: {found.get('error')}"
        assert found["result"]["type"] == "http.disconnect", f"receive() #{n + 2} returned {found['result']}"


@pytest.mark.parametrize("how", ["fin", "rst"])
@spec(_DISC, "DEFINED")
def test_receive_returns_disconnect_when_the_client_leaves(server, how):
    """An app waiting in receive() (long-poll) gets http.disconnect once the client closes the connection."""
    token = new_token()
    steps = [["receive_all"], ["wait_disconnect", 10]]
    conn = Connection(server.address, 5)
    try:
        conn.send(script_request(server, steps, token=token))
        wait_steps(server, token, 1, timeout=5)
        time.sleep(0.2)  # the app is now inside receive()
    finally:
        close_as(conn, how)
    events = wait_steps(server, token, 2, timeout=6)
    found = step(events, 1)
    assert found is not None, "the app's receive() did not return within 6 s of the client closing"
    assert found["ok"] and found["result"]["type"] == "http.disconnect", found


@spec(_DISC, "DEFINED")
def test_disconnect_mid_upload_ends_the_request_messages(server):
    """A client that leaves mid-body makes receive() return http.disconnect instead of waiting for the rest."""
    token = new_token()
    steps = [["receive_all"]]
    data = script_request(server, steps, token=token, method="POST", headers=[("Content-Length", "1000")])
    conn = Connection(server.address, 5)
    try:
        conn.send(data + b"x" * 10)
        try:
            wait_event(server, token, "request.start", timeout=2)
        except TimeoutError:
            pytest.skip("the server calls the app only once the whole body arrived: no app waits mid-body")
        time.sleep(0.3)
    finally:
        conn.close()
    found = step(wait_steps(server, token, 1, timeout=6), 0)
    assert found is not None, "receive() still waits 6 s after the client closed mid-body"
    assert found["result"]["last"]["type"] == "http.disconnect", found["result"]


# -- http.response.start / http.response.body -------------------------------------------------------


@pytest.mark.parametrize("case", list(DEFAULTS))
@spec("ASGI WWW §Response Start / §Response Body", "DEFINED")
def test_omitted_keys_take_their_defaults(server, case):
    """headers defaults to [], body to b"" and more_body to False: the response completes with that body."""
    run = run_script(server, DEFAULTS[case], then=(ping(server),))
    assert all(step(run.events, i) and step(run.events, i)["ok"] for i in range(len(DEFAULTS[case]))), (
        f"send() refused a message with an omitted optional key: {[e for e in run.events if e.get('ok') is False]}"
    )
    assert run.responses and run.responses[0].status == 200, f"no 200 response: {run.exchange.raw[:300]!r}"
    assert_answered_in_order(run.exchange, [DEFAULT_BODY[case], b"ok"])


@pytest.mark.parametrize(
    "version",
    [
        pytest.param("HTTP/1.1", marks=spec(_START, "DEFINED")),
        pytest.param("HTTP/1.0", marks=spec("RFC 9112 §6.1", "MUST NOT")),
    ],
)
def test_streamed_body_without_length_is_framed_correctly(server, version):
    """A body streamed without Content-Length is chunked or close-delimited, never chunked for HTTP/1.0."""
    steps = [["start", 200], ["body", "one-", True], ["body", "two-", True], ["body", "three"]]
    run = run_script(server, steps, version=version)
    resp = run.exchange.first
    assert resp.body == b"one-two-three", resp.body
    if version == "HTTP/1.0":
        assert not resp.header_all("transfer-encoding"), "Transfer-Encoding sent to an HTTP/1.0 client"
    if resp.framing == "close":
        assert run.exchange.closed


@spec(_BODY, "DEFINED")
def test_empty_body_message_mid_stream_does_not_end_the_response(server):
    """An http.response.body with body b"" and more_body True does not complete the response."""
    steps = [["start", 200], ["body", "a", True], ["body", "", True], ["body", "b", True], ["body", "c"]]
    run = run_script(server, steps, then=(ping(server),))
    assert run.responses and run.responses[0].body == b"abc", run.exchange.raw[:300]
    assert_answered_in_order(run.exchange, [b"abc", b"ok"])


@pytest.mark.parametrize("case", list(TE_CASES))
@spec(_START, "MUST")
def test_app_transfer_encoding_is_ignored(server, case):
    """An app-supplied Transfer-Encoding is ignored: the server's own framing stays valid and the body intact."""
    version = TE_CASES[case][1]
    resp = te_response(server, case)
    codings = [c.strip().lower() for v in resp.header_all("transfer-encoding") for c in v.split(",")]
    assert codings.count("chunked") <= 1, f"chunked applied twice: {resp.header_all('transfer-encoding')}"
    if version == "HTTP/1.0":
        assert not codings, f"Transfer-Encoding {codings} sent to an HTTP/1.0 client (RFC 9112 §6.1)"
    if codings:
        assert not resp.header_all("content-length"), "both Transfer-Encoding and Content-Length sent (RFC 9112 §6.2)"
    assert resp.body == b"hello world", resp.body


@spec(_START, "DEFINED")
def test_content_encoding_is_left_to_the_app(server):
    """An app-supplied Content-Encoding and its encoded body go out unchanged."""
    packed = gzip.compress(b"gatecheck " * 50, mtime=0)
    headers = [["content-encoding", "gzip"], ["content-length", str(len(packed))]]
    run = run_script(server, [["start", 200, headers], ["body", b64(packed)]], headers=[("Accept-Encoding", "gzip")])
    resp = run.exchange.first
    assert resp.header_all("content-encoding") == ["gzip"]
    assert resp.body == packed


@pytest.mark.parametrize("shape", ASGI_HEADER_SHAPES)
@spec(_START, "MUST")
def test_response_headers_keep_duplicates_in_order(server, shape):
    """Repeated response header names (Set-Cookie) reach the client as separate fields in the app's order,
    whichever iterable of pairs carries them (a list of lists or of tuples, a tuple, another iterable)."""
    headers = [["set-cookie", "a=1"], ["x-between", "y"], ["set-cookie", "b=2"], ["set-cookie", "c=3"]]
    run = run_script(server, [["start", 200, headers, {"headers_as": shape}], ["body", "ok"]])
    resp = run.exchange.first
    assert resp.status == 200 and resp.body == b"ok", describe(run.exchange)
    assert resp.header_all("set-cookie") == ["a=1", "b=2", "c=3"], describe(run.exchange)
    assert resp.header("x-between") == "y", describe(run.exchange)


@pytest.mark.parametrize("messages,body", [m[1:] for m in ASGI_BODY_SHAPES], ids=[m[0] for m in ASGI_BODY_SHAPES])
@spec(_BODY, "DEFINED")
def test_response_body_in_each_message_shape_is_delivered(server, messages, body):
    """The body messages' bytes, concatenated, are the response body, whether ``body`` and ``more_body`` are
    given or left to their defaults (b"" and False); the response ends with the last message and the
    request sent after it is answered."""
    steps = [["start", 200, [["content-type", "application/octet-stream"]]]] + [["send", m] for m in messages]
    run = run_script(server, steps, then=(ping(server),), timeout=3.0)
    resp = run.exchange.first
    assert resp.status == 200 and resp.body == body, describe(run.exchange)
    if len(run.exchange.final) == 2:
        assert_ping(run.exchange.final[1])
    assert not run.exchange.leftover, describe(run.exchange)


@pytest.mark.parametrize("size", [1, 16384], ids=["1B", "16KiB"])
@spec(_BODY, "MUST")
def test_each_body_message_is_flushed_before_the_next(server, size):
    """The client receives a body chunk before the app sends the next one (flush before send() returns)."""
    token = new_token()
    steps = [["start", 200], ["body", {"size": size}, True], ["sleep", 1.0, {"label": "pause"}], ["body", "end"]]
    seen_at, data = first_chunk_arrival(server, steps, token, size)
    events = wait_steps(server, token, len(steps), timeout=5)
    paused = step(events, label="pause")
    assert paused is not None, f"the script did not get past its pause: {[e['event'] for e in events]}"
    assert seen_at is not None, f"the first chunk never arrived: {data[:200]!r}"
    assert seen_at < paused["t"], (
        f"the first chunk arrived {seen_at - paused['t']:.2f} s after the app sent the next one"
    )


@pytest.mark.parametrize("case", list(LATE_MESSAGES))
@spec(_BODY, "DEFINED")
def test_messages_after_completion_change_nothing(server, case):
    """Messages sent after the response completed do not change it: the client gets the completed response
    (status, headers and body) and no stray bytes after it. A request is sent after it to show stray bytes;
    whether it is answered is test_connection_survives_messages_after_completion's business."""
    steps, extra = LATE_MESSAGES[case]
    run = run_script(server, steps + [extra], then=(ping(server),))
    assert run.responses, f"no response: {run.exchange.raw[:300]!r}"
    first = run.responses[0]
    assert first.status == 200 and first.body == b"done", (first.status, first.body)
    assert not first.header_all("x-late")
    if len(run.responses) > 1:
        assert_ping(run.responses[1])
    assert not run.exchange.leftover, f"stray bytes after the response: {run.exchange.leftover[:200]!r}"


@pytest.mark.parametrize("case", letter_params(_HERE + "test_connection_survives_messages_after_completion"))
def test_connection_survives_messages_after_completion(server, case):
    """INFO: the text says later messages "will be ignored"; a server that instead raises from send() (the app
    then fails, and the server must end its connection) or drops the connection contradicts that without
    breaking a must/should. Passes when the request sent after the scripted one is answered (*not supported*
    where the response ended the connection, so the client sends none: RFC 9112 §9.6)."""
    steps, extra = LATE_MESSAGES[case]
    run = run_script(server, steps + [extra], then=(ping(server),))
    assert run.responses, f"no response: {run.exchange.raw[:300]!r}"
    if not run.exchange.leftover and not run.exchange.closed:
        held_follow_up(run.exchange, "the next request")
    assert len(run.responses) == 2, f"the next request was not answered: {run.exchange.raw[:400]!r}"
    assert_ping(run.responses[1])


@pytest.mark.parametrize("case", letter_params(_HERE + "test_send_after_completion_returns_normally"))
def test_send_after_completion_returns_normally(server, case):
    """INFO: the text says messages after completion "will be ignored", so the app's send() of one returns
    normally; raising contradicts that letter without breaking a must/should (the app's event log is the
    evidence: the late step ran and did not raise)."""
    steps, extra = LATE_MESSAGES[case]
    run = run_script(server, steps + [extra], then=(ping(server),))
    assert run.responses and run.responses[0].status == 200, f"no response: {run.exchange.raw[:300]!r}"
    late = step(run.events, len(steps))
    assert late is not None, f"the late message was never sent: {[e['event'] for e in run.events]}"
    assert late["ok"], f"send() of a message after completion raised: {late.get('error')}"


@spec("ASGI Core §Error Handling", "SHOULD NOT")
def test_unknown_keys_in_events_are_accepted(server):
    """Events with extra, unknown keys are accepted (forward compatibility) and behave as without them."""
    steps = [
        ["send", {"type": "http.response.start", "status": 200, "headers": [], "x_gatecheck": 1}],
        ["send", {"type": "http.response.body", "body": b64(b"ok"), "x_gatecheck": [True]}],
    ]
    run = run_script(server, steps)
    for index in range(2):
        found = step(run.events, index)
        assert found is not None and found["ok"], f"send() raised for an extra key: {found}"
    assert run.exchange.first.body == b"ok"
