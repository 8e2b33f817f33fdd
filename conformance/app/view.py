"""The fixture app as the checks see it: tokens, scripts, one way to run a script, event waits, probe decoders.

The fixture apps (``fixtures/apps``, routes in fixtures/ROUTES.md) run a JSON script named in the target
(``/script?s=<json>``), log what they did under the request's token (``x-gatecheck-token``), and describe
what they were handed on the probe routes. This module is that contract seen from the checks' side:

    token = new_token()
    run = run_script(server, [["start", 200], ["body", "a"]])      # HTTP/1.1; over="h2" for HTTP/2
    assert run.responses[0].status == 200 and run.step(1)["ok"]
    doc = probe(server, "/probe?a=b")                             # what the app was handed, decoded

Rules of this module:

1. It builds request *targets* and reads *events*; the bytes on the wire stay with ``conformance.client``
   (HTTP/1, HTTP/2, WebSocket), so a check still controls exactly what is sent.
2. Event readers never wait unboundedly: every wait has a deadline; :func:`wait_steps` and
   :func:`events_until` return what is there at the deadline (a check reports what is missing).
3. Step events are matched by their ``index`` (the step's position after ``repeat`` expansion) or by a
   ``label`` option, never by counting lines, so extra log lines (watchers, disconnects) cannot shift them.
4. "The app never saw it" is read after a barrier, not after a fixed wait: a later request, sent once the
   server had refused (or answered) the one in question, served on a new connection and logged; only then,
   and ``NEVER_GRACE`` later, is the token's log read (:func:`h2_never_logged`; ``wire.assert_never_parsed``
   for HTTP/1.1). A server that hands a refused request to its app does so as it refuses it, before it reads
   the later one; the barrier also proves the log works, so an empty log is evidence.
5. A script the fixture app could not read (it logs ``script.error`` and answers its own 400) is never evidence:
   every reader of a token's events raises :class:`CheckError` (the check's outcome is "error") naming the
   query string the app was handed.
"""

from __future__ import annotations

import json
import os
import random
from typing import NamedTuple
from urllib.parse import quote

from gatecheck import fixtures
from gatecheck.conformance.app.events import (
    events_of,
    events_until,
    named,
    step,
    step_value,
    steps_of,
    wait_event,
    wait_step,
    wait_steps,
)
from gatecheck.conformance.app.probes import (
    app_view,
    asgi_scope,
    decode_probe,
    rsgi_attrs,
    rsgi_headers,
    value_of,
    wsgi_environ,
)
from gatecheck.conformance.app.probing import h2_get, h2_probe, probe
from gatecheck.conformance.client.http1 import Connection, Exchange, build_request
from gatecheck.conformance.client.ws import connect as ws_connect

__all__ = [
    "TOKEN_HEADER",
    "new_token",
    "script_target",
    "script_request",
    "chunked",
    "ping",
    "run_script",
    "ScriptRun",
    "ws_open",
    "ws_script",
    "ws_accepted",
    "ws_steps",
    "response_script",
    "events_of",
    "steps_of",
    "step",
    "named",
    "step_value",
    "wait_event",
    "wait_step",
    "wait_steps",
    "events_until",
    "probe",
    "h2_get",
    "h2_probe",
    "decode_probe",
    "value_of",
    "asgi_scope",
    "wsgi_environ",
    "rsgi_attrs",
    "rsgi_headers",
    "app_view",
    "random_bytes",
    "NEVER_GRACE",
    "BARRIER_LOG_TIMEOUT",
    "h2_never_logged",
]

#: the header that carries a request's event-log token (lower-case: HTTP/2 needs it so)
TOKEN_HEADER = fixtures.TOKEN_HEADER

#: how long a connection that a response ended gets to close, when a follow-up request is held back
_CLOSE_WAIT = 1.5

#: rule 4: once the barrier request was served and logged, how much longer an earlier request has to show up
NEVER_GRACE = 0.05
#: rule 4: how long the barrier request's own event may take to appear in the log
BARRIER_LOG_TIMEOUT = 2.0


def new_token() -> str:
    """A fresh event-log token for one check (``fixtures.new_token``: the apps accept ``[A-Za-z0-9_-]{1,64}``)."""
    return fixtures.new_token("c")


# -- scripts ----------------------------------------------------------------------------------------


def script_target(steps: list, path: str = "/script") -> str:
    """The request target that makes the fixture app run ``steps`` (JSON, percent-encoded)."""
    text = json.dumps(steps, separators=(",", ":"))
    return f"{path}?s={quote(text, safe='')}"


