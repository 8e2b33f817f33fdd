"""Sending a framing mutation and reading what came of it: the responses, the close, and what the app saw.

``observe(server, mutation)`` sends one mutation of ``conformance/spec/framing.py`` on a new connection (its
request runs a script that reads the whole body and answers 200), reads what the grammar says should come back,
and reads the app's log under the request's token and the hidden request's token (after a barrier, so an
absence is evidence). The observation is kept per server and mutation, so the checks that judge the same
mutation (read as the grammar reads it; answered 400; closed) share one exchange. ``problems`` judges an
observation against the grammar's reading; ``label`` says in a few characters how the server read it (the
differential table). Every read is bounded (``wire.REPLY_TIMEOUT``, ``wire.CLOSE_WAIT``).
"""

from __future__ import annotations

import hashlib
import os
import socket
import time
from dataclasses import dataclass, field

from gatecheck.conformance.app import (
    BARRIER_LOG_TIMEOUT,
    NEVER_GRACE,
    events_of,
    new_token,
    response_script,
    script_target,
    step,
)
from gatecheck.conformance.client.http1 import Connection, Exchange, ParseError, parse_responses
from gatecheck.conformance.helpers.wire import CLOSE_WAIT, REPLY_TIMEOUT, request, smuggled_request
from gatecheck.conformance.spec.framing import COMPLETE, INCOMPLETE, INVALID, Mutation, declared_length
from gatecheck.conformance.spec.grammar import Reading, read_stream

__all__ = ["Seen", "Observation", "observe", "problems", "label", "INCOMPLETE_WAIT"]

#: how long a server gets to show it waits for the rest of an incomplete request (no answer meanwhile)
INCOMPLETE_WAIT = 0.5
_READ_OP = {"asgi": "receive_all", "rsgi": "read_all", "wsgi": "read_body"}
_CACHE: dict = {}
#: servers whose app logged nothing for a served barrier request ((address, event folder)): while their event
#: folder stays empty, a mutation sent there could show nothing, so it is not sent (each would cost its deadlines)
_SILENT: set = set()


@dataclass
class Seen:
    """What the app logged for one token: ``called`` (request.start), the method, and its body read:
    ``read`` is "complete" (``body`` the bytes, or None where the interface cannot show them), "failed"
    (raised, a disconnect, or a short read the app can tell), or "" (no read logged)."""

    called: bool = False
    method: str | None = None
    read: str = ""
    body: bytes | None = None
    sha256: str | None = None
    length: int | None = None
    mode: str = ""


@dataclass
class Observation:
    mutation: Mutation
    reading: Reading
    data: bytes
    exchange: Exchange | None
    closed: bool
    waited: bool  # an incomplete request got no answer while the server waited for the rest
    error: str = ""  # the responses could not be parsed (shown; judged as a failure)
    seen: dict = field(default_factory=dict)  # token -> Seen
    tokens: tuple = ()  # (the request's token, the hidden request's token)

    @property
    def finals(self) -> list:
        return self.exchange.final if self.exchange is not None else []


def _steps(interface: str) -> list:
    read = [_READ_OP[interface], {"reraise": True}]
    return [read] + response_script(interface, 200, [("content-type", "text/plain")], ["done"])


def observe(server, mutation: Mutation) -> Observation:
    """The observation of ``mutation`` on ``server`` (made once per server and mutation)."""
    key = (server.address, server.interface, mutation.name)
    if key not in _CACHE:
        _CACHE[key] = _observe(server, mutation)
    return _CACHE[key]


def _observe(server, mutation: Mutation) -> Observation:
    _app_has_logged(server)
    token, hidden = new_token(), new_token()
    target = script_target(_steps(server.interface)).encode()
    data = mutation.data(target, server.authority.encode(), token, hidden)
    reading = read_stream(data, mutation.eof)
    methods = [m.method.decode("latin-1") for m in reading.messages] + [mutation.method.decode("latin-1")] * 2
    obs = Observation(mutation, reading, data, None, False, False, tokens=(token, hidden))
    try:
        _exchange(server, obs, methods)
    except ParseError as exc:
        obs.error = str(exc)[:600]
    obs.seen = _seen(server, obs)
    return obs


