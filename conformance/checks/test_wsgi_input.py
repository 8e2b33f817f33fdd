"""WSGI request input: wsgi.input, wsgi.errors, chunked uploads and Expect: 100-continue (PEP 3333).

PEP 3333 §Input and Error Streams gives wsgi.input the semantics of a Python binary file (read, readline,
readlines, iteration) with three notes: the server SHOULD simulate EOF at CONTENT_LENGTH, SHOULD allow
``read()`` without a size, and SHOULD support ``readline(size)``. Whatever the framing, the stream never
hands the app bytes of the next pipelined request (RFC 9112 §6.3). Chunked uploads are decoded by the
server (§Other HTTP Features); the de-facto ``wsgi.input_terminated`` flag tells a portable app to read to
EOF. Every check drives ``wsgi.input`` through the ``/script`` WSGI ops (fixtures/apps/_wsgi_script.py)
and reads what each call returned from the event log, so the app's view is asserted, not inferred.

Reading past CONTENT_LENGTH is the app's own mistake in PEP 3333 ("should not attempt to read more"); the
server "should simulate an end-of-file condition" there. So the MUST checks of the file semantics read within
the body where they can, and where a method reads to the end (``readlines()``, iteration, ``read(-1)``, the
last line without a newline) they are *not supported* on a server that simulates no end of file; that SHOULD
is judged on its own. A chunked upload the server hands over with neither CONTENT_LENGTH nor
``wsgi.input_terminated`` cannot be read by a portable app: the chunked MUST checks are then *not supported*
and the POLICY check carries the gap; a ``411`` to a chunked upload (RFC 9112 §6.3) makes them *not supported*
too. Follow-up requests go after the response, pipelined only where the rule is about pipelined bytes.
"""

from __future__ import annotations

import pytest

from gatecheck.conformance.app import new_token, ping, run_script, script_request, step, step_value, wait_steps
from gatecheck.conformance.client.http1 import Connection
from gatecheck.conformance.helpers.support import needs_simulated_eof, refused_for_length, unlengthed_body_gap
from gatecheck.conformance.helpers.wire import REPLY_TIMEOUT, describe, ends_connection, held_follow_up
from gatecheck.conformance.spec.markers import interfaces, needs, spec
from gatecheck.conformance.spec.results import not_supported

pytestmark = [interfaces("wsgi"), needs("http1")]

_INPUT = "PEP 3333 §Input and Error Streams"
_LINES = b"line one\nline two\nlast"
_OK = [["start_response", "200 OK", [["Content-Type", "text/plain"]]], ["return_list", ["ok"]]]


def _run(
    server,
    ops: list,
    *,
    body: bytes = _LINES,
    method: str = "POST",
    headers=(),
    chunks=None,
    then: bytes = b"",
    pipeline: bool = False,
):
    """Run ``ops`` (wsgi.input steps) then answer 200 "ok"; return (results, exchange).

    ``results[i]`` is step i's event (``ok``, ``result`` or ``error``). ``chunks`` sends the body with
    chunked transfer coding (a 411 answer: *not supported*); ``then`` is sent on the same connection after the
    response, or pipelined behind the request with ``pipeline``."""
    _, ex, events = run_script(
        server,
        ops + _OK,
        method=method,
        headers=headers,
        body=body,
        chunks=chunks,
        then=(then,) if then else (),
        timeout=REPLY_TIMEOUT,
        pipeline=pipeline,
    )
    results = [step(events, i) for i in range(len(ops))]
    if chunks is not None and ex.final and ex.final[0].status == 411:
        not_supported(refused_for_length(ex.final[0]))
    assert ex.final and ex.final[0].status == 200, f"the script was not answered 200: {describe(ex)}"
    return results, ex


def _assert_next_answered(ex, problem: str) -> None:
    """The GET /ping sent behind the scripted request was answered "ok" — or the first response ended the
    connection (RFC 9112 §9.3), so the GET was never sent, and nothing came after it."""
    first = ex.final[0]
    if len(ex.final) < 2:
        if ends_connection(first):
            assert not ex.leftover, f"bytes after a response that ended the connection: {describe(ex)}"
            if not ex.closed:
                held_follow_up(ex, "the GET after the scripted request")
            return
        raise AssertionError(
            f"no answer to the request after it, and the response did not end the connection: {describe(ex)}"
        )
    assert len(ex.final) == 2 and ex.final[1].status == 200 and ex.final[1].body == b"ok", f"{problem}: {describe(ex)}"


