"""HTTP/2 connections: the preface, `Upgrade: h2c`, graceful shutdown with GOAWAY, and a rapid-reset burst.

RFC 9113 §3.4 (preface), §6.5.2 (SETTINGS_ENABLE_PUSH), §6.8/§9.1 (GOAWAY), §10.5 (denial of service);
RFC 7540 §3.2 for the deprecated `h2c` Upgrade.

Every read is bounded (conformance/client/bounded.py: a deadline and a size cap); the `Upgrade: h2c` checks
read the HTTP/1.1 answer strictly (a malformed response is a failure that shows its bytes).
"""

from __future__ import annotations

import json
import threading
import time

import h2.config
import h2.connection
import h2.events
import pytest

from gatecheck import fixtures
from gatecheck.conformance.app import script_target, value_of
from gatecheck.conformance.app.private import private_server
from gatecheck.conformance.client import bounded
from gatecheck.conformance.client.connect import connect
from gatecheck.conformance.client.h2 import CONNECTION_CAP, GOAWAY, SETTINGS, H2Client, H2Timeout, SettingCodes
from gatecheck.conformance.client.http1 import ParseError, parse_responses
from gatecheck.conformance.spec.markers import needs, spec
from gatecheck.fixtures import TOKEN_HEADER

pytestmark = needs("h2c")


@spec("RFC 9113 §3.4", "MUST")
def test_server_preface_is_settings_and_our_settings_are_acked(server):
    """The server's first frame is a SETTINGS frame (not an ACK), and it acknowledges the client's SETTINGS."""
    with H2Client(server.address, authority=server.authority) as client:
        client.wait_settings()
    first = client.frames[0]
    assert first.type == SETTINGS and not first.flags & 1, f"first frame from the server: {first}"
    assert client.settings_acked >= 1


@spec("RFC 9113 §6.5.2", "MUST NOT")
def test_server_never_enables_push_in_its_settings(server):
    """The server's SETTINGS never carry SETTINGS_ENABLE_PUSH = 1 (only a client may enable push)."""
    with H2Client(server.address, authority=server.authority) as client:
        client.wait_settings()
    values = [
        f.settings().get(SettingCodes.ENABLE_PUSH) for f in client.frames if f.type == SETTINGS and not f.flags & 1
    ]
    assert values, "no SETTINGS frame from the server"
    assert 1 not in values, f"server SETTINGS: {[f.settings() for f in client.frames if f.type == SETTINGS]}"


# -- Upgrade: h2c (RFC 7540 §3.2) --------------------------------------------------------------------

_HEAD_CAP = 64 << 10


def _upgrade(server, settings_fields: int = 1, token: str = "h2c", path: str = "/probe") -> tuple:
    """Send an HTTP/1.1 upgrade request; return (the response head, parsed strictly, the bytes after it,
    h2 connection, socket). No complete head within 5 s and 64 KiB, or a malformed one, fails."""
    conn = h2.connection.H2Connection(h2.config.H2Configuration(client_side=True, header_encoding=None))
    settings = conn.initiate_upgrade_connection()
    lines = [
        f"GET {path} HTTP/1.1".encode(),
        f"Host: {server.authority}".encode(),
        b"Connection: Upgrade, HTTP2-Settings",
        b"Upgrade: " + token.encode(),
    ]
    lines += [b"HTTP2-Settings: " + settings] * settings_fields
    sock = connect(server, timeout=5)
    sock.sendall(b"\r\n".join(lines) + b"\r\n\r\n")
    data = bytearray()
    end = bounded.read_until(sock, data, lambda b: b"\r\n\r\n" in b, deadline=time.monotonic() + 5, cap=_HEAD_CAP)
    head, _, rest = bytes(data).partition(b"\r\n\r\n")
    try:
        assert end == bounded.DONE, f"no complete response head to Upgrade: {token} ({end}): {bytes(data[:300])!r}"
        try:  # the head alone, strictly: a status line and field lines
            parse_responses(head + b"\r\n\r\n", methods=["HEAD"])
        except ParseError as exc:
            raise AssertionError(f"malformed response to Upgrade: {token} ({exc}): {bytes(data[:300])!r}") from None
    except BaseException:
        sock.close()
        raise
    return head, rest, conn, sock