def _exchange(server, obs: Observation, methods: list) -> None:
    with Connection(server.address, REPLY_TIMEOUT) as conn:
        try:
            _send_and_read(server, conn, obs, methods)
        except ParseError:  # bytes that are no response: whether the server then closed is still seen
            if not conn.closed:
                conn.wait_closed(CLOSE_WAIT)
            raise
        finally:
            obs.closed = conn.closed


def _send_and_read(server, conn: Connection, obs: Observation, methods: list) -> None:
    reading, count = obs.reading, len(obs.reading.messages)
    conn.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    try:
        conn.send(obs.data)
        if obs.mutation.eof:
            conn.sock.shutdown(socket.SHUT_WR)
    except OSError:
        pass  # the server may have refused and closed before the last octets
    if reading.end == COMPLETE:
        obs.exchange = conn.read_responses(count, methods=methods)
        all_answered = count and len(obs.exchange.final) >= count
        if all_answered and conn.may_send():
            _flush(server, conn)
        elif all_answered and not conn.closed:
            conn.wait_closed(CLOSE_WAIT)  # the response said close: what came after it, up to the close
            parse_responses(conn.buffer, methods=["GET"], closed=True)  # bytes that begin no response raise
    elif reading.end == INVALID or obs.mutation.eof:
        obs.exchange = conn.read_responses(count + 1, methods=methods)
        if not conn.closed:
            conn.wait_closed(CLOSE_WAIT)
    else:  # incomplete and the client still there: the server waits for the rest, answering nothing yet
        obs.exchange = conn.read_responses(
            count + 1, methods=methods, timeout=INCOMPLETE_WAIT if not count else REPLY_TIMEOUT
        )
        obs.waited = len(obs.exchange.final) <= count and not conn.closed
        if not (obs.exchange.final[count:] or conn.closed):
            obs.exchange = _after(conn, obs.exchange, count, methods)
        elif not conn.closed:
            conn.wait_closed(CLOSE_WAIT)


def _flush(server, conn: Connection) -> None:
    """After the responses the grammar accounts for, a follow-up request on the kept-alive connection, read up to
    its own answer (its body is its token): bytes the server sent after those responses (content after a HEAD
    response's head) are then read however late they come, and raise ``ParseError`` as any bytes that cannot
    begin a response do. Responses before the follow-up's answer are read past, not judged here."""
    token = new_token()
    steps = response_script(server.interface, 200, [("content-type", "text/plain")], [token])
    conn.send(request(server, "GET", script_target(steps)))
    for _ in range(4):
        more = conn.read_responses(1, methods=["GET"])
        if not more.final or more.final[-1].body == token.encode() or not conn.may_send():
            return


def _after(conn: Connection, ex: Exchange, count: int, methods: list) -> Exchange:
    """The client ends its side; whatever the server then sends, until it closes (or the wait ends)."""
    try:
        conn.sock.shutdown(socket.SHUT_WR)
    except OSError:
        pass
    more = conn.read_responses(1, methods=methods[count:])
    if not conn.closed:
        conn.wait_closed(CLOSE_WAIT)
    return Exchange(ex.responses + more.responses, conn.closed, conn.buffer, more.timed_out, ex.raw + more.raw)


def _seen(server, obs: Observation) -> dict:
    """What the app logged for each token: the expected ones once their read is logged, then (after a barrier:
    a request on a new connection served and logged) the rest."""
    expected = {m.token for m in obs.reading.messages}
    seen = {}
    for token in obs.tokens:
        if token in expected:
            events = server.events(token, timeout=BARRIER_LOG_TIMEOUT)
            if events and step(events, 0) is None:
                events = _until_read(server, token)
            seen[token] = _decode(events, server.interface)
    _barrier(server)
    for token in obs.tokens:
        if token not in seen:
            seen[token] = _decode(server.events(token, timeout=NEVER_GRACE), server.interface)
    return seen


def _until_read(server, token: str) -> list:
    """The token's events once its body read (step 0) or the end of its script is logged, or at the deadline."""
    events = []
    for _ in range(int(BARRIER_LOG_TIMEOUT / 0.05)):
        events = events_of(server, token)
        if step(events, 0) is not None or any(e.get("event") in ("request.end", "script.end") for e in events):
            break
        time.sleep(0.05)
    return events


_SILENT_LOG = "the app's log shows nothing for a served request, so its silence on the others is no evidence"