def _bytes(result: dict | None, what: str) -> bytes:
    value = step_value(result, what)
    assert type(value) is bytes, f"{what} returned {type(value).__name__} {value!r:.80}, not bytes"
    return value


# -- read -------------------------------------------------------------------------------------


@spec(_INPUT, "MUST")
def test_read_with_size_returns_at_most_size_bytes(server):
    """read(n) returns bytes, at most n of them (fewer is a file's right), never b"" before EOF; successive
    reads continue where the last stopped (all within the body: reading past it is judged apart)."""
    sizes = (4, 5, 10)
    results, _ = _run(server, [["read", n] for n in sizes])
    got = [_bytes(r, f"read({n})") for r, n in zip(results, sizes)]
    assert all(0 < len(g) <= n for g, n in zip(got, sizes)), got
    assert _LINES.startswith(b"".join(got)), got


@spec(_INPUT, "SHOULD")
def test_read_without_size_returns_the_whole_body(server):
    """read() with no argument returns the whole body."""
    results, _ = _run(server, [["read"]])
    assert _bytes(results[0], "read()") == _LINES


@spec(_INPUT, "SHOULD")
def test_read_without_size_after_a_partial_read_returns_the_rest(server):
    """read() with no argument after read(n) returns the rest of the body, not nothing."""
    results, _ = _run(server, [["read", 5], ["read"]])
    assert _bytes(results[0], "read(5)") == b"line "
    assert _bytes(results[1], "read() after read(5)") == _LINES[5:]


@spec(_INPUT + " (file semantics)", "MUST")
def test_read_with_negative_size_reads_to_the_end(server):
    """read(-1) means "read to EOF", as for every Python file object."""
    needs_simulated_eof(server)
    results, _ = _run(server, [["read", -1]])
    assert _bytes(results[0], "read(-1)") == _LINES


# -- readline, readlines, iteration ------------------------------------------------------------


@spec(_INPUT, "MUST")
def test_readline_returns_each_line_with_its_newline(server):
    """readline() returns one line at a time including its b"\\n"; the last line has none; then b""."""
    needs_simulated_eof(server)
    results, _ = _run(server, [["readline"]] * 4)
    got = [_bytes(r, f"readline() #{i + 1}") for i, r in enumerate(results)]
    assert got == [b"line one\n", b"line two\n", b"last", b""], got


@spec(_INPUT, "SHOULD")
def test_readline_with_size_returns_at_most_size_bytes(server):
    """readline(n) returns at most n bytes of the current line; the next call continues that line."""
    results, _ = _run(server, [["readline", 3], ["readline", 100], ["readline", 3]])
    got = [_bytes(r, f"readline(n) #{i + 1}") for i, r in enumerate(results)]
    assert got == [b"lin", b"e one\n", b"lin"], got


@spec(_INPUT, "MUST")
def test_readlines_returns_every_line(server):
    """readlines() returns the list of every line, newlines kept."""
    needs_simulated_eof(server)
    results, _ = _run(server, [["readlines"]])
    lines = step_value(results[0], "readlines()")
    assert lines == [b"line one\n", b"line two\n", b"last"], lines
    assert all(type(x) is bytes for x in lines), [type(x).__name__ for x in lines]


@spec(_INPUT + " (readlines hint)", "DEFINED")
def test_readlines_with_hint_returns_whole_lines_from_the_start(server):
    """readlines(hint) returns complete lines in order (the hint may be ignored, never honoured mid-line); a
    server that does not take the argument at all (TypeError) passes: the hint "is optional for both caller
    and implementer"."""
    results, _ = _run(server, [["readlines", 5]])
    call = results[0]
    if call is not None and not call.get("ok") and "TypeError" in (call.get("error") or {}).get("mro", []):
        return
    lines = step_value(call, "readlines(5)")
    assert lines and all(type(x) is bytes for x in lines), lines
    assert _LINES.startswith(b"".join(lines)), lines
    assert all(x.endswith(b"\n") for x in lines[:-1]) and lines[0] == b"line one\n", lines


@spec(_INPUT, "MUST")
def test_iteration_yields_the_lines(server):
    """Iterating wsgi.input yields its lines, newlines kept, like a binary file."""
    needs_simulated_eof(server)
    results, _ = _run(server, [["iter_input"]])
    lines = step_value(results[0], "list(wsgi.input)")
    assert lines == [b"line one\n", b"line two\n", b"last"], lines


