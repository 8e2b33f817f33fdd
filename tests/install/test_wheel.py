"""The wheel (issue 13, item 1): everything under the one ``gatecheck`` package, the ``gatecheck`` command and
the ``pytest11`` plugin declared, the data files the checks and fixtures read included.

Built from a copy of the checkout with ``pip wheel --no-deps`` (pip fetches the build backend, setuptools, from
its cache or the index); the full install into a fresh virtualenv is the README's set-up, run by hand.
"""
from __future__ import annotations

import configparser
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SKIP = shutil.ignore_patterns(".git", "build", "dist", "*.egg-info", "__pycache__", "results", ".hypothesis",
                              ".tox", "tests", "docs")


@pytest.fixture(scope="module")
def wheel(tmp_path_factory) -> zipfile.ZipFile:
    work = tmp_path_factory.mktemp("wheel")
    shutil.copytree(ROOT, work / "src", ignore=SKIP, symlinks=True)
    done = subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", "-w", str(work / "out"),
                           str(work / "src")],
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    [built] = (work / "out").glob("gatecheck-*.whl")
    return zipfile.ZipFile(built)


def test_every_module_is_inside_the_gatecheck_package(wheel):
    tops = {name.split("/", 1)[0] for name in wheel.namelist()}
    assert {t for t in tops if not t.endswith(".dist-info")} == {"gatecheck"}
    names = set(wheel.namelist())
    for path in ("gatecheck/__init__.py", "gatecheck/cli.py", "gatecheck/__main__.py", "gatecheck/tools.py",
                 "gatecheck/servers/staging.py", "gatecheck/fixtures/apps/asgi.py", "gatecheck/conformance/conftest.py",
                 "gatecheck/conformance/test_h2spec.py", "gatecheck/conformance/h2spec_install.py",
                 "gatecheck/conformance/data/pytest.ini", "gatecheck/conformance/data/h2spec_cases.txt",
                 "gatecheck/conformance/plugin/hooks.py", "gatecheck/load/profiles/smoke.toml"):
        assert path in names, path
    assert any(n.startswith("gatecheck/fixtures/tls/") for n in names)
    assert any(n.startswith("gatecheck/fixtures/static/") for n in names)


def test_the_command_and_the_pytest_plugin_are_declared(wheel):
    [entry_points] = [n for n in wheel.namelist() if n.endswith(".dist-info/entry_points.txt")]
    parser = configparser.ConfigParser()
    parser.read_string(wheel.read(entry_points).decode())
    assert dict(parser["console_scripts"]) == {"gatecheck": "gatecheck.cli:main"}
    assert dict(parser["pytest11"]) == {"gatecheck": "gatecheck.conformance.plugin.hooks"}
