"""Finding h2spec, or installing the pinned version into gatecheck's cache, before a session's h2spec cases.

    binary, problem = ensure_h2spec(say)      # (path, "") or (None, one line saying what to do)

Order: ``h2spec`` on PATH or already in ``<cache>/bin`` (``h2spec.find_h2spec``); else ``go install`` of the
pinned ``H2SPEC_PACKAGE`` with ``GOBIN`` in the cache, under the cache's build lock (``gatecheck.tools``: a
concurrent run waits, then reuses this build), with progress lines. Go comes from PATH; where it is missing
and this process runs as root with ``apt-get`` on PATH, Debian's ``golang-go`` is installed first. Otherwise,
or when the build fails, the answer is one line saying what to do, and the session is marked incomplete.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
from pathlib import Path
from typing import Callable

from gatecheck.tools import cache_dir, find_or_build, say_stderr

from .tool import H2SPEC_PACKAGE, INSTALL_HINT, find_h2spec

__all__ = ["ensure_h2spec", "H2specMissing"]

BUILD_TIMEOUT = 900.0  # seconds for `go install` (downloads the module and its dependencies, then compiles)
APT_TIMEOUT = 900.0


class H2specMissing(RuntimeError):
    """h2spec is not installed and could not be installed (the message says what to do)."""


def ensure_h2spec(say: Callable[[str], None] = say_stderr) -> tuple:
    """(path, "") when h2spec is there or was just installed, else (None, the reason and what to do)."""
    try:
        return find_or_build("h2spec", find_h2spec, lambda: _install(say), say), ""
    except H2specMissing as exc:
        return None, str(exc)


def _install(say: Callable[[str], None]) -> Path:
    go = _go(say)
    target = cache_dir() / "bin"
    target.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix="h2spec-", dir=cache_dir()))
    try:
        argv = [go, "install", "-v", H2SPEC_PACKAGE]
        say(f"h2spec not found: installing it with Go into {target} (a minute or two the first time)")
        say(f"  $ GOBIN={target} {' '.join(argv)}")
        code, tail = _run_with_progress(argv, {**os.environ, "GOBIN": str(staging)}, say, BUILD_TIMEOUT)
        built = staging / "h2spec"
        if code != 0 or not built.is_file():
            raise H2specMissing(
                f"`go install {H2SPEC_PACKAGE}` failed (exit {code}): "
                f"{tail or 'no output'}; fix that, or {INSTALL_HINT}"
            )
        os.replace(built, target / "h2spec")  # atomic: a run that looks meanwhile sees all of it or nothing
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    say(f"h2spec installed: {target / 'h2spec'}")
    return target / "h2spec"


def _go(say: Callable[[str], None]) -> str:
    """Go from PATH; Debian's golang-go where it is missing and this runs as root with apt-get on PATH."""
    found = shutil.which("go")
    if found:
        return found
    apt = shutil.which("apt-get")
    if apt is None or os.geteuid() != 0:
        raise H2specMissing(
            f"Go is missing (needed to build it): install Go "
            f"(https://go.dev/dl/ or your system's golang package), or {INSTALL_HINT}"
        )
    say("h2spec needs Go, which is missing: installing Debian's golang-go with apt-get")
    for argv in ([apt, "update", "-q"], [apt, "install", "-y", "-q", "--no-install-recommends", "golang-go"]):
        env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
        code, tail = _run_with_progress(argv, env, lambda line: None, APT_TIMEOUT)
        if code != 0:
            raise H2specMissing(
                f"`{' '.join(argv)}` failed (exit {code}): {tail}; install Go yourself, or {INSTALL_HINT}"
            )
    found = shutil.which("go")
    if not found:
        raise H2specMissing(f"golang-go was installed but no `go` is on PATH; {INSTALL_HINT}")
    return found


def _run_with_progress(argv: list, env: dict, say: Callable[[str], None], timeout: float) -> tuple:
    """Run ``argv``, echoing its output lines through ``say`` (indented); (exit code, last lines)."""
    import threading

    lines: list = []
    try:
        proc = subprocess.Popen(
            argv,
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            errors="replace",
        )
    except OSError as exc:
        return 127, str(exc)
    timer = threading.Timer(timeout, proc.kill)
    timer.start()
    try:
        assert proc.stdout is not None
        for line in proc.stdout:
            lines.append(line.rstrip())
            say("  " + line.rstrip())
        code = proc.wait()
    finally:
        timer.cancel()
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    tail = " | ".join(ln for ln in lines[-3:] if ln)
    if code < 0:
        tail = f"stopped by signal {-code} (the limit is {timeout:.0f} s); {tail}"
    return code, tail
