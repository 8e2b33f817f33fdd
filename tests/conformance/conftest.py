"""Fixtures shared by the harness's conformance tests."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from tests.installed import PYTEST, RUN_DIR

ROOT = Path(__file__).resolve().parents[2]


def pytest_configure(config):
    """The checks' own markers, so a harness test may import a table that marks its rows (conformance/
    dimensions.py, conformance/spec/observables.py) under --strict-markers without the gatecheck session."""
    for name in ("spec", "interfaces", "needs"):
        config.addinivalue_line("markers", f"{name}: a conformance check's marker (conformance/spec/markers.py)")


@pytest.fixture(scope="session")
def collected_checks(tmp_path_factory) -> list:
    """Every check item of conformance/, as collected by a real pytest run over granian's three interfaces
    (one subprocess per session, no server started): dicts {module, function, params, clause, level}, written
    by tests/conformance/collect_checks.py before the conformance session drops anything."""
    out = tmp_path_factory.mktemp("collect") / "items.jsonl"
    cmd = [
        *PYTEST,
        "gatecheck/conformance/checks",
        "--collect-only",
        "-q",
        "-p",
        "no:cacheprovider",
        "-p",
        "tests.conformance.collect_checks",
        "--server",
        "granian:asgi",
        "--server",
        "granian:wsgi",
        "--server",
        "granian:rsgi",
    ]
    env = dict(os.environ, GATECHECK_COLLECT_OUT=str(out), PYTHONPATH=str(ROOT))
    done = subprocess.run(cmd, cwd=RUN_DIR, env=env, capture_output=True, text=True, timeout=300)
    assert out.exists(), f"collection failed:\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}"
    return [json.loads(line) for line in out.read_text(encoding="utf-8").splitlines()]
