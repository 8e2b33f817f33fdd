"""Results as JSON lines: appended, reloadable, versioned, never overwritten."""
from __future__ import annotations

import json

import pytest

from gatecheck.load.results import (
    RESULTS_FILE,
    SCHEMA_VERSION,
    ResultsError,
    append_record,
    check_compatible,
    environment,
    load_records,
)


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


def test_an_unknown_schema_version_is_refused_with_the_file_and_line(tmp_path):
    path = tmp_path / RESULTS_FILE
    append_record(path, run_record())
    with open(path, "a") as fh:
        fh.write(json.dumps({"schema_version": 99, "kind": "run"}) + "\n")
    with pytest.raises(ResultsError, match=r"results.jsonl:2: results format version 99 not supported"):
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
