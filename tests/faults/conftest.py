"""Fixtures of the fault tests: a small full filesystem."""
from __future__ import annotations

import subprocess
from pathlib import Path

import pytest


@pytest.fixture
def small_disk(tmp_path) -> Path:
    """A folder on a tmpfs of 12 KiB (unmounted after the test): room for the first records of a run, not for
    its results. Where mounting is not allowed, the test is skipped here (the RLIMIT_FSIZE variant runs)."""
    mount = tmp_path / "full"
    mount.mkdir()
    done = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=12k,mode=0777", "tmpfs", str(mount)],
                          capture_output=True, text=True)
    if done.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here ({done.stderr.strip()}); the file-size-limit variant runs")
    try:
        yield mount
    finally:
        subprocess.run(["umount", "-l", str(mount)], capture_output=True)
