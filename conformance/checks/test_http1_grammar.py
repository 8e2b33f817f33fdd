"""Request framing from RFC 9112's grammar: every mutation of ``conformance/spec/framing.py``, judged by the
grammar's own reading (``conformance/spec/grammar.py``) and by what the app saw.

Each mutation is one edit of a valid request whose body carries a complete request with its own token: stray
octets (0-4) where a CRLF belongs, every truncation point of a body at end of stream, non-token and lower-case
methods, Content-Length values, content on HEAD, GET, OPTIONS, DELETE and TRACE. A server passes a
``..._is_read_as_the_grammar_reads_it`` check when every request the grammar reads complete reached the app
with its method and exactly its body (or, where the text lets it, was refused), and the request the grammar
reads invalid or incomplete was never read as complete nor answered 2xx, the connection ending within the
deadline: never a second request made of body octets, never a body longer or shorter than framed, never a
hang. Where the grammar reads the octets as invalid, RFC 9112 §2.2 asks for a 400 and a close: two checks.
"""

from __future__ import annotations

import pytest

from gatecheck.conformance.helpers.framing import label, observe, problems
from gatecheck.conformance.helpers.support import refused_for_length
from gatecheck.conformance.helpers.wire import CLOSE_WAIT, REPLY_TIMEOUT, says_close
from gatecheck.conformance.spec.framing import INVALID_ONES, of_family
from gatecheck.conformance.spec.markers import needs, spec
from gatecheck.conformance.spec.results import UNSUPPORTED_PREFIX, not_supported

pytestmark = needs("http1")


def _params(mutations) -> list:
    return [pytest.param(m, id=m.name) for m in mutations]


def _shown(obs) -> str:
    reading = obs.reading
    said = f"the grammar reads {len(reading.messages)} complete request(s), then {reading.end}"
    said += f" ({reading.why})" if reading.why else ""
    raw = obs.exchange.raw[:300] if obs.exchange is not None else b""
    return f"{said}; sent {obs.data[:240]!r}{' then EOF' if obs.mutation.eof else ''}; got {raw!r}"


def _observed(server, mutation):
    """The observation; not supported when the server answers 411 to a chunked request whose head the grammar
    reads (RFC 9112 §6.3 lets a server refuse a body without Content-Length) before its app ran."""
    obs = observe(server, mutation)
    reading, first = obs.reading, obs.finals[0] if obs.finals else None
    head_read = bool(reading.messages) or reading.partial is not None
    if (
        mutation.framing == "chunked"
        and head_read
        and first is not None
        and first.status == 411
        and not obs.seen[obs.tokens[0]].called
    ):
        not_supported(refused_for_length(first))
    return obs


def _judge(server, mutation) -> None:
    obs = _observed(server, mutation)
    found = problems(obs, server.interface)
    assert not found, f"{'; '.join(found)} [{label(obs, server.interface)}]; {_shown(obs)}"


@pytest.mark.parametrize("mutation", _params(of_family("request-line")))
@spec("RFC 9112 §3", "DEFINED")
def test_request_line_is_read_as_the_grammar_reads_it(server, mutation):
    """Stray octets where the request-line's CRLF belongs, lower- and mixed-case methods (the app sees them
    as sent; ASGI's scope upper-cases them) and methods with a non-token octet (invalid)."""
    _judge(server, mutation)


@pytest.mark.parametrize("mutation", _params(of_family("fields")))
@spec("RFC 9112 §5", "DEFINED")
def test_field_lines_are_read_as_the_grammar_reads_them(server, mutation):
    """Stray octets (0-4) where a field line's CRLF or the head's empty line belongs, before a chunked and a
    Content-Length body: octets before a CRLF are part of that field's value; a CRLF gone joins two lines."""
    _judge(server, mutation)