@spec(_INPUT + " (file semantics)", "MUST")
def test_read_readline_and_iteration_share_one_position(server):
    """read(n), readline() and iteration consume one stream: each continues where the previous stopped."""
    needs_simulated_eof(server)
    results, _ = _run(server, [["read", 2], ["readline"], ["iter_input"]])
    assert _bytes(results[0], "read(2)") == b"li"
    assert _bytes(results[1], "readline() after read(2)") == b"ne one\n"
    assert step_value(results[2], "list(wsgi.input) after readline()") == [b"line two\n", b"last"]


# -- EOF ---------------------------------------------------------------------------------------


@spec(_INPUT, "SHOULD")
def test_read_past_content_length_returns_the_body_then_empty(server):
    """A read larger than CONTENT_LENGTH returns the body; the read after it returns b"" (simulated EOF)."""
    results, _ = _run(server, [["read", 1000], ["read", 1000]])
    assert _bytes(results[0], "read(1000)") == _LINES
    assert _bytes(results[1], "read(1000) at EOF") == b""


@spec(_INPUT, "SHOULD")
def test_exhausted_input_returns_empty_from_every_method(server):
    """After EOF every further read returns empty: read(n), read(), readline(), readlines() and iteration."""
    ops = [["read", 1000], ["read", 1], ["read"], ["readline"], ["readlines"], ["iter_input"]]
    results, _ = _run(server, ops)
    assert _bytes(results[0], "read(1000)") == _LINES
    got = [step_value(r, " ".join(map(str, op))) for r, op in zip(results[1:], ops[1:])]
    assert got == [b"", b"", b"", [], []], got


@spec(_INPUT, "SHOULD")
def test_request_without_body_reads_empty(server):
    """A request without a body gives an empty stream: read() and readline() return b""."""
    results, _ = _run(server, [["read"], ["readline"], ["read", 10]], method="GET", body=b"")
    got = [_bytes(r, f"call #{i + 1}") for i, r in enumerate(results)]
    assert got == [b"", b"", b""], got


@spec(_INPUT, "SHOULD")
def test_input_never_returns_the_next_pipelined_request(server):
    """Reading past the body returns b"" (the simulated end of file), never the bytes of the request pipelined
    behind it."""
    results, ex = _run(server, [["read", 4096], ["read"]], body=b"hello", then=ping(server), pipeline=True)
    assert _bytes(results[0], "read(4096)") == b"hello"
    assert _bytes(results[1], "read() at EOF") == b""


@spec("RFC 9112 §6.3", "DEFINED")
def test_unread_body_does_not_become_the_next_request(server):
    """When the app reads only part of the body, the rest is discarded: the request sent after the response is
    answered as itself (or the response ended the connection), never misparsed."""
    results, ex = _run(server, [["read", 3]], body=b"GET /gatecheck-smuggled HTTP/1.1\r\n\r\n", then=ping(server))
    assert _bytes(results[0], "read(3)") == b"GET"
    _assert_next_answered(ex, "the unread body was parsed as a request")


# -- chunked uploads ---------------------------------------------------------------------------

_CHUNKS = [b"hello", b" ", b"chunked\n", b"world"]


@spec("PEP 3333 §Other HTTP Features", "MUST")
def test_chunked_body_is_decoded_before_the_app(server):
    """A chunked upload reaches the app decoded: read() returns the body without chunk framing."""
    results, _ = _run(server, [["read"]], chunks=_CHUNKS)
    got = _bytes(results[0], "read()")
    gap = unlengthed_body_gap(server)
    if got != b"".join(_CHUNKS) and gap:
        not_supported(f"read() returned {len(got)} of {len(b''.join(_CHUNKS))} bytes: {gap}")
    assert got == b"".join(_CHUNKS), got


@spec("wsgi.input_terminated (de-facto convention)", "POLICY")
def test_chunked_body_is_readable_by_a_portable_app(server):
    """A portable app can read a chunked upload: wsgi.input_terminated is true or CONTENT_LENGTH gives the
    decoded length. (Suite policy from the de-facto convention: PEP 3333 reads are CONTENT_LENGTH-driven,
    so with neither the app reads nothing.)"""
    ops = [["environ_get", "wsgi.input_terminated"], ["environ_get", "CONTENT_LENGTH"], ["read_body"]]
    results, _ = _run(server, ops, chunks=_CHUNKS)
    terminated, length = step_value(results[0], "flag"), step_value(results[1], "CONTENT_LENGTH")
    body = step_value(results[2], "read_body")
    expected = b"".join(_CHUNKS)
    assert terminated or length == str(len(expected)), (
        f"wsgi.input_terminated={terminated!r} and CONTENT_LENGTH={length!r}: a portable app cannot read "
        f"the {len(expected)}-byte chunked body"
    )
    assert body["len"] == len(expected), body


