"""Expectation files: their format is enforced, deviations match by check id and target pattern, and every
committed entry names a check that exists."""
from __future__ import annotations

from dataclasses import replace

import pytest

from gatecheck.conformance.plugin.expectations import EXPECTATIONS_DIR, ExpectationError, load_expectations


def write(tmp_path, text):
    (tmp_path / "srv.toml").write_text(text, encoding="utf-8")
    return tmp_path


def test_a_deviation_matches_its_check_and_target_patterns(tmp_path):
    d = write(tmp_path, '[[deviation]]\ncheck = "t.py::c[x]"\nclause = "RFC"\nevidence = "sent a, got b"\n'
                        'targets = ["srv:asgi*"]\n')
    (dev,) = load_expectations("srv", d)
    assert dev.applies("t.py::c[x]", "srv:asgi:auto")
    assert not dev.applies("t.py::c[x]", "srv:wsgi:auto")
    assert not dev.applies("t.py::c[y]", "srv:asgi:auto")
    assert "sent a, got b" in dev.reason()


@pytest.mark.parametrize("text,fragment", [
    ('[[deviation]]\ncheck = "x"\nclause = "c"\n', "lacks evidence"),
    ('[[deviation]]\ncheck = "x"\nclause = "c"\nevidence = "e"\nwhy = 1\n', "unknown keys"),
    ('[[oops]]\ncheck = "x"\n', "unknown top-level keys"),
    ('not toml [', "not valid TOML"),
])
def test_malformed_files_are_refused(tmp_path, text, fragment):
    with pytest.raises(ExpectationError) as info:
        load_expectations("srv", write(tmp_path, text))
    assert fragment in str(info.value)


def test_a_server_without_a_file_has_no_deviations(tmp_path):
    assert load_expectations("nobody", tmp_path) == []


@pytest.mark.parametrize("path", sorted(EXPECTATIONS_DIR.glob("*.toml")), ids=lambda p: p.name)
def test_committed_expectation_files_are_valid(path):
    for deviation in load_expectations(path.stem):
        assert "::" in deviation.check and deviation.evidence.strip()


def test_a_star_matches_any_params_and_brackets_stay_literal(tmp_path):
    d = write(tmp_path, '[[deviation]]\ncheck = "t.py::c[*]"\nclause = "c"\nevidence = "e"\n'
                        '[[deviation]]\ncheck = "t.py::d[1B]"\nclause = "c"\nevidence = "e"\n')
    star, exact = load_expectations("srv", d)
    assert star.applies("t.py::c[1B]", "srv:x") and star.applies("t.py::c[HTTP/1.0-1.0]", "srv:x")
    assert not star.applies("t.py::c", "srv:x")
    assert exact.applies("t.py::d[1B]", "srv:x") and not exact.applies("t.py::d1", "srv:x")


def _check_id(item: dict) -> str:
    """A collected item's id as results and expectation entries spell it: ``file.py::function[params]``."""
    base = f"{item['module']}.py::{item['function']}"
    return f"{base}[{item['params']}]" if item["params"] else base


@pytest.mark.parametrize("path", sorted(EXPECTATIONS_DIR.glob("*.toml")), ids=lambda p: p.name)
def test_every_entry_names_a_collected_check(collected_checks, path):
    """An entry whose pattern matches no check (a check renamed or split) is stale: it marks nothing, and the
    deviation it records goes unreported. Re-key it to the check that now asks the question."""
    ids = {_check_id(item) for item in collected_checks}
    entries = [replace(d, targets=()) for d in load_expectations(path.stem)]  # the check pattern, on any target
    stale = [d.check for d in entries if not any(d.applies(check, "") for check in ids)]
    if stale:
        pytest.fail(f"conformance/expectations/{path.name}: entries that match no check:\n  " + "\n  ".join(stale),
                    pytrace=False)