def _read_stream_1(conn, sock, rest: bytes) -> bytes:
    """Drive the upgraded connection until stream 1 ends (bounded: 5 s, CONNECTION_CAP bytes); its body."""
    body, events, received = b"", conn.receive_data(rest), len(rest)
    deadline = time.monotonic() + 5
    while True:
        for event in events:
            if isinstance(event, h2.events.DataReceived) and event.stream_id == 1:
                body += event.data
                conn.acknowledge_received_data(event.flow_controlled_length, 1)
            if isinstance(event, h2.events.StreamEnded) and event.stream_id == 1:
                return body
        sock.sendall(conn.data_to_send())
        chunk = bytearray()
        end = bounded.recv_once(sock, chunk, deadline=deadline, cap=1 << 16)
        assert end is None, f"stream 1 did not end ({end}) after {len(body)} body bytes"
        received += len(chunk)
        assert received <= CONNECTION_CAP, f"over the {CONNECTION_CAP >> 20} MiB connection cap, stream 1 unended"
        events = conn.receive_data(bytes(chunk))


@needs("h2c_upgrade")
@spec("RFC 7540 §3.2", "MUST")
def test_h2c_upgrade_answers_the_request_on_stream_1(server):
    """After `101` the server sends its SETTINGS first, then the response to the upgraded request on stream 1, over
    HTTP/2."""
    head, rest, conn, sock = _upgrade(server)
    with sock:
        status = head.split(b"\r\n")[0]
        assert status.startswith(b"HTTP/1.1 101"), f"Upgrade: h2c (declared supported) answered {status!r}"
        assert rest[3:4] in (b"", b"\x04"), f"first frame after 101 is type {rest[3:4]!r}, not SETTINGS"
        sock.sendall(conn.data_to_send())
        body = _read_stream_1(conn, sock, rest)
    doc = json.loads(body)
    version = (
        value_of(doc["scope"])["http_version"]
        if doc["interface"] == "asgi"
        else value_of(doc["environ"])["SERVER_PROTOCOL"]
        if doc["interface"] == "wsgi"
        else value_of(doc["scope"]["http_version"]["value"])
    )
    assert version in ("2", "HTTP/2", "HTTP/2.0"), f"the upgraded request reached the app as {version!r}"


@needs("http1")
@pytest.mark.parametrize(
    "fields,token",
    [
        pytest.param(0, "h2c", id="no-http2-settings", marks=spec("RFC 7540 §3.2.1", "MUST NOT")),
        pytest.param(2, "h2c", id="two-http2-settings", marks=spec("RFC 7540 §3.2.1", "MUST NOT")),
        pytest.param(1, "h2", id="token-h2", marks=spec("RFC 7540 §3.2", "MUST")),
    ],
)
def test_h2c_upgrade_is_refused_when_malformed(server, fields, token):
    """No 101 when HTTP2-Settings is missing or repeated, or when Upgrade names `h2` (TLS-only): the request is answered
    over HTTP/1.1 (evidence: a well-formed HTTP/1.1 response head that is not 101)."""
    head, _, _, sock = _upgrade(server, settings_fields=fields, token=token, path="/ping")
    sock.close()
    status = head.split(b"\r\n")[0]
    assert status.startswith(b"HTTP/1.1 ") and not status.startswith(b"HTTP/1.1 101"), status


# -- graceful shutdown (RFC 9113 §6.8, §9.1) ----------------------------------------------------------

_SLOW = {
    "asgi": [["receive"], ["sleep", 1.0], ["start", 200], ["body", "done"]],
    "rsgi": [["sleep", 1.0], ["response_bytes", 200, [], "done"]],
    "wsgi": [["sleep", 1.0], ["start_response", "200 OK"], ["yield", "done"]],
}
_SHUTDOWNS: dict = {}


