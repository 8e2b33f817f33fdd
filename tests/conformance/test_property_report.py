"""A failed property check costs its own time only: Hypothesis's source-patch report (which imports libcst, 1-2 s
per session) is not built in a conformance session, and the falsifying example stays in the check's message."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from tests.installed import PYTEST, RUN_DIR

ROOT = Path(__file__).resolve().parents[2]

_PROBE = """
import json, os, sys

def pytest_sessionfinish(session):
    with open(os.environ["GATECHECK_TEST_PROBE_OUT"], "w") as fh:
        json.dump(sorted(m for m in sys.modules if m.split(".")[0] == "libcst"), fh)
"""


def test_a_failed_property_check_builds_no_source_patch(tmp_path):
    pytest.importorskip("libcst", reason="without libcst Hypothesis builds no patch: nothing to pin")
    (tmp_path / "libcst_probe.py").write_text(_PROBE)
    out_file, results = tmp_path / "modules.json", tmp_path / "r.json"
    env = {**os.environ, "PYTHONPATH": f"{ROOT}{os.pathsep}{tmp_path}", "GATECHECK_TEST_PROBE_OUT": str(out_file)}
    # the hostile server's "ok" mode answers every request 200 "ok": the probe's JSON never comes, so the
    # property check fails on its first example
    out = subprocess.run(
        [
            *PYTEST,
            "-p",
            "no:cacheprovider",
            "-p",
            "libcst_probe",
            "gatecheck/conformance/checks/test_properties.py",
            "-k",
            "utf8_path_reaches_the_app_decoded",
            "--server-cmd",
            "{python} -m tests.hostile.server --port {port} --mode ok",
            "--interface",
            "asgi",
            "--no-expectations",
            "--results-json",
            str(results),
        ],
        cwd=RUN_DIR,
        capture_output=True,
        text=True,
        timeout=240,
        env=env,
    )
    (check,) = json.loads(results.read_text())["checks"]
    assert check["outcome"] == "failed", out.stdout[-2000:]
    assert "Failing test case: test_utf8_path_reaches_the_app_decoded(" in check["message"], check["message"]
    assert json.loads(out_file.read_text()) == [], "Hypothesis imported libcst to build a source patch"
