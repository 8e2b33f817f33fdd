"""Nothing left behind: a signal at any phase of a server's stop, and a SIGKILL of the harness, leave no
process of the run and no temporary folder (items: a stop finishes whatever signal arrives; the reaper removes
the folders of a killed harness)."""

from __future__ import annotations

import signal

import pytest

from tests.faults.run import CHECKS, Run, wait_until
from tests.faults.servers import stubborn

_PRIVATE = f"{CHECKS}/test_asgi_messages_errors.py"  # its legacy-app check starts and stops a private server
_K = "test_legacy_double_callable_app_is_served"


def _private_stop_run(tmp_path, *extra) -> Run:
    return Run(
        tmp_path,
        _PRIVATE,
        "-k",
        _K,
        "--server-cmd",
        stubborn(term_delay=30),
        "--interface",
        "asgi",
        "--features",
        "lifespan",
        *extra,
    )


def _in_private_stop(run: Run) -> bool:
    return any("private-" in str(p) for p in run.log_lines("stubborn: SIGTERM"))


def _h2spec_run(tmp_path) -> Run:
    from gatecheck.conformance.h2spec.tool import find_h2spec

    if find_h2spec() is None:
        pytest.skip("h2spec is not installed (the granian env of .ci/run installs it)")
    return Run(
        tmp_path,
        f"{CHECKS}/test_h2spec.py",
        "-k",
        "test_h2spec_ran_every_case",
        "--server-cmd",
        stubborn("granian", term_delay=30),
        "--interface",
        "asgi",
        "--features",
        "h2c",
    )


@pytest.mark.parametrize("phase", ["start", "h2spec", "private-stop", "teardown", "jobs"])
def test_a_signal_at_any_phase_of_a_stop_leaves_no_process(tmp_path, phase):
    if phase == "h2spec":  # Ctrl-C while h2spec runs against its private server, again while that one stops
        run = _h2spec_run(tmp_path)
        when = lambda: any("private-" in str(p) for p in run.log_lines("stubborn: child"))  # noqa: E731
        signals = [signal.SIGINT, signal.SIGINT]
    elif phase == "start":
        run = Run(
            tmp_path,
            _PRIVATE,
            "-k",
            _K,
            "--server-cmd",
            stubborn(start_delay=3, term_delay=2),
            "--interface",
            "asgi",
            "--features",
            "lifespan",
        )
        when = lambda: run.log_lines("stubborn: starting")  # noqa: E731
        signals = [signal.SIGINT]
    elif phase == "private-stop":
        run = _private_stop_run(tmp_path)
        when = lambda: _in_private_stop(run)  # noqa: E731
        signals = [signal.SIGINT, signal.SIGINT]
    elif phase == "teardown":
        run = _private_stop_run(tmp_path)
        when = lambda: [p for p in run.log_lines("stubborn: SIGTERM") if "private-" not in str(p)]  # noqa: E731
        signals = [signal.SIGTERM, signal.SIGINT]
    else:
        run = _private_stop_run(tmp_path, "--jobs", "2")
        when = lambda: _in_private_stop(run)  # noqa: E731
        signals = [signal.SIGINT, signal.SIGINT]
    try:
        wait_until(when, 90, f"the {phase} phase")
        for sig in signals:
            run.signal(sig)
            wait_until(lambda: True, 0.3, "")
        code = run.wait()
        assert code in ((0, 1, 2) if phase == "teardown" else (1, 2)), run.output()[-3000:]
        assert run.leftovers() == [], run.output()[-3000:]
        assert run.left_folders() == []
    finally:
        run.stop()


def test_sigkill_of_the_harness_leaves_no_process_and_no_folder(tmp_path):
    run = _private_stop_run(tmp_path)
    try:
        wait_until(lambda: run.log_lines("stubborn: child"), 90, "the session server")
        run.signal(signal.SIGKILL)
        run.wait()
        assert run.leftovers(timeout=20) == []
        assert run.left_folders(timeout=20) == []
    finally:
        run.stop()


@pytest.mark.parametrize("sig", [signal.SIGKILL, signal.SIGTERM])
def test_a_gate_stopped_while_its_counted_lane_is_paused_leaves_no_process(tmp_path, sig):
    """A real gate (granian, oha, valgrind) signalled while its counted lane and the lane's valgrind servers are
    stopped for a latency run: SIGTERM lets the gate continue and stop them, SIGKILL kills the lane by its
    parent-death signal and its servers by theirs and by the lane's reaper (never stopped: a stopped reaper
    reaps nothing and stays); either way nothing of the gate is left, stopped or not."""
    import os
    import secrets
    import subprocess
    import sys

    import psutil

    from gatecheck.load.run import counting
    from gatecheck.load.run.oha import OhaNotFound, find_oha
    from tests.faults.run import MARK, marked

    try:
        find_oha(build=False)
    except OhaNotFound as exc:
        pytest.skip(f"oha is not available: {exc}")
    if counting.valgrind_missing():
        pytest.skip(counting.valgrind_missing())
    mark = secrets.token_hex(8)
    argv = [sys.executable, "-m", "gatecheck.load", "gate", "--base", sys.executable, "--head", sys.executable]
    argv += ["--out", str(tmp_path / "gate"), "--duration", "0.3", "--warmup", "0", "--latency-duration", "2"]
    argv += ["--count-pairs", "2", "--count-requests", "60", "--quiet"]
    gate = subprocess.Popen(
        argv,
        env={**os.environ, MARK: mark},
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    try:

        def lane_stopped():  # with its valgrind servers and its reaper started
            seen = set()
            for p in marked(mark):
                try:
                    line = " ".join(p.cmdline())
                    if "gate.counted" in line and p.status() == psutil.STATUS_STOPPED:
                        seen.add("lane")
                    seen.update(k for k in ("valgrind", "servers.reaper") if k in line)
                except psutil.Error:
                    continue
            return seen == {"lane", "valgrind", "servers.reaper"}

        wait_until(lane_stopped, 240, "the counted lane and its servers stopped for a latency run", interval=0.01)
        gate.send_signal(sig)
        gate.wait(120)
        try:
            wait_until(lambda: not marked(mark), 30, "every process of the gate gone")
        except AssertionError:
            pytest.fail("left behind: " + "; ".join(f"{p.pid} {' '.join(p.cmdline())[:120]}" for p in marked(mark)))
    finally:
        for p in marked(mark):
            p.kill()
        if gate.poll() is None:
            gate.kill()
            gate.wait(10)
