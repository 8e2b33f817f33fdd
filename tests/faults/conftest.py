"""Fixtures of the fault tests: a small full filesystem."""

from __future__ import annotations

import resource
import subprocess

import pytest

SIZE = 12 * 1024  # room for the first records of a run, not for its results
LIMIT = 52 * 1024  # a file-size limit must leave room for the staged fixture files (the largest is 49 KB)


@pytest.fixture
def small_disk(tmp_path):
    """(folder, limit): a folder on a tmpfs of 12 KiB (unmounted after the test), limit None; where mounting is not
    allowed, a plain folder and a function that sets RLIMIT_FSIZE (52 KiB) in the run's process (its writes past
    it fail with EFBIG, as a full disk's fail with ENOSPC; a test then selects more checks)."""
    mount = tmp_path / "full"
    mount.mkdir()
    done = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", f"size={SIZE},mode=0777", "tmpfs", str(mount)], capture_output=True, text=True
    )
    if done.returncode != 0:
        yield mount, lambda: resource.setrlimit(resource.RLIMIT_FSIZE, (LIMIT, LIMIT))
        return
    try:
        yield mount, None
    finally:
        subprocess.run(["umount", "-l", str(mount)], capture_output=True)
