"""Finding adapters: the built-in ones, plus any registered under the ``gatecheck.adapters`` entry point.

A third party ships an adapter by declaring, in its own package::

    [project.entry-points."gatecheck.adapters"]
    myserver = "myserver_gatecheck:MyServerAdapter"

The entry point must load an ``Adapter`` subclass whose ``name`` equals the entry point's name.
"""

from __future__ import annotations

import sys
from functools import lru_cache

from .adapters import BUILTIN, Adapter
from .errors import UnknownServer

__all__ = ["get_adapter", "adapters", "ENTRY_POINT_GROUP"]

ENTRY_POINT_GROUP = "gatecheck.adapters"


def _entry_points():
    from importlib import metadata

    eps = metadata.entry_points()
    if hasattr(eps, "select"):
        return list(eps.select(group=ENTRY_POINT_GROUP))
    return list(eps.get(ENTRY_POINT_GROUP, []))  # Python 3.9


@lru_cache(maxsize=None)
def adapters() -> dict:
    """Name → adapter instance, built-ins first; an entry point may not shadow a built-in."""
    found = {cls.name: cls() for cls in BUILTIN}
    for ep in _entry_points():
        if ep.name in found:
            print(f"gatecheck: ignoring entry point {ep.value!r}: {ep.name!r} is a built-in adapter", file=sys.stderr)
            continue
        try:
            cls = ep.load()
        except Exception as exc:  # a broken plugin must not break the harness
            print(f"gatecheck: could not load adapter {ep.name!r} ({ep.value}): {exc}", file=sys.stderr)
            continue
        if not (isinstance(cls, type) and issubclass(cls, Adapter)) or cls.name != ep.name:
            print(f"gatecheck: entry point {ep.name!r} is not an Adapter subclass named {ep.name!r}", file=sys.stderr)
            continue
        found[ep.name] = cls()
    return found


def get_adapter(name: str) -> Adapter:
    try:
        return adapters()[name]
    except KeyError:
        raise UnknownServer(f"unknown server {name!r}; known servers: {', '.join(adapters())}") from None
