"""The levels table (conformance/levels/*.toml) against the checks themselves: every check has a row, every
row names a check, a row's clause and level agree with the check's @spec, and a keyword level is in its
sentence. The checks are collected by a real pytest run over conformance/ (one subprocess per session: the
``collected_checks`` fixture of tests/conformance/conftest.py)."""

from __future__ import annotations

from collections import defaultdict
from pathlib import Path

import pytest

from gatecheck.conformance.spec.levels import (
    LEVELS_DIR,
    PER_PARAMETER,
    LevelsError,
    keyword_in_sentence,
    load_table,
    row_for,
    row_for_check,
)
from tests.installed import CHECKS

ROOT = Path(__file__).resolve().parents[2]
MODULES = sorted(p.stem for p in CHECKS.glob("test_*.py"))


@pytest.fixture(scope="module")
def checks(collected_checks) -> dict:
    """module stem → function name → [items as {params, clause, level}]."""
    result = defaultdict(lambda: defaultdict(list))
    for item in collected_checks:
        result[item["module"]][item["function"]].append(item)
    return result


@pytest.mark.parametrize("module", MODULES)
def test_every_check_has_a_row(checks, module):
    assert (LEVELS_DIR / f"{module}.toml").exists(), f"conformance/levels/{module}.toml is missing"
    missing = sorted(set(checks[module]) - set(load_table(module)))
    assert not missing, f"conformance/levels/{module}.toml has no row for: {', '.join(missing)}"


@pytest.mark.parametrize("module", MODULES)
def test_rows_name_checks_and_agree_with_their_spec(checks, module):
    problems = []
    for function, entry in load_table(module).items():
        items = checks[module].get(function)
        if not items:
            problems.append(f"[{function}] names no check in conformance/{module}.py")
            continue
        for key in entry.params:
            if not any(row_for(module, function, item["params"]) is entry.params[key] for item in items):
                problems.append(f"[{function}.params.{key!r}] matches no parameter of the check")
        for item in items:
            row = row_for(module, function, item["params"])
            clause = item["clause"] if row.clause == PER_PARAMETER else row.clause
            if (clause, row.level) != (item["clause"], item["level"]):
                problems.append(
                    f"{function}[{item['params']}]: row says {row.clause!r} {row.level}, "
                    f"@spec says {item['clause']!r} {item['level']}"
                )
    assert not problems, "\n".join(problems)


@pytest.mark.parametrize("module", MODULES)
def test_keyword_levels_are_in_their_sentence(module):
    problems = []
    for function, entry in load_table(module).items():
        for where, row in [(function, entry.row)] + [(f"{function}[{k}]", r) for k, r in entry.params.items()]:
            if not keyword_in_sentence(row.clause, row.level, row.sentence):
                problems.append(
                    f"{where}: level {row.level} but the sentence of {row.clause} does not say it: {row.sentence!r}"
                )
    assert not problems, "\n".join(problems)


@pytest.mark.parametrize(
    "clause,level,sentence,expected",
    [
        ("RFC 9110 §9.3.2", "MUST NOT", "the server MUST NOT send content", True),
        ("RFC 9110 §9.3.2", "MUST", "the server MUST NOT send content", False),
        ("RFC 9112 §7.1.1", "SHOULD", "a server ought to limit the total length", False),
        ("RFC 9110 §6.2", "MUST", "a server can send a 505 (HTTP Version Not Supported)", False),
        ("RFC 9112 §6.1", "SHOULD", "the server SHOULD respond with the 501 (Not Implemented) status code", True),
        ("RFC 9112 §6.1", "SHOULD", "it is RECOMMENDED that", True),
        ("RFC 9112 §6.1", "SHOULD", "it is NOT RECOMMENDED that", False),
        ("RFC 9112 §6.1", "SHOULD NOT", "it is NOT RECOMMENDED that", True),
        ("RFC 6455 §5.1", "MUST", "a server must close", False),  # lower case is not BCP 14 in an RFC
        ("PEP 3333 §The start_response() Callable", "MUST", "the server must check for errors", True),
        ("ASGI WWW §HTTP", "SHOULD NOT", "servers should not send", True),
        ("RFC 9110 §15", "POLICY", "a server ought to", True),
        ("RFC 9110 §15", "INFO", "a server can", True),
    ],
)
def test_keyword_rule(clause, level, sentence, expected):
    assert keyword_in_sentence(clause, level, sentence) is expected


def test_rows_load_with_parameter_overrides_and_refuse_missing_keys(tmp_path):
    (tmp_path / "test_m.toml").write_text(
        """
[test_f]
clause = "RFC 1 §1"
level = "MUST"
sentence = "A server MUST  do it."
accepts = "it done"
[test_f.params."odd-one"]
level = "POLICY"
""",
        encoding="utf-8",
    )
    entry = load_table("test_m", tmp_path)["test_f"]
    assert entry.row.sentence == "A server MUST do it."
    assert entry.params["odd-one"].level == "POLICY" and entry.params["odd-one"].clause == "RFC 1 §1"
    (tmp_path / "test_bad.toml").write_text('[test_g]\nclause = "RFC 1"\nlevel = "MUST"\n', encoding="utf-8")
    with pytest.raises(LevelsError, match="missing or empty sentence, accepts"):
        load_table("test_bad", tmp_path)


def test_parameter_keys_match_whole_parts_of_a_check_id():
    from gatecheck.conformance.spec.levels import _param_matches

    assert _param_matches("unsupported-major", "unsupported-major")
    assert _param_matches("unsupported-major", "x-unsupported-major-chunked")
    assert not _param_matches("major", "unsupported-majors")
    assert row_for_check("no such id") is None
