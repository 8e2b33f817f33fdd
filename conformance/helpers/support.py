"""What a target does that some checks need and no rule of theirs requires, found once per target: whether it
serves pipelined requests, whether its app can read a request body that has no Content-Length.

    needs_pipelining(server)        # the check pipelines: *not supported* where the target does not serve it
    body_not_read(server, resp, expected)  # after a chunked upload's answer that does not show the body read
    needs_simulated_eof(server)     # a WSGI check whose app reads wsgi.input to its end

Rules of this module:

1. Each answer is found with one exchange per target (cached on the target's ``StartedServer``), and a check
   that needs what the target lacks is *not supported*, never failed: the rule under test is not the one the
   target lacks (RFC 9112 §9.3.2 lets a client pipeline, it obliges no server to answer in parallel; RFC 9112
   §6.3 lets a server answer 411 to a body without Content-Length; PEP 3333 gives a WSGI app no portable way to
   read a body without CONTENT_LENGTH unless the server sets ``wsgi.input_terminated``). The checks whose rule
   *is* the missing behaviour (``test_http1_connection.py``'s pipelining, ``test_wsgi_input.py``'s POLICY check
   of a portable read and its SHOULD check of a simulated end of file) judge it themselves. PEP 3333: a server
   "should simulate an end-of-file condition if the application attempts to read past" CONTENT_LENGTH, and "the
   application should not attempt to read more data than is specified": where the server does not, a MUST
   check of ``wsgi.input``'s file semantics that reads to the end has nothing it may judge.
2. An exchange that shows nothing (no answer at all, garbage) says nothing: the checks then run and judge what
   they see, so a broken server still fails them.
3. A chunked upload is sent first and judged after: only an answer the missing read explains (a 411; on the
   WSGI gap, a 2xx without the body or the server's 500 for the app's empty answer) is *not supported*; any
   other answer (a 501 for a valid Transfer-Encoding, a 400) is judged by the check.
"""

from __future__ import annotations

from gatecheck.conformance.app import decode_probe, new_token, run_script, step, wsgi_environ
from gatecheck.conformance.client.http1 import Connection, ParseError, build_request, ending_of
from gatecheck.conformance.spec.results import not_supported
from gatecheck.fixtures import TOKEN_HEADER

__all__ = [
    "pipelining_gap",
    "needs_pipelining",
    "unlengthed_body_gap",
    "body_not_read",
    "refused_for_length",
    "eof_gap",
    "needs_simulated_eof",
]

_TIMEOUT = 3.0
_PORTABLE_READ = "test_wsgi_input.py::test_chunked_body_is_readable_by_a_portable_app"


def _found(server) -> dict:
    found = getattr(server, "_gatecheck_found", None)
    if found is None:
        found = {}
        server._gatecheck_found = found
    return found


_ENDS = "it ends the connection after one response"


def pipelining_gap(server) -> str | None:
    """Why the target does not serve pipelined requests, or None when it answers two pipelined ``GET /ping``
    in order (or when the exchange shows nothing, rule 2)."""
    found = _found(server)
    if "pipelining" not in found:
        found["pipelining"] = _pipelining(server)
    return found["pipelining"]


def _pipelining(server) -> str | None:
    tokens = [new_token(), new_token()]
    data = b"".join(build_request("GET", "/ping", [(TOKEN_HEADER, t)], host=server.authority) for t in tokens)
    try:
        with Connection(server.address, _TIMEOUT) as conn:
            conn.send(data)
            ex = conn.read_responses(2, methods=["GET", "GET"])
    except (OSError, ParseError):
        return None
    got = [(r.status, r.body) for r in ex.final]
    if not got or got[0] != (200, b"ok") or len(got) >= 2:
        return None
    if ending_of(ex.final[0]):
        return f"{_ENDS} ({ending_of(ex.final[0])})"
    if ex.closed:
        return "it closed the connection after the first of two pipelined requests"
    return "it answered the first of two pipelined requests and then neither the second nor closed"


def needs_pipelining(server, *, first_judged: bool = False) -> None:
    """*Not supported* where the target does not serve pipelined requests (rule 1). ``first_judged``: the check
    judges the first response with the next request's bytes behind it, which a target that ends every
    connection after one response (and says so) answers as well as any other."""
    gap = pipelining_gap(server)
    if gap and not (first_judged and gap.startswith(_ENDS)):
        not_supported(f"this check pipelines requests, and the target does not serve pipelined requests: {gap}")


