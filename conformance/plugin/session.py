"""The session's state in one object (kept in ``config.stash``), and each check's record fields."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import pytest

from gatecheck.conformance.plugin.expectations import Expectations
from gatecheck.conformance.plugin.interrupts import Deadlines, Interrupts
from gatecheck.conformance.plugin.pool import ServerPool
from gatecheck.conformance.plugin.resultsfile import Results
from gatecheck.conformance.plugin.shards import Claims
from gatecheck.conformance.plugin.stale import Collected

__all__ = ["GatecheckSession", "SESSION", "item_meta"]


@dataclass
class GatecheckSession:
    targets: list  # SessionTarget, in the order given
    expectations: Expectations  # the deviations read (built-in and --expectations files)
    results: Results
    pool: ServerPool
    deadlines: Deadlines
    interrupts: Interrupts
    written: bool = False  # the results document was written
    write_error: str = ""
    junit_error: str = ""  # the JUnit XML could not be written (a full disk)
    collected: Collected = field(default_factory=Collected)  # before deselection, for the stale report
    expectation_report: dict = field(default_factory=dict)  # stale.judge's, at the end
    claims: Claims | None = None  # a --jobs child of one cleartext target: the modules it runs (shards.py)


def item_meta(item, st, check: str, row: tuple) -> dict:
    """The fields of a check's record (the results' schema): who, what clause, level and sentence (``row``:
    ``markers.row_of``, from the levels table), which area."""
    clause, level, sentence, accepts = row
    return {
        "check": check,
        "target": st.target.name if st is not None else "",
        "server": st.target.server if st is not None else "",
        "interface": st.interface if st is not None else "",
        "clause": clause,
        "level": level,
        "sentence": sentence,
        "accepts": accepts,
        "area": Path(str(item.path)).stem.removeprefix("test_"),
    }


#: where a pytest run keeps its GatecheckSession (``config.stash[SESSION]``)
SESSION = pytest.StashKey[GatecheckSession]()
