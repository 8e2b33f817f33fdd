"""The plugin's fixtures around each check: ``server`` hands out the check's target from the pool, and
``_server_watch`` restarts a dead server before a check and charges a server that dies during one to it
(``inflight.py``: the outcome "crashed").
"""

from __future__ import annotations

import pytest

from gatecheck.conformance.plugin import inflight
from gatecheck.conformance.plugin.pool import StartFailed
from gatecheck.conformance.plugin.reports import LOG
from gatecheck.conformance.plugin.resultsfile import meta_of
from gatecheck.conformance.plugin.session import SESSION as _SESSION
from gatecheck.conformance.spec.results import ServerCrashed

__all__ = ["server", "_server_watch"]


def _session(config):
    return config.stash.get(_SESSION, None)


@pytest.fixture(scope="session")
def server(request):
    """This check's target as a ``StartedServer`` (started on first use; ``_server_watch`` restarts it)."""
    st = request.param
    return request.config.stash[_SESSION].pool.get(st)


@pytest.fixture(autouse=True)
def _server_watch(request):
    """Around each check: a dead server is restarted first (an error with the reason when it cannot be);
    a server that dies during a check makes that check "crashed", and is restarted for the next ones."""
    if "server" not in request.fixturenames or _session(request.config) is None:
        yield
        return
    pool = request.config.stash[_SESSION].pool
    started = request.getfixturevalue("server")
    try:
        pool.get(started.session_target)
        pool.check(started.target)
        failure = None
    except StartFailed as exc:
        failure = str(exc)
    if failure is not None:
        pytest.fail(failure, pytrace=False)
    request.node.stash[LOG] = (started, started.handle, started.log_size())
    inflight.begin(request.node, started)
    yield
    started.last_check = (meta_of(request.node) or {}).get("check", request.node.name)
    if pool.stopping:
        return
    crashed = inflight.crash_in_teardown(request.node, pool)
    if crashed is not None or not started.alive():
        pool.get(started.session_target)  # restart now; a failure is reported by the next check of this target
    if crashed:
        request.node.stash[LOG] = (started, None, 0)  # the crash message carries the log
        raise ServerCrashed(crashed)
