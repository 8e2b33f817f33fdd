"""Results as JSON lines: appended, reloadable, versioned, never overwritten."""

from __future__ import annotations

import gzip
import json

import pytest

from gatecheck.load.records.results import (
    RESULTS_FILE,
    SCHEMA_VERSION,
    ResultsError,
    append_record,
    check_compatible,
    load_document,
    load_records,
    open_text,
    record_files,
    upgrade,
    write_document,
)
from gatecheck.load.run.host import environment


def run_record(**fields):
    return {"kind": "run", "profile": "smoke", "case": "RSGI get 1KB", "rps": 100.0, **fields}


def test_records_are_appended_one_line_each_with_sorted_keys_and_the_schema_version(tmp_path):
    path = tmp_path / RESULTS_FILE
    append_record(path, run_record(rps=1.0))
    append_record(path, run_record(rps=2.0))
    lines = path.read_text().splitlines()
    assert len(lines) == 2
    first = json.loads(lines[0])
    assert first["schema_version"] == SCHEMA_VERSION
    assert list(first) == sorted(first)
    assert [r["rps"] for r in load_records([path])] == [1.0, 2.0]


def test_appending_never_rewrites_what_is_there(tmp_path):
    path = tmp_path / RESULTS_FILE
    path.write_text('{"schema_version": 1, "kind": "run", "rps": 7}\n')
    before = path.read_bytes()
    append_record(path, run_record())
    assert path.read_bytes().startswith(before)


def test_a_directory_loads_every_jsonl_below_it(tmp_path):
    append_record(tmp_path / "a" / RESULTS_FILE, run_record(case="a"))
    append_record(tmp_path / "b" / RESULTS_FILE, run_record(case="b"))
    assert sorted(r["case"] for r in load_records([tmp_path])) == ["a", "b"]


def test_gzipped_files_read_as_the_plain_ones(tmp_path):
    """Large committed results are kept gzipped (results.jsonl.gz, pairs.json.gz): a directory's records are its
    *.jsonl and *.jsonl.gz files, and a file is read whether or not it is gzipped."""
    append_record(tmp_path / "a" / RESULTS_FILE, run_record(case="a"))
    packed = tmp_path / "b" / (RESULTS_FILE + ".gz")
    append_record(packed, run_record(case="b"))
    assert open_text(packed).read() == (tmp_path / "a" / RESULTS_FILE).read_text().replace('"a"', '"b"')
    assert sorted(r["case"] for r in load_records([tmp_path])) == ["a", "b"]
    assert [r["case"] for r in load_records([packed])] == ["b"]
    assert record_files([tmp_path]) == [tmp_path / "a" / RESULTS_FILE, packed]
    document = tmp_path / "pairs.json.gz"
    with gzip.open(document, "wt", encoding="utf-8") as fh:
        json.dump({"schema_version": SCHEMA_VERSION, "kind": "gate", "runs": []}, fh)
    assert load_document(document)["kind"] == "gate"


def test_a_file_both_plain_and_gzipped_is_refused_not_read_twice(tmp_path):
    append_record(tmp_path / RESULTS_FILE, run_record())
    append_record(tmp_path / (RESULTS_FILE + ".gz"), run_record())
    with pytest.raises(ResultsError, match=r"results.jsonl is there both plain and gzipped; keep one of them"):
        load_records([tmp_path])


def test_an_unknown_schema_version_is_refused_with_the_file_and_line(tmp_path):
    path = tmp_path / RESULTS_FILE
    append_record(path, run_record())
    with open(path, "a") as fh:
        fh.write(json.dumps({"schema_version": 99, "kind": "run"}) + "\n")
    with pytest.raises(ResultsError, match=r"results.jsonl:2: record format version 99 not supported"):
        load_records([path])


def test_a_last_line_cut_short_by_a_crash_loses_only_itself(tmp_path):
    path = tmp_path / RESULTS_FILE
    append_record(path, run_record())
    with open(path, "a") as fh:
        fh.write('{"schema_version": 1, "kind": "ru')
    assert len(load_records([path])) == 1


def test_a_missing_path_is_an_error_naming_it(tmp_path):
    with pytest.raises(ResultsError, match="no such results"):
        load_records([tmp_path / "nope.jsonl"])


def test_unknown_record_kinds_are_not_written(tmp_path):
    with pytest.raises(ValueError, match="kind"):
        append_record(tmp_path / RESULTS_FILE, {"kind": "maybe"})


def test_records_from_different_machines_are_not_compared():
    a = {"session": "s1", "environment": {"cpu_model": "AMD EPYC", "cpu_count": 2, "kernel": "6.1"}}
    b = {"session": "s2", "environment": {"cpu_model": "Intel Xeon", "cpu_count": 2, "kernel": "6.1"}}
    check_compatible([a, dict(a, session="s3")])
    with pytest.raises(ResultsError, match="'cpu_model' is 'AMD EPYC' in session s1 but 'Intel Xeon' in session s2"):
        check_compatible([a, b])


def test_environment_names_the_machine():
    env = environment()
    assert env["cpu_count"] >= 1 and env["cpus_available"] >= 1
    assert env["kernel"] and env["cpu_model"] and env["harness_python"].count(".") == 2


def test_every_record_load_writes_is_one_versioned_format_read_back_through_one_reader(tmp_path):
    """The runner's lines, the gate's runs.jsonl and pairs.json, an experiment's (packed) gates.jsonl."""
    lines = tmp_path / "mixed.jsonl.gz"
    append_record(lines, run_record())
    append_record(lines, {"kind": "gate-run", "case": "c", "pair": 0, "side": "base"})
    assert [r["kind"] for r in load_records([lines])] == ["run", "gate-run"]
    assert [r["kind"] for r in load_records([lines], kinds=("run",))] == ["run"]
    doc = write_document(tmp_path / "pairs.json", {"kind": "gate", "pairs": 8, "runs": []})
    assert load_document(doc)["schema_version"] == SCHEMA_VERSION
    with pytest.raises(FileExistsError):
        write_document(doc, {"kind": "gate"})


def test_older_forms_of_each_kind_are_read_as_the_current_version():
    """What gatecheck wrote before version 2 (committed under benchmarks/load, benchmarks/gate and
    benchmarks/gate/experiments/data)."""
    assert upgrade({"schema_version": 1, "kind": "run", "rps": 1.0}) == {
        "schema_version": SCHEMA_VERSION,
        "kind": "run",
        "rps": 1.0,
    }
    assert upgrade({"case": "c", "pair": 0, "side": "head"})["kind"] == "gate-run"
    old_gate = {"schema_version": 1, "kind": "gatecheck-gate", "pairs": 8, "runs": [{"pair": 0, "side": "base"}]}
    gate = upgrade(old_gate)
    assert gate["kind"] == "gate" and gate["runs"][0]["kind"] == "gate-run"
    packed = upgrade({"kind": "10%", "dir": "10pct-00", "round": 0, "seconds": 60.0, "pairs": old_gate})
    assert (packed["kind"], packed["treatment"], packed["pairs"]) == ("experiment-gate", "10%", 8)
    assert packed["gate"]["kind"] == "gate" and packed["gate"]["schema_version"] == SCHEMA_VERSION
    with pytest.raises(ResultsError, match="version None not supported"):
        upgrade({"what": "is this"})