def script_request(
    server,
    steps: list,
    *,
    token: str | None,
    method: str = "GET",
    headers=(),
    body: bytes = b"",
    version: str = "HTTP/1.1",
    content_length: bool = True,
) -> bytes:
    """A complete HTTP/1.x request for a scripted route, carrying ``token`` (None: no event log)."""
    all_headers = list(headers)
    if token is not None:
        all_headers.append((TOKEN_HEADER, token))
    return build_request(
        method,
        script_target(steps),
        all_headers,
        body,
        version=version,
        host=server.authority,
        content_length=content_length,
    )


def chunked(chunks) -> bytes:
    """A chunked message body carrying ``chunks`` (empty ones skipped), with the last-chunk."""
    return b"".join(b"%x\r\n%s\r\n" % (len(c), c) for c in chunks if c) + b"0\r\n\r\n"


def ping(server) -> bytes:
    """``GET /ping`` for this server, to pipeline behind a request: it must come back as 200 "ok"."""
    return build_request("GET", "/ping", host=server.authority)


class ScriptRun(NamedTuple):
    """One scripted exchange: its token, what came back (an http1 ``Exchange``, or an h2 ``StreamState``)
    and what the app logged (empty when the run did not wait for the steps)."""

    token: str | None
    exchange: object
    events: list

    @property
    def responses(self) -> list:
        return self.exchange.final

    def step(self, index: int) -> dict | None:
        return step(self.events, index)


def run_script(
    server,
    steps: list,
    *,
    over: str = "http1",
    then=(),
    count: int | None = None,
    method: str = "GET",
    headers=(),
    body: bytes = b"",
    chunks=None,
    version: str = "HTTP/1.1",
    token: str | None = "new",
    timeout: float = 5.0,
    wait: bool = True,
    steps_timeout: float | None = None,
    tls: bool = False,
    pipeline: bool = False,
) -> ScriptRun:
    """Send one scripted request on a new connection and return a :class:`ScriptRun`.

    ``over``: "http1" (the request exactly as asked: Content-Length, or chunked when ``chunks`` is given;
    then the raw GET requests in the tuple ``then``, each once the previous response came, as long as the
    connection persists (the exchange's ``held`` says why one was not sent); with ``pipeline`` they go in the
    same write, for the checks whose rule is pipelining; up to ``count`` final responses read, default
    1 + len(then)) or "h2" (one stream; ``exchange`` is its ``StreamState``). ``token=None``
    sends no event-log token; ``tls`` sends it over TLS. ``timeout`` bounds the reply; then, unless ``wait``
    is false, the script's steps are waited for (:func:`wait_steps`, up to ``steps_timeout``, default ``timeout``)."""
    token = new_token() if token == "new" else token
    if over == "h2":
        h2_headers = list(headers) + ([(TOKEN_HEADER, token)] if token is not None else [])
        result = h2_get(server, script_target(steps), h2_headers, method=method, body=body, timeout=timeout, tls=tls)
    else:
        result = _run_http1(
            server,
            steps,
            token,
            then=then,
            count=count,
            method=method,
            headers=headers,
            body=body,
            chunks=chunks,
            version=version,
            timeout=timeout,
            tls=tls,
            pipeline=pipeline,
        )
    events = []
    if wait and token is not None:
        events = wait_steps(server, token, len(steps), timeout=timeout if steps_timeout is None else steps_timeout)
        _assert_not_canned(result, events)
    return ScriptRun(token, result, events)


def _assert_not_canned(result, events: list) -> None:
    """A 1xx-3xx final answer to a script, with nothing in the app's log for its token, is not the app's (a
    canned answer): no check may take it as evidence (a server's own 4xx/5xx needs no app, checks judge it)."""
    if events:
        return
    statuses = [r.status for r in result.final] if isinstance(result, Exchange) else [result.status]
    first = statuses[0] if statuses else None
    assert first is None or first >= 400, (
        f"the script was answered {first}, and the app's log shows no run of it: the answer is not the app's "
        f"(no evidence)"
    )


def _run_http1(
    server, steps, token, *, then, count, method, headers, body, chunks, version, timeout, tls, pipeline
) -> Exchange:
    count = count if count is not None else 1 + len(then)
    headers, content_length = list(headers), True
    if chunks is not None:
        body, content_length = chunked(chunks), False
        headers.append(("Transfer-Encoding", "chunked"))
    data = script_request(
        server,
        steps,
        token=token,
        method=method,
        headers=headers,
        body=body,
        version=version,
        content_length=content_length,
    )
    with Connection(server.address, timeout, tls=tls) as conn:
        if pipeline or not then:
            conn.send(data + b"".join(then))
            return conn.read_responses(count, methods=[method] + ["GET"] * (count - 1))
        conn.send(data)
        ex = conn.read_responses(count - len(then), methods=[method])
        for follow in then:
            if not ex.final or not conn.may_send():
                why = conn.ending or ("the server closed the connection" if conn.closed else "no response came")
                if conn.ending and not conn.closed:  # whatever comes after the response, until the close
                    before = len(conn.buffer)
                    conn.wait_closed(_CLOSE_WAIT)
                    ex = Exchange(ex.responses, conn.closed, conn.buffer, ex.timed_out, ex.raw + conn.buffer[before:])
                ex.held = f"the follow-up request was not sent: {why}"
                break
            conn.send(follow)
            more = conn.read_responses(1, methods=["GET"])
            ex = Exchange(ex.responses + more.responses, more.closed, more.leftover, more.timed_out, ex.raw + more.raw)
        return ex


