"""Property-based round trips (hypothesis): what the app sees is what the client sent, for arbitrary input.

Rules of this module:

1. Every example is one raw HTTP/1.1 request built byte by byte (``conformance/client/http1.py``), sent to the
   probe or echo routes; the expectation is computed from the bytes sent, per interface spec:
   ASGI ``path`` percent- and UTF-8-decoded, ``raw_path``/``query_string`` the bytes as sent [WWW §HTTP
   Connection Scope]; WSGI ``PATH_INFO`` the decoded bytes as latin-1 [PEP 3333 §Unicode Issues, CGI
   §4.1.5]; RSGI ``path``/``query_string`` str (whether ``path`` is decoded is UNSPEC: either form passes).
2. A failing example prints the raw request that reproduces it (``note`` and the assertion message).
3. The inputs a verdict rests on are explicit examples (``strategies.py``: an encoded slash, truncated UTF-8,
   an empty value, a body past 64 KiB, UTF-8 split across WebSocket fragments, ...), run first in every
   profile; the drawn examples come after them and do not depend on which modules the session imported
   (``plugin/profiles.py``).
4. Budgets come from the hypothesis profile (``plugin/profiles.py``): the default is derandomized and
   database-less (reproducible in CI, a few seconds per target); ``--hypothesis-profile thorough`` explores.
   The body and WebSocket round trips never shrink (``ROUND_TRIP``): their failing examples are slow.
"""

from __future__ import annotations

import random
import socket
import time

from hypothesis import given, note
from hypothesis import strategies as st

from gatecheck.conformance.app import decode_probe
from gatecheck.conformance.client.http1 import Connection, build_request
from gatecheck.conformance.client.ws import OP_BINARY, OP_CONT, OP_TEXT, connect
from gatecheck.conformance.helpers.roundtrip import probe as _probe
from gatecheck.conformance.helpers.roundtrip import query_seen as _query_seen
from gatecheck.conformance.helpers.roundtrip import served_or_refused as _served_or_refused
from gatecheck.conformance.helpers.roundtrip import utf8_view as _utf8_view
from gatecheck.conformance.helpers.roundtrip import view_of as _view
from gatecheck.conformance.helpers.strategies import (
    BODIES,
    BYTE_PATHS,
    FIELDS,
    METHOD,
    METHODS,
    NAME,
    OBS,
    OBS_VALUES,
    QUERIES,
    REPEATED,
    ROUND_TRIP,
    SETTINGS,
    SIZE,
    SPLITS,
    UTF8_PATHS,
    VALUE,
    WS_MESSAGES,
    byte_path,
    examples,
    queries,
    split_at_random,
    utf8_path,
)
from gatecheck.conformance.helpers.support import unlengthed_body_gap
from gatecheck.conformance.helpers.wire import describe
from gatecheck.conformance.spec.markers import interfaces, needs, spec
from gatecheck.fixtures import typed

pytestmark = needs("http1")


@given(path=utf8_path())
@examples(*UTF8_PATHS)
@SETTINGS
@interfaces("asgi")
@spec("ASGI WWW §HTTP Connection Scope", "DEFINED")
def test_utf8_path_reaches_the_app_decoded(server, path):
    """Any percent-encoded UTF-8 path reaches the ASGI app decoded: path = the text, raw_path = the bytes sent."""
    target, text = path
    data, view = _utf8_view(server, target)
    assert view["path"] == text, f"path {view['path']!r} != {text!r}; request {data[:300]!r}"
    assert view["raw_path"] in (None, target.encode("ascii")), f"raw_path {view['raw_path']!r}; {data[:300]!r}"


@given(path=utf8_path())
@examples(*UTF8_PATHS)
@SETTINGS
@interfaces("wsgi")
@spec("RFC 3875 §4.1.5", "DEFINED")
def test_utf8_path_reaches_wsgi_as_latin1(server, path):
    """Any percent-encoded UTF-8 path reaches WSGI PATH_INFO decoded (RFC 3875 §4.1.5), its bytes as latin-1
    code points (PEP 3333 §Unicode Issues)."""
    target, text = path
    data, view = _utf8_view(server, target)
    assert view["path"] == text.encode("utf-8").decode("latin-1"), f"PATH_INFO {view['path']!r}; {data[:300]!r}"


