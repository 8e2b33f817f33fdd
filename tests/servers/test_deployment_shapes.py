"""Issue 11, dimension 4: every server's tox env runs the deployment shapes its adapter can start.

The shapes, as a table over the adapters' own capabilities: two worker processes (through the adapter's
``WORKERS_OPTION``) for every interface the env checks, where the server can run several, and an HTTP/2-only
cleartext listener for every interface where the server has an ``h2`` mode. The tox env lists the targets;
this test reads them back.
"""

from __future__ import annotations

import configparser
import shlex
from pathlib import Path

import pytest

from gatecheck.servers import Target, get_adapter

ROOT = Path(__file__).resolve().parents[2]
SERVER_ENVS = ("granian", "uvicorn", "hypercorn", "gunicorn", "daphne", "waitress", "cheroot", "uwsgi")


def env_targets(env: str) -> list:
    tox = configparser.ConfigParser(interpolation=None)
    tox.read(ROOT / "tox.ini")
    words = shlex.split(tox[f"testenv:{env}"]["commands"].replace("\\\n", " "))
    return [Target.parse(words[i + 1]) for i, word in enumerate(words) if word == "--server"]


def shapes(env: str, targets: list) -> list:
    """(what, predicate over a target) for each deployment shape the server has (``targets``: its env's)."""
    adapter = get_adapter(env)
    caps, wanted = adapter.capabilities, []
    if caps.workers and adapter.WORKERS_OPTION:
        option = adapter.WORKERS_OPTION
        for interface in sorted(caps.interfaces & {t.interface for t in targets}):
            wanted.append(
                (f"{interface}?{option}=2", lambda t, i=interface: t.interface == i and t.option(option) == "2")
            )
    if "h2" in caps.http_modes:
        for interface in sorted(caps.interfaces):
            wanted.append(
                (
                    f"{interface}:h2 (cleartext)",
                    lambda t, i=interface: t.interface == i and t.http == "h2" and t.option("tls") != "on",
                )
            )
    return wanted


@pytest.mark.parametrize("env", SERVER_ENVS)
def test_each_server_env_runs_its_deployment_shapes(env):
    targets = env_targets(env)
    assert targets, f"tox -e {env} names no --server target"
    missing = [what for what, matches in shapes(env, targets) if not any(matches(t) for t in targets)]
    assert not missing, f"tox -e {env} lacks the deployment shapes {missing}: add those targets to its commands"
