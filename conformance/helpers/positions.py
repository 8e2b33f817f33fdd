"""One request at a position of a connection (``spec/dimensions.POSITIONS``), the others around it given.

``at_position`` sends the requests of one connection as the position says: all in one write (a pipeline of
``PIPELINE``), or each once the previous response came (kept alive), the request under test at
``position.index`` and the given others elsewhere (``GET /ping`` by default). It never sends a request after a
response that ended the connection (RFC 9112 §9.6). A position the server does not reach for a reason the RFC
allows (it closes after a response saying close; it answers the first of pipelined requests and then neither
the rest nor closes) is *not supported*; any other shortfall fails. Every read is bounded.
"""

from __future__ import annotations

import socket
import time
from dataclasses import dataclass

import pytest

from gatecheck.conformance.client.http1 import Connection, Exchange, persistent
from gatecheck.conformance.helpers.wire import REPLY_TIMEOUT, describe, request, says_close
from gatecheck.conformance.spec.dimensions import PIPELINE
from gatecheck.conformance.spec.results import UNSUPPORTED_PREFIX

__all__ = ["Conversation", "at_position", "alone"]


@dataclass
class Conversation:
    finals: list  # the final responses, in order
    closed: bool
    raw: bytes
    sent_at: float  # time.time() when the request under test was sent
    answered_at: float  # time.time() when its response had come

    def response(self, index: int):
        return self.finals[index]


def at_position(
    server, position, target: bytes, method: str = "GET", *, others=None, pause: float = 0.0
) -> Conversation:
    """The connection's requests as ``position`` says, ``target`` (complete request bytes) at its index;
    ``others`` (request bytes, one per other place; default ``GET /ping``); ``pause`` seconds before the
    request under test on a kept-alive connection."""
    count = PIPELINE if position.pipelined else position.index + 1
    datas = list(others) if others is not None else [request(server) for _ in range(count - 1)]
    datas = datas[: count - 1]
    datas.insert(position.index, target)
    methods = ["GET"] * count
    methods[position.index] = method
    with Connection(server.address, REPLY_TIMEOUT) as conn:
        conn.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        if position.pipelined:
            sent = time.time()
            conn.send(b"".join(datas))
            ex = conn.read_responses(count, methods=methods)
            talk = Conversation(ex.final, conn.closed, ex.raw, sent, time.time())
        else:
            talk, ex = _one_by_one(conn, position, datas, methods, pause)
    _reached(server, talk, ex, position, count, pause)
    return talk


def _one_by_one(conn: Connection, position, datas: list, methods: list, pause: float) -> tuple:
    finals, raw, sent, answered, ex = [], b"", 0.0, 0.0, None
    for i, data in enumerate(datas):
        if i and (not conn.may_send() or says_close(finals[-1]) or not persistent(finals[-1])):
            break  # the previous response ended the connection: no request after it (RFC 9112 §9.3, §9.6)
        if i and i == position.index and pause:  # after the response before it: a request alone has none
            time.sleep(pause)
        sent = time.time() if i == position.index else sent
        try:
            conn.send(data)
        except OSError:
            break
        ex = conn.read_responses(1, methods=[methods[i]])
        finals += ex.final
        raw += ex.raw
        answered = time.time() if i == position.index else answered
        if not ex.final:
            break
    return Conversation(finals, conn.closed, raw, sent, answered), ex


def _stops_unprovoked(server, position, answered: int, count: int, pause: float = 0.0) -> bool:
    """Whether the same connection made of ``GET /ping`` only also ends, closed by the server, after ``answered``
    responses or fewer (RFC 9112 §9.5: a server MAY close at any time): its way with connections, not something
    the request under test provoked (whether it should have said close is another check's). The same ``pause``
    goes before the request at the position: a server that closes a connection idle that long (its keep-alive
    timeout) ends this one too."""
    datas = [request(server) for _ in range(count)]
    with Connection(server.address, REPLY_TIMEOUT) as conn:
        if position.pipelined:
            conn.send(b"".join(datas))
            ex = conn.read_responses(count, methods=["GET"] * count)
            return len(ex.final) <= answered and conn.closed
        talk, _ = _one_by_one(conn, position, datas, ["GET"] * count, pause)
    return len(talk.finals) <= answered and talk.closed


def _reached(server, talk: Conversation, ex: Exchange | None, position, count: int, pause: float = 0.0) -> None:
    if len(talk.finals) > position.index:
        return
    shown = f"got {talk.raw[:300]!r}"
    said = talk.finals and (says_close(talk.finals[-1]) or not persistent(talk.finals[-1]))
    if said or (talk.finals and talk.closed and _stops_unprovoked(server, position, len(talk.finals), count, pause)):
        how = (
            "with a response that does not persist (RFC 9112 §9.3)"
            if said
            else "without saying close, as on a connection of GET /ping only"
        )
        pytest.skip(
            f"{UNSUPPORTED_PREFIX} the server ends the connection after {len(talk.finals)} response(s), "
            f"{how}: no request reaches position {position.name}"
        )
    if position.pipelined and talk.finals and ex is not None and not talk.closed and ex.timed_out:
        pytest.skip(
            f"{UNSUPPORTED_PREFIX} the server answered {len(talk.finals)} of {count} pipelined requests "
            "and then neither the rest nor closed: it does not serve pipelined requests"
        )
    raise AssertionError(
        f"no answer to the request at position {position.name} ({len(talk.finals)} responses): "
        f"{describe(ex) if ex is not None else shown}"
    )


def alone(server, target: bytes, method: str = "GET"):
    """The response to ``target`` sent alone on a new connection."""
    with Connection(server.address, REPLY_TIMEOUT) as conn:
        conn.send(target)
        ex = conn.read_responses(1, methods=[method])
    assert ex.final, f"no answer to the request sent alone: {describe(ex)}"
    return ex.final[0]
