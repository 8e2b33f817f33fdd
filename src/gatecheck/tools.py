"""gatecheck's cache of tools that are not Python packages (oha, h2spec), and the one lock around building them.

    with build_lock(say):          # fcntl lock on <cache>/build.lock; waits (saying so) while another run builds
        ...

``find_or_build(name, find, build, say)`` is the pattern both tools follow: use what is there; otherwise take
the lock, look again (another run may have built it while this one waited), and build only if still missing.
Two concurrent runs sharing a cache: one builds, the other waits and then reuses its build.
"""

from __future__ import annotations

import fcntl
import os
import sys
from contextlib import contextmanager
from pathlib import Path
from typing import Callable, Iterator, Optional

__all__ = ["cache_dir", "build_lock", "find_or_build", "say_stderr"]


def cache_dir() -> Path:
    """gatecheck's cache directory: ``$GATECHECK_CACHE`` or ``~/.cache/gatecheck``."""
    env = os.environ.get("GATECHECK_CACHE")
    return Path(env).expanduser() if env else Path.home() / ".cache" / "gatecheck"


def say_stderr(line: str) -> None:
    print(line, file=sys.stderr, flush=True)


@contextmanager
def build_lock(say: Callable[[str], None] = say_stderr, what: str = "a tool") -> Iterator[Path]:
    """Hold the cache's build lock (an exclusive ``flock`` on ``<cache>/build.lock``, released when the
    process exits however it exits); while another process holds it, say so once and wait."""
    cache = cache_dir()
    cache.mkdir(parents=True, exist_ok=True)
    path = cache / "build.lock"
    with open(path, "a+") as handle:
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            say(f"waiting for another gatecheck run that holds {path} (it is building {what} or another tool)")
            fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield cache
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def find_or_build(
    name: str, find: Callable[[], Optional[Path]], build: Callable[[], Path], say: Callable[[str], None] = say_stderr
) -> Path:
    """``find()`` if it finds the tool; else, under the build lock, ``find()`` again, then ``build()``."""
    found = find()
    if found is not None:
        return found
    with build_lock(say, name):
        found = find()
        if found is not None:
            say(f"{name}: another gatecheck run built it meanwhile: {found}")
            return found
        return build()
