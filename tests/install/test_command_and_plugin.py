"""The ``gatecheck`` command and the pytest plugin (issue 13, item 1), each run as a real subprocess.

The plugin's entry point (``pytest11``) is stood in for by ``-p gatecheck.conformance.plugin.hooks`` with
``PYTEST_DISABLE_PLUGIN_AUTOLOAD=1``: the same module registered before any conftest, as pytest does with an
installed gatecheck. The wheel's own metadata is checked in test_wheel.py.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PLUGIN = ["-p", "gatecheck.conformance.plugin.hooks"]
ONE_CHECK = "test_echo_returns_content_length_body_byte_exact and 1000B"


def run(argv: list, cwd: Path, timeout: float = 180) -> subprocess.CompletedProcess:
    env = dict(os.environ, PYTHONPATH=str(ROOT), PYTEST_DISABLE_PLUGIN_AUTOLOAD="1")
    return subprocess.run(
        [sys.executable, *argv],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
        stdin=subprocess.DEVNULL,
    )


def test_help_lists_the_subcommands_and_an_unknown_one_is_one_line(tmp_path):
    done = run(["-m", "gatecheck", "--help"], tmp_path)
    assert done.returncode == 0
    for name in ("conformance", "load", "gate", "matrix", "servers", "annotate"):
        assert f"  {name} " in done.stdout
    bad = run(["-m", "gatecheck", "conformence"], tmp_path)
    assert bad.returncode == 2 and bad.stdout == ""
    assert bad.stderr.strip().splitlines() == [
        "gatecheck: unknown command 'conformence'; choose one of conformance, load, gate, matrix, servers, "
        "annotate (gatecheck --help)"
    ]


def test_servers_and_load_subcommands_are_the_packages_own_command_lines(tmp_path):
    assert (
        run(["-m", "gatecheck", "servers", "list"], tmp_path).stdout
        == run(["-m", "gatecheck.servers", "list"], tmp_path).stdout
    )
    assert (
        run(["-m", "gatecheck", "load", "list-profiles"], tmp_path).stdout
        == run(["-m", "gatecheck.load", "list-profiles"], tmp_path).stdout
    )
    gate = run(["-m", "gatecheck", "gate", "--help"], tmp_path)
    assert gate.returncode == 0 and "--base" in gate.stdout


def test_conformance_runs_the_checks_from_any_directory_with_pytest_options_passed_through(tmp_path):
    pytest.importorskip("granian")
    done = run(
        [
            "-m",
            "gatecheck",
            "conformance",
            "--server",
            "granian:asgi",
            "-k",
            ONE_CHECK,
            "-q",
            "--results-json",
            "out/r.json",
        ],
        tmp_path,
    )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    checks = json.loads((tmp_path / "out" / "r.json").read_text())["checks"]
    assert [(c["check"], c["target"], c["outcome"]) for c in checks] == [
        ("test_echo.py::test_echo_returns_content_length_body_byte_exact[1000B]", "granian:asgi:auto", "passed")
    ]
    assert sorted(os.listdir(tmp_path)) == ["out"]  # no .pytest_cache, no .hypothesis here


def test_the_checks_folder_registers_the_plugin_once_when_the_entry_point_did(tmp_path):
    """conftest.py must not register the module a second time (pluggy refuses it under two names)."""
    done = run(
        [
            "-m",
            "pytest",
            *PLUGIN,
            str(ROOT / "conformance"),
            "--collect-only",
            "-q",
            "-p",
            "no:cacheprovider",
            "--server",
            "granian:asgi",
            "-k",
            ONE_CHECK,
        ],
        tmp_path,
    )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    assert "test_echo_returns_content_length_body_byte_exact[granian:asgi:auto-1000B]" in done.stdout


def test_pyargs_runs_the_installed_checks_and_asks_for_a_target_when_none_is_given(tmp_path):
    done = run(
        [
            "-m",
            "pytest",
            *PLUGIN,
            "--pyargs",
            "gatecheck.conformance",
            "--collect-only",
            "-q",
            "-p",
            "no:cacheprovider",
            "--server",
            "granian:asgi",
            "-k",
            ONE_CHECK,
        ],
        tmp_path,
    )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    assert "[granian:asgi:auto-1000B]" in done.stdout
    bare = run(
        [
            "-m",
            "pytest",
            *PLUGIN,
            "--pyargs",
            "gatecheck.conformance",
            "--collect-only",
            "-q",
            "-p",
            "no:cacheprovider",
            "-k",
            ONE_CHECK,
        ],
        tmp_path,
    )
    assert bare.returncode == 4
    assert "gatecheck's checks need a target: add --server TARGET" in bare.stderr


OWN_TESTS = """
import pytest
from hypothesis import given, settings, strategies as st

@pytest.fixture
def server():
    return "the project's own server fixture"

def test_own_server_fixture(server):
    assert server == "the project's own server fixture"

def test_hypothesis_settings_are_the_projects():
    with open("settings.txt", "w") as out:
        out.write(repr(settings.default))

@pytest.mark.parametrize("n", [1, 2])
def test_parametrized(n, server):
    assert n in (1, 2)
"""


def test_the_plugin_is_inert_in_a_projects_own_run_without_server(tmp_path):
    (tmp_path / "test_own.py").write_text(OWN_TESTS)
    done = run(
        ["-m", "pytest", *PLUGIN, "-p", "_hypothesis_pytestplugin", "-q", "-p", "no:cacheprovider", "test_own.py"],
        tmp_path,
    )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    assert "4 passed" in done.stdout
    assert "gatecheck" not in done.stdout and not (tmp_path / "results").exists()
    with_plugin = (tmp_path / "settings.txt").read_text()
    # Hypothesis's defaults depend on the machine (a CI variable loads its "ci" profile): the run without
    # the plugin is the reference.
    alone = run(
        ["-m", "pytest", "-p", "_hypothesis_pytestplugin", "-q", "-p", "no:cacheprovider", "test_own.py"], tmp_path
    )
    assert alone.returncode == 0, alone.stdout[-3000:] + alone.stderr[-3000:]
    assert with_plugin == (tmp_path / "settings.txt").read_text()
