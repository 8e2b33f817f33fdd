"""Issue 11's dimensions 5 and 6 (conformance/spec/observables.py) against the checks: every row names a collected
check (and parameter) whose @spec is the row's clause and level, every letter row is INFO, and an observable
row allows only values its text could name (a close code an endpoint may send, an HTTP status). The checks
are collected by the real pytest run of tests/conformance/conftest.py's ``collected_checks``."""

from __future__ import annotations

import pytest

from gatecheck.conformance.spec.observables import LETTERS, OBSERVABLES, SENDABLE, observable_row


@pytest.fixture(scope="module")
def by_id(collected_checks) -> dict:
    """check id ("test_x.py::name" plus "[params]") → the collected item {clause, level, ...}."""
    return {
        f"{i['module']}.py::{i['function']}" + (f"[{i['params']}]" if i["params"] else ""): i for i in collected_checks
    }


@pytest.mark.parametrize(
    "row", OBSERVABLES, ids=[f"{r.check.split('::')[1]}[{r.interface}-{r.name}]" for r in OBSERVABLES]
)
def test_every_observable_row_is_a_check_with_its_clause_and_level(by_id, row):
    check = row.check + (f"[{row.name}]" if row.name else "")
    assert check in by_id, f"{check}: no such check collected (renamed? the row must follow it)"
    item = by_id[check]
    assert (item["clause"], item["level"]) == (row.clause, row.level), (check, item)


@pytest.mark.parametrize(
    "row", OBSERVABLES, ids=[f"{r.check.split('::')[1]}[{r.interface}-{r.name}]" for r in OBSERVABLES]
)
def test_every_observable_row_allows_values_its_text_names(row):
    assert row.allowed, row
    if row.observable.startswith("the Close frame"):
        assert all(v is None or v in SENDABLE for v in row.allowed), f"a code no endpoint may send: {row}"
        assert row.over == "websocket"
    else:
        assert all(isinstance(v, int) and 100 <= v <= 599 for v in row.allowed), row


def test_rows_of_one_name_share_clause_and_level():
    """A check run on several interfaces gets one parameter per name, marked from its rows: they must agree."""
    for row in OBSERVABLES:
        first = observable_row(row.check, row.name)
        assert (first.clause, first.level) == (row.clause, row.level), (first, row)


@pytest.mark.parametrize("letter", LETTERS, ids=[r.check.split("::")[1] for r in LETTERS])
def test_every_letter_row_is_an_info_check(by_id, letter):
    for case in letter.cases:
        check = letter.check + (f"[{case}]" if case else "")
        assert check in by_id, f"{check}: no such check collected"
        assert by_id[check]["level"] == "INFO" == letter.level, (check, by_id[check])
        assert by_id[check]["clause"] == letter.clause, (check, by_id[check])


def test_every_info_check_is_a_letter_row(by_id):
    """Dimension 6 is the table: an INFO check outside it is missing from it."""
    listed = {r.check + (f"[{c}]" if c else "") for r in LETTERS for c in r.cases}
    info = {check for check, item in by_id.items() if item["level"] == "INFO"}
    assert info <= listed, f"INFO checks missing from observables.LETTERS: {sorted(info - listed)}"
