"""Request-scoped rules on a reused connection (the positions table is in conformance/spec/dimensions.py).

What a request is handed and what the server adds to its response must not depend on where the request
stands on its connection: alone, the 2nd or 3rd of a kept-alive connection, the 1st, 2nd or 3rd of a pipeline
(``helpers/positions.py`` sends them; a position a server does not reach is *not supported*). Per position:
the scope, environ or RSGI attributes equal those of the same request alone (what differs between connections
aside: the client's port, objects the probe can only describe, and what differs between the same request sent
alone twice, such as a request id); the lifespan ``state`` copy holds no key
an app wrote into its copy on another request of that connection; the response's ``Date`` is current (a
kept-alive request goes 2.2 s after the one before it, so a ``Date`` kept from the first response shows), no
field of the server's is repeated, and the response is framed by exactly one of Content-Length and
Transfer-Encoding.
"""

from __future__ import annotations

import email.utils
import math
import re

import pytest

from gatecheck.conformance.app import decode_probe, new_token, response_script, script_target, value_of
from gatecheck.conformance.helpers.positions import alone, at_position
from gatecheck.conformance.helpers.wire import request
from gatecheck.conformance.spec.dimensions import PIPELINE, position_params
from gatecheck.conformance.spec.markers import interfaces, needs, spec
from gatecheck.conformance.spec.results import UNSUPPORTED_PREFIX
from gatecheck.fixtures import TOKEN_HEADER

pytestmark = needs("http1")

#: what differs between two connections by design, per interface (the client's port; WSGI's stream objects)
_PER_CONNECTION = {
    "asgi": {"client", "state"},
    "rsgi": {"client"},
    "wsgi": {"REMOTE_PORT", "wsgi.input", "wsgi.errors", "wsgi.file_wrapper"},
}


def _view(doc: dict, interface: str) -> dict:
    """The request as the app was handed it: the scope, environ or RSGI attributes (and headers), less what
    differs per connection."""
    if interface == "asgi":
        values = value_of(doc["scope"])
    elif interface == "wsgi":
        values = value_of(doc["environ"])
    else:
        values = {k: v.get("value", v.get("error")) for k, v in doc["scope"].items()}
        values["headers"] = doc["headers"]["items"]
    return {
        k: repr(v)
        for k, v in values.items()
        if k not in _PER_CONNECTION[interface] and _plain(v) and not _server_extension(k, interface)
    }


def _server_extension(key: str, interface: str) -> bool:
    """A WSGI server's own environ key ("a lower-case dotted unique prefix", PEP 3333 §environ Variables, such as
    ``mod_wsgi.thread_id``): what it holds no text defines (a thread, a counter), so it is not the request."""
    return interface == "wsgi" and "." in key and not key.startswith("wsgi.")


def _plain(value) -> bool:
    """A value the probe could reproduce (not an object it could only describe, such as a server's socket)."""
    if type(value) in (list, tuple):  # exactly: the probe's Opaque (what it could only describe) is a tuple
        return all(_plain(v) for v in value)
    if type(value) is dict:
        return all(_plain(k) and _plain(v) for k, v in value.items())
    return value is None or type(value) in (str, bytes, int, float, bool)


@pytest.mark.parametrize("position", position_params())
@spec("RFC 9112 §9.3", "DEFINED")
def test_app_is_handed_the_same_request_at_each_position(server, position):
    """The scope (environ, RSGI attributes and headers) of a request at each place on the connection equals
    that of the same request sent alone on a new connection, key for key."""
    target = request(server, "GET", "/probe/reuse?q=1", [("X-Reuse", "v")])
    first, again = alone(server, target), alone(server, target)
    talk = at_position(server, position, target)
    resp = talk.response(position.index)
    assert first.status == 200 and resp.status == 200, f"probe answered {first.status} alone, {resp.status} here"
    want, got = _view(decode_probe(first.body), server.interface), _view(decode_probe(resp.body), server.interface)
    # what differs between the same request sent alone twice is the server's per request (a request id, a
    # timestamp): no position can show it kept
    own = _view(decode_probe(again.body), server.interface) if again.status == 200 else want
    per_request = {k for k in set(want) | set(own) if want.get(k) != own.get(k)}
    differ = {
        k: (want.get(k), got.get(k)) for k in set(want) | set(got) if want.get(k) != got.get(k) and k not in per_request
    }
    assert not differ, f"at {position.name}, (alone, here): {differ}"


def _state_script(server, token: str, steps: list) -> bytes:
    steps = steps + response_script(server.interface, 200, [("content-type", "text/plain")], ["ok"])
    return request(server, "GET", script_target(steps), [(TOKEN_HEADER, token)])


