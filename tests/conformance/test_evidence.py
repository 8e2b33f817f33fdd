"""Verdicts that hold on any server (issue 28, shapes 1, 2 and 7), against real processes: a pytest subprocess per
run, its outcomes read from the results JSON.

- **A mangled query string.** The fixture apps behind real servers (uvicorn for ASGI, granian for WSGI) that keep
  the "?" in the query string (``tests/hostile/mangle.py``): the app cannot read its script and answers its own
  400. Every check that runs a script is then an *error* naming the query string the app was handed, never a
  pass and never a failure citing an unrelated clause.
- **The client's rules.** The hostile server's ``drain-*`` modes end every connection in their response
  ("close", or an HTTP/1.0 response without keep-alive) and keep it open, recording any request that arrives
  after that on the connection: across the HTTP/1 checks none may arrive (the checks whose rule is what a
  server does with requests sent after a close send them in the same write, on purpose, and are left out).
- **A crash is a finding.** A request that kills the server (an exit, a segfault, a worker dying with exit 0
  while its leader forks another) makes the check whose request was in flight "crashed", with the server's
  last log lines, counted by level in the summary and the results JSON; never "known", a private server's too.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from tests.installed import CONFORMANCE, PYTEST_ARGS, RUN_DIR

REPO = Path(__file__).resolve().parents[2]
CHECKS = "gatecheck/conformance/checks/"
HOSTILE = "{python} -m tests.hostile.server --port {port} --mode "


def _session(tmp: Path, name: str, files, target: list, keyword: str | None = None, extra=(), timeout=900) -> dict:
    """One conformance subprocess: its check records, its summary output."""
    results = tmp / f"{name}.json"
    argv = [
        sys.executable,
        "-m",
        "pytest",
        *PYTEST_ARGS,
        "--confcutdir",
        str(CONFORMANCE),
        *[CHECKS + f for f in files],
        "-q",
        "-p",
        "no:cacheprovider",
        *([] if "--expectations" in extra else ["--no-expectations"]),
        *target,
        "--results-json",
        str(results),
        *(["-k", keyword] if keyword else []),
        *extra,
    ]
    env = dict(os.environ, PYTHONPATH=str(REPO))
    proc = subprocess.run(
        argv,
        cwd=RUN_DIR,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        stdin=subprocess.DEVNULL,
        timeout=timeout,
    )
    output = proc.stdout.decode("utf-8", "replace")
    doc = json.loads(results.read_text(encoding="utf-8")) if results.exists() else {}
    return {"name": name, "records": doc.get("checks", []), "doc": doc, "output": output, "status": proc.returncode}


def _tail(run: dict) -> str:
    return f"{run['name']}: {len(run['records'])} records; output tail:\n{run['output'][-2000:]}"


# -- shape 1: a query string the app cannot read ---------------------------------------------------------------

#: the checks of the issue that took the fixture's 400 as evidence, and whole files of scripted checks
SCRIPTED = "cr_lf or app_supplied or status_line_has_sp or connection_close_from_the_app"
MANGLED = {
    "asgi": (
        "{python} -m uvicorn tests.hostile.mangle:asgi --host {host} --port {port}",
        [
            "test_asgi_messages.py",
            "test_asgi_messages_errors.py",
            "test_http1_responses.py",
            "test_connection_states.py",
        ],
        f"not h2 and ({SCRIPTED} or header_with_cr_lf or omitted_keys or response_body_in_each or "
        f"after_completion or response_headers_keep)",
    ),
    "wsgi": (
        "{python} -m granian --interface wsgi --host {host} --port {port} tests.hostile.mangle:wsgi",
        [
            "test_wsgi_input.py",
            "test_wsgi_iterable.py",
            "test_wsgi_response.py",
            "test_http1_responses.py",
            "test_connection_states.py",
        ],
        f"not h2 and (test_wsgi or {SCRIPTED})",
    ),
}


def test_a_server_that_mangles_the_query_string_gets_errors_naming_it_and_no_pass(tmp_path):
    def one(interface):
        command, files, keyword = MANGLED[interface]
        return _session(
            tmp_path, f"mangled-{interface}", files, ["--server-cmd", command, "--interface", interface], keyword
        )

    with ThreadPoolExecutor(2) as pool:
        runs = list(pool.map(one, MANGLED))
    for run in runs:
        assert len(run["records"]) > 20, _tail(run)
        wrong = {
            r["check"]: (r["outcome"], r["message"][:200])
            for r in run["records"]
            if r["outcome"] != "unsupported" and not (r["outcome"] == "error" and "'?s=" in r["message"])
        }
        assert not wrong, f"{run['name']}: not an error naming the query string: {wrong}"
        named = [r for r in run["records"] if "test_cr_lf_in_an_app_header_value_never_splits" in r["check"]]
        assert named and "could not run" in named[0]["message"], _tail(run)


# -- shape 2: no request after a close ---------------------------------------------------------------------------

#: the HTTP/1 checks (every interface-neutral one, and the WSGI ones), less those whose rule is what a server does
#: with requests the client sent after a close (they send them in the same write, on purpose)
DRAIN_FILES = [
    "test_connection_states.py",
    "test_echo.py",
    "test_files.py",
    "test_http1_connection.py",
    "test_http1_fields.py",
    "test_http1_framing.py",
    "test_http1_limits.py",
    "test_http1_responses.py",
    "test_http1_smuggling.py",
    "test_wsgi_environ.py",
    "test_wsgi_input.py",
    "test_wsgi_iterable.py",
    "test_wsgi_response.py",
    "test_streaming.py",
]
DELIBERATE = (
    "not h2 and not websocket and not pipelined_after and not close_request_is_answered_then_closed_at_each "
    "and not half_closed"
)


def test_the_client_sends_no_request_on_a_connection_a_close_ended(tmp_path):
    def one(mode):
        record = tmp_path / f"{mode}.jsonl"
        run = _session(
            tmp_path,
            mode,
            DRAIN_FILES,
            ["--server-cmd", HOSTILE + f"{mode} --record {record}", "--interface", "wsgi"],
            DELIBERATE,
            ["--jobs", "2"],
        )
        lines = record.read_text().splitlines() if record.exists() else []
        return run, [json.loads(line) for line in lines]

    with ThreadPoolExecutor(2) as pool:
        runs = list(pool.map(one, ("drain-close", "drain-10")))
    for run, sent_after in runs:
        assert len(run["records"]) > 100, _tail(run)
        assert not sent_after, f"{run['name']}: requests sent on a connection that had ended: {sent_after[:10]}"
        passed = [r["check"] for r in run["records"] if r["outcome"] == "passed"]
        assert not passed, f"{run['name']}: passed on a canned answer: {passed}"


# -- shape 7: a crash is a finding ----------------------------------------------------------------------------

ENVIRON = ["test_wsgi_environ.py"]
QUERY = "test_query_string_is_raw"


def test_a_request_that_kills_the_server_is_crashed_counted_by_level_never_known(tmp_path):
    listed = tmp_path / "expect.toml"
    listed.write_text(f'[[deviation]]\ncheck = "test_wsgi_environ.py::{QUERY}*"\nevidence = "sent a, got b"\n')
    cases = {"die": "exit code 3", "segfault": "SIGSEGV", "die-0 --fork-worker": "vanished"}

    def one(mode):
        return mode, _session(
            tmp_path,
            mode.split()[0],
            ENVIRON,
            ["--server-cmd", HOSTILE + mode, "--interface", "wsgi"],
            QUERY,
            ["--expectations", str(listed)],
            timeout=300,
        )

    with ThreadPoolExecutor(3) as pool:
        runs = list(pool.map(one, cases))
    for mode, run in runs:
        records = run["records"]
        assert records and {r["outcome"] for r in records} == {"crashed"}, _tail(run)
        assert all(cases[mode] in r["message"] and "last log lines" in r["message"] for r in records), [
            r["message"][:300] for r in records
        ]
        assert run["doc"]["by_level"] == {"MUST/SHOULD (spec)": {"crashed": len(records)}}, run["doc"].get("by_level")
        assert f"failed by level: MUST/SHOULD (spec) {len(records)} ({len(records)} crashed)" in run["output"]
        assert run["status"] == 1


def test_a_private_server_that_dies_is_crashed_never_known(tmp_path):
    check = "test_multiprocess_is_true_when_the_server_runs_several_worker_processes"
    listed = tmp_path / "expect.toml"
    listed.write_text(f'[[deviation]]\ncheck = "test_wsgi_environ.py::{check}"\nevidence = "sent a, got b"\n')
    run = _session(
        tmp_path,
        "private",
        ENVIRON,
        ["--server-cmd", HOSTILE + "die --workers {workers}", "--interface", "wsgi", "--features", "workers"],
        check,
        ["--expectations", str(listed)],
        timeout=300,
    )
    (record,) = run["records"]
    assert record["outcome"] == "crashed" and "private server" in record["message"], _tail(run)
