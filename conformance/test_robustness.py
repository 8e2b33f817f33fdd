"""Robustness: slow, silent, greedy and vanishing clients; the server survives and the app is told.

Rules of this module:

1. Every check ends by proving the server still answers a normal request on a new connection.
2. Resources are measured, not guessed: the server tree's RSS and open file descriptors are sampled before
   and after each scenario (settling for a few seconds) and recorded as properties of the check. Growth is
   reported; a check fails on it only when it is a clear leak — more than :data:`RSS_MARGIN` of resident
   memory or :data:`FD_MARGIN` descriptors that do not come back — so allocator noise never cries wolf.
3. Where a spec names how the app learns that its client left (ASGI ``http.disconnect``, RSGI
   ``client_disconnect``, WSGI ``close()``), the fixture event log is the proof; elsewhere the reading is
   suite POLICY (the spec is silent on resource limits) and says so.
"""
from __future__ import annotations

import socket
import struct
import time

import psutil
import pytest

from .client import decode_probe
from .http1 import Connection, build_request
from .markers import interfaces, spec
from .scripted import script_target
from .wire import app_view, assert_serves, deliver, describe, request, says_close

MiB = 1 << 20
RSS_MARGIN = 128 * MiB   # resident growth that stays after settling and counts as a leak
FD_MARGIN = 16           # descriptors that stay open after every client left
SETTLE = 5.0             # seconds the server gets to release what the clients held
QUIESCE = 20.0           # at most this long a check waits for its own leftovers before the next check
QUIET = 2.5              # ... which are gone once RSS stayed within RSS_MARGIN for this long


# -- measuring ----------------------------------------------------------------------------------------

def _fds(server) -> int:
    total = 0
    try:
        root = psutil.Process(server.handle.pid)
        procs = [root] + root.children(recursive=True)
    except psutil.Error:
        return 0
    for proc in procs:
        try:
            total += proc.num_fds()
        except psutil.Error:
            pass
    return total


class _Usage:
    """RSS and fds before a scenario; ``check()`` settles, records and judges what remains after it."""

    def __init__(self, server, record_property) -> None:
        self.server, self.record = server, record_property
        self.rss0, self.fds0 = server.handle.sample().rss_bytes, _fds(server)
        self.peak = self.rss0

    def sample_peak(self) -> None:
        self.peak = max(self.peak, self.server.handle.sample().rss_bytes)

    def check(self, judge_rss: bool = True) -> None:
        """Settle, record, and fail on descriptors that stay open or (with ``judge_rss``) resident memory
        that stays grown; a scenario that moves far more data than the margin records RSS only, since an
        allocator's high-water mark is not a leak."""
        deadline = time.monotonic() + SETTLE
        while True:
            rss, fds = self.server.handle.sample().rss_bytes, _fds(self.server)
            settled = (rss - self.rss0 <= RSS_MARGIN or not judge_rss) and fds - self.fds0 <= FD_MARGIN
            if settled or time.monotonic() >= deadline:
                break
            time.sleep(0.2)
        self.record("rss_before_mib", round(self.rss0 / MiB, 1))
        self.record("rss_peak_mib", round(max(self.peak, rss) / MiB, 1))
        self.record("rss_after_mib", round(rss / MiB, 1))
        self.record("fds_before", self.fds0)
        self.record("fds_after", fds)
        assert rss - self.rss0 <= RSS_MARGIN or not judge_rss, (
            f"server RSS grew {self.rss0 / MiB:.0f} → {rss / MiB:.0f} MiB and did not come back within {SETTLE}s")
        assert fds - self.fds0 <= FD_MARGIN, (
            f"server holds {fds - self.fds0} more file descriptors ({self.fds0} → {fds}) {SETTLE}s after "
            f"every client left")


@pytest.fixture
def usage(server, record_property):
    return _Usage(server, record_property)


def _abort(sock: socket.socket) -> None:
    """Close with a reset (SO_LINGER 0): the client vanishes without a FIN."""
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    except OSError:
        pass
    sock.close()


def _open_many(server, count: int, first: bytes = b"") -> list:
    socks = []
    try:
        for _ in range(count):
            sock = socket.create_connection(server.address, timeout=5.0)
            socks.append(sock)
            if first:
                sock.sendall(first)
    except BaseException:
        for sock in socks:
            sock.close()
        raise
    return socks


