"""A killed session's results, finished from its partial file (conformance/plugin/finish.py)."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET

from gatecheck.conformance.plugin.finish import finish


def _line(**rec):
    return json.dumps(rec) + "\n"


def test_the_last_record_of_a_check_wins_and_a_torn_line_is_ignored(tmp_path):
    partial = tmp_path / "r.json.partial.jsonl"
    partial.write_text(
        _line(record="session", schema_version=2)
        + _line(record="target", target="t", server="s", interface="asgi", versions={"s": "1"})
        + _line(record="check", check="test_a.py::test_x", target="t", outcome="passed", duration=0.1)
        + _line(record="check", check="test_a.py::test_y", target="t", outcome="failed", message="bad")
        + _line(record="check", check="test_a.py::test_y", target="t", outcome="error", message="worse")
        + '{"record": "check", "check": "test_a.py::test_z", "tar'
    )
    assert finish(partial, tmp_path / "r.json", tmp_path / "j.xml")
    doc = json.loads((tmp_path / "r.json").read_text())
    assert [(c["check"], c["outcome"]) for c in doc["checks"]] == [
        ("test_a.py::test_x", "passed"),
        ("test_a.py::test_y", "error"),
    ]
    assert doc["targets"][0]["versions"] == {"s": "1"} and doc["incomplete"]
    suite = ET.parse(tmp_path / "j.xml").getroot().find("testsuite")
    assert (suite.get("tests"), suite.get("errors"), suite.get("failures")) == ("2", "1", "0")
    assert not partial.exists()


def test_nothing_to_finish_when_the_session_removed_its_partial_file(tmp_path):
    assert not finish(tmp_path / "gone.partial.jsonl", tmp_path / "r.json")
    assert not (tmp_path / "r.json").exists()
