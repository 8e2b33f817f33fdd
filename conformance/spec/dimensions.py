"""Three dimensions of the checks as tables: application shapes, byte classes and connection states.

A check parametrized over a table gets every entry of it, and an entry added here reaches every check that
uses the table. Each entry carries what the spec text says about it (the verdict) and the clause and level
of the sentence that says so, so the check's ``@spec`` comes from the table too (``byte_params``).

**Application shapes** (PEP 3333 §Specification Details, §The write() Callable, §Optional Platform-Specific
File Handling; ASGI WWW §Response Start, §Response Body; RSGI §HTTP protocol interface): the ways an app may
hand its response over. WSGI: the iterable's kind (a list of one or more items, a generator, an iterator
class with ``close()``, ``wsgi.file_wrapper``), ``write()`` before the iterable, ``start_response`` inside the first
``next()``, and an iterable whose first or a later ``next()`` raises. ASGI: the container of the header pairs (the text
types them ``Iterable[[byte string, byte string]]``) and the body messages (``body`` bytes, default ``b""``;
``more_body`` default ``False``). RSGI: each response method.

**Byte classes** (RFC 9110 §5.1, §5.5; RFC 9112 §2.2, §5; RFC 9113 §8.2.1). A field value is
``*field-content`` of VCHAR, obs-text (0x80-0xFF), SP and HTAB; a field name is a ``token``. Verdicts:

- ``KEEP``: the octets are part of the grammar; the app sees them byte for byte (a value's interior HTAB;
  obs-text, "opaque data").
- ``REJECT_OR_SP``: CR and NUL on HTTP/1.1: the message is rejected (400), or each octet becomes SP.
- ``REJECT_OR_KEEP``: the other CTLs: invalid, so the message is rejected, or they are retained as sent
  (RFC 9110 §5.5's MAY); any third outcome (dropped, mangled, a 5xx) answers neither.
- ``REJECT``: the message is refused (HTTP/1.1: a 400; HTTP/2: malformed, a stream error or a 4xx).

**Connection states** (RFC 9112 §9.3, §9.3.2): where a request stands on its connection: alone on a new
one, the 2nd or 3rd request of a kept-alive connection (each sent after the previous response), or the
1st, 2nd or 3rd of a pipeline of three (all sent in one write, ``GET /ping`` filling the other places).
"""

from __future__ import annotations

from dataclasses import dataclass

import pytest

from gatecheck import fixtures
from gatecheck.conformance.spec.markers import spec

__all__ = [
    "ByteClass",
    "KEEP",
    "REJECT_OR_SP",
    "REJECT_OR_KEEP",
    "REJECT",
    "TCHAR",
    "OTHER_CTL",
    "OBS_TEXT",
    "H1_VALUE_CLASSES",
    "H2_VALUE_CLASSES",
    "H1_NAME_CLASSES",
    "H2_NAME_CLASSES",
    "APP_VALUE_CLASSES",
    "APP_NAME_CLASSES",
    "byte_params",
    "Position",
    "PIPELINE",
    "POSITIONS",
    "position_params",
    "show",
    "WsgiShape",
    "WSGI_SHAPES",
    "WSGI_BODY_SHAPES",
    "WSGI_CLOSING_SHAPES",
    "WSGI_RAISING_SHAPES",
    "wsgi_steps",
    "shape_params",
    "ASGI_HEADER_SHAPES",
    "ASGI_BODY_SHAPES",
    "RSGI_METHODS",
    "rsgi_steps",
]

KEEP, REJECT_OR_SP, REJECT_OR_KEEP, REJECT = "keep", "reject-or-sp", "reject-or-keep", "reject"

#: RFC 9110 §5.6.2: tchar
TCHAR = frozenset(b"!#$%&'*+-.^_`|~0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz")
#: the C0 controls and DEL other than HTAB, LF, CR and NUL (each has its own rule)
OTHER_CTL = bytes(b for b in range(0x20) if b not in b"\x00\t\n\r") + b"\x7f"
OBS_TEXT = bytes(range(0x80, 0x100))
_DELIMITERS = bytes(b for b in range(0x21, 0x7F) if b not in TCHAR)  # "(),/:;<=>?@[\]{}
_WS = b"\t "


@dataclass(frozen=True)
class ByteClass:
    name: str
    octets: bytes
    verdict: str
    clause: str
    level: str
    batch: bool = False  # the octets go out together in one message (the rule allows: none is refused)


def _c(name, octets, verdict, clause, level) -> ByteClass:
    return ByteClass(name, octets, verdict, clause, level, batch=verdict == KEEP)


_S55 = "RFC 9110 §5.5"