def _served_promptly(server, within: float = 5.0) -> None:
    started = time.monotonic()
    ex = deliver(server, request(server), timeout=within)
    took = time.monotonic() - started
    assert ex.final and ex.final[0].body == b"ok" and took < within, (
        f"a normal GET /ping took {took:.1f}s: {describe(ex)}")


# -- slow clients -------------------------------------------------------------------------------------

@spec("RFC 9112 §9.5", "POLICY")
def test_many_header_tricklers_do_not_starve_other_clients(server, usage):
    """POLICY: while 30 clients trickle header lines, a normal client is served within 5 s each round, and
    everything they held is released once they go."""
    socks = _open_many(server, 30, b"GET /ping HTTP/1.1\r\nHost: " + server.authority.encode() + b"\r\n")
    try:
        for round_ in range(2):
            for sock in socks:
                try:
                    sock.sendall(b"X-Slow-%d: y\r\n" % round_)
                except OSError:
                    pass  # the server may time a trickler out: that is allowed
            _served_promptly(server)
            time.sleep(0.3)
    finally:
        for sock in socks:
            sock.close()
    assert_serves(server)
    usage.check()


@spec("RFC 9112 §6.3", "MUST")
def test_trickled_body_arrives_whole(server):
    """A 4 KiB body sent in 128-byte pieces 15 ms apart reaches the app whole and is echoed byte-exact."""
    body = bytes(range(256)) * 16
    with Connection(server.address, 10.0) as conn:
        conn.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        conn.send(request(server, "POST", "/echo", [("Content-Length", str(len(body)))]))
        for pos in range(0, len(body), 128):
            conn.send(body[pos:pos + 128])
            time.sleep(0.015)
        ex = conn.read_responses(1, methods=["POST"])
    assert ex.first.status == 200 and ex.first.body == body, describe(ex)


@spec("RFC 9112 §9.5", "POLICY")
def test_body_tricklers_do_not_starve_other_clients(server, usage):
    """POLICY: while 10 clients are part-way through their request bodies, a normal client is served
    promptly, and the tricklers' connections are released once they go."""
    head = request(server, "POST", "/echo", [("Content-Length", "100000")])
    socks = _open_many(server, 10, head + b"x" * 1000)
    try:
        for _ in range(2):
            for sock in socks:
                try:
                    sock.sendall(b"y" * 100)
                except OSError:
                    pass
            _served_promptly(server)
    finally:
        for sock in socks:
            _abort(sock)
    assert_serves(server)
    usage.check()


# -- greedy and silent clients ------------------------------------------------------------------------

_CHUNK, _CHUNKS = 64 * 1024, 4096   # the app tries to push 256 MiB to a client that never reads

_UNREAD = {
    "asgi": [["start", 200, [["content-type", "application/octet-stream"]]],
             ["repeat", _CHUNKS, [["body", {"size": _CHUNK}, True]]], ["body", ""]],
    "rsgi": [["stream", 200, [["content-type", "application/octet-stream"]]],
             ["repeat", _CHUNKS, [["send_bytes", {"size": _CHUNK}]]]],
    "wsgi": [["start_response", "200 OK", [["content-type", "application/octet-stream"]]],
             ["repeat", _CHUNKS, [["yield", {"size": _CHUNK}]]]],
}


@spec("RFC 9112 §9.5", "POLICY")
def test_client_that_never_reads_keeps_server_memory_bounded(server, usage, record_property):
    """POLICY: an app streaming 256 MiB to a client that reads nothing does not make the server buffer it:
    the server's RSS stays within 128 MiB of where it started while the client stalls for 2 s."""
    data = request(server, "GET", script_target(_UNREAD[server.interface]))
    sock = socket.create_connection(server.address, timeout=5.0)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 64 * 1024)
        sock.sendall(data)
        deadline = time.monotonic() + 2.0
        while time.monotonic() < deadline:
            usage.sample_peak()
            time.sleep(0.1)
    finally:
        _abort(sock)
    record_property("stalled_peak_growth_mib", round((usage.peak - usage.rss0) / MiB, 1))
    assert usage.peak - usage.rss0 <= RSS_MARGIN, (
        f"server RSS rose by {(usage.peak - usage.rss0) / MiB:.0f} MiB while one client read nothing")
    assert_serves(server)
    # The app may go on producing after the reset (hypercorn's WSGI worker runs it to the end and holds
    # ~250 MiB for some seconds, starting about a second after the reset): not judged here, but waited
    # out (bounded) so that the next check's RSS baseline and settling measure that check's own clients,
    # not this one's leftovers: RSS must stay within the margin for QUIET seconds in a row.
    deadline, quiet_since = time.monotonic() + QUIESCE, time.monotonic()
    while time.monotonic() < deadline and time.monotonic() - quiet_since < QUIET:
        if server.handle.sample().rss_bytes - usage.rss0 > RSS_MARGIN:
            quiet_since = time.monotonic()
        time.sleep(0.25)
    usage.check(judge_rss=False)  # see rss_after_mib


