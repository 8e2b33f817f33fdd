"""The issue-12 fixes, pinned against real server processes that behave as the quoted text allows.

Each case starts ``tests/hostile/server.py`` in one mode through ``--server-cmd`` (a conformance subprocess)
and reads the outcomes from its results file:

- ``tests/broken/server.py --variant any_major_served`` (the fixture WSGI app behind a stdlib server) serves
  ``GET /ping HTTP/9.9`` as 1.1: RFC 9110 §6.2 only says a server *can* send 505, so the unsupported-major
  check passes (it used to demand a 4xx). The hostile server cannot stand in: the check's ``assert_serves``
  needs the fixture app's event log as evidence.
- ``tests/broken/server.py --variant unknown_coding_501`` answers a request with a Transfer-Encoding it does
  not understand 501 and closes, what RFC 9112 §6.1 recommends: the NUL-suffixed TE.TE probe passes (it used to accept
  only a 4xx or a 2xx).
- ``tests/broken/server.py --variant request_line_bare_cr_as_space`` replaces a bare CR in the request-line by
  SP, what RFC 9112 §2.2 allows: the bare-CR request-line check passes (its request used to put the CR in place
  of the SP before the version, which that replacement turns into a valid line the check then failed).
- ``tests.broken.asgi:ws_local_close_refused`` under uvicorn refuses an app's WebSocket close with 1005, 1006 or
  1015 by raising from ``send`` (nothing goes on the wire, as daphne does) and holds the connection: the
  local-only-code check passes on that refusal (it used to demand a Close frame or a closed connection).
- ``tests/broken/server.py --variant write_past_length_raises_after_sending`` raises from a write() past the
  Content-Length but sends its bytes, as cheroot does: the raise check passes (its verdict is the app's log;
  it used to fail on the unparseable bytes past the length, which are the is-not-sent check's business).
- ``tests.broken.asgi:ws_unoffered_accept_refused`` under uvicorn raises from an app's websocket.accept naming a
  subprotocol the client did not offer and closes the connection without a byte (as hypercorn 0.18 does): the
  unoffered-subprotocol check passes on that refusal (it used to demand an HTTP response to the handshake).
- ``tests.broken.asgi:invalid_start_raises_then_malformed`` under uvicorn raises from a send() of an
  http.response.start without an int status, then puts the app's next response on the wire with two differing
  Content-Lengths (gunicorn 27's asgi worker sends a body with no status-line there): the invalid-event check
  passes on the raise (its verdict is the app's log; it used to fail on the unparseable answer).
- ``tests/broken/server.py --variant chunked_body_unterminated`` decodes a chunked request but sets neither
  CONTENT_LENGTH nor ``wsgi.input_terminated`` (PEP 3333 asks for neither): the chunked-body checks whose WSGI app
  has no portable way to read that body are *not supported* (they used to fail at RFC 9112 §7.1 MUST), and the
  POLICY check of a portable read carries the gap and fails.
- ``tests/broken/server.py --variant chunked_length_required`` answers a valid chunked request 411 (RFC 9112 §6.3:
  a server MAY): the checks that need the body read are *not supported*; a coding that is not chunked still
  gets its 400 and passes.
- ``one-per-connection`` answers the first request of a connection and never the ones pipelined behind
  it: checks that need pipelining report *not supported*, never "stray content" or a failure.
- ``tests/broken/server.py --break no_persistent_connections --break close_unannounced`` closes the connection
  after every response without saying "close", as uWSGI does without keep-alive: RFC 9112 §9.5 lets a server
  close at any time and the missing "close" (§9.3) is no obligation of the connection-state checks, so the
  2nd and 3rd places of a kept-alive connection or a pipeline are *not supported* (they used to fail with "no
  answer to the request at position ..."), and the places it reaches pass, unanswered requests after them
  included. A close the request under test provokes still fails: ``test_checks_can_fail.py``'s row
  ``connection_states-wire-later_body_dropped``.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from tests.installed import PYTEST, RUN_DIR

ROOT = Path(__file__).resolve().parents[2]

HOSTILE = "{python} -m tests.hostile.server --port {port} --mode "
CASES = {
    "{python} -m tests.broken.server --host {host} --port {port} --variant any_major_served": (
        ["gatecheck/conformance/checks/test_http1_fields.py"],
        "unsupported_major",
        {"test_http1_fields.py::test_unsupported_major_version_is_505_or_served": "passed"},
    ),
    "{python} -m tests.broken.server --host {host} --port {port} --variant unknown_coding_501": (
        ["gatecheck/conformance/checks/test_http1_smuggling.py"],
        "obfuscated and nul-suffix",
        {
            "test_http1_smuggling.py::test_obfuscated_transfer_encoding_never_falls_back_to_content_length"
            "[nul-suffix]": "passed",
            "test_http1_smuggling.py::test_obfuscated_transfer_encoding_closes_the_connection[nul-suffix]": "passed",
        },
    ),
    "{python} -m tests.broken.server --host {host} --port {port} --variant request_line_bare_cr_as_space": (
        ["gatecheck/conformance/checks/test_http1_fields.py"],
        "bare_cr_in_the_request_line",
        {"test_http1_fields.py::test_bare_cr_in_the_request_line_is_rejected": "passed"},
    ),
    "{python} -m uvicorn --host {host} --port {port} --no-access-log tests.broken.asgi:ws_local_close_refused": (
        ["gatecheck/conformance/checks/test_websocket_asgi.py"],
        "local_only_code",
        {
            f"test_websocket_asgi.py::test_app_close_with_local_only_code_never_reaches_the_wire[{code}]": "passed"
            for code in (1005, 1006, 1015)
        },
        ["--interface", "asgi", "--features", "websockets"],
    ),
    "{python} -m tests.broken.server --host {host} --port {port} --variant write_past_length_raises_after_sending": (
        ["gatecheck/conformance/checks/test_wsgi_response.py"],
        "write_past_content_length",
        {
            "test_wsgi_response.py::test_write_past_content_length_raises": "passed",
            "test_wsgi_response.py::test_write_past_content_length_is_not_sent": "failed",
        },
    ),
    "{python} -m uvicorn --host {host} --port {port} --no-access-log tests.broken.asgi:ws_unoffered_accept_refused": (
        ["gatecheck/conformance/checks/test_websocket_asgi.py"],
        "did_not_offer",
        {
            "test_websocket_asgi.py::test_subprotocol_the_client_did_not_offer_never_reaches_the_wire"
            f"[{offered}]": "passed"
            for offered in ("none-offered", "other-offered")
        },
        ["--interface", "asgi", "--features", "websockets"],
    ),
    "{python} -m uvicorn --host {host} --port {port} --no-access-log "
    "tests.broken.asgi:invalid_start_raises_then_malformed": (
        ["gatecheck/conformance/checks/test_asgi_messages_errors.py"],
        "invalid_event and status",
        {
            f"test_asgi_messages_errors.py::test_invalid_event_raises_from_send[{case}]": "passed"
            for case in ("missing-status", "str-status")
        },
        ["--interface", "asgi"],
    ),
    "{python} -m tests.broken.server --host {host} --port {port} --variant chunked_body_unterminated": (
        ["gatecheck/conformance/checks/test_echo.py", "gatecheck/conformance/checks/test_wsgi_input.py"],
        "chunked_request_body_is_decoded_for_echo or chunked_body_is_readable_by_a_portable_app",
        {
            **{
                f"test_echo.py::test_chunked_request_body_is_decoded_for_echo[{n}]": "unsupported"
                for n in ("1B", "5000B")
            },
            "test_wsgi_input.py::test_chunked_body_is_readable_by_a_portable_app": "failed",
        },
    ),
    "{python} -m tests.broken.server --host {host} --port {port} --variant chunked_length_required": (
        ["gatecheck/conformance/checks/test_echo.py", "gatecheck/conformance/checks/test_http1_framing.py"],
        "chunked_request_body_is_decoded_for_echo or transfer_coding_not_ending_in_chunked",
        {
            **{
                f"test_echo.py::test_chunked_request_body_is_decoded_for_echo[{n}]": "unsupported"
                for n in ("1B", "5000B")
            },
            "test_http1_framing.py::test_transfer_coding_not_ending_in_chunked_is_rejected[gzip]": "passed",
        },
    ),
    HOSTILE + "one-per-connection": (
        ["gatecheck/conformance/checks/test_http1_smuggling.py"],
        "garbage",
        {
            "test_http1_smuggling.py::test_garbage_after_a_pipelined_request_is_rejected": "unsupported",
            "test_http1_smuggling.py::test_garbage_after_a_pipelined_request_closes_the_connection": "unsupported",
        },
    ),
    "{python} -m tests.broken.server --host {host} --port {port} --break no_persistent_connections "
    "--break close_unannounced": (
        ["gatecheck/conformance/checks/test_connection_states.py"],
        "each_position or pipelined_after or half_closed",
        {
            **{
                f"test_connection_states.py::test_app_sees_the_request_at_each_position[{p}]": "unsupported"
                for p in ("keep-alive-2nd", "keep-alive-3rd", "pipelined-2nd", "pipelined-3rd")
            },
            **{
                f"test_connection_states.py::test_app_sees_the_request_at_each_position[{p}]": "passed"
                for p in ("alone", "pipelined-1st")
            },
            "test_connection_states.py::test_request_body_is_read_at_each_position"
            "[keep-alive-2nd-chunked]": "unsupported",
            "test_connection_states.py::test_request_body_is_read_at_each_position"
            "[pipelined-1st-content-length]": "passed",
            "test_connection_states.py::test_streamed_response_is_delimited_at_each_position"
            "[pipelined-3rd]": "unsupported",
            "test_connection_states.py::test_connection_close_request_is_answered_then_closed_at_each_position"
            "[keep-alive-3rd]": "unsupported",
            "test_connection_states.py::test_connection_close_from_the_app_closes_at_each_position"
            "[pipelined-2nd]": "unsupported",
            "test_connection_states.py::test_requests_pipelined_after_a_close_are_not_processed"
            "[pipelined-2nd-request]": "unsupported",
            "test_connection_states.py::test_half_closed_client_gets_its_responses[pipelined-two]": "unsupported",
            "test_connection_states.py::test_half_closed_client_gets_its_responses[get]": "passed",
        },
    ),
}


@pytest.mark.parametrize(
    "command",
    list(CASES),
    ids=[
        "any-major-served",
        "501-te",
        "bare-cr-as-space",
        "ws-local-close-refused",
        "write-past-raises-after-sending",
        "ws-unoffered-accept-refused",
        "invalid-start-raises-then-malformed",
        "wsgi-chunked-unterminated",
        "chunked-411",
        "one-per-connection",
        "close-unannounced",
    ],
)
def test_check_outcome_on_a_server_the_text_allows(tmp_path, command):
    files, keyword, expected, *target = CASES[command]
    results = tmp_path / "results.json"
    cmd = [
        *PYTEST,
        *files,
        "-q",
        "-p",
        "no:cacheprovider",
        "--no-expectations",
        "--server-cmd",
        command,
        *(target[0] if target else ["--interface", "wsgi"]),
        "-k",
        keyword,
        "--results-json",
        str(results),
    ]
    done = subprocess.run(cmd, cwd=RUN_DIR, capture_output=True, text=True, timeout=300)
    assert results.exists(), f"no results:\n{done.stdout[-2000:]}\n{done.stderr[-2000:]}"
    got = {c["check"]: (c["outcome"], c["message"]) for c in json.loads(results.read_text())["checks"]}
    for check, outcome in expected.items():
        assert check in got, f"{check} did not run; ran {sorted(got)}"
        assert got[check][0] == outcome, f"{check}: {got[check][0]}, expected {outcome}: {got[check][1][:500]}"


def test_pipelined_requests_never_answered_are_not_supported():
    """``assert_answered_in_order``: one response, then neither more nor a close (the read timed out) is a
    server that does not serve pipelined requests: *not supported*, not a failure. A server that says close
    and closes still passes; one that answers out of order still fails."""
    from gatecheck.conformance.client.http1 import Exchange, parse_responses
    from gatecheck.conformance.helpers.wire import assert_answered_in_order
    from gatecheck.conformance.spec.results import UNSUPPORTED_PREFIX

    ok = b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok"
    responses, _ = parse_responses(ok, closed=False)
    with pytest.raises(pytest.skip.Exception, match=UNSUPPORTED_PREFIX):
        assert_answered_in_order(Exchange(responses, closed=False, timed_out=True, raw=ok), [b"ok", b"ok"])
    closing, _ = parse_responses(ok.replace(b"\r\n\r\n", b"\r\nConnection: close\r\n\r\n"), closed=True)
    assert_answered_in_order(Exchange(closing, closed=True, raw=ok), [b"ok", b"ok"])
    with pytest.raises(AssertionError, match="out of order"):
        assert_answered_in_order(Exchange(responses, closed=False, timed_out=True, raw=ok), [b"no", b"ok"])
