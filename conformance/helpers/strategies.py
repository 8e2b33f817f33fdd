"""Hypothesis strategies and settings of the property checks (conformance/checks/test_properties.py).

Rules of this module: it only describes inputs (request targets, field names and values, body sizes, method
tokens) and the budgets of the examples; the checks that send them and judge what the app saw stay in
test_properties.py, so their ids do not change.
"""

from __future__ import annotations

import random
import string

from hypothesis import HealthCheck, Phase, assume, example, settings
from hypothesis import strategies as st

__all__ = [
    "SETTINGS",
    "ROUND_TRIP",
    "encoded",
    "utf8_path",
    "byte_path",
    "queries",
    "NAME",
    "VALUE",
    "OBS",
    "SIZE",
    "split_at_random",
    "METHOD",
    "examples",
    "UTF8_PATHS",
    "BYTE_PATHS",
    "QUERIES",
    "FIELDS",
    "REPEATED",
    "OBS_VALUES",
    "BODIES",
    "SPLITS",
    "METHODS",
    "WS_MESSAGES",
]

# hypothesis must not count the session server's start-up against an example, nor object to the
# function-scoped autouse fixtures of conftest.py (they do not depend on the example). A failing explicit example
# ends the check (report_multiple_bugs=False): against a server that never answers, every further example would
# wait out its own read timeout before the verdict, past --check-timeout.
SETTINGS = settings(
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
    deadline=None,
    report_multiple_bugs=False,
)

