"""Every verdict labelled as it is: a private server that dies during its check's request is crashed, one found dead
before its check used it an error, never known; a server killed at its stop
is an error naming the kill; a stalled stream fails within the check's own deadline; checks cut by the session
deadline and restarts of a server are in the results; a slow server becomes ready; an inconclusive gate says so."""

from __future__ import annotations

import re
import signal
import sys
import time

import psutil
import pytest

from gatecheck.servers import Target, start_server
from tests.faults.run import CHECKS, ROOT, Run, wait_until
from tests.faults.servers import hostile, stall, stubborn

_LEGACY = [f"{CHECKS}/test_asgi_messages_errors.py", "-k", "test_legacy_double_callable_app_is_served"]


def _listed(tmp_path):
    listed = tmp_path / "listed.toml"
    listed.write_text(
        "[[deviation]]\n"
        'check = "test_asgi_messages_errors.py::test_legacy_double_callable_app_is_served"\n'
        'evidence = "listed here so that a dead server could pass for a known deviation"\n'
    )
    return str(listed)


def test_a_private_server_that_dies_during_a_listed_check_is_crashed_never_known(tmp_path):
    run = Run(
        tmp_path, *_LEGACY, "--server-cmd", hostile("die"), "--interface", "asgi", "--expectations", _listed(tmp_path)
    )
    try:
        code = run.wait()
        assert code == 1, (code, run.output()[-3000:])
        (record,) = run.document()["checks"]
        assert record["outcome"] == "crashed", record
        assert "private server" in record["message"] and "in flight" in record["message"], record
        assert run.document()["by_level"] == {"MUST/SHOULD (spec)": {"crashed": 1}}, run.document()["by_level"]
        junit = run.junit_counts()
        assert junit["tests"] == 1 and junit["errors"] + junit["failures"] == 1, junit
        assert run.leftovers() == [] and run.left_folders() == []
    finally:
        run.stop()


def test_a_private_server_found_dead_before_its_check_used_it_is_an_error_never_known(tmp_path):
    """The private server exits once its readiness probe is answered: the check's first connection is refused.
    No request of the check was in flight: an error, not a crash, not a failure of the rule, not known."""
    run = Run(
        tmp_path,
        *_LEGACY,
        "--server-cmd",
        stall(vanish_app="legacy"),
        "--interface",
        "asgi",
        "--expectations",
        _listed(tmp_path),
    )
    try:
        code = run.wait()
        assert code == 1, (code, run.output()[-3000:])
        (record,) = run.document()["checks"]
        assert record["outcome"] == "error", record
        assert "found dead before the check used it" in record["message"], record
        assert "ConnectionRefusedError" not in record["message"], record
        assert not run.document().get("by_level"), run.document()["by_level"]
        junit = run.junit_counts()  # pytest's XML has a call's error as a <failure>: one case either way
        assert junit["tests"] == 1 and junit["errors"] + junit["failures"] == 1, junit
        assert run.leftovers() == [] and run.left_folders() == []
    finally:
        run.stop()


def test_a_server_killed_at_its_stop_makes_the_rsgi_del_checks_an_error_that_says_so(tmp_path):
    run = Run(
        tmp_path,
        f"{CHECKS}/test_rsgi_protocol.py",
        "-k",
        "rsgi_del",
        "--server-cmd",
        stubborn("granian", term_delay=60),
        "--interface",
        "rsgi",
    )
    try:
        assert run.wait(timeout=240) == 1, run.output()[-3000:]
        records = run.document()["checks"]
        assert len(records) == 2 and {r["outcome"] for r in records} == {"error"}, records
        assert all("was killed" in r["message"] and "never called" not in r["message"] for r in records), records
        assert run.leftovers() == []
    finally:
        run.stop()


def test_a_stalled_stream_fails_within_its_own_deadline_and_the_session_deadline_cuts_the_rest(tmp_path):
    run = Run(
        tmp_path,
        f"{CHECKS}/test_streaming.py",
        "-k",
        "iterated_echo",
        "--server-cmd",
        stall(),
        "--interface",
        "asgi",
        "--session-timeout",
        "18",
    )
    try:
        assert run.wait() == 2, run.output()[-3000:]
        records = run.document()["checks"]
        assert len(records) == 10, [r["check"] for r in records]  # every selected check has its record
        first = min(records, key=lambda r: r["check"] if r["outcome"] == "failed" else "~")
        assert first["outcome"] == "failed" and "stopped answering mid-stream" in first["message"], first
        assert first["duration"] < 20, first
        cut = [r for r in records if r.get("incomplete")]
        assert cut and all(r["outcome"] == "interrupted" for r in cut), records
        assert "session deadline" in run.document()["incomplete"]
        assert re.search(r"incomplete: the session deadline .* did not run", run.output())
        assert run.junit_counts()["tests"] == len(records)
        assert run.leftovers() == []
    finally:
        run.stop()


