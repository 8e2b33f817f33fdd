"""Bad inputs to the servers layer: one clear line (a ServerError, or exit 2 from the CLI), never a traceback."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from gatecheck.servers import ServerError, Target, TargetError, python_for, resolve, start_server

ROOT = Path(__file__).resolve().parents[2]


def command(cmd: str, **options: str) -> Target:
    return Target("command", "asgi", "h1", (("cmd", cmd),) + tuple(options.items()))


def test_a_missing_program_is_one_error_raised_once_without_retries(tmp_path):
    with pytest.raises(TargetError) as info:
        start_server(command("gatecheck-no-such-binary --port {port}"), app="x:y", log_dir=tmp_path)
    assert "cannot run 'gatecheck-no-such-binary'" in str(info.value)
    assert "No such file or directory" in str(info.value)
    assert len(list(tmp_path.iterdir())) == 1  # one launch: no retry of a start that cannot work


def test_a_file_that_is_not_executable_is_one_error(tmp_path):
    script = tmp_path / "server.sh"
    script.write_text("#!/bin/sh\n")
    with pytest.raises(TargetError) as info:
        start_server(command(f"{script} {{port}}"), app="x:y", log_dir=tmp_path)
    assert "cannot run" in str(info.value) and "Permission denied" in str(info.value)


@pytest.mark.parametrize(
    "target",
    [
        command('{python} -m tests.hostile.server --port {port} --mode "ok'),
        command("{python} -m tests.hostile.server --port {port}", args="--x 'unbalanced"),
        Target.parse("granian:asgi").with_options(args='--workers "2'),
    ],
)
def test_an_unbalanced_quote_is_a_target_error(target):
    with pytest.raises(TargetError) as info:
        resolve(target)
    assert "cannot be split like a command line" in str(info.value)
    assert "No closing quotation" in str(info.value)


@pytest.mark.parametrize("port", [-1, 0, 65536])
def test_a_port_out_of_range_is_a_target_error(tmp_path, port):
    with pytest.raises(TargetError) as info:
        start_server(command("{python} -m tests.hostile.server --port {port}"), app="x:y", log_dir=tmp_path, port=port)
    assert "is not a TCP port (1-65535)" in str(info.value)


@pytest.mark.parametrize(
    "argv, message",
    [
        (["--port", "-1"], "'-1' is not a TCP port"),
        (["--port", "http"], "'http' is not a TCP port"),
        (["--ready-timeout", "0"], "'0' is not a number of seconds greater than 0"),
        (["--ready-timeout", "-5"], "'-5' is not a number of seconds greater than 0"),
    ],
)
def test_the_run_command_refuses_bad_numbers_in_one_line(argv, message):
    out = subprocess.run(
        [sys.executable, "-m", "gatecheck.servers", "run", "granian:asgi", *argv],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
        stdin=subprocess.DEVNULL,
    )
    assert out.returncode == 2
    assert message in out.stderr and "Traceback" not in out.stderr


def test_a_python_option_naming_a_file_that_is_not_executable_says_so():
    with pytest.raises(TargetError) as info:
        python_for(Target.parse("granian:asgi?python=/etc/passwd"))
    assert "'/etc/passwd' is not an executable file" in str(info.value)


def test_a_python_option_naming_a_program_that_is_not_python_says_so(tmp_path):
    program = tmp_path / "not-python"
    program.write_text("#!/bin/sh\necho hello\n")
    program.chmod(0o755)
    with pytest.raises(TargetError) as info:
        python_for(Target.parse("granian:asgi").with_options(python=str(program)))
    assert "is not a Python 3 interpreter" in str(info.value) and "hello" in str(info.value)


def test_cpus_this_host_does_not_offer_are_one_clear_error(tmp_path):
    unavailable = max(os.sched_getaffinity(0)) + 1
    with pytest.raises(ServerError) as info:
        start_server(
            command("{python} -m tests.hostile.server --port {port}"), app="x:y", log_dir=tmp_path, cpus=[unavailable]
        )
    assert f"cannot pin the server to CPU {unavailable}" in str(info.value)
