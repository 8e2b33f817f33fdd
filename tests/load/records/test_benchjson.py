"""Tests of load/benchjson.py: the exported documents match what pytest-benchmark writes and reads."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from datetime import datetime, timezone

import pytest

from gatecheck.load.records import benchjson


@pytest.mark.parametrize(
    "data",
    [
        [3.0],
        [1.0, 2.0],
        [5.0, 1.0, 3.0],
        [1.0, 2.0, 3.0, 4.0, 100.0],
        [2.0, 1.0, 4.0, 3.0, 6.0, 5.0, 8.0],
        [0.5, 0.6, 0.55, 0.9, 0.52, 0.58, 0.61, 0.57, 0.56, 0.2],
    ],
)
def test_stats_match_pytest_benchmark(data):
    pb_stats = pytest.importorskip("pytest_benchmark.stats")
    ref = pb_stats.Stats()
    for v in data:
        ref.update(v)
    ours = benchjson.stats_block(data, include_data=False)
    expected = ref.as_dict()
    for key, value in expected.items():
        assert ours[key] == pytest.approx(value), key


def test_stats_of_known_values_without_pytest_benchmark():
    s = benchjson.stats_block([4.0, 1.0, 3.0, 2.0])
    assert (s["min"], s["max"], s["mean"], s["median"], s["rounds"]) == (1.0, 4.0, 2.5, 2.5, 4)
    assert (s["q1"], s["q3"], s["iqr"]) == (1.5, 3.5, 2.0)
    assert s["ops"] == pytest.approx(0.4) and s["data"] == [4.0, 1.0, 3.0, 2.0]


def test_benchmark_entry_stores_seconds_per_request_and_keeps_rps():
    e = benchjson.benchmark_entry("json c64", [20_000.0, 25_000.0], p99_ms=[3.1, 2.9], extra={"side": "base"})
    assert e["stats"]["data"] == [1 / 20_000, 1 / 25_000]
    assert e["stats"]["ops"] == pytest.approx(1 / ((1 / 20_000 + 1 / 25_000) / 2))
    assert e["extra_info"]["rps"] == [20_000.0, 25_000.0] and e["extra_info"]["side"] == "base"
    assert e["fullname"] == "load/gate.py::gate[json_c64]" and e["name"] == "gate[json c64]"


def test_benchmark_entry_refuses_a_zero_rps_run():
    with pytest.raises(ValueError, match="positive RPS"):
        benchjson.benchmark_entry("json", [100.0, 0.0])


def test_document_has_pytest_benchmarks_top_level_layout():
    doc = benchjson.document(
        [benchjson.benchmark_entry("json", [1.0])],
        commit_id="granian 2.8.6",
        project="granian",
        when=datetime(2026, 1, 2, tzinfo=timezone.utc),
    )
    assert set(doc) == {"machine_info", "commit_info", "benchmarks", "datetime", "version"}
    assert doc["datetime"] == "2026-01-02T00:00:00+00:00"
    assert doc["commit_info"]["id"] == "granian 2.8.6"
    assert {"node", "machine", "python_version", "system", "release", "cpu"} <= set(doc["machine_info"])


def test_write_json_refuses_to_overwrite(tmp_path):
    p = benchjson.write_json({"a": 1}, tmp_path / "x.json")
    with pytest.raises(FileExistsError):
        benchjson.write_json({"a": 2}, p)
    benchjson.write_json({"a": 2}, p, replace=True)
    assert json.loads(p.read_text()) == {"a": 2}


def test_save_to_storage_numbers_files_like_autosave(tmp_path):
    doc = benchjson.document([benchjson.benchmark_entry("json", [1.0])], commit_id="x", project="p")
    first = benchjson.save_to_storage(doc, tmp_path, "gate base")
    second = benchjson.save_to_storage(doc, tmp_path, "gate head")
    assert first.parent.name == benchjson.machine_id()
    assert (first.name, second.name) == ("0001_gate_base.json", "0002_gate_head.json")


def test_pytest_benchmark_compare_reads_the_exported_files(tmp_path):
    """End to end: the pytest-benchmark CLI loads both sides and shows them in one table."""
    pytest.importorskip("pytest_benchmark")
    cli = shutil.which("pytest-benchmark", path=str(__import__("pathlib").Path(sys.executable).parent))
    if cli is None:
        pytest.skip("pytest-benchmark's CLI is not installed next to this interpreter")
    for side, rps in (("base", [20_000.0, 21_000.0, 20_500.0]), ("head", [18_000.0, 18_500.0, 18_200.0])):
        doc = benchjson.document([benchjson.benchmark_entry("json c64", rps)], commit_id=side, project="granian")
        benchjson.save_to_storage(doc, tmp_path, f"gate_{side}")
    out = subprocess.run(
        [cli, "--storage", f"file://{tmp_path}", "compare", "--columns", "mean,ops,rounds"],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=tmp_path,
    )
    assert out.returncode == 0, out.stderr
    assert "Failed to load" not in out.stdout + out.stderr
    assert "gate[json c64] (0001_gate_" in out.stdout and "gate[json c64] (0002_gate_" in out.stdout
    assert "OPS (Kops/s)" in out.stdout  # RPS shows as operations per second
