"""A pytest plugin that kills the session's server *between* checks: after each check's teardown.

    python -m pytest -p tests.hostile.between conformance ... --server-cmd "{python} -m tests.hostile.server ..."

It SIGKILLs every ``tests.hostile.server`` process started by this pytest (its descendants, never anything
else) and waits until they are gone, so the next check finds its server dead: the harness must restart it.
"""

from __future__ import annotations

import os

import psutil
import pytest

from tests.hostile.procs import descendants_running


@pytest.hookimpl(trylast=True)
def pytest_runtest_teardown(item, nextitem):
    if nextitem is None:
        return
    ours = descendants_running(os.getpid(), "tests.hostile.server")
    for proc in ours:
        try:
            proc.kill()
        except psutil.Error:
            pass
    psutil.wait_procs(ours, timeout=10)
