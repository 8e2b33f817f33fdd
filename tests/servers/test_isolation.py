"""A server started with ``python=`` sees its own environment and the staged fixture apps, nothing of the
harness's: an installed gatecheck once put site-packages first on the server's PYTHONPATH.

The harness here is a real subprocess whose import root (what holds ``gatecheck``) also holds a shadowing
``click`` (Granian's CLI imports click; the fake one, imported in a server process, leaves a marker file
and fails) and a fake ``granian``
distribution 0.0.1. The server runs under the same interpreter reached through another path (so it is an
"other" python): it must start with its own click, and the results must record its own granian version.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from gatecheck.servers import staging
from gatecheck.servers.tree import TOKEN_ENV
from tests.installed import PKG

HARNESS = textwrap.dedent("""
    import json, sys
    import httpx
    import gatecheck
    from gatecheck.servers import Target, start_server
    target = Target.parse("granian:asgi:h1?python=" + sys.argv[2])
    with start_server(target, app="gatecheck.fixtures.apps.asgi:app", log_dir=sys.argv[3]) as srv:
        answer = httpx.get(srv.url + "/ping", timeout=10)
        print(json.dumps({"status": answer.status_code, "versions": srv.versions}))
""")


def _import_root_with_shadows(tmp_path: Path, marker: Path) -> Path:
    root = tmp_path / "site"
    root.mkdir()
    (root / "gatecheck").symlink_to(PKG)  # the installed package: its layers inside it
    (root / "click").mkdir()
    (root / "click" / "__init__.py").write_text(  # the harness itself may import it: only a server's import counts
        f"import os, sys\nif os.environ.get({TOKEN_ENV!r}):\n    open({str(marker)!r}, 'w').write(repr(sys.argv))\n"
        "raise ImportError('the harness import root leaked into the server')\n"
    )
    dist = root / "granian-0.0.1.dist-info"
    dist.mkdir()
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: granian\nVersion: 0.0.1\n")
    return root


def test_a_server_with_another_python_imports_its_own_packages_not_the_harness_import_root(tmp_path):
    pytest.importorskip("granian")
    from importlib import metadata

    marker = tmp_path / "shadow-imported"
    root = _import_root_with_shadows(tmp_path, marker)
    other = tmp_path / "other" / "python3"
    other.parent.mkdir()
    # The same interpreter and environment reached through another path: an "other" python. A script, not a
    # symlink: a symlink to a venv's python resolves to the base interpreter, which need not have granian.
    other.write_text(f"#!/bin/sh\nexec '{sys.executable}' \"$@\"\n")
    other.chmod(0o755)
    logs = tmp_path / "logs"
    logs.mkdir()
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    env["PYTHONPATH"] = str(root)
    done = subprocess.run(
        [sys.executable, "-c", HARNESS, str(root), str(other), str(logs)],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    logged = "".join(p.read_text(errors="replace") for p in logs.iterdir())
    assert done.returncode == 0, f"{done.stdout}\n{done.stderr[-3000:]}\nserver log:\n{logged[-3000:]}"
    seen = json.loads(done.stdout.strip().splitlines()[-1])
    assert seen["status"] == 200
    assert not marker.exists(), f"click from the harness import root was imported by {marker.read_text()}"
    assert seen["versions"]["granian"] == metadata.version("granian") != "0.0.1"


def test_the_staged_directory_holds_an_empty_gatecheck_package_and_the_fixtures_only():
    root = Path(staging.child_root())
    assert sorted(p.name for p in root.iterdir()) == ["gatecheck"]
    assert sorted(p.name for p in (root / "gatecheck").iterdir()) == ["__init__.py", "fixtures"]
    assert (root / "gatecheck" / "__init__.py").read_text() == ""
    assert (root / "gatecheck" / "fixtures" / "apps" / "asgi.py").is_file()
    assert staging.child_env({"PYTHONPATH": "/elsewhere", "HOME": "/h"}) == {"PYTHONPATH": str(root), "HOME": "/h"}


def test_the_fixture_apps_import_nothing_of_servers_conformance_or_load():
    """They are all a server process gets of gatecheck."""
    code = (
        "import sys, gatecheck.fixtures.apps.asgi, gatecheck.fixtures.apps.wsgi, gatecheck.fixtures.apps.rsgi;"
        "print(sorted(m for m in sys.modules if m.startswith('gatecheck.') and not m.startswith('gatecheck.fixtures')))"
    )
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    env["PYTHONPATH"] = staging.child_root()
    out = subprocess.run(
        [sys.executable, "-c", code], cwd=staging.child_root(), env=env, capture_output=True, text=True, timeout=60
    )
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "[]"
