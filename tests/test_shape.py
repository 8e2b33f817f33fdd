"""The shape limits of the product code, held in CI (``tox -e lint`` and the harness's tests).

- no module over 400 lines and no function over 60, in every layer (src/gatecheck, servers, fixtures,
  conformance, load);
- the imports flow one way inside conformance/: checks, helpers, the app view, the rule layer and the client
  never import the plugin; the plugin never imports a check or a helper;
- every socket of a check is opened by the client layer (``conformance/client``).
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
LAYERS = ("src/gatecheck", "servers", "fixtures", "conformance", "load")
MAX_MODULE_LINES = 400
MAX_FUNCTION_LINES = 60
PLUGIN = "gatecheck.conformance.plugin"
BELOW_THE_PLUGIN = ("checks", "helpers", "app", "spec", "client", "h2spec")


def _modules() -> list:
    return sorted(p for layer in LAYERS for p in (ROOT / layer).rglob("*.py") if "__pycache__" not in p.parts)


def _imports(path: Path) -> list:
    """Every module ``path`` imports, by absolute name (relative imports resolved against its package)."""
    rel = path.relative_to(ROOT).with_suffix("")
    parts = list(rel.parts[1:] if rel.parts[0] == "src" else ("gatecheck", *rel.parts))
    package = parts[:-1] if parts[-1] != "__init__" else parts[:-1]
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found += [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = package[: len(package) - node.level + 1] if node.level else []
            module = ".".join([*base, *(node.module.split(".") if node.module else [])])
            found += [module] + [f"{module}.{alias.name}" for alias in node.names]
    return found


def test_the_limits_are_measured_over_every_layer():
    assert len(_modules()) > 150


@pytest.mark.parametrize("path", _modules(), ids=lambda p: str(p.relative_to(ROOT)))
def test_no_module_over_400_lines_and_no_function_over_60(path):
    source = path.read_text(encoding="utf-8")
    assert len(source.splitlines()) <= MAX_MODULE_LINES
    long = [
        f"{node.name} ({node.end_lineno - node.lineno + 1} lines)"
        for node in ast.walk(ast.parse(source))
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))
        and node.end_lineno - node.lineno + 1 > MAX_FUNCTION_LINES
    ]
    assert long == []


@pytest.mark.parametrize("folder", BELOW_THE_PLUGIN)
def test_nothing_below_the_plugin_imports_it(folder):
    offenders = {
        str(p.relative_to(ROOT)): m
        for p in (ROOT / "conformance" / folder).rglob("*.py")
        for m in _imports(p)
        if m == PLUGIN or m.startswith(PLUGIN + ".")
    }
    assert offenders == {}


def test_the_plugin_imports_no_check_and_no_helper():
    above = ("gatecheck.conformance.checks", "gatecheck.conformance.helpers")
    offenders = {
        str(p.relative_to(ROOT)): m
        for p in (ROOT / "conformance" / "plugin").rglob("*.py")
        for m in _imports(p)
        if m.startswith(above)
    }
    assert offenders == {}


def test_every_socket_of_the_checks_is_opened_by_the_client():
    """Checks, helpers and the app view open connections through ``conformance.client`` (``connect``), the one
    place where TLS and ALPN are switched on, so a check can run over TLS by one switch."""
    opened = {}
    for folder in ("checks", "helpers", "app", "spec"):
        for path in (ROOT / "conformance" / folder).rglob("*.py"):
            for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
                func = node.func if isinstance(node, ast.Call) else None
                if (
                    isinstance(func, ast.Attribute)
                    and isinstance(func.value, ast.Name)
                    and func.value.id == "socket"
                    and func.attr in ("socket", "create_connection", "socketpair", "fromfd")
                ):
                    opened.setdefault(str(path.relative_to(ROOT)), []).append(node.lineno)
    assert opened == {}