@pytest.mark.parametrize("position", position_params())
@interfaces("asgi")
@spec("ASGI Lifespan §Lifespan State", "DEFINED")
def test_state_copy_is_fresh_at_each_position(server, position):
    """A key an app set in its ``state`` copy on another request of the same connection (before it, or
    pipelined with it) is not in this request's copy: each request gets its own shallow copy."""
    keys = [f"leak_{new_token()}".replace("-", "_") for _ in range(PIPELINE - 1)]
    others = [_state_script(server, new_token(), [["state_set", key, 1]]) for key in keys]
    token = new_token()
    talk = at_position(server, position, _state_script(server, token, [["state_get"]]), others=others)
    assert talk.response(position.index).status == 200, f"got {talk.raw[:300]!r}"
    events = server.events(token, timeout=2.0)
    got = [e for e in events if e.get("event") == "step" and e.get("index") == 0]
    assert got, f"the app's state_get did not run: {events[:3]}"
    if not got[0].get("ok") and "no 'state'" in str((got[0].get("error") or {}).get("message")):
        pytest.skip(f"{UNSUPPORTED_PREFIX} no lifespan state in the request scope (optional)")
    assert got[0].get("ok"), f"the app's state_get raised: {got[0].get('error')}"
    state = got[0]["result"]
    if not isinstance(state, dict) or "gatecheck" not in state:
        pytest.skip(f"{UNSUPPORTED_PREFIX} no lifespan state in the request scope (optional): {state!r:.100}")
    leaked = [k for k in keys if k in state]
    assert not leaked, f"keys set by other requests of the connection are in this request's state: {leaked}"


def _served(server, position, pause: float = 0.0) -> tuple:
    """A scripted GET (the app answers 200 "ok") at ``position``: the conversation and the response, once the
    app's log shows it ran that request (a response made without the app is no evidence of what the server adds
    to the app's responses)."""
    token = new_token()
    talk = at_position(server, position, _state_script(server, token, []), pause=pause)
    resp = talk.response(position.index)
    assert server.events(token, timeout=2.0), (
        f"the app's log shows nothing for the request at {position.name}: no evidence the app ran it; "
        f"got {talk.raw[:300]!r}"
    )
    return talk, resp


_IMF_FIXDATE = re.compile(
    r"(Mon|Tue|Wed|Thu|Fri|Sat|Sun), \d{2} (Jan|Feb|Mar|Apr|May|Jun|Jul|Aug|Sep|Oct|Nov|Dec) "
    r"\d{4} \d{2}:\d{2}:\d{2} GMT"
)
_PAUSE = 2.2  # seconds before a kept-alive request: a Date kept from the first response is then 2 s old


@pytest.mark.parametrize("position", position_params())
@spec("RFC 9110 §6.6.1", "SHOULD")
def test_date_is_current_at_each_position(server, position):
    """The Date of the response at each place on the connection is the time it was generated (to the second,
    give or take one), never one kept from an earlier response of the connection."""
    talk, resp = _served(server, position, pause=0.0 if position.pipelined else _PAUSE)
    value = resp.header("date") or ""
    if not value and not alone(server, request(server)).header("date"):
        pytest.skip(
            f"{UNSUPPORTED_PREFIX} the server sends no Date on any response (whether it must is "
            "test_http1_responses.py's check)"
        )
    assert _IMF_FIXDATE.fullmatch(value), f"Date: {value!r} at {position.name}"
    stamp = email.utils.parsedate_to_datetime(value).timestamp()
    earliest, latest = math.floor(talk.sent_at) - 1, talk.answered_at + 1
    assert earliest <= stamp <= latest, (
        f"Date {value!r} at {position.name}: {talk.sent_at - stamp:.1f} s before the request was sent"
    )


#: the fields a server adds (or frames with) whose definitions allow no list: once only in a message
#: (Connection and Transfer-Encoding are lists, so they may be repeated)
_SINGLE = ("date", "server", "content-length", "content-type")


@pytest.mark.parametrize("position", position_params())
@spec("RFC 9110 §5.3", "MUST NOT")
def test_server_fields_are_not_repeated_at_each_position(server, position):
    """No field of the server's that is not a list (Date, Server, Content-Length) nor the app's Content-Type
    appears twice in the response at any place on the connection."""
    talk, resp = _served(server, position)
    names = [name.decode("latin-1").lower() for name, _ in resp.headers]
    repeated = sorted({n for n in names if n in _SINGLE and names.count(n) > 1})
    assert not repeated, f"repeated at {position.name}: {repeated}; got {talk.raw[:300]!r}"


@pytest.mark.parametrize("position", position_params())
@spec("RFC 9112 §6.2", "MUST NOT")
def test_response_is_framed_once_at_each_position(server, position):
    """The response at each place on the connection is framed by Content-Length or by Transfer-Encoding, never
    both (the parser then reads the responses after it at their own start)."""
    talk, resp = _served(server, position)
    both = resp.header("content-length") is not None and resp.header("transfer-encoding") is not None
    assert not both, f"Content-Length and Transfer-Encoding at {position.name}: {talk.raw[:300]!r}"
    assert (resp.status, resp.body) == (200, b"ok"), f"the scripted GET at {position.name}: {talk.raw[:300]!r}"
