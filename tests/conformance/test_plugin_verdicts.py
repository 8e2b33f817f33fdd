"""The conformance plugin against hostile servers, end to end: a pytest subprocess per test, its results JSON
and exit status (issue 10 items 1, 3, 6, 7, 8, 9, 11, 15, 16; issue 12 item 4; issue 28 shape 7)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time
import xml.etree.ElementTree as ET
from pathlib import Path

import psutil
import pytest

from tests.hostile.procs import descendants_running
from tests.installed import PYTEST, RUN_DIR

ROOT = Path(__file__).resolve().parents[2]
HOSTILE = "{python} -m tests.hostile.server --port {port} --mode "
ENVIRON = "test_wsgi_environ and (query_string or path_info)"  # 7 cheap WSGI checks, one request each


ENVIRON_FILE = "gatecheck/conformance/checks/test_wsgi_environ.py"


def pytest_args(tmp_path, *args):
    """A conformance session; the check files come first in ``args`` (one file keeps collection short)."""
    return [*PYTEST, "-p", "no:cacheprovider", "--results-json", str(tmp_path / "r.json"), *args]


def run(tmp_path, *args, timeout=120, env=None):
    env = {**os.environ, "PYTHONPATH": str(ROOT), **(env or {})}
    return subprocess.run(
        pytest_args(tmp_path, *args), cwd=RUN_DIR, capture_output=True, text=True, timeout=timeout, env=env
    )


def hostile(mode, *flags, interface="wsgi"):
    return ["--server-cmd", HOSTILE + mode + "".join(f" {f}" for f in flags), "--interface", interface]


def checks(tmp_path):
    return json.loads((tmp_path / "r.json").read_text())["checks"]


def outcomes(tmp_path):
    return sorted(c["outcome"] for c in checks(tmp_path))


def expectations(tmp_path, check, extra=""):
    path = tmp_path / "expect.toml"
    path.write_text(f'[[deviation]]\ncheck = "{check}"\nevidence = "sent a, got b"\n{extra}')
    return ["--expectations", str(path)]


# -- item 1: an error is never "known" ---------------------------------------------------------------


def test_a_listed_check_whose_server_cannot_start_is_an_error_not_known(tmp_path):
    out = run(
        tmp_path,
        "gatecheck/conformance/checks/test_asgi_scope.py",
        "--server",
        "granian:asgi?python=/nonexistent",
        "-k",
        "test_client_is_host_and_int_port",
    )
    assert outcomes(tmp_path) == ["error"], out.stdout[-2000:]
    assert out.returncode == 1 and "does not exist" in checks(tmp_path)[0]["message"]


def test_a_server_killed_during_a_listed_check_is_crashed_and_fails_the_run(tmp_path):
    out = run(
        tmp_path,
        ENVIRON_FILE,
        *hostile("die"),
        "-k",
        "test_query_string_is_raw",
        *expectations(tmp_path, "test_wsgi_environ.py::test_query_string_is_raw*"),
    )
    assert set(outcomes(tmp_path)) == {"crashed"}, out.stdout[-2000:]
    assert all("the server process exited (exit code 3)" in c["message"] for c in checks(tmp_path))
    assert out.returncode == 1


def test_a_listed_check_that_fails_its_call_is_known_in_json_and_junit(tmp_path):
    listed = expectations(tmp_path, "test_wsgi_environ.py::test_query_string_is_raw*")
    out = run(
        tmp_path,
        ENVIRON_FILE,
        *hostile("garbage"),
        "-k",
        "test_query_string_is_raw",
        "--junitxml",
        str(tmp_path / "j.xml"),
        *listed,
    )
    assert set(outcomes(tmp_path)) == {"known"} and out.returncode == 0, out.stdout[-2000:]
    cases = ET.parse(tmp_path / "j.xml").getroot().iter("testcase")
    assert [c.find("skipped").get("type") for c in cases] == ["pytest.xfail"] * len(checks(tmp_path))


def test_a_listed_check_that_passes_is_fixed_and_fails_the_run(tmp_path):
    check = "test_slow_header_trickle_does_not_delay_other_clients"  # passes on granian (no canned answer passes)
    out = run(
        tmp_path,
        "gatecheck/conformance/checks/test_http1_limits.py",
        "--server",
        "granian:wsgi",
        "-k",
        check,
        "--junitxml",
        str(tmp_path / "j.xml"),
        *expectations(tmp_path, f"test_http1_limits.py::{check}"),
    )
    assert outcomes(tmp_path) == ["fixed"] and out.returncode == 1, out.stdout[-2000:]
    assert "remove the entry" in checks(tmp_path)[0]["message"]
    (case,) = ET.parse(tmp_path / "j.xml").getroot().iter("testcase")
    assert case.find("failure") is not None


def test_a_listed_intermittent_check_that_passes_is_known_and_says_it_held(tmp_path):
    check = "test_slow_header_trickle_does_not_delay_other_clients"  # passes on granian (no canned answer passes)
    listed = expectations(tmp_path, f"test_http1_limits.py::{check}", 'intermittent = "failed 1 of 9 runs"\n')
    out = run(
        tmp_path, "gatecheck/conformance/checks/test_http1_limits.py", "--server", "granian:wsgi", "-k", check, *listed
    )
    assert outcomes(tmp_path) == ["known"] and out.returncode == 0, out.stdout[-2000:]
    assert checks(tmp_path)[0]["message"].startswith("held this run; known intermittent deviation")
    assert "stale" not in out.stdout.split("expectations:")[-1].split("\n")[0].replace(" 0 stale", "")


# -- item 3: restarts ----------------------------------------------------------------------------------


def test_a_server_that_dies_between_checks_is_restarted(tmp_path):
    out = run(tmp_path, ENVIRON_FILE, "-p", "tests.hostile.between", *hostile("ok"), "-k", ENVIRON)
    records = checks(tmp_path)
    assert len(records) == 7 and not any("down" in c["message"] or c["outcome"] == "error" for c in records), (
        out.stdout[-3000:]
    )


def test_a_failed_restart_says_why_once_with_the_log_tail(tmp_path):
    once = tmp_path / "started"
    out = run(
        tmp_path, ENVIRON_FILE, "-p", "tests.hostile.between", *hostile("ok", f"--start-once {once}"), "-k", ENVIRON
    )
    records = sorted(checks(tmp_path), key=lambda c: c["outcome"])
    errors = [c["message"] for c in records if c["outcome"] == "error"]
    assert len(errors) == 6, out.stdout[-3000:]
    full = [m for m in errors if "refusing to start again" in m]
    assert len(full) == 1 and "could not be restarted" in full[0] and "exited with code 4" in full[0]
    assert all("not tried again" in m for m in errors if m not in full)


# -- items 6 and 16: Ctrl-C and SIGTERM ----------------------------------------------------------------


def _start_pytest(tmp_path, *args, ignore_sigint=False):
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    preexec = (lambda: signal.signal(signal.SIGINT, signal.SIG_IGN)) if ignore_sigint else None
    return subprocess.Popen(
        pytest_args(tmp_path, *args),
        cwd=RUN_DIR,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        preexec_fn=preexec,
    )


def _wait_for_server(proc, timeout=60):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        found = descendants_running(proc.pid, "tests.hostile.server")
        if found:
            return found
        time.sleep(0.1)
    raise AssertionError("the run never started its server")


@pytest.mark.parametrize(
    "sig,ignored", [(signal.SIGINT, True), (signal.SIGTERM, False)], ids=["sigint-ignored", "sigterm"]
)
def test_a_signal_during_a_check_records_it_interrupted_and_exits_2(tmp_path, sig, ignored):
    proc = _start_pytest(
        tmp_path,
        ENVIRON_FILE,
        *hostile("silent"),
        "-k",
        ENVIRON,
        "--junitxml",
        str(tmp_path / "j.xml"),
        ignore_sigint=ignored,
    )
    try:
        servers = _wait_for_server(proc)
        time.sleep(1.5)  # into the first check, which waits on a silent server
        proc.send_signal(sig)
        output, _ = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 2, output[-3000:]
    assert "Traceback" not in output
    records = checks(tmp_path)
    assert [c["outcome"] for c in records] == ["interrupted"] and "interrupted by SIG" in records[0]["message"]
    assert len(list(ET.parse(tmp_path / "j.xml").getroot().iter("testcase"))) == len(records)
    assert not any(p.is_running() and p.status() != psutil.STATUS_ZOMBIE for p in servers)


# -- item 7: records on disk as decided; JSON and JUnit agree -------------------------------------------


def _text(path):
    return path.read_text() if path.exists() else ""


def test_records_decided_before_a_sigkill_stay_on_disk_and_are_finished_with_junit(tmp_path):
    junit = tmp_path / "j.xml"
    proc = _start_pytest(
        tmp_path, ENVIRON_FILE, *hostile("silent"), "-k", ENVIRON, "--check-timeout", "1", "--junitxml", str(junit)
    )
    partial = tmp_path / "r.json.partial.jsonl"
    try:
        servers = _wait_for_server(proc)
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and '"record": "check"' not in _text(partial):
            time.sleep(0.1)
        decided = [json.loads(line) for line in _text(partial).splitlines() if '"record": "check"' in line]
        proc.kill()
        proc.wait(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
        for server in servers:
            try:
                server.kill()
            except psutil.Error:
                pass
    assert decided and decided[0]["outcome"] == "timeout" and decided[0]["check"].startswith("test_wsgi_environ.py::")
    deadline = time.monotonic() + 60  # the reaper finishes the files once the killed session is gone
    while time.monotonic() < deadline and (not junit.exists() or partial.exists()):
        time.sleep(0.2)
    doc = json.loads((tmp_path / "r.json").read_text())
    assert "killed" in doc["incomplete"] and not partial.exists()
    assert len(doc["checks"]) >= len(decided) and all(c["outcome"] for c in doc["checks"])
    cases = list(ET.parse(junit).getroot().iter("testcase"))
    assert len(cases) == len(doc["checks"])


def test_a_session_that_ends_normally_leaves_no_finishing_to_the_reaper(tmp_path):
    out = run(tmp_path, ENVIRON_FILE, *hostile("ok"), "-k", ENVIRON, "--junitxml", str(tmp_path / "j.xml"))
    doc = json.loads((tmp_path / "r.json").read_text())
    assert "incomplete" not in doc, out.stdout[-2000:]
    time.sleep(2)  # a reaper that wrongly ran the finisher would have rewritten the file by now
    assert "incomplete" not in json.loads((tmp_path / "r.json").read_text())


def test_json_and_junit_count_the_same_checks_when_the_server_keeps_dying(tmp_path):
    run(tmp_path, ENVIRON_FILE, *hostile("die"), "-k", ENVIRON, "--junitxml", str(tmp_path / "j.xml"))
    cases = list(ET.parse(tmp_path / "j.xml").getroot().iter("testcase"))
    assert len(cases) == len(checks(tmp_path)) == 7
    assert not (tmp_path / "r.json.partial.jsonl").exists()


# -- item 8: output paths checked before anything starts ------------------------------------------------


@pytest.mark.parametrize("option", ["--results-json", "--server-log-dir", "--junitxml"])
def test_an_unwritable_output_path_is_one_line_before_any_server_starts(tmp_path, option):
    bad = {"--results-json": "/proc/x/r.json", "--server-log-dir": "/proc/x", "--junitxml": "/proc/x/j.xml"}[option]
    started = time.monotonic()
    out = run(
        tmp_path, ENVIRON_FILE, *hostile("ok", f"--start-once {tmp_path / 'started'}"), "-k", ENVIRON, option, bad
    )
    assert out.returncode == 4 and "Traceback" not in out.stderr + out.stdout
    assert f"{option} {bad}: cannot write to" in out.stderr
    assert not (tmp_path / "started").exists() and time.monotonic() - started < 30


# -- item 9: a missing binary, a bad --ready-timeout ------------------------------------------------------


def test_a_missing_binary_is_launched_once_and_each_check_errors_with_one_reason(tmp_path):
    logs = tmp_path / "logs"
    out = run(
        tmp_path,
        ENVIRON_FILE,
        "--server-cmd",
        "/nonexistent/gatecheck-server --port {port}",
        "--interface",
        "wsgi",
        "-k",
        "test_wsgi_environ",
        "--server-log-dir",
        str(logs),
    )
    # checks needing a feature the command does not declare (workers) are unsupported before any start
    records = [c for c in checks(tmp_path) if not (c["outcome"] == "unsupported" and "lacks" in c["message"])]
    assert len(records) > 20 and {c["outcome"] for c in records} == {"error"}, out.stdout[-2000:]
    assert all("No such file or directory" in c["message"] for c in records)
    assert sum("not tried again" not in c["message"] for c in records) == 1
    assert "Traceback" not in out.stdout and len(out.stdout.splitlines()) < 20 + 4 * len(records)
    launches = sum(p.read_text().count("=== gatecheck: starting") for p in logs.rglob("*.log"))
    assert launches == 1 and out.returncode == 1


@pytest.mark.parametrize("value", ["0", "-5"])
def test_ready_timeout_must_be_a_positive_number(tmp_path, value):
    out = run(tmp_path, ENVIRON_FILE, *hostile("ok"), "--ready-timeout", value)
    assert out.returncode == 4 and "--ready-timeout" in out.stderr and "positive number of seconds" in out.stderr
    assert "Traceback" not in out.stderr


def test_an_unbalanced_quote_in_server_cmd_is_a_usage_error(tmp_path):
    out = run(tmp_path, ENVIRON_FILE, "--server-cmd", "myserver 'unclosed --port {port}", "--interface", "wsgi")
    assert out.returncode == 4 and "No closing quotation" in out.stderr and "Traceback" not in out.stderr


# -- item 11: deadlines -----------------------------------------------------------------------------------


def test_a_slow_server_times_out_each_check_at_its_deadline(tmp_path):
    started = time.monotonic()
    out = run(tmp_path, ENVIRON_FILE, *hostile("slow"), "-k", "test_query_string_is_raw", "--check-timeout", "1.5")
    assert set(outcomes(tmp_path)) == {"timeout"} and out.returncode == 1, out.stdout[-2000:]
    assert "--check-timeout" in checks(tmp_path)[0]["message"] and time.monotonic() - started < 60


def test_the_session_deadline_stops_the_run(tmp_path):
    started = time.monotonic()
    out = run(
        tmp_path,
        ENVIRON_FILE,
        *hostile("slow"),
        "-k",
        "test_wsgi_environ",
        "--session-timeout",
        "4",
        "--check-timeout",
        "30",
    )
    took = time.monotonic() - started
    records = checks(tmp_path)
    assert out.returncode == 2 and took < 40, (took, out.stdout[-2000:])
    assert records[-1]["outcome"] == "timeout" or any("--session-timeout" in c["message"] for c in records)
    ran = [c for c in records if not c.get("incomplete")]  # the checks it cut are records marked incomplete
    assert len(ran) < 10 and "session deadline" in out.stdout
    assert all(c["outcome"] == "interrupted" for c in records if c.get("incomplete"))


# -- item 15: temporary directories; private servers' logs ------------------------------------------------


def test_temporary_directories_are_removed_and_private_logs_go_to_the_log_dir(tmp_path):
    scratch, logs = tmp_path / "tmp", tmp_path / "logs"
    scratch.mkdir()
    out = run(
        tmp_path,
        "gatecheck/conformance/checks/test_asgi_lifespan.py",
        "--server",
        "granian:asgi",
        "-k",
        "test_failed_startup_never_serves_requests",
        "--server-log-dir",
        str(logs),
        env={"TMPDIR": str(scratch)},
    )
    assert out.returncode == 0, out.stdout[-2000:]
    assert list(scratch.iterdir()) == []
    assert [p.parent.name.startswith("private-") for p in logs.rglob("*.log")].count(True) == 1
    out = run(
        tmp_path,
        "gatecheck/conformance/checks/test_asgi_lifespan.py",
        "--server",
        "granian:asgi",
        "-k",
        "test_failed_startup_never_serves_requests",
        env={"TMPDIR": str(scratch)},
    )
    assert out.returncode == 0 and list(scratch.iterdir()) == []


# -- issue 12 item 4: the summary separates spec failures from POLICY -------------------------------------


def test_the_summary_counts_spec_and_policy_failures_apart(tmp_path):
    out = run(
        tmp_path,
        ENVIRON_FILE,
        "gatecheck/conformance/checks/test_http1_limits.py",
        *hostile("garbage"),
        "-k",
        "test_query_string_is_raw or test_slow_header_trickle_does_not_delay_other_clients",
    )
    levels = [c["level"] for c in checks(tmp_path) if c["outcome"] == "failed"]
    spec = sum(level not in ("POLICY", "INFO") for level in levels)
    assert spec and spec < len(levels), (levels, out.stdout[-2000:])  # both kinds failed
    expected = f"MUST/SHOULD (spec) {spec}, POLICY {levels.count('POLICY')}, INFO {levels.count('INFO')}"
    assert f"failed by level: {expected}" in out.stdout
