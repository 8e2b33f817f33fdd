"""Expectation files: their format is enforced, deviations match by check id, target pattern and version
range, own files combine with the built-in ones, every committed entry names a check that exists, and a run
reports the entries that matched nothing (issue 13 item 2).

The end-to-end tests run a real pytest session from a directory outside gatecheck's tree (as a server's
repository would), with the expectation file kept there, against a real server: granian, or the hostile
server of tests/hostile/server.py through --server-cmd."""

from __future__ import annotations

import json
import os
import subprocess
from importlib import metadata
from pathlib import Path

import pytest

from gatecheck.conformance.plugin.expectations import (
    EXPECTATIONS_DIR,
    ExpectationError,
    Expectations,
    load_expectations,
    read_expectations,
    server_version,
)
from gatecheck.conformance.plugin.stale import Collected, judge
from tests.installed import CHECKS, PYTEST

ROOT = Path(__file__).resolve().parents[2]
SCOPE_FILE = str(CHECKS / "test_asgi_scope.py")
CLIENT = "test_asgi_scope.py::test_client_is_host_and_int_port"  # granian 2.8: port is a str
SERVER = "test_asgi_scope.py::test_server_is_host_and_int_port_of_the_listener"  # granian 2.8: port is a str
SCOPE_CLAUSE = "ASGI WWW §HTTP Connection Scope"  # both checks' @spec


def write(tmp_path, text, name="srv.toml"):
    (tmp_path / name).write_text(text, encoding="utf-8")
    return tmp_path


def entry(check, evidence="sent a, got b", **keys):
    extra = "".join(f"{k} = {json.dumps(v)}\n" for k, v in keys.items())
    return f'[[deviation]]\ncheck = "{check}"\nevidence = "{evidence}"\n{extra}\n'


# -- the format --------------------------------------------------------------------------------------------


def test_a_deviation_matches_its_check_and_target_patterns(tmp_path):
    d = write(tmp_path, entry("t.py::c[x]", targets=["srv:asgi*"]))
    (dev,) = load_expectations("srv", d)
    assert dev.applies("t.py::c[x]", "srv:asgi:auto")
    assert not dev.applies("t.py::c[x]", "srv:wsgi:auto")
    assert not dev.applies("t.py::c[y]", "srv:asgi:auto")
    assert dev.reason("RFC 1 §1") == "known deviation [RFC 1 §1]: sent a, got b"
    assert dev.where == f"{d / 'srv.toml'}:1"


@pytest.mark.parametrize(
    "text,fragment",
    [
        ('[[deviation]]\ncheck = "t.py::x"\n', "lacks evidence"),
        ('[[deviation]]\ncheck = "t.py::x"\nevidence = "e"\nwhy = 1\n', "unknown keys"),
        ('[[oops]]\ncheck = "x"\n', "unknown top-level keys"),
        ("not toml [", "not valid TOML"),
        ('[[deviation]]\ncheck = "conformance/t.py::x[granian:asgi:auto]"\nevidence = "e"\n', "not a check id"),
        ('[[deviation]]\ncheck = "x"\nevidence = "e"\n', "not a check id"),
        ('[[deviation]]\ncheck = "t.py::x"\nevidence = "e"\nversions = "2.8"\n', "not PEP 440"),
        ('[[deviation]]\ncheck = "t.py::x"\nevidence = "e"\ntargets = "srv:asgi"\n', "must be a list"),
        ('[[deviation]]\ncheck = "t.py::x"\nevidence = "e"\nintermittent = " "\n', "how often"),
        ('[[deviation]]\ncheck = "t.py::x"\nevidence = "e"\nintermittent = true\n', "how often"),
    ],
)
def test_malformed_files_are_refused(tmp_path, text, fragment):
    with pytest.raises(ExpectationError) as info:
        load_expectations("srv", write(tmp_path, text))
    assert fragment in str(info.value)


def test_a_server_without_a_file_has_no_deviations(tmp_path):
    assert load_expectations("nobody", tmp_path) == []


def test_a_star_matches_any_params_and_brackets_stay_literal(tmp_path):
    d = write(tmp_path, entry("t.py::c[*]") + entry("t.py::d[1B]"))
    star, exact = load_expectations("srv", d)
    assert star.applies("t.py::c[1B]", "srv:x") and star.applies("t.py::c[HTTP/1.0-1.0]", "srv:x")
    assert not star.applies("t.py::c", "srv:x")
    assert exact.applies("t.py::d[1B]", "srv:x") and not exact.applies("t.py::d1", "srv:x")
    assert (star.line, exact.line) == (1, 5)