@spec("RFC 9112 §9.5", "POLICY")
def test_idle_connections_do_not_stop_service(server, usage):
    """POLICY: with 500 connections open and silent, a new client is still served promptly, and the idle
    connections' resources are released when they close."""
    socks = _open_many(server, 500)
    try:
        usage.sample_peak()
        _served_promptly(server)
    finally:
        for sock in socks:
            sock.close()
    assert_serves(server)
    usage.check()


@spec("RFC 9112 §9.3", "POLICY")
def test_idle_kept_alive_connections_do_not_stop_service(server, usage):
    """POLICY: 200 connections that were each served once and stay open (keep-alive) do not stop a new
    client from being served."""
    conns = []
    deadline = time.monotonic() + 30.0  # one bound for the whole check, never 200 × the socket timeout
    try:
        for n in range(200):
            remaining = deadline - time.monotonic()
            assert remaining > 0, f"opening and serving {n} kept-alive connections took over 30 s"
            conn = Connection(server.address, min(5.0, remaining))
            conns.append(conn)
            conn.send(request(server))
            got = conn.read_responses(1, timeout=min(5.0, remaining))
            assert got.final, (f"with {n} connections served once and kept alive, connection {n + 1} got no "
                               f"response within {min(5.0, remaining):.1f} s ({describe(got)})")
        _served_promptly(server)
    finally:
        for conn in conns:
            conn.close()
    assert_serves(server)
    usage.check()


# -- big requests ---------------------------------------------------------------------------------------

_BIG_HEADERS = {
    "one-64KiB-field": [("X-Big", "b" * (64 * 1024))],
    "16-fields-of-4KiB": [(f"X-Field-{i}", "f" * 4096) for i in range(16)],
}


@pytest.mark.parametrize("headers", list(_BIG_HEADERS.values()), ids=list(_BIG_HEADERS))
@spec("RFC 9110 §5.4", "MUST")
def test_64kib_of_headers_is_refused_with_4xx_or_served(server, usage, headers):
    """64 KiB of header fields get a 4xx (431 recommended) or a normal answer — never a crash or a reset, and
    never a silently cut header set: when served, the app sees every field whole."""
    ex = deliver(server, request(server, "GET", "/probe", headers), timeout=5.0)
    assert ex.final, f"no response to 64 KiB of headers: {describe(ex)}"
    status = ex.final[0].status
    assert 400 <= status < 500 or status == 200, describe(ex)
    if status == 200:
        seen = dict(app_view(decode_probe(ex.final[0].body))["headers"])
        cut = [n for n, v in headers if seen.get(n.lower()) != v]
        assert not cut, f"served with {len(cut)} of {len(headers)} fields missing or cut, e.g. {cut[:3]}"
    assert_serves(server)
    usage.check()


@spec("RFC 9112 §6.3", "MUST")
def test_ten_mebibyte_body_is_echoed_or_refused(server, usage):
    """A 10 MiB body is echoed byte-exact or refused with 413; the memory it took is given back."""
    body = bytes(range(256)) * (40 * 1024)
    with Connection(server.address, 30.0) as conn:
        conn.send(request(server, "POST", "/echo", [("Content-Length", str(len(body)))]))
        try:
            conn.sock.sendall(body)
        except OSError:
            pass  # refused early: the response says why
        ex = conn.read_responses(1, methods=["POST"], timeout=30.0)
    usage.sample_peak()
    resp = ex.first
    assert resp.status == 413 or (resp.status == 200 and resp.body == body), (
        f"10 MiB echo: {resp.status}, {len(resp.body)} bytes back")
    assert_serves(server)
    usage.check()