def _in_flight(priv, token: str) -> None:
    """Wait until the slow request reached the app (its script started: the app now sleeps 1 s), so the
    SIGTERM meets a request in flight; a server that never calls the app is judged by the checks below."""
    try:
        priv.wait_for_event(token, "script.start", timeout=5.0)
    except TimeoutError:
        pass


def _shutdown(server) -> dict:
    """Once per target: a private server gets SIGTERM while a 1-second request is in flight."""
    key = str(server.target)
    if key not in _SHUTDOWNS:
        with private_server(server) as priv:
            with H2Client(priv.address, authority=priv.authority, timeout=5) as client:
                client.response(client.request("GET", "/ping"))
                token = fixtures.new_token()
                slow = client.request("GET", script_target(_SLOW[server.interface]), [(TOKEN_HEADER, token)])
                _in_flight(priv, token)
                stopper = threading.Thread(target=priv.stop, kwargs={"grace": 5.0}, daemon=True)
                stopper.start()
                try:
                    client.pump(lambda: client.streams[slow].done, 6.5, what="end of the in-flight stream")
                except H2Timeout:
                    pass  # recorded below: the stream did not end
                client.idle(0.5)
                stopper.join(10)
            _SHUTDOWNS[key] = {
                "goaways": [f.goaway() for f in client.frames if f.type == GOAWAY],
                "slow": client.streams[slow],
                "closed": client.closed,
                "slow_id": slow,
            }
    return _SHUTDOWNS[key]


@spec("RFC 9113 §6.8; RFC 9113 §9.1", "SHOULD")
def test_graceful_shutdown_sends_goaway_no_error(server):
    """On SIGTERM the server sends GOAWAY with NO_ERROR before closing, and later GOAWAYs never raise the
    last-stream-ID."""
    seen = _shutdown(server)
    goaways = seen["goaways"]
    assert goaways, f"no GOAWAY before the connection closed (closed={seen['closed']})"
    assert goaways[0][1] == 0, f"first GOAWAY error code {goaways[0][1]}, not NO_ERROR"
    lasts = [g[0] for g in goaways]
    assert lasts == sorted(lasts, reverse=True), f"last-stream-IDs increased: {lasts}"


@spec("RFC 9113 §6.8; RFC 9113 §9.1", "SHOULD")
def test_in_flight_stream_completes_during_graceful_shutdown(server):
    """A request in flight when shutdown begins (its stream ≤ the GOAWAY's last-stream-ID) is answered completely."""
    seen = _shutdown(server)
    slow = seen["slow"]
    assert slow.ended and slow.status == 200 and slow.body == b"done", (
        f"in-flight request: {slow.describe()}; GOAWAYs {seen['goaways']}; closed={seen['closed']}"
    )
    assert all(seen["slow_id"] <= last for last, _, _ in seen["goaways"]), seen["goaways"]


# -- denial of service (RFC 9113 §10.5) -------------------------------------------------------------


@spec("RFC 9113 §10.5", "SHOULD")
def test_rapid_reset_burst_leaves_the_server_serving(server):
    """After 1000 HEADERS+RST_STREAM pairs on one connection ("rapid reset") the server is still up and answers a new
    connection."""
    with private_server(server) as priv:  # a backlog of cancelled work must not slow the session's server
        with H2Client(priv.address, authority=priv.authority) as client:
            try:
                for n in range(1000):
                    sid = client.new_stream()
                    client.conn.send_headers(sid, client.request_headers("GET", "/io10"), end_stream=True)
                    client.conn.reset_stream(sid)
                    if n % 50 == 49:
                        client.flush()
                client.flush()
            except OSError:
                pass  # the server may cut the connection (e.g. GOAWAY ENHANCE_YOUR_CALM): that is limiting it
            client.idle(0.3)
            # generous: a server that works through every cancelled request still answers, only late
            with H2Client(priv.address, authority=priv.authority, timeout=30) as fresh:
                resp = fresh.response(fresh.request("GET", "/ping"))
        alive = priv.handle.alive()
    assert alive, "the server process exited after the burst"
    assert (resp.status, resp.body) == (200, b"ok"), resp.describe()