def test_a_version_range_holds_pre_releases_and_never_an_unknown_version(tmp_path):
    (dev,) = load_expectations("srv", write(tmp_path, entry("t.py::c", versions=">=2.8,<2.10")))
    assert dev.in_range("2.8.7") and dev.in_range("2.9.0.dev3") and dev.in_range("2.9.0rc1")
    assert not dev.in_range("2.10.0") and not dev.in_range("2.7") and not dev.in_range(None)
    assert server_version({"granian": "2.8.7", "python": "3.11.7"}) == "2.8.7"
    assert server_version({"command": "unknown", "python": "3.11.7"}) is None


def test_a_clause_is_ignored_with_a_warning(tmp_path):
    d = write(tmp_path, '[[deviation]]\ncheck = "t.py::c"\nclause = "RFC 0"\nevidence = "e"\n')
    found = read_expectations(["srv"], [], directory=d)
    assert found.warnings == [f"{d / 'srv.toml'}:1: 'clause' is ignored (the check's own clause is used); remove it"]
    assert "RFC 0" not in found.entries[0].reason("RFC 9110 §1")


def test_own_files_come_after_the_built_in_one_and_the_last_entry_in_range_wins(tmp_path):
    write(tmp_path, entry("t.py::c", "built-in"), "srv.toml")
    own = (
        write(
            tmp_path,
            'server = "srv"\n'
            + entry("t.py::c", "own, 2.8", versions="~=2.8.0")
            + entry("t.py::c", "own, 3", versions=">=3"),
            "own.toml",
        )
        / "own.toml"
    )
    other = write(tmp_path, 'server = "other"\n' + entry("t.py::c", "not srv's"), "other.toml") / "other.toml"
    found = read_expectations(["srv"], [own, other], directory=tmp_path)
    candidates = found.candidates("t.py::c", "srv", "srv:asgi")
    assert [d.evidence for d in candidates] == ["built-in", "own, 2.8", "own, 3"]
    pick = Expectations.chosen
    assert pick(candidates, "2.8.7").evidence == "own, 2.8" and pick(candidates, "3.1").evidence == "own, 3"
    assert pick(candidates, "2.9").evidence == "built-in" and pick(candidates, None).evidence == "built-in"
    assert [d.evidence for d in read_expectations(["srv"], [own], builtin=False, directory=tmp_path).entries] == [
        "own, 2.8",
        "own, 3",
    ]


def test_stale_is_judged_on_what_was_collected_not_on_what_was_selected(tmp_path):
    """-k leaves a collected check unrun: its entry is not stale; an entry naming no collected check is."""
    own = (
        write(
            tmp_path,
            entry("t.py::ran")
            + entry("t.py::deselected")
            + entry("t.py::wsgi_only")
            + entry("t.py::renamed")
            + entry("t.py::ran", versions="<0.1")
            + entry("gone.py::c")
            + entry("other.py::c"),
            "own.toml",
        )
        / "own.toml"
    )
    (tmp_path / "other.py").write_text("")
    collected = Collected()
    for check, target in [("t.py::ran", "srv:asgi"), ("t.py::deselected", "srv:asgi"), ("t.py::wsgi_only", None)]:
        collected.add(check, target, tmp_path / "t.py")
    report = judge(
        read_expectations([], [own]),
        [("srv", "srv:asgi")],
        {"srv:asgi": "2.8.7"},
        {("t.py::ran", "srv:asgi")},
        collected,
    )
    assert [(s["check"], s["line"]) for s in report["stale"]] == [("t.py::renamed", 13), ("gone.py::c", 22)]
    assert (report["entries"], report["matched"], report["out_of_range"]) == (7, 1, 1)
    assert "no check file gone.py" in report["stale"][1]["why"]


# -- the committed files -----------------------------------------------------------------------------------


@pytest.mark.parametrize("path", sorted(EXPECTATIONS_DIR.glob("*.toml")), ids=lambda p: p.name)
def test_committed_expectation_files_are_valid(path):
    assert read_expectations([path.stem], []).warnings == []
    for deviation in load_expectations(path.stem):
        assert deviation.line and deviation.evidence.strip()


def _check_id(item: dict) -> str:
    """A collected item's id as results and expectation entries spell it: ``file.py::function[params]``."""
    base = f"{item['module']}.py::{item['function']}"
    return f"{base}[{item['params']}]" if item["params"] else base


@pytest.mark.parametrize("path", sorted(EXPECTATIONS_DIR.glob("*.toml")), ids=lambda p: p.name)
def test_every_entry_names_a_collected_check(collected_checks, path):
    """An entry whose pattern matches no check (a check renamed or split) is stale: it marks nothing, and the
    deviation it records goes unreported. Re-key it to the check that now asks the question."""
    ids = {_check_id(item) for item in collected_checks}
    stale = [f"{d.where} {d.check}" for d in load_expectations(path.stem) if not any(map(d.names, ids))]
    if stale:
        pytest.fail(
            f"conformance/expectations/{path.name}: entries that match no check:\n  " + "\n  ".join(stale),
            pytrace=False,
        )