@spec("RFC 9112 §9.3.2", "MUST")
def test_burst_of_200_pipelined_requests_is_answered_in_order(server, usage):
    """200 requests pipelined in one write (GET, POST with a body, GET of 1 KiB) are all answered, in order
    (a server without persistent connections may answer the first ones and close, saying so: §9.3, §9.6)."""
    parts, expected, methods = [], [], []
    for i in range(200):
        kind = i % 3
        if kind == 0:
            parts.append(request(server, "GET", "/ping"))
            expected.append(b"ok")
            methods.append("GET")
        elif kind == 1:
            payload = b"burst-%d" % i
            parts.append(request(server, "POST", "/echo", [("Content-Length", str(len(payload)))], payload))
            expected.append(payload)
            methods.append("POST")
        else:
            parts.append(request(server, "GET", "/b1k"))
            expected.append(None)
            methods.append("GET")
    with Connection(server.address, 15.0) as conn:
        conn.send(b"".join(parts))
        ex = conn.read_responses(200, methods=methods, timeout=15.0)
    finals = ex.final
    if len(finals) < 200:
        assert finals and says_close(finals[-1]) and ex.closed, (
            f"{len(finals)} of 200 pipelined requests answered, without Connection: close and a close: "
            f"{describe(ex)}")
    for n, (resp, want) in enumerate(zip(finals, expected)):
        assert resp.status == 200, f"response {n}: {resp.status}"
        if want is not None:
            assert resp.body == want, f"response {n} out of order or wrong: {resp.body[:40]!r} != {want!r}"
        else:
            assert len(resp.body) == 1024, f"response {n}: {len(resp.body)} bytes instead of 1024"
    assert_serves(server)
    usage.check()


# -- vanishing clients ----------------------------------------------------------------------------------

def _vanish_after(server, steps: list, *, prefix: bytes = b"", read_first: int = 0, method="GET") -> str:
    """Send a tracked request to ``steps`` (+ ``prefix`` body bytes), optionally read ``read_first``
    bytes of the response, then reset the connection. Returns the token."""
    token = server.new_token()
    headers = [("x-gatecheck-token", token)]
    if prefix:
        headers.append(("Content-Length", "100000"))
    sock = socket.create_connection(server.address, timeout=5.0)
    try:
        sock.sendall(build_request(method, script_target(steps), headers, host=server.authority,
                                   content_length=False) + prefix)
        got = b""
        deadline = time.monotonic() + 5.0
        while len(got) < read_first and time.monotonic() < deadline:
            chunk = sock.recv(65536)
            if not chunk:
                break
            got += chunk
        if read_first:
            assert len(got) >= read_first, f"response did not start: {got[:200]!r}"
        else:
            time.sleep(0.3)  # let the app reach its waiting step
    finally:
        _abort(sock)
    return token


def _first_step(server, token: str, timeout: float):
    """The script's first step once the script ended; None if the app was never invoked at all (a server
    may wait for the whole body before calling the app: then no app waits, and nothing is to be told)."""
    try:
        server.wait_for_event(token, "script.end", timeout=timeout)
    except TimeoutError:
        if not server.events(token):
            return None
        raise
    return next(e for e in server.events(token) if e["event"] == "step" and e["index"] == 0)


_BODY_CUT = dict(prefix=b"x" * 1000, method="POST")  # 1 000 of the announced 100 000 bytes, then a reset


@interfaces("asgi")
@spec("ASGI WWW §Disconnect", "DEFINED")
def test_asgi_client_vanishing_mid_body_is_http_disconnect(server, usage):
    """A client that resets after 1 000 of 100 000 body bytes makes the app's receive() return
    http.disconnect within 5 s (or the app was never invoked for the incomplete request)."""
    step = _first_step(server, _vanish_after(server, [["receive_all"]], **_BODY_CUT), 5.0)
    assert step is None or step["ok"] and step["result"]["last"].get("type") == "http.disconnect", step
    assert_serves(server)
    usage.check()