def ws_open(
    server, target: str, *, token: str | None = None, protocols=(), headers=(), timeout: float = 5.0, tls: bool = False
):
    """A WebSocket connection to ``target`` (``tls``: wss), its handshake sent with ``token`` (when given)
    in the event-log header; ``conn.handshake`` says what came back."""
    extra = [(TOKEN_HEADER, token)] if token else []
    return ws_connect(
        server.address,
        target,
        server.authority,
        protocols=protocols,
        headers=extra + list(headers),
        timeout=timeout,
        tls=tls,
    )


def ws_script(server, steps: list, **kw) -> tuple:
    """Run ``steps`` on a new WebSocket connection (options as :func:`ws_open`); (connection, token)."""
    token = new_token()
    return ws_open(server, script_target(steps), token=token, **kw), token


def ws_accepted(conn):
    """``conn`` once its handshake was answered 101; otherwise close it and fail showing the answer."""
    hs = conn.handshake
    if hs.status != 101:
        conn.close()
        raise AssertionError(f"handshake answered {hs.status}: {hs.raw[:300]!r}")
    return conn


def ws_steps(server, token: str, timeout: float = 5.0) -> dict:
    """{index: step event} once the WebSocket script has ended (TimeoutError with the events otherwise)."""
    wait_event(server, token, "script.end", timeout)
    return {e["index"]: e for e in named(events_of(server, token), "step")}


def response_script(
    interface: str, status: int, headers=(), chunks=(), pause: float = 0.0, *, read_body: bool = False
) -> list:
    """Steps that answer ``status`` with ``headers`` and the body ``chunks`` (str, or ``{"size": n}`` for n
    payload bytes), sent one by one with ``pause`` seconds between them, in the interface's own vocabulary
    (ASGI start/body, RSGI stream/send_bytes, WSGI start_response/yield); ``read_body`` reads the whole
    request body first. ``script_target(steps)`` is the request target that runs them."""
    headers, chunks = [list(h) for h in headers], list(chunks)
    steps = [[_READ_BODY[interface]]] if read_body else []
    if interface == "asgi":
        steps.append(["start", status, headers])
        for i, chunk in enumerate(chunks):
            if i and pause:
                steps.append(["sleep", pause])
            steps.append(["body", chunk, i < len(chunks) - 1])
        return steps if chunks else steps + [["body", ""]]
    if interface == "rsgi" and len(chunks) <= 1 and not pause:
        return steps + [["response_bytes", status, headers, chunks[0] if chunks else ""]]
    if interface == "rsgi":
        steps.append(["stream", status, headers])
    else:
        steps.append(["start_response", f"{status} {_REASONS.get(status, 'Status')}", headers])
    for i, chunk in enumerate(chunks):
        if i and pause:
            steps.append(["sleep", pause])
        steps.append(["send_bytes" if interface == "rsgi" else "yield", chunk])
    return steps


_REASONS = {200: "OK", 204: "No Content", 299: "Gatecheck", 304: "Not Modified"}
_READ_BODY = {"asgi": "receive_all", "rsgi": "read_all", "wsgi": "read_body"}


def h2_never_logged(server, token: str) -> list:
    """What the app logged under ``token``, read after an HTTP/2 barrier (rule 4): a ``GET /ping`` on a new
    connection, answered 200 and logged, then ``NEVER_GRACE``. An empty list is the evidence that a request
    the server refused never reached the app."""
    later = new_token()
    resp = h2_get(server, "/ping", [(TOKEN_HEADER, later)])
    assert (resp.status, resp.body) == (200, b"ok"), (
        f"after the refused request, a plain HTTP/2 GET /ping on a new connection: {resp.describe()}"
    )
    assert server.events(later, timeout=BARRIER_LOG_TIMEOUT), (
        "the app's event log shows nothing for a served request, so its silence on the refused one is no evidence"
    )
    return server.events(token, timeout=NEVER_GRACE)


def random_bytes(size: int, seed: int) -> bytes:
    """Deterministic pseudo-random bytes (all 256 values occur), so a failure is reproducible."""
    if size == 0:
        return b""
    rng = random.Random(seed)
    return rng.randbytes(size) if hasattr(rng, "randbytes") else os.urandom(size)
