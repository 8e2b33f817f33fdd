"""Ctrl-C and SIGTERM in the middle of a check: the running check is *interrupted* (never "the check produced
no result"), with or without --full-trace, and nothing is left behind."""

from __future__ import annotations

import re
import signal

import pytest

from tests.faults.run import CHECKS, Run, wait_until
from tests.faults.servers import stall

# a server that stalls mid-stream: each check waits there (10 s) for the signal to land in
_STREAMING = [f"{CHECKS}/test_streaming.py", "-k", "iterated_echo", "--server-cmd", stall(), "--interface", "asgi"]


@pytest.mark.parametrize(
    "how",
    [pytest.param(("SIGINT", "--full-trace"), id="sigint-full-trace"), pytest.param(("SIGTERM", "-q"), id="sigterm")],
)
def test_the_running_check_is_interrupted(tmp_path, how):
    sig, flag = how
    run = Run(tmp_path, *_STREAMING, flag)
    try:
        wait_until(lambda: run.log_lines("stall: /echo_iter"), 120, "a check waiting on the stalled stream")
        run.signal(getattr(signal, sig))
        code = run.wait()
        out = run.output()
        assert code == 2, out[-3000:]
        assert not re.search(r"^(E\s+)?TypeError:", out, re.M), out[-3000:]
        outcomes = [r["outcome"] for r in run.document()["checks"]]
        messages = [r["message"] for r in run.document()["checks"]]
        assert outcomes == ["interrupted"], outcomes
        assert not any("produced no result" in m for m in messages), messages
        assert run.junit_counts()["tests"] == len(outcomes)
        assert run.leftovers() == []
        assert run.left_folders() == []
    finally:
        run.stop()