#: request field values on HTTP/1.1 (the WebSocket handshake is one). A bare LF is not here: RFC 9112 §2.2
#: lets a recipient read it as a line end, so it is no value octet on HTTP/1.1.
H1_VALUE_CLASSES = (
    _c("htab", b"\t", KEEP, _S55, "DEFINED"),
    _c("obs-text", OBS_TEXT, KEEP, _S55, "SHOULD"),
    _c("nul", b"\x00", REJECT_OR_SP, _S55, "MUST"),
    _c("cr", b"\r", REJECT_OR_SP, "RFC 9112 §2.2", "MUST"),
    _c("other-ctl", OTHER_CTL, REJECT_OR_KEEP, "RFC 9112 §2.2", "SHOULD"),
)

_S821 = "RFC 9113 §8.2.1"

#: request field values on HTTP/2
H2_VALUE_CLASSES = (
    _c("htab", b"\t", KEEP, _S55, "DEFINED"),
    _c("obs-text", OBS_TEXT, KEEP, _S55, "SHOULD"),
    _c("nul", b"\x00", REJECT, _S821, "MUST"),
    _c("cr", b"\r", REJECT, _S821, "MUST"),
    _c("lf", b"\n", REJECT, _S821, "MUST"),
    _c("other-ctl", OTHER_CTL, REJECT_OR_KEEP, _S821, "SHOULD"),
)

#: request field names on HTTP/1.1 (the colon ends a name; CR and LF end a line: neither can be inside one)
H1_NAME_CLASSES = (
    _c("whitespace", _WS, REJECT, "RFC 9112 §2.2", "SHOULD"),
    _c("ctl", OTHER_CTL + b"\x00", REJECT, "RFC 9112 §2.2", "SHOULD"),
    _c("delimiters", _DELIMITERS.replace(b":", b""), REJECT, "RFC 9112 §2.2", "SHOULD"),
    _c("obs-text", OBS_TEXT, REJECT, "RFC 9112 §2.2", "SHOULD"),
)

#: request field names on HTTP/2 (lower-case letters only: upper case has its own check in test_h2_mapping)
H2_NAME_CLASSES = (
    _c("ctl-and-space", bytes(range(0x21)) + b"\x7f", REJECT, _S821, "MUST"),
    _c("colon", b":", REJECT, _S821, "MUST"),
    _c("delimiters", _DELIMITERS.replace(b":", b""), REJECT, _S821, "SHOULD"),
    _c("obs-text", OBS_TEXT, REJECT, _S821, "MUST"),
)

_S22 = "RFC 9110 §2.2"

#: response field values the app hands over: what may reach the wire (the server is the sender)
APP_VALUE_CLASSES = (
    _c("htab", b"\t", KEEP, _S55, "DEFINED"),
    _c("obs-text", OBS_TEXT, KEEP, _S55, "DEFINED"),
    ByteClass("nul-cr-lf", b"\x00\r\n", REJECT, _S22, "MUST NOT"),
    ByteClass("other-ctl", OTHER_CTL, REJECT, _S22, "MUST NOT"),
)

#: response field names the app hands over
APP_NAME_CLASSES = (
    ByteClass("ctl-and-space", bytes(range(0x21)) + b"\x7f", REJECT, _S22, "MUST NOT"),
    ByteClass("delimiters", _DELIMITERS, REJECT, _S22, "MUST NOT"),
    ByteClass("obs-text", OBS_TEXT, REJECT, _S22, "MUST NOT"),
)


def byte_params(classes) -> list:
    """One ``pytest.param`` per class, id = its name, marked with the clause and level of its sentence."""
    return [pytest.param(c, id=c.name, marks=spec(c.clause, c.level)) for c in classes]


def show(octet: int) -> str:
    return f"0x{octet:02x}"


@dataclass(frozen=True)
class Position:
    name: str
    index: int  # 0-based position of the request under test on its connection
    pipelined: bool  # one write of PIPELINE requests (else each request after the previous response)


#: how many requests a pipeline holds (the request under test at ``index``, ``GET /ping`` elsewhere)
PIPELINE = 3

POSITIONS = (
    Position("alone", 0, False),
    Position("keep-alive-2nd", 1, False),
    Position("keep-alive-3rd", 2, False),
    Position("pipelined-1st", 0, True),
    Position("pipelined-2nd", 1, True),
    Position("pipelined-3rd", 2, True),
)


def position_params(positions=POSITIONS) -> list:
    return [pytest.param(p, id=p.name) for p in positions]


# -- application shapes ------------------------------------------------------------------------

_BLOCKS = ("abc", "defgh")
_FILE = (fixtures.STATIC_DIR / fixtures.STATIC_SMALL).read_bytes()


@dataclass(frozen=True)
class WsgiShape:
    name: str
    body: bytes  # what the app hands over in all (empty when next() raises first)
    closed_by: str | None  # the event that shows the iterable's close() ran (None: nothing to observe)
    raises: bool = False  # a next() raises: the response cannot complete


