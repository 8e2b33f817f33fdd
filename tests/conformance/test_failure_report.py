"""A failure someone can act on: the bytes of the check's last connections, the rule, and one command that reruns
exactly that check on that target, from the installed ``gatecheck`` command in any directory; ``--lf``; a green
run's short output.

The end-to-end tests run the stdlib server of tests/broken/server.py with one wire rule broken (``--break
chunk_size_int``: a chunk-size parsed with ``int(size, 16)``, so ``+5`` is a size) through ``--server-cmd``, from
an empty directory with gatecheck's cache in a temporary one, as a tester following the README would.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import socket
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from gatecheck.conformance.client import transcript
from gatecheck.conformance.client.connect import connect
from gatecheck.conformance.plugin.expectations import load_expectation_file
from gatecheck.conformance.plugin.failures import failure_text, out_of_range_note, rerun_command
from gatecheck.conformance.plugin.lastfailed import KEY, merge
from gatecheck.conformance.plugin.selection import OPTION, split_args
from tests.installed import CHECKS

ROOT = Path(__file__).resolve().parents[2]
BROKEN = "{python} -m tests.broken.server --host {host} --port {port} --break chunk_size_int"
CHECK = "test_http1_framing.py::test_invalid_chunk_size_is_rejected[plus]"


# -- the transcript ----------------------------------------------------------------------------------------


@pytest.fixture
def echo_server():
    """A loopback server that answers each read with b"HTTP/1.1 200 OK\\r\\n\\r\\n" + the bytes read, then closes."""
    listener = socket.create_server(("127.0.0.1", 0))
    listener.settimeout(5)

    def serve():
        try:
            conn, _ = listener.accept()
        except OSError:
            return
        with conn:
            conn.settimeout(5)
            data = conn.recv(65536)
            conn.sendall(b"HTTP/1.1 200 OK\r\n\r\n" + data + b"\x00\xff")

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    yield listener.getsockname()
    listener.close()
    thread.join(5)


def test_every_socket_of_connect_records_what_it_sent_and_received(echo_server):
    transcript.begin()
    with connect(echo_server) as sock:
        sock.sendall(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n")
        received = b""
        while chunk := sock.recv(4096):
            received += chunk
    text = transcript.render()
    assert f"connection 1 (127.0.0.1:{echo_server[1]}):" in text
    assert "→ sent 27 bytes:" in text and "GET / HTTP/1.1\\r\\n" in text
    assert f"← received {len(received)} bytes:" in text and "\\x00\\xff" in text
    assert "← (the server closed the connection)" in text
    transcript.begin()
    assert transcript.render() == ""


def test_a_transcript_is_capped_and_escaped():
    record = transcript.opened(("127.0.0.1", 1))
    record.add(transcript.SENT, b"A" * 100_000)
    for i in range(100):
        record.add(transcript.SENT if i % 2 else transcript.RECEIVED, b"\r\nx\x7f")
    runs = record.runs
    assert len(runs) <= 2 * transcript.EDGE + 1 and runs[transcript.EDGE][0] == "gap"
    assert len(runs[0][1]) == transcript.RUN_KEEP and runs[0][2] == 100_000
    assert transcript.escape(b"a\\b\tc\r\n\x1b") == ["a\\\\b\\tc\\r\\n", "\\x1b"]
    assert transcript.escape(b"x" * 10, limit=4, total=50)[-1] == "... (46 more bytes)"
    assert len(transcript.render()) <= transcript.RENDER_CAP + 20


# -- the failure's text ------------------------------------------------------------------------------------


def test_a_failure_names_target_rule_bytes_and_the_command_that_reruns_it():
    record = {
        "target": "srv:asgi:h1",
        "check": CHECK,
        "clause": "RFC 9112 §2.2",
        "level": "SHOULD",
        "sentence": "the server SHOULD respond with a 400",
        "accepts": "a 400",
        "outcome": "failed",
        "message": "E       AssertionError: expected a 400\nE       assert 200 in {400}",
        "where": "test_x.py:35",
        "exchange": "connection 1 (127.0.0.1:1):\n  → sent 2 bytes:\n    +5",
        "log": "a line",
        "out_of_range": "recorded for srv <1 at f.toml:3, not srv 2: re-confirm or remove",
    }
    text = failure_text(record, "srv:asgi?name=x", ["--no-expectations"], "srv 2")
    for part in (
        "target:  srv:asgi:h1 (srv 2)",
        "clause:  RFC 9112 §2.2 (SHOULD)",
        '"the server SHOULD respond',
        "allows:  a 400",
        "failed:  AssertionError: expected a 400",
        "at:      test_x.py:35",
        "→ sent 2 bytes",
        "a line",
        "note:    recorded for srv <1 at f.toml:3, not srv 2: re-confirm or remove",
        f"rerun:   gatecheck conformance --server 'srv:asgi?name=x' --no-expectations '{CHECK}'",
    ):
        assert part in text, part
    assert rerun_command("a:b", "t.py::f") == "gatecheck conformance --server a:b t.py::f"


def test_an_entry_out_of_its_range_says_so(tmp_path):
    path = tmp_path / "own.toml"
    path.write_text(
        f'[[deviation]]\ncheck = "{CHECK}"\nversions = "<2.8.8"\nevidence = "e"\n'
        'upstream = "https://github.com/o/r/issues/1"\n',
        encoding="utf-8",
    )
    entries = load_expectation_file(path)
    assert entries[0].upstream == "https://github.com/o/r/issues/1"
    assert (
        out_of_range_note(entries, "granian", "2.8.9")
        == f"recorded for granian <2.8.8 at {path}:1, not granian 2.8.9: re-confirm or remove"
    )
    assert out_of_range_note([], "granian", "2.8.9") == ""
    path.write_text(f'[[deviation]]\ncheck = "{CHECK}"\nevidence = "e"\nupstream = "see the tracker"\n')
    with pytest.raises(ValueError, match="upstream must be the URL"):
        load_expectation_file(path)


# -- naming a check on the command line --------------------------------------------------------------------


def test_a_check_named_as_a_run_printed_it_is_resolved_against_the_installed_checks(tmp_path):
    pasted = f"../../venv/lib/python3.12/site-packages/gatecheck/conformance/checks/{CHECK.split('[')[0]}[a:b:c-plus]"
    files, rest = split_args(["--server", "test_echo.py", CHECK, "-k", "x", pasted, "test_mine.py"], CHECKS)
    assert files == [str(CHECKS / "test_http1_framing.py")]
    assert rest == [
        "--server",
        "test_echo.py",
        OPTION,
        CHECK,
        "-k",
        "x",
        OPTION,
        "test_http1_framing.py::test_invalid_chunk_size_is_rejected[a:b:c-plus]",
        "test_mine.py",
    ]
    (tmp_path / "test_echo.py").write_text("")  # a path of the user's own stays a path
    files, rest = split_args([str(tmp_path / "test_echo.py")], CHECKS)
    assert files == [] and rest == [str(tmp_path / "test_echo.py")]


def test_lastfailed_of_children_is_merged_into_the_runs_cache(tmp_path):
    class Config:
        rootpath = tmp_path

        class option:
            cacheclear = False

        class pluginmanager:
            has_plugin = staticmethod(lambda name: True)

        @staticmethod
        def getini(name):
            return str(tmp_path / "cache")

        def __init__(self):
            self.pluginmanager = Config.pluginmanager
            self.option = Config.option

    def write(folder, data):
        (folder / KEY).parent.mkdir(parents=True, exist_ok=True)
        (folder / KEY).write_text(json.dumps(data))

    write(tmp_path / "cache", {"a": True, "b": True, "c": True})
    write(tmp_path / "c0", {"a": True, "c": True, "d": True})  # b passed, d failed in child 0
    write(tmp_path / "c1", {"a": True, "b": True})  # c passed in child 1
    (tmp_path / "c2").mkdir()  # a child that wrote nothing
    merge(Config(), [tmp_path / "c0", tmp_path / "c1", tmp_path / "c2"])
    assert json.loads((tmp_path / "cache" / KEY).read_text()) == {"a": True, "d": True}


# -- end to end: the installed command from an empty directory ---------------------------------------------


def _run(args: list, cwd: Path, cache: Path, timeout: float = 240) -> subprocess.CompletedProcess:
    env = dict(os.environ, PYTHONPATH=str(ROOT), GATECHECK_CACHE=str(cache))
    return subprocess.run(
        [sys.executable, "-m", "gatecheck", *args],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
        stdin=subprocess.DEVNULL,
    )


def test_a_failure_shows_its_bytes_and_its_rerun_line_reruns_exactly_it(tmp_path):
    work, cache = tmp_path / "work", tmp_path / "cache"
    work.mkdir()
    first = _run(
        ["conformance", "--server-cmd", BROKEN, "--interface", "wsgi", CHECK, "--results-json", "r.json"], work, cache
    )
    out = first.stdout
    assert first.returncode == 1, out[-3000:] + first.stderr[-3000:]
    for part in ("clause:  RFC 9112 §2.2", "allows:", "→ sent", "+5\\r\\n", "← received", "HTTP/1.1 200"):
        assert part in out, (part, out[-4000:])
    assert "XFAIL" not in out and "Traceback" not in out and "def test_" not in out  # no Python source
    (line,) = [ln for ln in out.splitlines() if ln.startswith("rerun:")]
    command = shlex.split(line.removeprefix("rerun:"))
    assert command[:2] == ["gatecheck", "conformance"] and command[-1] == CHECK
    again = _run([*command[1:], "--results-json", "again.json"], work, cache)
    assert again.returncode == 1 and "1 failed" in again.stdout and "+5\\r\\n" in again.stdout, again.stdout[-3000:]
    assert [c["check"] for c in json.loads((work / "again.json").read_text())["checks"]] == [CHECK]
    record = json.loads((work / "again.json").read_text())["checks"][0]
    assert "+5\\r\\n" in record["exchange"] and record["where"].startswith("test_http1_framing.py:")
    # pytest's node id from the FAILED line, pasted as it is
    (failed,) = [ln.split()[1] for ln in out.splitlines() if ln.startswith("FAILED ")]
    pasted = _run([*command[1:-1], failed, "--results-json", "pasted.json"], work, cache)
    assert pasted.returncode == 1 and "1 failed" in pasted.stdout, pasted.stdout[-3000:]
    # --lf: the last failed check alone (pytest's cache in gatecheck's, not in the working directory)
    last = _run(
        ["conformance", "--server-cmd", BROKEN, "--interface", "wsgi", "--lf", "--results-json", "lf.json"], work, cache
    )
    assert last.returncode == 1 and re.search(r"\b1 failed\b", last.stdout), last.stdout[-3000:]
    assert [c["check"] for c in json.loads((work / "lf.json").read_text())["checks"]] == [CHECK]
    assert sorted(os.listdir(work)) == ["again.json", "lf.json", "pasted.json", "r.json"]


def test_a_green_run_is_short_and_lists_known_deviations_only_with_v(tmp_path):
    work, cache = tmp_path / "work", tmp_path / "cache"
    work.mkdir()
    (work / "own.toml").write_text(
        "".join(
            f'[[deviation]]\ncheck = "test_http1_framing.py::test_invalid_chunk_size_is_rejected[{param}]"\n'
            "evidence = \"chunk-size +5, 0x5, ' 5' and '5 ' read as sizes: 200\"\n"
            'upstream = "https://example.org/broken-server/issues/1"\n'
            for param in ("plus", "hex-prefix", "leading-space", "trailing-space")
        ),
        encoding="utf-8",
    )
    args = [
        "conformance",
        "--server-cmd",
        BROKEN,
        "--interface",
        "wsgi",
        "--no-builtin-expectations",
        "--expectations",
        "own.toml",
        "test_http1_framing.py::test_invalid_chunk_size_is_rejected",
        "--results-json",
        "r.json",
    ]
    quiet = _run(args, work, cache)
    assert quiet.returncode == 0, quiet.stdout[-3000:]
    assert "XFAIL" not in quiet.stdout and " known" in quiet.stdout
    assert re.search(r"cmd-tests\.broken\.server +MUST/SHOULD \d+ passed, \d+ known", quiet.stdout), quiet.stdout
    known = [c for c in json.loads((work / "r.json").read_text())["checks"] if c["outcome"] == "known"]
    assert known and all(c["upstream"] == "https://example.org/broken-server/issues/1" for c in known)
    assert all("exchange" in c for c in known)
    verbose = _run([*args, "-v"], work, cache)
    assert verbose.returncode == 0 and "XFAIL" in verbose.stdout
    # a --jobs run's parent lists them from its children's records, with -v only
    jobs = [a if a != "test_http1_framing.py::test_invalid_chunk_size_is_rejected" else "-k" for a in args]
    jobs.insert(jobs.index("-k") + 1, "test_invalid_chunk_size_is_rejected")
    quiet = _run([*jobs, "--jobs", "2"], work, cache)
    assert quiet.returncode == 0 and "gatecheck [" in quiet.stdout and "KNOWN " not in quiet.stdout, quiet.stdout
    verbose = _run([*jobs, "--jobs", "2", "-v"], work, cache)
    assert (
        "KNOWN test_http1_framing.py::test_invalid_chunk_size_is_rejected[plus] @ cmd-tests.broken.server"
        in verbose.stdout
    ), verbose.stdout[-3000:]
