"""``--jobs N`` (conformance/plugin/jobs.py): targets checked in child pytest sessions, merged into what one
serial session writes. Real pytest runs against real Granian servers and the hostile server."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
import xml.etree.ElementTree as ET
from pathlib import Path

import psutil
import pytest

from gatecheck.conformance.plugin.children import child_env
from gatecheck.conformance.plugin.jobs import child_args
from gatecheck.conformance.plugin.merge import exit_status, read_collected, write_collected
from gatecheck.conformance.plugin.shards import SHARD_OPTION, Claims, claims_args, modules_left
from gatecheck.conformance.plugin.stale import Collected
from tests.hostile.procs import descendants_running
from tests.installed import PYTEST, RUN_DIR

ROOT = Path(__file__).resolve().parents[2]
SUBSET = [
    "gatecheck/conformance/checks/test_asgi_scope.py",
    "gatecheck/conformance/checks/test_wsgi_environ.py",
    "-k",
    "version or method",
]
# An entry for the wsgi target on a check that applies to asgi only: stale in one session of both targets
# (its check ran on none of its targets), while a child session of the wsgi target alone never collects it
# with a target, so judging it per child would call it "not selected".
STALE_ENTRY = """
[[deviation]]
check = "test_asgi_scope.py::test_scope_asgi_version_is_3_0"
targets = ["granian:wsgi*"]
evidence = "a test entry: stale when judged over both targets"
"""


def run_pytest(*args, timeout=300):
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.run(
        [*PYTEST, "-p", "no:cacheprovider", *args],
        cwd=RUN_DIR,
        capture_output=True,
        text=True,
        timeout=timeout,
        env=env,
    )


def _outcomes(path: Path) -> dict:
    return {(c["check"], c["target"]): c["outcome"] for c in json.loads(path.read_text())["checks"]}


def _junit_cases(path: Path) -> list:
    return sorted(case.get("name") for case in ET.parse(path).getroot().iter("testcase"))


def test_a_jobs_run_writes_what_a_serial_run_writes(tmp_path):
    entries = tmp_path / "mine.toml"
    entries.write_text(STALE_ENTRY)
    common = [*SUBSET, "--server", "granian:asgi", "--server", "granian:wsgi", "--expectations", str(entries)]
    serial = run_pytest(*common, "--results-json", str(tmp_path / "s.json"), "--junitxml", str(tmp_path / "s.xml"))
    jobs = run_pytest(
        *common, "--jobs", "2", "--results-json", str(tmp_path / "j.json"), "--junitxml", str(tmp_path / "j.xml")
    )
    assert serial.returncode == jobs.returncode == 0, serial.stdout[-2000:] + jobs.stdout[-3000:]
    assert _outcomes(tmp_path / "j.json") == _outcomes(tmp_path / "s.json")
    assert {t for _, t in _outcomes(tmp_path / "j.json")} == {"granian:asgi:auto", "granian:wsgi:auto"}
    stale = [json.loads((tmp_path / f"{n}.json").read_text())["expectations"]["stale"] for n in "sj"]
    assert (
        [e["check"] for e in stale[1]]
        == [e["check"] for e in stale[0]]
        == ["test_asgi_scope.py::test_scope_asgi_version_is_3_0"]
    )
    assert _junit_cases(tmp_path / "j.xml") == _junit_cases(tmp_path / "s.xml")
    assert "gatecheck [2/2]" in jobs.stdout and "1 stale" in jobs.stdout
    assert not (tmp_path / "j.json.partial.jsonl").exists()
    targets = json.loads((tmp_path / "j.json").read_text())["targets"]
    assert all(t["versions"].get("granian") for t in targets)


def test_a_failing_target_fails_the_run_as_serially(tmp_path):
    hostile = f"{sys.executable} -m tests.hostile.server --port {{port}} --mode garbage"
    common = [
        "gatecheck/conformance/checks/test_asgi_scope.py",
        "-k",
        "asgi_version",
        "--server",
        "granian:asgi",
        "--server-cmd",
        hostile,
        "--interface",
        "asgi",
        "--ready-timeout",
        "10",
    ]
    serial = run_pytest(*common, "--results-json", str(tmp_path / "s.json"))
    jobs = run_pytest(*common, "--jobs", "2", "--results-json", str(tmp_path / "j.json"))
    assert serial.returncode == jobs.returncode == 1, jobs.stdout[-3000:]
    assert _outcomes(tmp_path / "j.json") == _outcomes(tmp_path / "s.json")
    assert "FAILED test_asgi_scope.py::test_scope_asgi_version_is_3_0 @ cmd-tests.hostile.server" in jobs.stdout


@pytest.mark.parametrize(
    "args, said",
    [
        (["--jobs", "0"], "--jobs: expected a positive number"),
        (["--jobs", "2", "--server", "granian:asgi", "--server", "nginx:asgi"], "unknown server 'nginx'"),
    ],
)
def test_usage_errors_are_one_line_before_anything_starts(tmp_path, args, said):
    out = run_pytest("gatecheck/conformance/checks", *args, "--results-json", str(tmp_path / "r.json"), timeout=60)
    assert out.returncode == 4 and said in out.stderr and "Traceback" not in out.stderr, out.stderr
    assert not (tmp_path / "r.json.partial.jsonl").exists()


def _start(tmp_path, *args):
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.Popen(
        [
            *PYTEST,
            "-p",
            "no:cacheprovider",
            "gatecheck/conformance/checks/test_robustness.py",
            "--server",
            "granian:asgi",
            "--server",
            "granian:wsgi",
            "--jobs",
            "2",
            *args,
            "--results-json",
            str(tmp_path / "r.json"),
        ],
        cwd=RUN_DIR,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )


def _wait_for(proc, marker: str, count: int) -> list:
    found, deadline = [], time.monotonic() + 90
    while time.monotonic() < deadline and len(found) < count:
        found = descendants_running(proc.pid, marker)
        time.sleep(0.1)
    assert len(found) >= count, f"the run never started {count} processes with {marker!r}"
    return found


def _gone(procs: list) -> None:
    for proc in procs:
        try:
            assert not proc.is_running() or proc.status() == psutil.STATUS_ZOMBIE, f"{proc.pid} survived"
        except psutil.NoSuchProcess:
            pass


def _run_and(tmp_path, act, timeout: float) -> tuple:
    """Start a --jobs 2 run, wait until both children serve, ``act(children)``, then wait for the run's end:
    (exit status, output, the children and servers it had)."""
    proc = _start(tmp_path)
    try:
        _wait_for(proc, "--port", 2)
        children = _wait_for(proc, "--gatecheck-collected", 2)
        servers = descendants_running(proc.pid, "--port")
        act(proc, children)
        out, _ = proc.communicate(timeout=timeout)
    finally:
        if proc.poll() is None:
            proc.kill()
    return proc.returncode, out, children + servers


def test_sigint_stops_every_child_and_its_servers(tmp_path):
    def interrupt(proc, children):
        time.sleep(1.0)  # into the robustness checks (each takes seconds)
        proc.send_signal(signal.SIGINT)

    status, out, started = _run_and(tmp_path, interrupt, timeout=90)
    assert status == 2, out[-3000:]
    _gone(started)
    outcomes = set(_outcomes(tmp_path / "r.json").values())
    assert "interrupted" in outcomes, out[-3000:]
    assert "error" not in outcomes


def test_a_child_that_dies_is_an_error_for_its_target_not_a_lost_result(tmp_path):
    def kill_wsgi(proc, children):
        next(c for c in children if "granian:wsgi" in c.cmdline()).send_signal(signal.SIGKILL)

    status, out, _ = _run_and(tmp_path, kill_wsgi, timeout=240)
    assert status == 1, out[-3000:]
    data = json.loads((tmp_path / "r.json").read_text())
    crash = [c for c in data["checks"] if c["check"] == "session"]
    assert [(c["target"], c["outcome"]) for c in crash] == [("granian:wsgi:auto", "error")], out[-3000:]
    assert "signal 9" in crash[0]["message"] and "signal 9" in data["incomplete"]
    assert {c["outcome"] for c in data["checks"] if c["target"] == "granian:asgi:auto"} <= {
        "passed",
        "known",
        "unsupported",
    }


def test_a_parent_killed_outright_takes_its_children_and_servers_with_it(tmp_path):
    status, out, started = _run_and(tmp_path, lambda proc, children: proc.kill(), timeout=30)
    assert status == -signal.SIGKILL
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and any(_alive(p) for p in started):
        time.sleep(0.2)
    _gone(started)
    while time.monotonic() < deadline and not (tmp_path / "r.json").exists():
        time.sleep(0.2)
    assert "killed before it finished" in json.loads((tmp_path / "r.json").read_text())["incomplete"]


def _alive(proc) -> bool:
    try:
        return proc.is_running() and proc.status() != psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return False


class _Config:
    """What target_groups reads of a pytest config."""

    def __init__(self, **options) -> None:
        self.options = options

    def getoption(self, name):
        return self.options.get(name.lstrip("-").replace("-", "_"))


def test_every_tls_target_shares_one_child_and_the_heaviest_go_first():
    from gatecheck.conformance.plugin.jobs import target_groups
    from gatecheck.conformance.plugin.targets import targets_from_options

    texts = ["granian:asgi?tls=on", "granian:asgi:h2", "granian:wsgi", "granian:wsgi?tls=on", "granian:asgi"]
    targets = targets_from_options(texts, None, None, None, None)
    groups = target_groups(_Config(server=texts), targets)
    assert [args for _, args in groups] == [
        ["--server", "granian:wsgi"],
        ["--server", "granian:asgi"],
        ["--server", "granian:asgi:h2"],
        ["--server", "granian:asgi?tls=on", "--server", "granian:wsgi?tls=on"],
    ]
    assert [len(members) for members, _ in groups] == [1, 1, 1, 2]


def test_each_single_cleartext_target_gets_a_claims_directory_of_its_own_never_tls(tmp_path):
    from gatecheck.conformance.plugin.jobs import target_groups
    from gatecheck.conformance.plugin.targets import targets_from_options

    texts = ["granian:asgi", "granian:asgi:h2", "granian:asgi?tls=on"]
    groups = target_groups(_Config(server=texts), targets_from_options(texts, None, None, None, None))
    given = claims_args(groups, tmp_path)
    dirs = [args[args.index(SHARD_OPTION) + 1] for _, args in given[:2]]
    assert dirs[0] != dirs[1] and all(Path(d).is_dir() for d in dirs)
    assert SHARD_OPTION not in given[2][1] and [m for m, _ in given] == [m for m, _ in groups]


def test_each_module_is_claimed_by_one_shard_the_first_to_ask(tmp_path):
    first, second = Claims(tmp_path), Claims(tmp_path)
    assert first.mine("gatecheck/conformance/checks/test_a.py") and not second.mine(
        "gatecheck/conformance/checks/test_a.py"
    )
    assert second.mine("gatecheck/conformance/checks/test_b.py") and not first.mine(
        "gatecheck/conformance/checks/test_b.py"
    )
    assert first.mine("gatecheck/conformance/checks/test_a.py")  # asked again: still its own
    late = Claims(tmp_path)  # a shard started now leaves both out of its collection, never its own
    assert late.taken("gatecheck/conformance/checks/test_a.py") and late.taken("gatecheck/conformance/checks/test_b.py")
    assert not late.taken("gatecheck/conformance/checks/test_c.py") and not first.taken(
        "gatecheck/conformance/checks/test_a.py"
    )
    assert sorted(p.name for p in tmp_path.iterdir()) == [
        "gatecheck%conformance%checks%test_a.py",
        "gatecheck%conformance%checks%test_b.py",
    ]
    assert modules_left(tmp_path) == 0  # no list yet: nothing to help with
    first.list_modules(
        [
            "gatecheck/conformance/checks/test_a.py",
            "gatecheck/conformance/checks/test_b.py",
            "gatecheck/conformance/checks/test_c.py",
        ]
    )
    assert first.listed and modules_left(tmp_path) == 1


def test_a_free_slot_helps_the_target_that_should_end_last(tmp_path):
    """The estimate is each target's unclaimed modules at the pace its children claimed the others, shared by
    the children on it (shards.py rule 2): not its count of modules left."""
    import time

    from gatecheck.conformance.plugin.jobs import JobRun
    from gatecheck.conformance.plugin.shards import time_left

    run = object.__new__(JobRun)  # only what _shard and _new read
    run.scratch, run._base, run._cwd, run._given, run._junit, run.children = (
        tmp_path,
        [],
        str(tmp_path),
        60.0,
        False,
        [],
    )
    run._seed = None  # no pytest cache

    def target(name: str, listed: int, claimed: int, children: int, for_s: float) -> list:
        claims = tmp_path / name
        claims.mkdir()
        modules = [f"gatecheck/conformance/checks/test_{name}_{i}.py" for i in range(listed)]
        lister = Claims(claims)
        lister.list_modules(modules)
        for module in modules[:claimed]:
            assert lister.mine(module)
        made = [
            run._new(len(run.children) + i, [name], ["--server", name, SHARD_OPTION, str(claims)])
            for i in range(children)
        ]
        for child in made:
            child.started = time.monotonic() - for_s
        run.children += made
        return made

    busy = target("busy", listed=30, claimed=10, children=3, for_s=60)  # 20 left at 6 s each, over 3: 40 s
    slow = target("slow", listed=30, claimed=24, children=1, for_s=60)  # 6 left at 2.5 s each: 15 s
    quick = target("quick", listed=30, claimed=20, children=1, for_s=20)  # 10 left, the most, at 1 s each: 10 s
    nearly = target("nearly", listed=4, claimed=2, children=1, for_s=60)  # 2 left: under MIN_LEFT, never helped
    assert run._shard(slow + quick + nearly).claims == str(tmp_path / "slow")
    assert run._shard(busy + slow).claims == str(tmp_path / "busy")
    assert run._shard(nearly) is None
    done_soon = target("soon", listed=30, claimed=25, children=1, for_s=30)  # 5 left at 1.2 s: 6 s, under WORTH
    assert run._shard(done_soon) is None
    assert time_left(30, 0, 60.0, 1) == 0.0 and time_left(30, 30, 60.0, 1) == float("inf")
    shard = Claims(tmp_path / "slow")  # a shard's shorter list never replaces the first child's
    shard.list_modules(["gatecheck/conformance/checks/test_slow_29.py"])
    assert shard.listed and progress_of(tmp_path / "slow") == (30, 6)


def progress_of(directory):
    from gatecheck.conformance.plugin.shards import progress

    return progress(directory)


def test_one_target_split_over_free_sessions_writes_what_a_serial_run_writes(tmp_path):
    # the slowest module first (about 8 s): while it runs, the pace of claims says the rest needs more than
    # shards.WORTH, whatever the machine's speed (with quick modules first a fast machine ends before that)
    common = [
        "gatecheck/conformance/checks/test_asgi_messages_errors.py",
        "gatecheck/conformance/checks/test_asgi_scope.py",
        "gatecheck/conformance/checks/test_http1_connection.py",
        "gatecheck/conformance/checks/test_echo.py",
        "gatecheck/conformance/checks/test_http1_fields.py",
        "gatecheck/conformance/checks/test_asgi_messages.py",
        "--server",
        "granian:asgi",
    ]
    serial = run_pytest(*common, "--results-json", str(tmp_path / "s.json"), "--junitxml", str(tmp_path / "s.xml"))
    jobs = run_pytest(
        *common, "--jobs", "3", "--results-json", str(tmp_path / "j.json"), "--junitxml", str(tmp_path / "j.xml")
    )
    assert serial.returncode == jobs.returncode == 0, serial.stdout[-2000:] + jobs.stdout[-3000:]
    assert _outcomes(tmp_path / "j.json") == _outcomes(tmp_path / "s.json")
    assert _junit_cases(tmp_path / "j.xml") == _junit_cases(tmp_path / "s.xml")
    assert "1 target in 1 child session, 3 at a time" in jobs.stdout, jobs.stdout
    assert 1 <= jobs.stdout.count("(a shard)") <= 2, jobs.stdout  # the free slots helped it


def test_a_target_record_without_versions_never_replaces_one_with_them(tmp_path):
    from gatecheck.conformance.plugin.resultsfile import Results

    results = Results(tmp_path / "r.json")
    results.open()
    known = {
        "target": "t",
        "server": "granian",
        "interface": "asgi",
        "http": "auto",
        "features": [],
        "versions": {"granian": "2.8.9"},
    }
    results.take_target(known)
    results.take_target({**known, "versions": {}})  # a shard whose server never started
    assert results.targets["t"]["versions"] == {"granian": "2.8.9"}


def test_the_child_command_line_drops_what_the_parent_gives_each_child():
    args = [
        "conformance",
        "-k",
        "x",
        "--server",
        "a",
        "--server=b",
        "--jobs",
        "3",
        "--results-json",
        "r.json",
        "--junitxml=j.xml",
        "--server-cmd",
        "c {port}",
        "--interface",
        "asgi",
        "--session-timeout",
        "9",
    ]
    assert child_args(args) == ["conformance", "-k", "x", "--session-timeout", "9"]


def test_children_share_a_bytecode_cache_kept_in_gatecheck_s_cache_never_beside_the_sources(monkeypatch, tmp_path):
    from gatecheck.conformance.plugin import jobs

    monkeypatch.setenv("GATECHECK_CACHE", str(tmp_path))
    monkeypatch.setenv("PYTHONDONTWRITEBYTECODE", "1")
    monkeypatch.delenv("PYTHONPYCACHEPREFIX", raising=False)
    env = child_env(jobs.cache_dir() / "pycache")
    assert env["PYTHONPYCACHEPREFIX"] == str(tmp_path / "pycache") and "PYTHONDONTWRITEBYTECODE" not in env
    monkeypatch.setenv("PYTHONPYCACHEPREFIX", "/elsewhere")  # the caller's own choice is kept
    assert child_env(jobs.cache_dir() / "pycache")["PYTHONPYCACHEPREFIX"] == "/elsewhere"


def test_a_check_counts_as_collected_without_target_only_if_no_child_had_it_with_one(tmp_path):
    paths = []
    for i, pairs in enumerate(
        [
            [("a.py::x", "t1"), ("a.py::y", None), ("a.py::z", None)],
            [("a.py::x", None), ("a.py::y", "t2"), ("a.py::z", None)],
        ]
    ):
        collected = Collected()
        for check, target in pairs:
            collected.add(check, target, Path("/checks/a.py"))
        paths.append(tmp_path / f"{i}.json")
        write_collected(paths[-1], collected)
    merged = read_collected(paths)
    assert merged.pairs == {("a.py::x", "t1"), ("a.py::y", "t2"), ("a.py::z", None)}
    assert merged.files == {"a.py"} and merged.check_dir == Path("/checks")


@pytest.mark.parametrize(
    "codes, interrupted, incomplete, status",
    [
        ([0, 0], False, False, 0),
        ([0, 1], False, False, 1),
        ([1, 2], False, False, 2),
        ([0, 0], True, False, 2),
        ([0, 5], False, False, 0),
        ([5, 5], False, False, 5),
        ([4, 4], False, False, 4),
        ([0, -9], False, True, 1),
        ([0, 0], False, True, 1),
    ],
)
def test_the_exit_status_is_a_serial_runs(codes, interrupted, incomplete, status):
    assert exit_status(codes, interrupted, incomplete) == status


def test_auto_jobs_are_four_sessions_per_cpu_at_most_sixteen(monkeypatch):
    from gatecheck.conformance.plugin import options

    for cpus, sessions in ((1, 4), (2, 8), (4, 16), (64, 16)):
        monkeypatch.setattr(options, "available_cpus", lambda cpus=cpus: list(range(cpus)))
        assert options.jobs_wanted("auto") == sessions
    assert options.jobs_wanted("3") == 3


def test_a_childs_lines_are_taken_once_and_appended_as_written(tmp_path):
    from gatecheck.conformance.plugin.resultsfile import Results, partial_record

    results = Results(tmp_path / "r.json")
    results.open()
    target = {"record": "target", "target": "t", "server": "granian", "versions": {"granian": "2.8.9"}}
    check = {"record": "check", "check": "a.py::x", "target": "t", "outcome": "passed", "duration": 0.1}
    lines = [json.dumps(target, sort_keys=True), json.dumps(check, sort_keys=True), '{"record": "check", "che']
    assert results.take_lines(lines) == 2  # the torn last line is no record
    assert results.take_lines(lines[1:2]) == 1  # seen again: taken, not appended twice
    written = results.partial.read_text().splitlines()
    assert written[1:] == lines[:2]
    assert [partial_record(line)[0] for line in written] == ["session", "target", "check"]
    assert results.records[("a.py::x", "t")]["outcome"] == "passed"


def test_the_results_document_is_json_with_a_line_per_record(tmp_path):
    from gatecheck.conformance.plugin.resultsfile import document, write_document

    records = [{"check": f"a.py::x{i}", "target": "t", "outcome": "passed", "message": 'é "q"\n'} for i in range(3)]
    data = {**document([{"target": "t"}], records, "why"), "expectations": {"files": [], "stale": [{"file": "f"}]}}
    write_document(tmp_path / "r.json", data)
    text = (tmp_path / "r.json").read_text()
    assert json.loads(text) == json.loads(json.dumps(data))
    assert sum(1 for line in text.splitlines() if line.startswith('  {"check"')) == 3