def _barrier(server) -> None:
    token = new_token()
    with Connection(server.address, REPLY_TIMEOUT) as conn:
        conn.send(smuggled_request(server, token))
        ex = conn.read_responses(1, methods=["GET"])
    assert ex.final and ex.final[0].status == 200, (
        f"after the mutation, a plain GET /ping on a new connection got {ex.raw[:200]!r}: no barrier for the log"
    )
    if not server.events(token, timeout=BARRIER_LOG_TIMEOUT):
        _SILENT.add(_log_key(server))
        raise AssertionError(_SILENT_LOG)


def _log_key(server) -> tuple:
    return (server.address, str(getattr(server, "event_dir", "")))


def _app_has_logged(server) -> None:
    """Raise at once where an earlier barrier found the app's log empty and its event folder still holds
    nothing: the app has logged no request on this server at all."""
    if _log_key(server) not in _SILENT:
        return
    folder = getattr(server, "event_dir", None)
    try:
        with os.scandir(folder) as entries:
            logged = any(True for _ in entries)
    except (OSError, TypeError):
        logged = True  # no folder to read: the barrier decides, as for any server
    if logged:
        _SILENT.discard(_log_key(server))
        return
    raise AssertionError(
        f"{_SILENT_LOG} (a served GET /ping left no event, and the app has logged nothing on this server since)"
    )


def _decode(events: list, interface: str) -> Seen:
    seen = Seen()
    for event in events:
        if event.get("event") == "request.start":
            seen.called, seen.method = True, event.get("method")
    read = step(events, 0)
    if read is None:
        return seen
    if not read.get("ok"):
        seen.read = "failed"
        return seen
    result = read.get("result")
    if interface == "asgi":
        last = result.get("last") or {}
        done = last.get("type") == "http.request" and not last.get("more_body")
        seen.read, seen.body = ("complete" if done else "failed"), bytes(result.get("body") or b"")
    elif interface == "rsgi":
        seen.read, seen.body = "complete", bytes(result or b"")
    else:
        seen.read = "complete"
        seen.sha256, seen.body = result.get("sha256"), None
        seen.length, seen.mode = result.get("len"), result.get("mode")
    return seen


def _body_matches(seen: Seen, body: bytes, chunked: bool) -> str:
    """ "" when the app's completed read is ``body``; else what it read instead. WSGI shows a sha256; on a
    chunked request without ``wsgi.input_terminated`` it reads CONTENT_LENGTH (absent: nothing), so no body
    is shown; in content-length mode a short read is one the app can tell (it is not a complete read)."""
    if seen.body is not None:
        return "" if seen.body == body else f"{len(seen.body)} octets {seen.body[:40]!r}"
    if seen.mode == "content-length" and chunked:
        return ""
    if seen.sha256 == hashlib.sha256(body).hexdigest():
        return ""
    return f"{seen.length} octets (sha256 {str(seen.sha256)[:12]})"


def _method_ok(seen: Seen, method: bytes, interface: str) -> bool:
    sent = method.decode("latin-1")
    # ASGI: "method (Unicode string) -- The HTTP method name, uppercased."
    return seen.method == sent or (interface == "asgi" and seen.method == sent.upper())


# -- judging --------------------------------------------------------------------------------------------


def problems(obs: Observation, interface: str) -> list:
    """How the server's reading of the mutation differs from every answer the grammar allows ([] when none)."""
    if obs.error:
        return [obs.error]
    out, finals, stopped = [], obs.finals, False
    chunked = obs.mutation.framing == "chunked"
    for i, message in enumerate(obs.reading.messages):
        seen, resp = obs.seen[message.token], finals[i] if i < len(finals) else None
        if stopped:
            out += [f"request {i + 1} was processed after the server had stopped"] if seen.called else []
        elif seen.called:
            out += _complete_read(seen, message, resp, interface, chunked, i)
        elif resp is not None and resp.status >= 400 and obs.mutation.refusable:
            stopped = obs.closed
        elif resp is None and i and obs.closed:
            stopped = True  # the server closed after the previous response (a server may close at any time)
        else:
            what = f"answered {resp.status} without the app" if resp is not None else "never reached the app"
            out.append(f"request {i + 1}, complete by the grammar ({len(message.body)}-octet body), {what}")
    if obs.reading.end != COMPLETE:
        out += _broken(obs, interface, chunked)
    expected = {m.token for m in obs.reading.messages} | ({obs.reading.partial.token} if obs.reading.partial else set())
    for token in obs.tokens:
        if token not in expected and obs.seen[token].called:
            which = "the hidden request (body octets)" if token == obs.tokens[1] else "the request"
            out.append(f"{which} reached the app, though the grammar reads no such request there")
    return out