#: the WSGI response shapes (the fixture's /script WSGI interpreter builds each: ``wsgi_steps``)
WSGI_SHAPES = (
    # a list of one item: PEP 3333 lets the server compute Content-Length from it
    WsgiShape("one-item-list", b"abcdefgh", None),
    WsgiShape("list", b"abcdefgh", None),
    # a generator's close() does nothing observable once it is exhausted
    WsgiShape("generator", b"abcdefgh", None),
    WsgiShape("iterator-with-close", b"abcdefgh", "wsgi.close"),
    # the server's wrapper's close() must close the file: the file's close() is the evidence
    WsgiShape("file-wrapper", _FILE, "file.close"),
    WsgiShape("write-then-iterable", b"abcdefgh", "wsgi.close"),
    WsgiShape("start-response-in-first-next", b"abcdefgh", "wsgi.close"),
    WsgiShape("first-next-raises", b"", "wsgi.close", raises=True),
    WsgiShape("later-next-raises", b"abc", "wsgi.close", raises=True),
)
#: the shapes that deliver a whole body (every body/Content-Length rule applies)
WSGI_BODY_SHAPES = tuple(s for s in WSGI_SHAPES if not s.raises)
#: the complete shapes whose iterable has a close() the log shows
WSGI_CLOSING_SHAPES = tuple(s for s in WSGI_BODY_SHAPES if s.closed_by)
#: the shapes whose iteration raises
WSGI_RAISING_SHAPES = tuple(s for s in WSGI_SHAPES if s.raises)


def wsgi_steps(shape: WsgiShape, status: str = "200 OK", headers=()) -> list:
    """The /script WSGI steps that answer ``status`` with ``headers`` (plus application/octet-stream) and
    ``shape.body`` in that shape."""
    sr = ["start_response", status, [["Content-Type", "application/octet-stream"], *map(list, headers)]]
    first, rest = _BLOCKS
    return {
        "one-item-list": [sr, ["return_list", ["".join(_BLOCKS)]]],
        "list": [sr, ["return_list", list(_BLOCKS)]],
        "generator": [sr, ["return_generator", list(_BLOCKS)]],
        "iterator-with-close": [sr, ["yield", first], ["yield", rest]],
        "file-wrapper": [sr, ["file_wrapper", fixtures.STATIC_SMALL]],
        "write-then-iterable": [sr, ["write", first], ["yield", rest]],
        "start-response-in-first-next": [["lazy"], sr, ["yield", first], ["yield", rest]],
        "first-next-raises": [sr, ["lazy"], ["raise", "the first next()"]],
        "later-next-raises": [sr, ["yield", first], ["raise", "a later next()"]],
    }[shape.name]


def shape_params(shapes) -> list:
    return [pytest.param(s, id=s.name) for s in shapes]


#: ASGI: the containers the response header pairs go out in (the fixture's ``{"headers_as": name}``):
#: a list of lists, a list of tuples, a tuple of tuples, an iterable that is neither list nor tuple
ASGI_HEADER_SHAPES = ("lists", "tuples", "tuple", "iterable")

#: ASGI: response bodies as the allowed message shapes (``body`` bytes, default b""; ``more_body`` default
#: False): (name, the http.response.body messages, the body they make). One message with a default left
#: out is test_omitted_keys_take_their_defaults's (test_asgi_messages.py).
_B = {"body": {"b64": "YWJj"}}  # b"abc"
ASGI_BODY_SHAPES = (
    ("more-body-false", [{"type": "http.response.body", **_B, "more_body": False}], b"abc"),
    (
        "two-messages",
        [
            {"type": "http.response.body", **_B, "more_body": True},
            {"type": "http.response.body", "body": {"b64": "ZGVm"}},
        ],
        b"abcdef",
    ),
    (
        "last-without-body-key",
        [{"type": "http.response.body", **_B, "more_body": True}, {"type": "http.response.body"}],
        b"abc",
    ),
    (
        "empty-then-bytes",
        [{"type": "http.response.body", "body": {"b64": ""}, "more_body": True}, {"type": "http.response.body", **_B}],
        b"abc",
    ),
)

#: RSGI: every response method, as steps with a status, headers and the body each sends
RSGI_METHODS = (
    "response_empty",
    "response_str",
    "response_bytes",
    "response_file",
    "response_file_range",
    "response_stream-bytes",
    "response_stream-str",
)


def rsgi_steps(method: str, status: int, headers: list) -> list:
    """The /script RSGI steps that answer through ``method`` with ``status`` and ``headers``."""
    name = fixtures.STATIC_SMALL
    return {
        "response_empty": [["response_empty", status, headers]],
        "response_str": [["response_str", status, headers, "x"]],
        "response_bytes": [["response_bytes", status, headers, "x"]],
        "response_file": [["response_file", status, headers, name]],
        "response_file_range": [["response_file_range", status, headers, name, 0, 10]],
        "response_stream-bytes": [["stream", status, headers], ["send_bytes", "x"]],
        "response_stream-str": [["stream", status, headers], ["send_str", "x"]],
    }[method]