def test_a_server_that_dies_between_checks_is_restarted_and_the_restart_reported(tmp_path):
    run = Run(
        tmp_path,
        f"{CHECKS}/test_asgi_scope.py",
        f"{CHECKS}/test_echo.py",
        f"{CHECKS}/test_streaming.py",
        "--server",
        "granian:asgi",
    )  # a few seconds of checks after the first record: the kill lands mid-run
    try:

        def server():
            procs = psutil.Process(run.proc.pid).children(recursive=True)
            return [p for p in procs if "granian" in " ".join(p.cmdline())]

        wait_until(lambda: run.results.with_name("r.json.partial.jsonl").exists() and server(), 90, "the server")
        partial = run.results.with_name("r.json.partial.jsonl")
        wait_until(lambda: '"record": "check"' in partial.read_text(), 60, "a record")
        for proc in server():
            proc.send_signal(signal.SIGKILL)
        assert run.wait() in (0, 1), run.output()[-3000:]
        doc = run.document()
        (restart,) = doc["restarts"]
        assert restart["target"] == "granian:asgi:auto" and restart["after"] and restart["exit_code"] == -9, restart
        assert "restarted: the server of granian:asgi:auto was found dead after" in run.output()
        died = [r for r in doc["checks"] if r["outcome"] in ("crashed", "error")]  # crashed: the kill came mid-request
        assert all(
            "last log lines:\n" in r["message"] and r["message"].split("last log lines:\n")[1].strip()
            for r in died
            if r["outcome"] == "crashed"
        ), died
        assert not [r for r in doc["checks"] if r["outcome"] == "failed"], doc["checks"]
        assert run.leftovers() == []
    finally:
        run.stop()


def test_a_server_slower_than_two_seconds_per_answer_becomes_ready(tmp_path):
    target = Target("command", "asgi", "h1", (("cmd", stall(answer_delay=3)),))
    began = time.monotonic()
    with start_server(target, app="unused:app", log_dir=tmp_path, ready_timeout=30) as handle:
        assert handle.ready_seconds >= 3
    assert time.monotonic() - began < 30


def test_an_inconclusive_gate_says_so_and_exits_3(tmp_path):
    """A real A/A gate (granian, oha) with a 1% threshold: its intervals rarely exclude 1%. Whatever the verdicts,
    the headline and the exit status say what the gated verdicts say."""
    import subprocess

    from gatecheck.load.run.oha import OhaNotFound, find_oha

    try:
        find_oha(build=False)
    except OhaNotFound as exc:  # .ci/run builds it (tox -e load) before the harness's tests
        pytest.skip(f"oha is not available: {exc}")
    out = subprocess.run(
        [
            sys.executable,
            "-m",
            "gatecheck.load",
            "gate",
            "--base",
            sys.executable,
            "--head",
            sys.executable,
            "--out",
            str(tmp_path / "gate"),
            "--duration",
            "0.3",
            "--warmup",
            "0",
            "--seed",
            "1",
            "--threshold",
            "1%",
            "--max-pairs",
            "8",
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
    )
    verdicts = re.findall(
        r"^\| (server CPU per request|mean latency at c1) \|.*\| \S+ ([a-z ]+?)(?: \(.*\))? \|$", out.stdout, re.M
    )
    assert len(verdicts) == 2, out.stdout + out.stderr[-2000:]
    said = {v for _, v in verdicts}
    if "regression" in said:
        assert out.returncode == 1 and "❌ **regression**" in out.stdout
    elif "inconclusive" in said:
        assert out.returncode == 3, out.stdout
        assert "❔ **inconclusive**" in out.stdout and "✅" not in out.stdout.split("###")[0], out.stdout
    else:
        assert out.returncode == 0 and "✅ **no regression**" in out.stdout