def unlengthed_body_gap(server) -> str | None:
    """Why the target's app cannot read a request body sent without Content-Length (chunked), or None."""
    found = _found(server)
    if "unlengthed" not in found:
        found["unlengthed"] = _unlengthed(server)
    return found["unlengthed"]


def _unlengthed(server) -> str | None:
    body = b"gatecheck"
    data = build_request(
        "POST",
        "/probe/unlengthed",
        [("Transfer-Encoding", "chunked")],
        b"%x\r\n%s\r\n0\r\n\r\n" % (len(body), body),
        host=server.authority,
        content_length=False,
    )
    try:
        with Connection(server.address, _TIMEOUT) as conn:
            conn.send(data)
            ex = conn.read_responses(1, methods=["POST"])
    except (OSError, ParseError):
        return None
    if not ex.final:
        return None
    resp = ex.final[0]
    if resp.status == 411:
        return refused_for_length(resp)
    if resp.status != 200 or server.interface != "wsgi":
        return None
    try:
        doc = decode_probe(resp.body)
        env = wsgi_environ(doc)
    except (ValueError, KeyError, TypeError):
        return None
    if doc.get("body_len") == len(body):
        return None
    length, terminated = env.get("CONTENT_LENGTH"), env.get("wsgi.input_terminated")
    if not terminated and length in (None, ""):
        return (
            f"for a chunked request the server sets neither CONTENT_LENGTH nor wsgi.input_terminated "
            f"(CONTENT_LENGTH={length!r}, wsgi.input_terminated={terminated!r}), so a WSGI app has no portable "
            f"way to read the body (PEP 3333); {_PORTABLE_READ} carries that gap"
        )
    return None


def body_not_read(server, resp, expected: bytes | None = None) -> None:
    """After the answer to a chunked upload whose body the app must read (rule 3): *not supported* when the
    answer is a 411 or, on a target whose WSGI app cannot read such a body, a 2xx without ``expected`` (None:
    any 2xx) or a 500; otherwise the check judges the answer."""
    if resp.status == 411:
        not_supported(refused_for_length(resp))
    gap = unlengthed_body_gap(server)
    if gap is None or gap.startswith(_LENGTH_REQUIRED) or expected == b"":  # an empty body needs no read
        return
    unread = (200 <= resp.status < 300 and (expected is None or resp.body != expected)) or resp.status == 500
    if unread:
        not_supported(f"the check's chunked body was not read ({resp.status}, {len(resp.body)} body bytes): {gap}")


_LENGTH_REQUIRED = "the server answers"


def refused_for_length(resp) -> str:
    """The reason for a ``411 (Length Required)``: RFC 9112 §6.3 lets a server refuse a body without
    Content-Length."""
    return (
        f"the server answers {resp.status} (Length Required) to a body without Content-Length (RFC 9112 §6.3 allows it)"
    )


_READ_PAST = "test_wsgi_input.py::test_read_past_content_length_returns_the_body_then_empty"


def eof_gap(server) -> str | None:
    """Why the WSGI target's ``wsgi.input`` gives no end of file at CONTENT_LENGTH, or None (rule 1)."""
    found = _found(server)
    if "eof" not in found:
        found["eof"] = _eof(server)
    return found["eof"]


def _eof(server) -> str | None:
    body = b"hello"
    steps = [
        ["read", 64],
        ["read", 64],
        ["read", 64],
        ["start_response", "200 OK", [["Content-Type", "text/plain"]]],
        ["return_list", ["ok"]],
    ]
    try:
        run = run_script(server, steps, method="POST", body=body, timeout=_TIMEOUT, steps_timeout=0.5)
    except (OSError, ParseError):
        return None
    reads = [step(run.events, i) for i in range(3)]
    if not run.exchange.final and reads[0] is not None:
        return (
            f"an app reading past CONTENT_LENGTH is not answered within {_TIMEOUT:.0f} s (its read waits for more "
            f"input: no end of file is simulated)"
        )
    got = [r.get("result") for r in reads if r is not None and r.get("ok")]
    if len(got) == 3 and all(isinstance(g, bytes) for g in got) and len(b"".join(got)) > len(body):
        return f"reads past CONTENT_LENGTH return bytes that are not the body ({b''.join(got)[:40]!r})"
    return None


def needs_simulated_eof(server) -> None:
    """*Not supported* where ``wsgi.input`` simulates no end of file at CONTENT_LENGTH (rule 1)."""
    gap = eof_gap(server)
    if gap:
        not_supported(
            f"this check's app reads wsgi.input to its end, and the server simulates no end of file at "
            f"CONTENT_LENGTH ({gap}); that PEP 3333 should is judged by {_READ_PAST}"
        )
