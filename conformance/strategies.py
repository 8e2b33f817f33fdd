"""Hypothesis strategies and settings of the property checks (conformance/test_properties.py).

Rules of this module: it only describes inputs (request targets, field names and values, body sizes, method
tokens) and the budgets of the examples; the checks that send them and judge what the app saw stay in
test_properties.py, so their ids do not change.
"""
from __future__ import annotations

import random
import string

from hypothesis import HealthCheck, Phase, assume, settings
from hypothesis import strategies as st

__all__ = ["SETTINGS", "ROUND_TRIP", "encoded", "utf8_path", "byte_path", "queries", "NAME", "VALUE", "OBS", "SIZE",
           "split_at_random", "METHOD"]

# hypothesis must not count the session server's start-up against an example, nor object to the
# function-scoped autouse fixtures of conftest.py (they do not depend on the example)
SETTINGS = settings(suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
                    deadline=None)

# The round trips of bodies and WebSocket messages send up to 1 MiB per example, and a failing example can
# wait out its read timeout (10-20 s): hypothesis's shrinker replays dozens of such examples (daphne's
# unechoed empty message: 30 × 10 s), far past --check-timeout, turning a known deviation into a timeout.
# These two stop at the first failing example, unshrunk (the generate phase tries the simplest example first,
# derandomized: reproducible, and note() shows it), and their examples fit the check's deadline.
ROUND_TRIP = settings(SETTINGS, max_examples=max(4, settings.default.max_examples // 2),
                      phases=(Phase.explicit, Phase.reuse, Phase.generate))

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
