"""Tools that are not Python packages (issue 13, item 5): the pinned h2spec installed with Go into gatecheck's
cache, one clear line when it cannot be, and one build lock shared by the oha and h2spec builds.

No network: ``go`` and ``cargo`` are small fake programs on PATH that log their arguments, print a few
progress lines, sleep when told to, and leave a binary where the real ones would.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import time
from pathlib import Path

from gatecheck.conformance.h2spec import H2SPEC_PACKAGE, INSTALL_HINT
from gatecheck.load.run.oha import OHA_VERSION
from tests.installed import PYTEST, RUN_DIR

ROOT = Path(__file__).resolve().parents[2]

FAKE_GO = """
import os, sys, time
open(os.environ["FAKE_LOG"], "a").write(" ".join(sys.argv[1:]) + "\\n")
print("go: downloading github.com/summerwind/h2spec v2.2.1+incompatible", flush=True)
if os.environ.get("FAKE_FAIL"):
    print("go: module lookup disabled")
    sys.exit(1)
time.sleep(float(os.environ.get("FAKE_SLEEP", "0")))
path = os.path.join(os.environ["GOBIN"], "h2spec")
open(path, "w").write("#!/bin/sh\\necho h2spec v2.2.1\\n")
os.chmod(path, 0o755)
"""

FAKE_CARGO = """
import os, sys, time
open(os.environ["FAKE_LOG"], "a").write(" ".join(sys.argv[1:]) + "\\n")
print("   Compiling oha v1.16.0", flush=True)
root = sys.argv[sys.argv.index("--root") + 1]
time.sleep(float(os.environ.get("FAKE_SLEEP", "0")))
os.makedirs(os.path.join(root, "bin"), exist_ok=True)
path = os.path.join(root, "bin", "oha")
open(path, "w").write("#!/bin/sh\\necho oha 1.16.0\\n")
os.chmod(path, 0o755)
print("  Installed package oha v1.16.0")
"""


def _env(tmp_path: Path, **extra: str) -> dict:
    """PATH holds only the fake tools and this interpreter: no real go, cargo or apt-get."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir(exist_ok=True)
    for name, text in (("go", FAKE_GO), ("cargo", FAKE_CARGO)):
        (bin_dir / name).write_text(f"#!{os.path.realpath(sys.executable)}\n" + text)
        (bin_dir / name).chmod(0o755)
    (bin_dir / "python3").symlink_to(os.path.realpath(sys.executable)) if not (bin_dir / "python3").exists() else None
    env = {k: v for k, v in os.environ.items() if not k.startswith(("GATECHECK_", "FAKE_"))}
    env.update(
        PATH=str(bin_dir),
        GATECHECK_CACHE=str(tmp_path / "cache"),
        FAKE_LOG=str(tmp_path / "calls.log"),
        HOME=str(tmp_path / "home"),
        PYTHONPATH=str(ROOT),
        **extra,
    )
    return env


def _python(code: str, env: dict, **kw) -> subprocess.Popen:
    return subprocess.Popen(
        [sys.executable, "-c", textwrap.dedent(code)],
        env=env,
        cwd=str(ROOT),
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        **kw,
    )


ENSURE_H2SPEC = """
    from gatecheck.conformance.h2spec.install import ensure_h2spec
    print("RESULT", ensure_h2spec(lambda line: print("SAY", line, flush=True)))
"""


def test_h2spec_missing_is_installed_pinned_into_the_cache_with_progress(tmp_path):
    env = _env(tmp_path)
    out = _python(ENSURE_H2SPEC, env).communicate(timeout=60)[0]
    binary = tmp_path / "cache" / "bin" / "h2spec"
    assert f"RESULT ({binary!r}, '')" in out, out
    assert os.access(binary, os.X_OK)
    assert (tmp_path / "calls.log").read_text().split() == ["install", "-v", H2SPEC_PACKAGE]
    assert "SAY h2spec not found: installing it with Go" in out
    assert "SAY   go: downloading github.com/summerwind/h2spec v2.2.1+incompatible" in out  # progress
    assert list((tmp_path / "cache").glob("h2spec-*")) == []  # the staging GOBIN is gone
    again = _python(ENSURE_H2SPEC, env).communicate(timeout=60)[0]
    assert "SAY" not in again and len((tmp_path / "calls.log").read_text().splitlines()) == 1  # reused


