"""The markers every check carries, and their validation.

    @spec("RFC 9112 §6.3", "MUST")          the clause the check derives from, and its level
    @interfaces("asgi")                      only targets serving these interfaces run it (others: not applicable)
    @needs("h2c", "websockets")              targets lacking a feature report it as *not supported*
                                             (a check needing none of h2c, h2c_upgrade, tls needs http1: it
                                             speaks HTTP/1.1, which an HTTP/2-only listener lacks)

A check without ``spec`` is a collection error: every check must cite its clause. The sentence of the clause
and the answers that pass live in the levels table (``conformance/levels/*.toml``, read by
``conformance/spec/levels.py``); ``row_of(item)`` gives (clause, level, sentence, accepts) for an item.
"""

from __future__ import annotations

import pytest

from gatecheck.servers import FEATURES, INTERFACES

__all__ = ["spec", "interfaces", "needs", "LEVELS", "MARKERS", "validate_item", "row_of"]

# BCP 14 levels; "DEFINED" for definitions without a keyword (RSGI, most of ASGI's scope table, RFC definitions
# such as "its decimal value defines the expected message body length");
# "POLICY" for the suite's reading where the spec is silent or says only "ought to"/"can"/"is expected to"
# (reported apart, never as a spec failure); "INFO" for behaviour that contradicts the text without breaking
# a MUST or SHOULD (e.g. a server that does not do what the text says it "can" or "ought to" do, where the
# suite has no reading of its own to hold it to): shown apart, never failing a run.
LEVELS = ("MUST", "MUST NOT", "SHOULD", "SHOULD NOT", "MAY", "DEFINED", "POLICY", "INFO")

spec = pytest.mark.spec
interfaces = pytest.mark.interfaces
needs = pytest.mark.needs

MARKERS = (
    "spec(clause, level): the spec clause a check derives from and its level (" + ", ".join(LEVELS) + ")",
    "interfaces(*names): the interfaces a check applies to (" + ", ".join(INTERFACES) + ")",
    "needs(*features): server features a check requires (" + ", ".join(FEATURES) + ")",
)


def validate_item(item) -> str | None:
    """Return an error message when the item's markers are missing or malformed, else None."""
    marks = list(item.iter_markers("spec"))
    if not marks:
        return f"{item.nodeid}: every check needs @spec(clause, level)"
    for mark in marks:
        if len(mark.args) != 2 or not all(isinstance(a, str) and a for a in mark.args):
            return f"{item.nodeid}: @spec takes (clause, level), got {mark.args!r}"
        if mark.args[1] not in LEVELS:
            return f"{item.nodeid}: level {mark.args[1]!r} is not one of {', '.join(LEVELS)}"
    for mark in item.iter_markers("interfaces"):
        bad = [a for a in mark.args if a not in INTERFACES]
        if bad or not mark.args:
            return f"{item.nodeid}: @interfaces takes names from {', '.join(INTERFACES)}, got {mark.args!r}"
    for mark in item.iter_markers("needs"):
        bad = [a for a in mark.args if a not in FEATURES]
        if bad:
            return f"{item.nodeid}: unknown feature(s) {bad}; known: {', '.join(FEATURES)}"
    return None


def clause_of(item) -> tuple:
    """(clause, level) of the closest spec marker."""
    mark = item.get_closest_marker("spec")
    return (mark.args[0], mark.args[1]) if mark else ("", "")


def applicable_interfaces(definition_marks) -> set:
    wanted = set(INTERFACES)
    for mark in definition_marks:
        wanted &= set(mark.args)
    return wanted


def row_of(item) -> tuple:
    """(clause, level, sentence, accepts) of an item from the levels table; the sentence and accepts are ""
    when the table has no row for it (tests/conformance/checks/test_levels.py fails on that)."""
    from gatecheck.conformance.spec.levels import PER_PARAMETER, row_for_check
    from gatecheck.conformance.spec.results import check_id_of

    clause, level = clause_of(item)
    row = row_for_check(check_id_of(item))
    if row is None:
        return (clause, level, "", "")
    return (clause if row.clause == PER_PARAMETER else row.clause, row.level, row.sentence, row.accepts)
