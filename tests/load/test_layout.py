"""load/'s shape and the direction of its imports, as the package docstrings state them.

- Shape: no module over 400 lines, no function over 60 lines.
- Data flows one way, plan -> run -> records -> report, and the gate uses them all: ``plan`` and ``records``
  import nothing else of load; ``run`` imports ``plan`` and ``records``; ``report`` imports ``plan`` and
  ``records``; only the command lines import ``gate``.
- The lab is not in the package: nothing dated, no experiments.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

LOAD = Path(__file__).resolve().parents[2] / "load"
MODULES = sorted(LOAD.rglob("*.py"))
PACKAGES = ("plan", "run", "records", "report", "gate")
ALLOWED = {
    "plan": set(),
    "records": set(),
    "run": {"plan", "records"},
    "report": {"plan", "records"},
    "gate": {"plan", "run", "records"},
}


def _name(path: Path) -> str:
    return path.relative_to(LOAD).as_posix()


@pytest.mark.parametrize("path", MODULES, ids=_name)
def test_no_module_is_over_400_lines_nor_any_function_over_60(path):
    text = path.read_text(encoding="utf-8")
    assert len(text.splitlines()) <= 400
    long = [
        f"{node.name} ({node.end_lineno - node.lineno + 1} lines)"
        for node in ast.walk(ast.parse(text))
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.end_lineno - node.lineno + 1 > 60
    ]
    assert not long


def _imported_packages(path: Path) -> set:
    """The packages of load/ that ``path`` imports (relative or absolute imports, at any depth)."""
    own = path.relative_to(LOAD).parts
    found = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom) and node.level:
            base = list(own[:-1])[: len(own) - node.level]
            target = base + (node.module.split(".") if node.module else [])
            names = [target + [a.name] for a in node.names] if not target else [target]
        elif isinstance(node, ast.ImportFrom) and (node.module or "").startswith("gatecheck.load"):
            target = node.module.split(".")[2:]
            names = [target + [a.name] for a in node.names] if not target else [target]
        elif isinstance(node, ast.Import):
            names = [a.name.split(".")[2:] for a in node.names if a.name.startswith("gatecheck.load.")]
        else:
            continue
        found.update(parts[0] for parts in names if parts and parts[0] in PACKAGES)
    return found


@pytest.mark.parametrize("package", PACKAGES)
def test_imports_follow_the_flow_of_data(package):
    wrong = {}
    for path in sorted((LOAD / package).rglob("*.py")):
        others = _imported_packages(path) - {package} - ALLOWED[package]
        if others:
            wrong[_name(path)] = sorted(others)
    assert not wrong


def test_every_package_names_its_api_and_its_rules():
    import importlib

    for package in PACKAGES:
        module = importlib.import_module(f"gatecheck.load.{package}")
        assert "Rules of this package" in (module.__doc__ or ""), package
        assert module.__all__ and all(hasattr(module, name) for name in module.__all__), package


def test_no_dates_no_tracker_numbers_and_no_experiments_in_the_package():
    dated = re.compile(r"20[0-9]{2}-[0-9]{2}-[0-9]{2}|issue [0-9]+")
    found = [
        f"{_name(path)}:{number}"
        for path in sorted(LOAD.rglob("*"))
        if path.is_file() and path.suffix in (".py", ".md", ".toml")
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1)
        if dated.search(line)
    ]
    assert not found
    assert not (LOAD / "experiments").exists()