def test_a_failing_go_install_is_one_line_saying_what_to_do(tmp_path):
    out = _python(ENSURE_H2SPEC, _env(tmp_path, FAKE_FAIL="1")).communicate(timeout=60)[0]
    result = next(line for line in out.splitlines() if line.startswith("RESULT"))
    assert result.startswith("RESULT (None, ")
    assert f"`go install {H2SPEC_PACKAGE}` failed (exit 1)" in result and "module lookup disabled" in result
    assert INSTALL_HINT in result and "@latest" not in result


def test_without_go_the_answer_is_one_line_and_nothing_is_built(tmp_path):
    env = _env(tmp_path)
    (tmp_path / "bin" / "go").unlink()
    out = _python(ENSURE_H2SPEC, env).communicate(timeout=60)[0]
    assert 'RESULT (None, "Go is missing (needed to build it): install Go' in out
    assert not (tmp_path / "cache" / "bin" / "h2spec").exists()


FIND_OHA = """
    from gatecheck.load.run.oha import find_oha
    print("RESULT", find_oha(log=lambda line: print("SAY", line, flush=True)), flush=True)
"""


def test_two_runs_sharing_the_cache_build_oha_once_the_second_waits_then_reuses(tmp_path):
    env = _env(tmp_path, FAKE_SLEEP="3")
    first = _python(FIND_OHA, env)
    log = tmp_path / "calls.log"
    deadline = time.monotonic() + 30
    while not log.exists() and time.monotonic() < deadline:  # the first run holds the lock and is building
        time.sleep(0.05)
    assert log.exists(), "the first run never started its build"
    second = _python(FIND_OHA, env)
    out_first, out_second = first.communicate(timeout=60)[0], second.communicate(timeout=60)[0]
    binary = tmp_path / "cache" / f"oha-{OHA_VERSION}" / "bin" / "oha"
    assert f"RESULT {binary}" in out_first and f"RESULT {binary}" in out_second, (out_first, out_second)
    assert len(log.read_text().splitlines()) == 1, "oha was built twice"
    assert "SAY oha not found: building oha" in out_first
    assert "SAY waiting for another gatecheck run that holds" in out_second
    assert "SAY oha: another gatecheck run built it meanwhile" in out_second
    assert first.returncode == second.returncode == 0


def test_the_lock_is_shared_by_h2spec_and_oha_builds(tmp_path):
    """An h2spec install waits while an oha build holds the lock (one lock: builds never run side by side)."""
    env = _env(tmp_path, FAKE_SLEEP="2")
    first = _python(FIND_OHA, env)
    log = tmp_path / "calls.log"
    deadline = time.monotonic() + 30
    while not log.exists() and time.monotonic() < deadline:
        time.sleep(0.05)
    second = _python(ENSURE_H2SPEC, env)
    first.communicate(timeout=60)
    out_second = second.communicate(timeout=60)[0]
    assert "SAY waiting for another gatecheck run" in out_second
    calls = log.read_text().splitlines()
    assert calls[0].startswith("install oha") and calls[1].startswith("install -v")


def test_a_session_without_h2spec_says_so_once_and_is_incomplete(tmp_path):
    """The main job: h2spec's cases cannot run (no h2spec, no Go) -> one line at the start, "incomplete" in the
    summary and the results document, exit status 1; never a silent "not supported"."""
    import json

    import pytest

    pytest.importorskip("granian")
    env = _env(tmp_path, PYTEST_DISABLE_PLUGIN_AUTOLOAD="1")
    (tmp_path / "bin" / "go").unlink()
    results = tmp_path / "r.json"
    done = subprocess.run(
        [
            *PYTEST,
            "gatecheck/conformance/checks",
            "-p",
            "no:cacheprovider",
            "-q",
            "--server",
            "granian:asgi",
            "-k",
            "h2spec",
            "--results-json",
            str(results),
        ],
        cwd=RUN_DIR,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    out = done.stdout
    assert done.returncode == 1, out[-3000:]
    assert out.count("gatecheck: h2spec not installed — Go is missing") == 1, out[-3000:]
    assert "incomplete: h2spec not installed — Go is missing" in out
    data = json.loads(results.read_text())
    assert data["incomplete"].startswith("h2spec not installed — Go is missing")
    h2spec_cases = [c for c in data["checks"] if "h2spec_case" in c["check"]]
    skipped = [c for c in h2spec_cases if c["outcome"] == "skipped"]
    assert len(skipped) > 100  # a few cases are the suite's own checks (e.g. the invalid preface) and ran
    assert all(c["message"].removeprefix("Skipped: ").startswith("incomplete: h2spec not installed") for c in skipped)
    assert not any(c["outcome"] == "unsupported" for c in data["checks"])