@pytest.mark.parametrize("mutation", _params(of_family("content-length")))
@spec("RFC 9112 §6.3", "DEFINED")
def test_content_length_body_is_read_as_the_grammar_reads_it(server, mutation):
    """Content-Length values around the body's length: a valid value frames exactly that many octets (what
    follows is the next request), an invalid one is no length at all."""
    _judge(server, mutation)


@pytest.mark.parametrize("mutation", _params(of_family("chunked")))
@spec("RFC 9112 §7.1", "MUST")
def test_chunked_body_is_read_as_the_grammar_reads_it(server, mutation):
    """Stray octets (0-4), a bare LF and a bare CR where each CRLF of the chunked coding belongs: after a
    chunk line, after chunk-data, after the last-chunk, in the trailer section and at its end."""
    _judge(server, mutation)


@pytest.mark.parametrize("mutation", _params(of_family("truncated")))
@spec("RFC 9112 §8", "DEFINED")
def test_truncated_body_is_read_as_incomplete(server, mutation):
    """The client ends its side inside the body (every octet of the chunked framing, three of each chunk's
    data, points of a Content-Length body): the message is incomplete; the app never reads it as complete
    (a WSGI app reading CONTENT_LENGTH can tell a short read), and the server closes."""
    _judge(server, mutation)


@pytest.mark.parametrize("mutation", _params(of_family("method-body")))
@spec("RFC 9112 §6", "DEFINED")
def test_body_on_any_method_is_framed_by_its_fields(server, mutation):
    """Content with Content-Length or chunked on HEAD, GET, OPTIONS, DELETE and TRACE is framed like any body:
    read by the app (or the request refused), never parsed as a request of its own."""
    _judge(server, mutation)


def _answered(server, mutation):
    """The observation and the response to the invalid request; not supported when the server closed after the
    complete requests before it (saying close: its way with connections), so never read the invalid octets."""
    obs = _observed(server, mutation)
    count = len(obs.reading.messages)
    if len(obs.finals) == count and count and says_close(obs.finals[-1]) and obs.closed:
        pytest.skip(
            f"{UNSUPPORTED_PREFIX} the server closed after the {count} complete request(s) before the "
            "invalid octets, saying close"
        )
    return obs, obs.finals[count] if len(obs.finals) > count else None


@pytest.mark.parametrize("mutation", _params(INVALID_ONES))
@spec("RFC 9112 §2.2", "SHOULD")
def test_invalid_request_is_answered_400(server, mutation):
    """Octets the grammar cannot read are answered 400 (a final coding other than chunked may get 501, RFC
    9112 §6.1). Where the app was already reading the body, the server reports it to the app (a failed
    read), and then any 4xx or 5xx counts."""
    obs, resp = _answered(server, mutation)
    allowed = {400} | ({501} if "transfer coding" in obs.reading.why else set())
    partial = obs.reading.partial
    told = partial is not None and obs.seen[partial.token].read == "failed"
    ok = resp is not None and (resp.status in allowed or (told and resp.status >= 400))
    assert ok, f"want {'/'.join(map(str, sorted(allowed)))}: [{label(obs, server.interface)}]; {_shown(obs)}"


@pytest.mark.parametrize("mutation", _params(INVALID_ONES))
@spec("RFC 9112 §2.2", "SHOULD")
def test_invalid_request_closes_the_connection(server, mutation):
    """After answering octets the grammar cannot read, the server closes the connection. A close with no valid
    answer before it is no evidence of a deliberate close (as ``wire.assert_closed_after_answer``)."""
    obs, resp = _answered(server, mutation)
    if resp is None:
        answer = f"an answer that is no HTTP/1.x response ({obs.error[:200]})" if obs.error else "no answer"
        after = (
            "the connection then closed: no close after an answer to judge"
            if obs.closed
            else f"the connection still open {REPLY_TIMEOUT + CLOSE_WAIT:g} s after the invalid octets"
        )
        pytest.fail(f"{answer}; {after}: [{label(obs, server.interface)}]; {_shown(obs)}")
    assert obs.closed, f"the connection stayed open after the {resp.status}: {_shown(obs)}"
