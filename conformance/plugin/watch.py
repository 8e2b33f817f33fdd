"""The plugin's fixtures around each check: ``server`` hands out the check's target from the pool, and
``_server_watch`` restarts a dead server before a check and charges a server that dies during one to it.
"""
from __future__ import annotations

import time

import pytest

from gatecheck.conformance.plugin.pool import StartFailed
from gatecheck.conformance.plugin.reports import LOG
from gatecheck.conformance.plugin.resultsfile import meta_of
from gatecheck.conformance.plugin.session import SESSION as _SESSION

__all__ = ["server", "_server_watch", "death"]

_EXIT_GRACE = 0.05  # seconds: waited only when a call failed and its server still runs
_BEGAN = pytest.StashKey[float]()  # time.time() when the check began (its server checked alive just before)


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
    a server that dies during a check makes that check an error, and is restarted for the next ones."""
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
    request.node.stash[_BEGAN] = time.time()
    yield
    started.last_check = (meta_of(request.node) or {}).get("check", request.node.name)
    if pool.stopping:
        return
    died = death(request.node, pool)
    if died is not None or not started.alive():
        pool.get(started.session_target)  # restart now; a failure is reported by the next check of this target
    if died:
        pytest.fail(died, pytrace=False)


def death(item, pool, failed: bool = False) -> str | None:
    """Once per check: the message when the check's server process exited while the check ran. After a failed
    call the process gets _EXIT_GRACE to finish exiting (a server dying under a check closes its sockets first)."""
    watched = item.stash.get(LOG, None)
    if watched is None or pool.stopping:
        return None
    started, handle, offset = watched
    if started.handle is not handle or not handle.exited_within(_EXIT_GRACE if failed else 0):
        return None
    item.stash[LOG] = (started, None, offset)  # reported: the call's report or the teardown's, not both
    gone_at = handle.process.tree.leader_gone_at
    log = "\n".join(started.log_text().splitlines()[-30:])  # the lines before its exit, this check's or not
    code = started.stop()
    if gone_at is not None and gone_at < item.stash.get(_BEGAN, gone_at):
        return (f"the server process had exited before this check began (exit code {code}), during or after "
                f"the check before it ({started.last_check or 'none'}); this check could not run; its log ends:\n{log}")
    return f"the server process exited during this check (exit code {code}); its log ends:\n{log}"
