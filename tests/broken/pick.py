"""A pytest plugin for conformance runs against broken targets: run only the (check, target) pairs asked for.

    GATECHECK_PICK=/path/to/pick.json python -m pytest -p tests.broken.pick conformance/... --server ...

``pick.json`` maps a target's ``name`` option to the check ids (``file.py::test[params]``, as in the results
file) to run on it; every other item is deselected before any server starts, so a broken target runs only
the checks it is meant to break (and the control only the checks of its rows). A target's server is
stopped as soon as its last check ran, so a batch of many targets never holds them all at once.

It also registers the hypothesis profile ``gatecheck-can-fail`` (pass ``--hypothesis-profile
gatecheck-can-fail``): the suite's default budget without the shrink phase, because a property check that
fails on a broken target needs to fail, not to find the smallest counterexample.
"""

from __future__ import annotations

import json
import os
from collections import Counter

import pytest

from gatecheck.conformance.spec.results import check_id_of

ENV = "GATECHECK_PICK"
PROFILE = "gatecheck-can-fail"

try:
    from hypothesis import HealthCheck, Phase, settings
except ImportError:  # pragma: no cover - hypothesis is a declared test dependency
    settings = None
if settings is not None:
    settings.register_profile(
        PROFILE,
        max_examples=12,
        derandomize=True,
        deadline=None,
        database=None,
        phases=[Phase.explicit, Phase.reuse, Phase.generate],
        suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
    )


_LEFT = pytest.StashKey[Counter]()


def _target_of(item):
    callspec = getattr(item, "callspec", None)
    return callspec.params.get("server") if callspec else None


@pytest.hookimpl(trylast=True)
def pytest_collection_modifyitems(session, config, items):
    path = os.environ.get(ENV)
    if not path:
        return
    with open(path, encoding="utf-8") as fh:
        wanted = {name: set(checks) for name, checks in json.load(fh).items()}
    keep, dropped = [], []
    for item in items:
        target = _target_of(item)
        name = target.target.option("name") if target is not None else None
        (keep if check_id_of(item) in wanted.get(name, ()) else dropped).append(item)
    if dropped:
        config.hook.pytest_deselected(items=dropped)
    items[:] = keep
    config.stash[_LEFT] = Counter(_target_of(item).target for item in keep)


@pytest.hookimpl(trylast=True)
def pytest_runtest_teardown(item, nextitem):
    """After a target's last check (and its fixtures' teardown), stop that target's server."""
    left = item.config.stash.get(_LEFT, None)
    target = _target_of(item)
    if left is None or target is None:
        return
    left[target.target] -= 1
    from gatecheck.conformance.plugin.hooks import server_pool

    pool = server_pool(item.config)
    if left[target.target] <= 0 and pool is not None:
        pool.release(target.target)