@given(path=utf8_path())
@examples(*UTF8_PATHS)
@SETTINGS
@interfaces("rsgi")
@spec("RSGI §HTTP connection scope", "DEFINED")
def test_utf8_path_reaches_rsgi_as_sent_or_decoded(server, path):
    """Any percent-encoded UTF-8 path reaches the RSGI app as the target sent or its decoded text (whether
    RSGI's path is decoded is unspecified)."""
    target, text = path
    data, view = _utf8_view(server, target)
    assert view["path"] in (target, text), f"path {view['path']!r} is neither {target!r} nor {text!r}"


@given(path=byte_path())
@examples(*BYTE_PATHS)
@SETTINGS
@interfaces("wsgi")
@spec("PEP 3333 §Unicode Issues", "MUST")
def test_path_with_invalid_utf8_is_served_or_refused_never_mangled(server, path):
    """A path whose decoded bytes are not UTF-8 gets a 400 or is served with PATH_INFO those bytes as latin-1;
    never a 5xx or a dropped connection."""
    target, raw = path
    data, view = _served_or_refused(server, target)
    if view is not None:
        assert view["path"] == raw.decode("latin-1"), f"PATH_INFO {view['path']!r}; request {data[:300]!r}"


@given(path=byte_path())
@examples(*BYTE_PATHS)
@SETTINGS
@interfaces("asgi")
@spec("ASGI WWW §HTTP Connection Scope", "DEFINED")
def test_path_with_invalid_utf8_keeps_asgi_raw_path(server, path):
    """A path whose decoded bytes are not UTF-8 gets a 400 or is served with raw_path the bytes sent (or
    None); never a 5xx or a dropped connection."""
    target, _ = path
    data, view = _served_or_refused(server, target)
    if view is not None:
        assert view["raw_path"] in (None, target.encode("ascii")), f"raw_path {view['raw_path']!r}"


@given(query=queries())
@examples(*QUERIES)
@SETTINGS
@interfaces("asgi")
@spec("ASGI WWW §HTTP Connection Scope", "DEFINED")
def test_query_string_reaches_the_app_as_sent(server, query):
    """The query is handed to the ASGI app still percent-encoded, exactly as sent (query_string bytes)."""
    _query_seen(server, query)


@given(query=queries())
@examples(*QUERIES)
@SETTINGS
@interfaces("wsgi")
@spec("RFC 3875 §4.1.7", "DEFINED")
def test_query_string_reaches_wsgi_as_sent(server, query):
    """QUERY_STRING is the query exactly as sent, still URL-encoded (RFC 3875 §4.1.7)."""
    _query_seen(server, query)


@given(query=queries())
@examples(*QUERIES)
@SETTINGS
@interfaces("rsgi")
@spec("RSGI §HTTP connection scope", "DEFINED")
def test_query_string_reaches_rsgi_as_sent(server, query):
    """The RSGI query_string is the URL portion after the ?, exactly as sent."""
    _query_seen(server, query)


@given(fields=st.lists(st.tuples(NAME, VALUE), min_size=1, max_size=8, unique_by=lambda f: f[0].lower()))
@examples(*FIELDS)
@SETTINGS
@spec("RFC 9110 §5.5", "MUST")
def test_header_fields_reach_the_app_intact(server, fields):
    """Arbitrary token names and visible-ASCII values (inner spaces and tabs included) reach the app with the
    name lower-cased and the value exact, surrounding whitespace stripped."""
    data, ex = _probe(server, "/probe/h", fields)
    seen = _view(server, ex, data)["headers"]
    for name, value in fields:
        wanted = (name.lower(), value)
        assert wanted in seen, f"{wanted!r} not among {[h for h in seen if h[0].startswith('x-p-')]}; {data[:400]!r}"


def _repeated_values_seen(server, values) -> None:
    data, ex = _probe(server, "/probe/dup", [("X-P-Dup", v) for v in values])
    got = [v for n, v in _view(server, ex, data)["headers"] if n == "x-p-dup"]
    assert got == values, f"got {got!r}, sent {values!r}; request {data[:400]!r}"


