"""Nothing lost, nothing hidden: a full filesystem, two runs on one results file, a killed --jobs child.

Every decided record is kept or its loss is said (at once, in the summary, and in the exit status); JSON and
JUnit count the same checks."""

from __future__ import annotations

import re
import signal

import psutil
import pytest

from tests.faults.run import CHECKS, Run, wait_until
from tests.faults.servers import stubborn

_SCOPE = [f"{CHECKS}/test_asgi_scope.py", "--server", "granian:asgi"]


def _partial_checks(path, target: str = "") -> int:
    try:
        lines = path.read_text("utf-8", "replace").splitlines()
    except OSError:
        return 0
    return sum(1 for line in lines if '"record": "check"' in line and f'"target": "{target}' in line)


@pytest.mark.parametrize("jobs", ["1", "2"])
def test_a_full_disk_keeps_or_counts_every_record(tmp_path, small_disk, jobs):
    folder, limit = small_disk
    more = (
        []
        if limit is None
        else [f"{CHECKS}/{name}" for name in ("test_echo.py", "test_byte_classes.py", "test_http1_fields.py")]
    )  # past 52 KiB
    run = Run(tmp_path, *_SCOPE, *more, "--jobs", jobs, results=folder / "r.json", preexec=limit)
    try:
        code = run.wait()
        out = run.output()
        assert code == 1, out[-3000:]
        assert "Traceback" not in out, out[-3000:]
        assert ("No space left on device" if limit is None else "File too large") in out, out[-3000:]
        said = re.search(r"results: .*?(\d+) of (\d+) records .*? kept in (\S+?)[;,]", out)
        assert said, out[-2000:]
        kept, total, where = int(said.group(1)), int(said.group(2)), said.group(3)
        assert kept == _partial_checks(folder / "r.json.partial.jsonl") and where.endswith("partial.jsonl")
        counts = re.search(r"checks × targets: (.*)", out).group(1)
        assert total == sum(int(n) for n in re.findall(r"(\d+) \w+", counts)) and kept < total, out[-2000:]
        assert run.leftovers() == []
    finally:
        run.stop()


def test_two_runs_on_one_results_file_refuse_the_second(tmp_path):
    slow = [
        f"{CHECKS}/test_asgi_messages_errors.py",
        "-k",
        "test_legacy_double_callable_app_is_served",
        "--server-cmd",
        stubborn(start_delay=8),
        "--interface",
        "asgi",
    ]
    first = Run(tmp_path, *slow, junit=False)
    try:
        wait_until(lambda: first.log_lines("stubborn: starting"), 90, "the first run's server")
        second = Run(tmp_path, *_SCOPE, results=first.results, junit=False)
        assert second.wait() == 4, second.output()[-2000:]
        refusal = [line for line in second.output().splitlines() if "r.json" in line and "another" in line]
        assert len(refusal) == 1, second.output()[-2000:]
        assert first.wait() in (0, 1), first.output()[-2000:]
        assert len(first.document()["checks"]) == 1
        assert second.leftovers() == [] and first.leftovers() == []
    finally:
        first.stop()


def test_a_killed_jobs_child_counts_the_same_in_json_and_junit(tmp_path):
    run = Run(
        tmp_path,
        f"{CHECKS}/test_asgi_scope.py",
        f"{CHECKS}/test_echo.py",
        f"{CHECKS}/test_wsgi_environ.py",
        f"{CHECKS}/test_wsgi_input.py",
        "--server",
        "granian:asgi",
        "--server",
        "granian:wsgi",
        "--jobs",
        "2",
    )
    try:

        def a_child_with_records():
            for proc in psutil.Process(run.proc.pid).children():
                if "pytest" in " ".join(proc.cmdline()) and "granian:wsgi" in proc.cmdline():
                    return proc
            return None

        child = wait_until(a_child_with_records, 90, "a child session")
        partial = run.results.with_name("r.json.partial.jsonl")
        wait_until(lambda: _partial_checks(partial, "granian:wsgi") > 3, 90, "records of the child")
        child.send_signal(signal.SIGKILL)
        assert run.wait() == 1, run.output()[-3000:]
        records = run.document()["checks"]
        assert any(r["check"] == "session" and r["outcome"] == "error" for r in records)
        junit = run.junit_counts()
        assert junit["tests"] == junit["cases"] == len(records), (junit, len(records))
        errors = sum(1 for r in records if r["outcome"] in ("error", "interrupted"))
        assert junit["errors"] == errors, (junit, errors)
        assert run.leftovers() == []
    finally:
        run.stop()
