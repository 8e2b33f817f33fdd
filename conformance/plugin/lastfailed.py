"""pytest's last-failed cache (``--lf``) across a ``--jobs`` run.

Each child session gets a cache directory of its own in the run's scratch directory, holding a copy of the
run's ``lastfailed`` (:func:`child_cache`): children that wrote one shared file at once would lose each other's
failures. At the end the parent folds what each child's copy became into the run's cache (:func:`merge`): a
node id a child dropped (it ran and passed there) goes, one a child added (it failed there) comes, the rest
stay. ``gatecheck conformance`` keeps the cache in gatecheck's cache directory, one per working directory
(``cli.conformance_args``); a session run with ``-p no:cacheprovider`` has none, and nothing here acts.
"""

from __future__ import annotations

import json
from pathlib import Path

__all__ = ["cache_root", "seed", "child_cache", "merge", "KEY"]

KEY = Path("v") / "cache" / "lastfailed"  # where pytest's cache keeps "cache/lastfailed"


def cache_root(config) -> Path | None:
    """The session's pytest cache directory, or None without pytest's cache plugin."""
    if not config.pluginmanager.has_plugin("cacheprovider"):
        return None
    return config.rootpath / config.getini("cache_dir")


def _read(path: Path) -> dict:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def _original(config, root: Path) -> dict:
    """The run's ``lastfailed`` as its sessions start (none with ``--cache-clear``)."""
    return {} if getattr(config.option, "cacheclear", False) else _read(root / KEY)


def seed(config) -> dict | None:
    """The run's ``lastfailed`` as its children start from it, or None without pytest's cache plugin."""
    root = cache_root(config)
    return None if root is None else _original(config, root)


def child_cache(lastfailed: dict | None, directory: Path) -> list:
    """A child's cache in ``directory``, seeded with the run's ``lastfailed`` (:func:`seed`): the options that
    give it (none without pytest's cache plugin)."""
    if lastfailed is None:
        return []
    if lastfailed:
        (directory / KEY).parent.mkdir(parents=True, exist_ok=True)
        (directory / KEY).write_text(json.dumps(lastfailed), encoding="utf-8")
    return ["-o", f"cache_dir={directory}"]


def merge(config, directories: list) -> None:
    """Fold each child's ``lastfailed`` into the run's (see the module text); a cache that cannot be written
    is left as it was."""
    root = cache_root(config)
    if root is None:
        return
    original = _original(config, root)
    merged = dict(original)
    for directory in directories:
        path = Path(directory) / KEY
        final = _read(path) if path.exists() else original
        for nodeid in set(original) - set(final):
            merged.pop(nodeid, None)
        merged.update({nodeid: True for nodeid in set(final) - set(original)})
    if merged == original and (root / KEY).exists():
        return
    try:
        (root / KEY).parent.mkdir(parents=True, exist_ok=True)
        (root / KEY).write_text(json.dumps(merged, indent=2, sort_keys=True), encoding="utf-8")
    except OSError:
        pass
