"""The collection hooks of a conformance session (``hooks.py`` imports them, so pytest registers them there).

Each check is parametrized over the targets whose interface it applies to (a target lacking a needed feature
gets it as *unsupported*); a shard leaves out the modules another child claimed; before anything is deselected,
every (check, target) collected is noted for the stale report; then the items are validated, selected, given
their metadata and their candidate deviations, and the tools they need are made sure of.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from gatecheck.conformance.plugin.reports import DEVIATION
from gatecheck.conformance.plugin.resultsfile import NO_TARGET, check_id_of, set_meta
from gatecheck.conformance.plugin.selection import select_items
from gatecheck.conformance.plugin.session import SESSION as _SESSION
from gatecheck.conformance.plugin.session import item_meta
from gatecheck.conformance.plugin.tools import ensure_tools
from gatecheck.conformance.spec.markers import applicable_interfaces, row_of, validate_item

__all__ = [
    "pytest_generate_tests",
    "pytest_ignore_collect",
    "pytest_collection_everything",
    "pytest_collection_modifyitems",
]

_CHECKS_DIR = Path(__file__).resolve().parent.parent / "checks"


def pytest_generate_tests(metafunc):
    if "server" not in metafunc.fixturenames or metafunc.config.stash.get(_SESSION, None) is None:
        return
    wanted = applicable_interfaces(metafunc.definition.iter_markers("interfaces"))
    needed = [f for mark in metafunc.definition.iter_markers("needs") for f in mark.args]
    if not {"h2c", "h2c_upgrade", "tls"} & set(needed) and "http1" not in needed:
        # A check that asks for no HTTP/2 and no TLS speaks HTTP/1.1 on the cleartext listener: an HTTP/2-only
        # listener (granian --http 2) lacks that, as it would lack a declared needs("http1").
        needed.append("http1")
    params = []
    for st in metafunc.config.stash[_SESSION].targets:
        if st.interface not in wanted:
            continue
        if st.capabilities.tls and "tls" not in needed:
            # A tls=on listener speaks only TLS and checks that do not ask for "tls" speak cleartext: they do
            # not apply to it (like a check of another interface), rather than being "not supported".
            continue
        missing = st.capabilities.missing(*needed) if needed else []
        marks = []
        if missing:
            reason = f"not supported: {st.target} lacks {', '.join(missing)}"
            marks = [pytest.mark.gatecheck_unsupported(reason), pytest.mark.skip(reason=reason)]
        params.append(pytest.param(st, id=st.id, marks=marks))
    if not params:
        params = [pytest.param(None, id=NO_TARGET, marks=pytest.mark.gatecheck_not_applicable)]
    metafunc.parametrize("server", params, indirect=True, scope="session")


def pytest_ignore_collect(collection_path, config):
    """A shard leaves out the check modules another child of its target already claimed (``shards.py`` rule 4)."""
    gs = config.stash.get(_SESSION, None)
    if gs is None or gs.claims is None or collection_path.suffix != ".py":
        return None
    try:
        module = collection_path.relative_to(config.rootpath).as_posix()
    except ValueError:
        return None
    return True if gs.claims.taken(module) else None


@pytest.hookimpl(tryfirst=True, specname="pytest_collection_modifyitems")
def pytest_collection_everything(session, config, items):
    """Before anything is deselected (-k, --deselect): every (check, target) collected, for the stale report."""
    gs = config.stash.get(_SESSION, None)
    if gs is None:
        return
    for item in items:
        st = item.callspec.params.get("server") if hasattr(item, "callspec") else None
        gs.collected.add(check_id_of(item), st.target.name if st is not None else None, Path(str(item.path)))


def pytest_collection_modifyitems(session, config, items):
    gs = config.stash.get(_SESSION, None)
    if gs is None:
        if any(_is_check(item) for item in items):
            raise pytest.UsageError(
                "gatecheck's checks need a target: add --server TARGET (e.g. --server "
                "granian:asgi) or --server-cmd; `gatecheck servers list` shows the targets"
            )
        return
    errors = [msg for item in items if (msg := validate_item(item))]
    if errors:
        raise pytest.UsageError("malformed checks:\n  " + "\n  ".join(errors))
    select_items(config, items, gs.targets)
    keep, dropped = [], []
    for item in items:
        if item.get_closest_marker("gatecheck_not_applicable"):
            dropped.append(item)
            continue
        keep.append(item)
        st = item.callspec.params.get("server") if hasattr(item, "callspec") else None
        meta = item_meta(item, st, check_id_of(item), row_of(item))
        set_meta(item, meta)
        item.user_properties += [(k, meta[k]) for k in ("check", "target", "clause", "level")]
        if st is not None:  # the version range is decided once the server has started (_deviation)
            candidates = gs.expectations.candidates(meta["check"], st.target.server, meta["target"])
            if candidates:
                item.stash[DEVIATION] = candidates
    if dropped:
        config.hook.pytest_deselected(items=dropped)
    items[:] = keep
    ensure_tools(config, gs.results, keep)


def _is_check(item) -> bool:
    """An item of gatecheck's own checks (the folder of gatecheck.conformance)."""
    return Path(str(getattr(item, "path", ""))).parent == _CHECKS_DIR
