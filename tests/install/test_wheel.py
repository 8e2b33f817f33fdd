"""The wheel: everything under the one ``gatecheck`` package, the ``gatecheck`` command and
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
SKIP = shutil.ignore_patterns(
    ".git", "build", "dist", "*.egg-info", "__pycache__", "results", ".hypothesis", ".tox", "tests", "docs"
)


@pytest.fixture(scope="module")
def wheel(tmp_path_factory) -> zipfile.ZipFile:
    work = tmp_path_factory.mktemp("wheel")
    shutil.copytree(ROOT, work / "src", ignore=SKIP, symlinks=True)
    done = subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", "-w", str(work / "out"), str(work / "src")],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    [built] = (work / "out").glob("gatecheck-*.whl")
    return zipfile.ZipFile(built)


LAYERS = ("src/gatecheck", "servers", "fixtures", "conformance", "load")


def _shipped_files() -> list:
    """Every file of the package's folders that git tracks (the folders themselves where git is missing)."""
    try:
        done = subprocess.run(
            ["git", "-c", "core.quotePath=off", "ls-files", "-z", *LAYERS],
            cwd=ROOT,
            capture_output=True,
            text=True,
            timeout=60,
        )
        names = done.stdout.split("\0")[:-1] if done.returncode == 0 else []
    except OSError:
        names = []
    if not names:
        names = [
            str(p.relative_to(ROOT))
            for layer in LAYERS
            for p in (ROOT / layer).rglob("*")
            if p.is_file() and "__pycache__" not in p.parts
        ]
    return names


def test_every_file_of_the_package_folders_is_in_the_wheel_under_gatecheck(wheel):
    """A package folder or data file added to the repository ships without being listed anywhere."""
    names = set(wheel.namelist())
    tops = {name.split("/", 1)[0] for name in names}
    assert {t for t in tops if not t.endswith(".dist-info")} == {"gatecheck"}
    wanted = {n[len("src/") :] if n.startswith("src/") else f"gatecheck/{n}" for n in _shipped_files()}
    assert len(wanted) > 200
    assert sorted(wanted - names) == []
    assert not [n for n in names if "benchmarks" in n]  # the lab (raw results, experiments) never ships


def test_the_command_and_the_pytest_plugin_are_declared(wheel):
    [entry_points] = [n for n in wheel.namelist() if n.endswith(".dist-info/entry_points.txt")]
    parser = configparser.ConfigParser()
    parser.read_string(wheel.read(entry_points).decode())
    assert dict(parser["console_scripts"]) == {"gatecheck": "gatecheck.cli:main"}
    assert dict(parser["pytest11"]) == {"gatecheck": "gatecheck.conformance.plugin.hooks"}