@interfaces("rsgi")
@spec("RSGI §HTTP protocol interface", "DEFINED")
def test_rsgi_client_vanishing_mid_body_resolves_client_disconnect(server, usage):
    """A client that resets after 1 000 of 100 000 body bytes resolves the app's client_disconnect()
    within 5 s."""
    step = _first_step(server, _vanish_after(server, [["wait_disconnect", 10]], **_BODY_CUT), 5.0)
    assert step is None or step["ok"], f"client_disconnect() did not resolve: {step}"
    assert_serves(server)
    usage.check()


@interfaces("wsgi")
@spec("PEP 3333 §Input and Error Streams", "POLICY")
def test_wsgi_client_vanishing_mid_body_ends_the_read(server, usage):
    """POLICY: a client that resets after 1 000 of 100 000 body bytes makes the app's wsgi.input read end
    within 5 s, short or with an error — not wait for bytes that will not come."""
    step = _first_step(server, _vanish_after(server, [["read_body"]], **_BODY_CUT), 5.0)
    assert step is None or not step["ok"] or step["result"]["len"] < 100000, step
    assert_serves(server)
    usage.check()


def _told_mid_response(server, steps: list) -> list:
    token = _vanish_after(server, steps, read_first=5)
    server.wait_for_event(token, "script.end", timeout=10.0)
    return server.events(token)


def _send_failed(events: list) -> bool:
    return any(e["event"] == "step" and not e["ok"] and e["op"] in ("body", "send_bytes", "send_str")
               for e in events)


@interfaces("asgi")
@spec("ASGI WWW §Disconnect", "DEFINED")
def test_asgi_client_vanishing_mid_response_is_told_to_the_app(server, usage):
    """A client that resets after the first chunk of a streamed response is reported to the app (receive()
    returns http.disconnect, or send() raises) and the app's instance ends."""
    events = _told_mid_response(server, [
        ["start", 200, []], ["watch_disconnect", 10], ["body", "first", True], ["sleep", 0.3],
        ["repeat", 20, [["body", {"size": 1024}, True], ["sleep", 0.05]]], ["body", ""]])
    names = [e["event"] for e in events]
    assert "watch.disconnect" in names or _send_failed(events), f"the app was never told: {names[-12:]}"
    assert_serves(server)
    usage.check()


@interfaces("rsgi")
@spec("RSGI §HTTP protocol interface", "DEFINED")
def test_rsgi_client_vanishing_mid_response_is_told_to_the_app(server, usage):
    """A client that resets after the first chunk of a streamed response is reported to the app
    (client_disconnect() resolves, or send_bytes raises) and the app's instance ends."""
    events = _told_mid_response(server, [
        ["stream", 200, []], ["watch_disconnect", 10], ["send_str", "first"], ["sleep", 0.3],
        ["repeat", 20, [["send_bytes", {"size": 1024}], ["sleep", 0.05]]]])
    names = [e["event"] for e in events]
    assert "watch.disconnect" in names or _send_failed(events), f"the app was never told: {names[-12:]}"
    assert_serves(server)
    usage.check()


@interfaces("wsgi")
@spec("PEP 3333 §Specification Details", "MUST")
def test_wsgi_client_vanishing_mid_response_closes_the_iterable(server, usage):
    """A client that resets after the first chunk of a streamed response: the server stops iterating and
    calls the iterable's close()."""
    token = _vanish_after(server, [["start_response", "200 OK", []], ["yield", "first"], ["sleep", 0.3],
                                   ["repeat", 20, [["yield", {"size": 1024}], ["sleep", 0.05]]]], read_first=5)
    server.wait_for_event(token, "wsgi.close", timeout=10.0)
    assert_serves(server)
    usage.check()


@spec("RFC 9112 §9.6", "POLICY")
def test_many_vanishing_clients_leave_nothing_behind(server, usage):
    """POLICY: 200 clients that reset mid-request-line, mid-headers or mid-body leave no descriptors or
    memory behind."""
    fragments = [b"GET /pi", b"GET /ping HTTP/1.1\r\nHost: x\r\nX-Half: ",
                 request(server, "POST", "/echo", [("Content-Length", "5000")]) + b"z" * 100]
    socks = []
    try:
        for i in range(200):
            sock = socket.create_connection(server.address, timeout=5.0)
            socks.append(sock)
            sock.sendall(fragments[i % 3])
        time.sleep(0.2)
        usage.sample_peak()
    finally:
        for sock in socks:
            _abort(sock)
    assert_serves(server)
    usage.check()