@given(values=st.lists(VALUE, min_size=2, max_size=5))
@examples(*REPEATED)
@SETTINGS
@interfaces("asgi")
@spec("ASGI WWW §HTTP Connection Scope", "MUST")
def test_repeated_header_keeps_every_value_in_order(server, values):
    """A field repeated several times reaches the ASGI app as that many headers entries, in the order sent."""
    _repeated_values_seen(server, values)


@given(values=st.lists(VALUE, min_size=2, max_size=5))
@examples(*REPEATED)
@SETTINGS
@interfaces("rsgi")
@spec("RSGI §HTTP connection scope", "DEFINED")
def test_repeated_header_keeps_every_value_in_order_in_rsgi(server, values):
    """A field repeated several times reaches the RSGI app as that many values of headers.items(), in order."""
    _repeated_values_seen(server, values)


def _obs_value_seen(server, value: bytes) -> tuple:
    field = ("X-P-Obs", value.decode("latin-1"))
    data, ex = _probe(server, "/probe/obs", [field])
    return data, [v for n, v in _view(server, ex, data)["headers"] if n == "x-p-obs"], field[1]


@given(value=OBS)
@examples(*OBS_VALUES)
@SETTINGS
@interfaces("asgi")
@spec("RFC 9110 §5.5", "SHOULD")
def test_obs_text_header_value_reaches_asgi_as_opaque_bytes(server, value):
    """A value of obs-text octets (0x80–0xFF) is treated as opaque data: the ASGI app gets those bytes."""
    data, got, sent = _obs_value_seen(server, value)
    assert got == [sent], f"got {got!r}, sent {value!r}; request {data[:300]!r}"


@given(value=OBS)
@examples(*OBS_VALUES)
@SETTINGS
@interfaces("wsgi")
@spec("PEP 3333 §Unicode Issues", "MUST")
def test_obs_text_header_value_reaches_wsgi_as_latin1(server, value):
    """A value of obs-text octets (0x80–0xFF) reaches the WSGI environ as the same bytes in latin-1 code
    points, with no loss."""
    data, got, sent = _obs_value_seen(server, value)
    assert got == [sent], f"got {got!r}, sent {value!r}; request {data[:300]!r}"


# -- bodies ---------------------------------------------------------------------------------------------


@given(
    size=SIZE,
    seed=st.integers(0, 2**32 - 1),
    chunked=st.booleans(),
    writes=st.integers(1, 12),
    route=st.sampled_from(["/echo", "/echo_iter"]),
)
@examples(*BODIES)
@ROUND_TRIP
@spec("RFC 9112 §6.3", "DEFINED")
def test_body_round_trips_whatever_the_framing_and_fragmentation(server, size, seed, chunked, writes, route):
    """A body of 0 B – 1 MiB, sent with Content-Length or in random chunks, the request cut into random
    writes, comes back from /echo and /echo_iter byte-exact (chunked only where the target's app can read a
    body without Content-Length: ``helpers/support.py``)."""
    chunked = chunked and not unlengthed_body_gap(server)
    rng = random.Random(seed)
    body = rng.randbytes(size) if hasattr(rng, "randbytes") else bytes(rng.getrandbits(8) for _ in range(size))
    headers = [("Content-Type", "application/octet-stream")]
    if chunked:
        chunks = split_at_random(body, rng, rng.randint(1, 20)) if body else []
        framed = b"".join(b"%x\r\n%s\r\n" % (len(c), c) for c in chunks) + b"0\r\n\r\n"
        data = build_request(
            "POST",
            route,
            headers + [("Transfer-Encoding", "chunked")],
            framed,
            host=server.authority,
            content_length=False,
        )
    else:
        data = build_request("POST", route, headers + [("Content-Length", str(size))], body, host=server.authority)
    head = data[: data.find(b"\r\n\r\n") + 4]
    note(
        f"request: {len(data)} bytes, head {head!r}, body = {size} bytes from random.Random({seed}), "
        f"chunked={chunked}, {writes} writes"
    )
    with Connection(server.address, 20.0) as conn:
        for piece in split_at_random(data, rng, writes - 1):
            conn.send(piece)
        ex = conn.read_responses(1, methods=["POST"], timeout=20.0)
    resp = ex.first
    assert resp.status == 200, describe(ex)
    assert resp.body == body, (
        f"{route}: sent {size} B, got {len(resp.body)} B back (seed {seed}, chunked "
        f"{chunked}, {writes} writes); head {data[:200]!r}"
    )


