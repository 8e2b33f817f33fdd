"""A pytest plugin for tests/conformance/checks/test_levels.py: at collection, before the conformance session
drops anything, write every check item as JSON lines {module, function, params, clause, level} to the
file named by GATECHECK_COLLECT_OUT. Loaded with ``-p tests.conformance.collect_checks`` in a subprocess."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest


def _params(item) -> str:
    """The item's parameter id without its target (as in results check ids; "no-target" counts as one)."""
    from gatecheck.conformance.plugin.resultsfile import check_id_of

    check = check_id_of(item)
    return check[check.index("[") + 1 : -1] if check.endswith("]") else ""


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(session, config, items):
    from gatecheck.conformance.spec.markers import clause_of

    with open(os.environ["GATECHECK_COLLECT_OUT"], "w", encoding="utf-8") as out:
        for item in items:
            clause, level = clause_of(item)
            out.write(
                json.dumps(
                    {
                        "module": Path(str(item.path)).stem,
                        "function": getattr(item, "originalname", item.name),
                        "params": _params(item),
                        "clause": clause,
                        "level": level,
                    }
                )
                + "\n"
            )
