"""The property checks draw the same examples wherever gatecheck runs from and whatever the session imported.

Hypothesis (6.131 and later) mixes literals of imported "local" modules into what it draws, derandomized or not;
a conformance session switches that off (``conformance/plugin/profiles.py``). Each draw runs in a fresh
interpreter, once with a local module full of path-like literals imported and once without.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from urllib.parse import unquote_to_bytes

import pytest

from gatecheck.conformance.helpers import strategies

ROOT = Path(__file__).resolve().parents[2]

_LITERALS = """
WORDS = ["/pathsend/", "/probe/%2F", "x-literal-one", "x-literal-two", "/", "%", "?", "\\u00e9t\\u00e9",
         "gatecheck", "segment/with/slashes", "a=b&c=d", "X-P-Literal"]
NUMBERS = [65535, 65536, 1 << 20, 4097]
"""

_DRAW = """
import json, sys
if sys.argv[1] == "with-literals":
    import path_literals  # noqa: F401 - a local module: hypothesis may draw its literals
if sys.argv[2] == "session":
    from gatecheck.conformance.plugin.profiles import load_profile
    load_profile()
from hypothesis import given, settings
from gatecheck.conformance.helpers.strategies import VALUE, queries, utf8_path
seen = []

@settings(max_examples=150, derandomize=True, database=None, deadline=None)
@given(path=utf8_path(), query=queries(), value=VALUE)
def draw(path, query, value):
    seen.append([path[0], query, value])

draw()
print(json.dumps(seen))
"""


def _draw(tmp_path, literals: bool, session: bool) -> list:
    (tmp_path / "path_literals.py").write_text(_LITERALS)
    env = {**os.environ, "PYTHONPATH": f"{ROOT}{os.pathsep}{tmp_path}"}
    out = subprocess.run(
        [sys.executable, "-c", _DRAW, "with-literals" if literals else "plain", "session" if session else "bare"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
        env=env,
    )
    assert out.returncode == 0, out.stderr[-2000:]
    return json.loads(out.stdout)


def test_a_session_draws_the_same_examples_whatever_local_modules_are_imported(tmp_path):
    assert _draw(tmp_path, literals=True, session=True) == _draw(tmp_path, literals=False, session=True)


def test_without_the_session_profile_the_local_literals_do_change_the_examples(tmp_path):
    """The control: the test above would see the difference if the session did not remove it."""
    from hypothesis.internal.conjecture import providers

    if not hasattr(providers, "_get_local_constants"):
        pytest.skip("this hypothesis draws no local literals (before 6.131)")
    with_literals = _draw(tmp_path, literals=True, session=False)
    assert with_literals != _draw(tmp_path, literals=False, session=False)


@pytest.mark.parametrize("name", ["UTF8_PATHS", "BYTE_PATHS"])
def test_explicit_paths_say_the_same_as_their_expectation(name):
    """Each explicit path's target percent-decodes to the path its check expects."""
    for case in getattr(strategies, name):
        target, want = case["path"]
        got = unquote_to_bytes(target)
        assert got == (want if isinstance(want, bytes) else want.encode("utf-8")), case


def test_explicit_byte_paths_are_not_utf8():
    for case in strategies.BYTE_PATHS:
        with pytest.raises(UnicodeDecodeError):
            case["path"][1].decode("utf-8")