# The round trips of bodies and WebSocket messages send up to 1 MiB per example, and a failing example can
# wait out its read timeout (10-20 s): hypothesis's shrinker replays dozens of such examples (daphne's
# unechoed empty message: 30 × 10 s), far past --check-timeout, turning a known deviation into a timeout.
# These two stop at the first failing example, unshrunk (the generate phase tries the simplest example first,
# derandomized: reproducible, and note() shows it), and their examples fit the check's deadline.
ROUND_TRIP = settings(
    SETTINGS,
    max_examples=max(4, settings.default.max_examples // 2),
    phases=(Phase.explicit, Phase.reuse, Phase.generate),
)

_PCHAR_SAFE = string.ascii_letters + string.digits + "-._~!$&'()*+,;=:@"
_QUERY_SAFE = _PCHAR_SAFE + "/?"


def _pct(byte: int) -> str:
    return f"%{byte:02X}"


@st.composite
def encoded(draw, raw: bytes, safe: str) -> str:
    """``raw`` percent-encoded, each safe character kept or (at random) escaped anyway."""
    out = []
    for byte in raw:
        char = chr(byte)
        keep = byte < 128 and char in safe and draw(st.sampled_from((True, True, False)))
        out.append(char if keep else _pct(byte))
    return "".join(out)


_TEXT = st.text(st.characters(blacklist_categories=("Cs",), max_codepoint=0x10FFFF), min_size=0, max_size=12)


@st.composite
def utf8_path(draw) -> tuple:
    """(target path, decoded str) under /probe/: segments of arbitrary text, none "." or ".."."""
    segments = draw(st.lists(_TEXT, min_size=1, max_size=4))
    assume(all(s not in (".", "..") for s in segments))
    parts = [draw(encoded(s.encode("utf-8"), _PCHAR_SAFE)) for s in segments]
    return "/probe/" + "/".join(parts), "/probe/" + "/".join(segments)


@st.composite
def byte_path(draw) -> tuple:
    """(target path, decoded bytes) under /probe/ whose decoded bytes are not valid UTF-8."""
    raw = draw(st.binary(min_size=1, max_size=16))
    try:
        raw.decode("utf-8")
        raw += b"\xff"
    except UnicodeDecodeError:
        pass
    target = draw(encoded(raw, _PCHAR_SAFE.replace(".", "")))
    return "/probe/x" + target, b"/probe/x" + raw


@st.composite
def queries(draw) -> str:
    raw = draw(st.binary(min_size=0, max_size=40))
    return draw(encoded(raw, _QUERY_SAFE))


NAME = st.text(string.ascii_letters + string.digits + "-", min_size=1, max_size=16).map(lambda s: "X-P-" + s)
_VCHAR = "".join(chr(c) for c in range(0x21, 0x7F))
VALUE = st.text(_VCHAR + " \t", max_size=40).map(lambda s: s.strip(" \t"))


OBS = st.binary(min_size=1, max_size=20).map(lambda b: bytes(0x80 | (c & 0x7F) for c in b))


SIZE = st.one_of(st.integers(0, 600), st.integers(601, 70_000), st.just(1 << 20))


def split_at_random(data: bytes, rng: random.Random, pieces: int) -> list:
    cuts = sorted(rng.sample(range(1, len(data)), min(pieces, len(data) - 1))) if len(data) > 1 else []
    return [data[a:b] for a, b in zip([0] + cuts, cuts + [len(data)])]


METHOD = st.text(string.ascii_uppercase, min_size=1, max_size=12).filter(lambda m: m not in ("HEAD", "CONNECT"))


# -- explicit examples ------------------------------------------------------------------------------------
# The inputs a verdict rests on, run first in every profile and wherever gatecheck is installed; the drawn
# examples come after them. Each is an input its strategy could draw.


def examples(*cases: dict):
    """Decorate a check with one ``@example(**case)`` per case, in order."""

    def wrap(check):
        for case in reversed(cases):
            check = example(**case)(check)
        return check

    return wrap


UTF8_PATHS = [
    dict(path=p)
    for p in (
        ("/probe/caf%C3%A9", "/probe/café"),  # a 2-byte character
        ("/probe/%E2%82%AC%20%F0%9F%98%80", "/probe/€ 😀"),  # 3 and 4 bytes, a space
        ("/probe/a%2Fb/c", "/probe/a/b/c"),  # an encoded slash inside a segment
        ("/probe/%7E%41-x", "/probe/~A-x"),  # unreserved characters encoded anyway
    )
]
BYTE_PATHS = [
    dict(path=p)
    for p in (
        ("/probe/x%FF", b"/probe/x\xff"),  # a byte no UTF-8 sequence starts with
        ("/probe/x%C3%28", b"/probe/x\xc3("),  # a lead byte, then no continuation
        ("/probe/x%E2%82", b"/probe/x\xe2\x82"),  # a truncated 3-byte sequence
    )
]
QUERIES = [dict(query=q) for q in ("", "a=%FF%FE&b=c%20d", "x=%2F%3F/?&&=;+", "%41")]
FIELDS = [
    dict(fields=f)
    for f in (
        [("X-P-A", "one  two\tthree")],  # inner spaces and a tab
        [("X-P-Mixed-Case", "!\"#$%&'()*+,-./:;<=>?@[\\]^_`{|}~")],  # every visible non-alphanumeric
        [("X-P-E", ""), ("X-P-F", "f")],  # an empty value
    )
]
REPEATED = [dict(values=v) for v in (["1", "2"], ["one", "two, three", "four"])]
OBS_VALUES = [dict(value=v) for v in (b"\xe9", b"\x80\xff\xe9\xa0")]
METHODS = [dict(method=m) for m in ("PATCH", "PURGE", "A", "MKCALENDAR")]
BODIES = [
    dict(size=0, seed=0, chunked=True, writes=1, route="/echo"),
    dict(size=65_537, seed=1, chunked=True, writes=12, route="/echo_iter"),
    dict(size=1 << 20, seed=2, chunked=False, writes=3, route="/echo"),
    dict(size=4616, seed=69337, chunked=False, writes=11, route="/echo_iter"),  # just past /echo_iter's 4 KiB read
]
SPLITS = [
    dict(query="a=%20b&c", fields=[("X-P-A", "one two")], cuts=[1, 2, 3, 4, 5, 6]),  # the request line, bytewise
    dict(query="", fields=[("X-P-A", "b"), ("X-P-C", "d")], cuts=[20, 26, 27, 28, 60, 61]),
]
WS_MESSAGES = [
    dict(text=True, size=0, seed=0, fragments=1),  # an empty text message
    dict(text=True, size=3000, seed=4, fragments=3),  # UTF-8 sequences split across fragments
    dict(text=False, size=70_000, seed=5, fragments=8),
]