@spec("PEP 3333 §environ Variables / RFC 3875 §4.1.2", "DEFINED")
def test_chunked_body_content_length_is_absent_or_the_decoded_length(server):
    """For a chunked upload CONTENT_LENGTH is absent, empty, or the length after removing the chunking."""
    results, _ = _run(server, [["environ_get", "CONTENT_LENGTH"]], chunks=_CHUNKS)
    length = step_value(results[0], "CONTENT_LENGTH")
    assert length in (None, "", str(len(b"".join(_CHUNKS)))), f"CONTENT_LENGTH={length!r}"


@spec("wsgi.input_terminated (de-facto convention)", "POLICY")
def test_input_terminated_stream_ends_exactly_at_the_body(server):
    """POLICY (PEP 3333 is silent; the convention is mod_wsgi's, not a spec): when wsgi.input_terminated is true,
    reading to EOF yields exactly the decoded body, then b"", and the request sent after it is still answered."""
    ops = [["environ_get", "wsgi.input_terminated"], ["read", 4096], ["read", 4096], ["read", 4096]]
    results, ex = _run(server, ops, chunks=_CHUNKS, then=ping(server))
    if not step_value(results[0], "flag"):
        pytest.skip("not supported: the server does not set wsgi.input_terminated")
    got = [_bytes(r, f"read(4096) #{i + 1}") for i, r in enumerate(results[1:])]
    assert b"".join(got) == b"".join(_CHUNKS) and got[-1] == b"", got
    _assert_next_answered(ex, "the request after the chunked body was lost or misparsed")


# -- Expect: 100-continue ----------------------------------------------------------------------


@spec("PEP 3333 §HTTP 1.1 Expect/Continue", "MUST")
def test_expect_100_continue_with_an_app_that_never_reads_is_still_answered(server):
    """With Expect: 100-continue and an app that never reads wsgi.input, the client holding the body back
    gets either the final response or a 100 (after which it sends the body and gets the final response):
    no deadlock."""
    token = new_token()
    data = script_request(
        server,
        _OK,
        token=token,
        method="POST",
        headers=[("Expect", "100-continue"), ("Content-Length", "5")],
        content_length=False,
    )
    with Connection(server.address, REPLY_TIMEOUT) as conn:
        conn.send(data)
        early = conn.read_first(["POST"], REPLY_TIMEOUT)
        assert early.responses, (
            f"neither 100 nor a final response within {REPLY_TIMEOUT}s while the body was held back: {describe(early)}"
        )
        ex = early
        if not early.final:
            assert early.responses[0].status == 100, describe(early)
            conn.send(b"hello", continuation=True)
            ex = conn.read_responses(1, methods=["POST"])
    assert ex.final and ex.final[0].status == 200 and ex.final[0].body == b"ok", describe(ex)
    assert step(wait_steps(server, token, len(_OK), timeout=2.0), 0), (
        "the app's log shows no run of the script: no evidence"
    )


# -- wsgi.errors -------------------------------------------------------------------------------

_TEXTS = {"non-latin-1": "caf\u00e9 \u20ac \U0001f600 \u4e2d\n", "lone-surrogate": "bad \udc80 half\n"}


@pytest.mark.parametrize("text", list(_TEXTS.values()), ids=list(_TEXTS))
@spec(_INPUT, "SHOULD")
def test_errors_accepts_arbitrary_unicode(server, text):
    """wsgi.errors.write(str) accepts any unicode text without raising (substitution is allowed)."""
    results, _ = _run(server, [["errors_write", text]], method="GET", body=b"")
    step_value(results[0], "wsgi.errors.write")


@spec(_INPUT, "MUST")
def test_errors_writelines_and_flush_work(server):
    """wsgi.errors.writelines(seq) and flush() can be called."""
    results, _ = _run(
        server,
        [["errors_writelines", ["gatecheck one\n", "gatecheck two\n"]], ["errors_flush"]],
        method="GET",
        body=b"",
    )
    step_value(results[0], "wsgi.errors.writelines")
    step_value(results[1], "wsgi.errors.flush")