# -- request fragmentation, methods, WebSocket messages ------------------------------------------------------


@given(
    query=queries(),
    fields=st.lists(st.tuples(NAME, VALUE), max_size=4, unique_by=lambda f: f[0].lower()),
    cuts=st.lists(st.integers(1, 400), max_size=6),
)
@examples(*SPLITS)
@SETTINGS
@spec("RFC 9112 §2.2", "DEFINED")
def test_how_the_request_is_split_into_writes_never_changes_what_the_app_sees(server, query, fields, cuts):
    """The same request delivered whole and cut into arbitrary writes is handed to the app identically."""
    data = build_request("GET", "/probe/split?" + query, fields, host=server.authority)
    points = sorted({c for c in cuts if c < len(data)})
    note(f"raw request: {data!r}; cut at {points}")
    views = []
    for pieces in ([data], [data[a:b] for a, b in zip([0] + points, points + [len(data)])]):
        with Connection(server.address, 10.0) as conn:
            conn.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            for piece in pieces:
                conn.send(piece)
                time.sleep(0.002)
            ex = conn.read_responses(1)
        view = _view(server, ex, data)
        view["headers"] = [h for h in view["headers"] if h[0].startswith("x-p-")]
        views.append(view)
    assert views[0] == views[1], f"whole: {views[0]}\nsplit at {points}: {views[1]}\nrequest {data!r}"


@given(method=METHOD)
@examples(*METHODS)
@SETTINGS
@spec("RFC 9110 §9.1", "SHOULD")
def test_any_method_token_reaches_the_app_or_is_501(server, method):
    """Any method token (extension methods included) reaches the app as sent (ASGI method, WSGI
    REQUEST_METHOD, RSGI method); a server that does not implement a method answers 501, not 400."""
    data, ex = _probe(server, "/probe/m", method=method)
    resp = ex.first
    if resp.status == 501:
        return
    assert resp.status == 200, f"{describe(ex)}; request {data[:200]!r}"
    doc = decode_probe(resp.body)
    if doc["interface"] == "asgi":
        got = typed.decode(doc["scope"])["method"]
    elif doc["interface"] == "wsgi":
        got = typed.decode(doc["environ"])["REQUEST_METHOD"]
    else:
        got = typed.decode(doc["scope"]["method"]["value"])
    assert got == method, f"app saw {got!r}; request {data[:200]!r}"


@given(text=st.booleans(), size=st.integers(0, 70_000), seed=st.integers(0, 2**32 - 1), fragments=st.integers(1, 8))
@examples(*WS_MESSAGES)
@ROUND_TRIP
@interfaces("asgi", "rsgi")
@needs("websockets")
@spec("RFC 6455 §5.4", "MUST")
def test_websocket_messages_round_trip_whatever_the_fragmentation(server, text, size, seed, fragments):
    """A text or binary message of 0 B – 68 KiB, fragmented at random points, comes back from /ws_echo as
    the same message."""
    rng = random.Random(seed)
    if text:
        payload = "".join(rng.choice("aé€𝄞 ") for _ in range(size // 3)).encode("utf-8")
    else:
        payload = rng.randbytes(size) if hasattr(rng, "randbytes") else bytes(rng.getrandbits(8) for _ in range(size))
    parts = split_at_random(payload, rng, fragments - 1) or [b""]
    opcode = OP_TEXT if text else OP_BINARY
    note(
        f"{'text' if text else 'binary'} message of {len(payload)} bytes from random.Random({seed}), "
        f"fragments {[len(p) for p in parts]}"
    )
    conn = connect(server.address, "/ws_echo", server.authority, timeout=10.0)
    try:
        assert conn.handshake.status == 101, conn.handshake.raw[:200]
        for n, part in enumerate(parts):
            conn.send_frame(opcode if n == 0 else OP_CONT, part, fin=n == len(parts) - 1)
        got = conn.read_message()
    finally:
        conn.close()
    assert got == (opcode, payload), f"sent {len(payload)} B in {len(parts)} fragments, got {str(got)[:120]}"