# -- end to end: a server's own file, outside gatecheck's tree ---------------------------------------------


def session(repo: Path, *args, timeout=180):
    """A conformance session run from ``repo`` (a server's repository), its results in repo/r.json."""
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    out = subprocess.run(
        [*PYTEST, "-p", "no:cacheprovider", "--results-json", str(repo / "r.json"), *args],
        cwd=repo,
        capture_output=True,
        text=True,
        timeout=timeout,
        env=env,
    )
    data = json.loads((repo / "r.json").read_text()) if (repo / "r.json").exists() else {}
    return out, {c["check"]: c for c in data.get("checks", [])}, data.get("expectations")


def granian_file(repo: Path) -> Path:
    version = metadata.version("granian")
    path = repo / "gatecheck-expectations.toml"
    path.write_text(
        'server = "granian"\n\n'
        + entry(CLIENT, "own: the client port is a str", versions=f"=={version}")  # line 3
        + entry(SERVER, "own: only before 0.1", versions="<0.1")  # line 8
        + entry("test_asgi_scope.py::test_client_was_renamed", "own: stale")  # line 13
        + entry("test_asgi_scope.py::test_http_version_matches_request[HTTP/1.0-1.0]", "own: not selected by -k"),
        encoding="utf-8",
    )  # line 17
    return path


def test_a_servers_own_file_makes_known_scopes_by_version_and_reports_stale_entries(tmp_path):
    own = granian_file(tmp_path)
    out, checks, report = session(
        tmp_path,
        SCOPE_FILE,
        "--server",
        "granian:asgi",
        "-k",
        "host_and_int_port",
        "--no-builtin-expectations",
        "--expectations",
        own.name,
    )
    assert checks[CLIENT]["outcome"] == "known", out.stdout[-3000:]
    assert checks[CLIENT]["message"] == f"known deviation [{SCOPE_CLAUSE}]: own: the client port is a str"
    assert checks[SERVER]["outcome"] == "failed"  # its only entry's range excludes the running version
    assert report["files"] == [own.name] and (report["entries"], report["matched"], report["out_of_range"]) == (4, 1, 1)
    (stale,) = report["stale"]
    assert (stale["file"], stale["line"], stale["check"]) == (
        own.name,
        13,
        "test_asgi_scope.py::test_client_was_renamed",
    )
    assert f"stale {own.name}:13 test_asgi_scope.py::test_client_was_renamed" in out.stdout
    assert "1 stale" in out.stdout and out.returncode == 1


def test_a_servers_own_file_overrides_the_built_in_entry_for_its_check(tmp_path):
    own = granian_file(tmp_path)
    out, checks, report = session(
        tmp_path, SCOPE_FILE, "--server", "granian:asgi", "-k", "host_and_int_port", "--expectations", own.name
    )
    assert checks[CLIENT]["message"].endswith("own: the client port is a str"), out.stdout[-3000:]
    assert checks[SERVER]["outcome"] == "known" and "own:" not in checks[SERVER]["message"]  # the built-in's
    assert [s["line"] for s in report["stale"]] == [13] and out.returncode == 0


def test_a_command_targets_file_with_an_old_clause_warns_and_uses_the_checks_clause(tmp_path):
    own = (
        write(
            tmp_path,
            'server = "command"\n[[deviation]]\ncheck = "test_wsgi_environ.py::test_query_string_is_raw*"'
            '\nclause = "RFC 0"\nevidence = "garbage back"\nversions = ">=1"\n'
            + entry("test_wsgi_environ.py::test_query_string_is_raw*", "no version range"),
            "own.toml",
        )
        / "own.toml"
    )
    out, checks, report = session(
        tmp_path,
        str(CHECKS / "test_wsgi_environ.py"),
        "-k",
        "test_query_string_is_raw",
        "--server-cmd",
        "{python} -m tests.hostile.server --port {port} --mode garbage",
        "--interface",
        "wsgi",
        "--expectations",
        str(own),
    )
    assert checks and {c["outcome"] for c in checks.values()} == {"known"}, out.stdout[-3000:]
    assert all(c["message"] == f"known deviation [{c['clause']}]: no version range" for c in checks.values())
    assert "'clause' is ignored" in out.stdout and "RFC 0" not in json.dumps(checks)
    assert (report["matched"], report["out_of_range"], report["stale"]) == (1, 1, [])  # its version: unknown


def test_no_expectations_with_an_expectations_file_is_a_usage_error(tmp_path):
    own = write(tmp_path, entry(CLIENT), "own.toml") / "own.toml"
    out, _, _ = session(tmp_path, SCOPE_FILE, "--no-expectations", "--expectations", str(own))
    assert out.returncode == 4 and "--no-expectations reads no expectation file" in out.stderr
    assert "Traceback" not in out.stderr