def _complete_read(seen: Seen, message, resp, interface: str, chunked: bool, i: int) -> list:
    out = []
    if not _method_ok(seen, message.method, interface):
        out.append(f"request {i + 1}: the app saw method {seen.method!r}, sent {message.method!r}")
    if seen.read == "complete":
        wrong = _body_matches(seen, message.body, chunked and i == 0)
        if wrong:
            out.append(f"request {i + 1}: the app read {wrong}, the grammar frames {len(message.body)} octets")
    elif seen.read == "failed":
        out.append(f"request {i + 1}: the app's read of a complete {len(message.body)}-octet body failed")
    if resp is None:
        out.append(f"request {i + 1} reached the app but got no response")
    elif resp.status != 200:
        out.append(f"request {i + 1} reached the app, which answered 200; the response was {resp.status}")
    return out


def _broken(obs: Observation, interface: str, chunked: bool) -> list:
    """The request the grammar reads as invalid or incomplete: never read as complete, never answered 2xx, and
    the connection ends (an invalid one: answered or closed; an incomplete one: no answer while the client is
    there, a close once it has ended its side)."""
    out, count = [], len(obs.reading.messages)
    partial = obs.reading.partial
    seen = obs.seen.get(partial.token) if partial is not None else None
    tellable = seen is not None and interface == "wsgi" and _tellable(seen, obs)
    # a request invalid only in its trailer section had its body decoded whole: reading that body is no error
    # of framing (the 400 and the close are judged apart)
    whole = (
        partial is not None
        and partial.decoded
        and seen is not None
        and seen.read == "complete"
        and not _body_matches(seen, partial.body, True)
    )
    if seen is not None and seen.read == "complete" and not tellable and not whole:
        body = seen.body if seen.body is not None else f"{seen.length} octets"
        out.append(f"the app read the {obs.reading.end} request as complete: {body!r:.80}")
    later = obs.finals[count:]
    # the app was told (a failed read, or a WSGI read it can tell is short): what it answered then is its own
    told = seen is not None and (seen.read == "failed" or tellable or whole)
    if later and 200 <= later[0].status < 300 and not told:
        out.append(f"the {obs.reading.end} request was answered {later[0].status}")
    if obs.reading.end == INCOMPLETE and not obs.mutation.eof and not obs.waited and not later:
        out.append("the server closed while the client was still sending the incomplete request")
    if not obs.closed and not later:
        out.append(
            f"the server neither answered the {obs.reading.end} request nor closed "
            f"({REPLY_TIMEOUT + CLOSE_WAIT:.1f} s): it hangs"
        )
    return out


def _tellable(seen: Seen, obs: Observation) -> bool:
    """WSGI: a read the app can tell is incomplete (fewer octets than CONTENT_LENGTH; on a chunked request
    without wsgi.input_terminated the app reads nothing and can tell nothing: no body shown)."""
    if obs.mutation.framing == "chunked":
        return seen.mode == "content-length" and seen.length == 0
    declared = declared_length(obs.mutation)  # CONTENT_LENGTH: a shorter read is one the app can tell
    return seen.length is not None and declared is not None and seen.length < declared


def label(obs: Observation, interface: str) -> str:
    """How the server read the mutation, in a few characters: the statuses, "x" for a close, and what the app
    read of each request ("r83": a complete 83-octet read; "f": a failed read; "H": the hidden request served)."""
    if obs.error:
        return "unparseable"
    parts = [",".join(str(r.status) for r in obs.finals) or "-"]
    if obs.closed:
        parts[0] += " x"
    reads = []
    for token, name in zip(obs.tokens, ("", "H")):
        seen = obs.seen.get(token)
        if seen is None or not seen.called:
            continue
        if seen.read == "complete":
            size = len(seen.body) if seen.body is not None else seen.length
            reads.append(f"{name}r{size}")
        else:
            reads.append(f"{name}{seen.read[:1] or 'c'}")
    return " ".join(parts + reads)
