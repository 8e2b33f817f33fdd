"""Shards: one target's checks split over several ``--jobs`` child sessions, a test module at a time.

Rules of this module:

1. Every child of a single cleartext target (not the TLS group: its few dozen TLS checks are not worth it) gets a
   claims directory of its target (``claims_args``). A child runs a test module only if it claims it first: an
   exclusive create of a file named after it (``O_CREAT | O_EXCL``, atomic). Alone, it claims every module as it
   reaches it. Once collected it writes the modules it would run to ``MODULES`` in that directory: those with a
   check the target supports (a module of unsupported checks only, e.g. the ASGI ones on a WSGI target, is passed
   in no time; listed, it would make the pace of claims look faster than it is, and the target would get no
   shard).
2. Free slots help the target likely to end last. When no child is waiting to start and fewer than ``--jobs``
   run, the parent starts one more child, a shard, for the running target whose children should need the longest
   still (``time_left``: its unclaimed modules at the pace its children claimed the others, shared by the children
   running it; at least ``MIN_LEFT`` modules and ``WORTH`` seconds left; at most ``MAX_SHARDS`` children per
   target): not the one that merely has the most modules left (a target of quick modules ends sooner than one of
   slow ones), and never one that should end before a shard would have started and collected. The shard has
   the same command line, so it collects the same checks and claims modules from the one ordered list as it gets
   free. So a run of one target (``tox -e
   daphne``) fills every slot, and a run of many ends with its last targets shared out instead of each running
   alone while slots idle.
3. A module another shard claimed is passed over without a record: every check runs once, in one child, with
   its module's fixtures (a private server, h2spec's run) set up there only. Each shard runs its own server for
   the target, as every child does, so no check sees another shard's clients; the records are merged by
   (check, target) as any children's are (``merge.py``).
4. A shard does not collect the modules other children claimed before it started (``pytest_ignore_collect``):
   it would pass over their checks anyway, and importing and collecting them cost it a second or two of CPU.
   The first child of a target finds nothing claimed, so its collection is a serial run's, and the run's
   collection (the union over its children, for the stale report) is complete.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

__all__ = [
    "MAX_SHARDS",
    "MIN_LEFT",
    "MODULES",
    "SHARD_OPTION",
    "WORTH",
    "Claims",
    "claims_args",
    "modules_left",
    "progress",
    "time_left",
]

MAX_SHARDS = 8  # children per target: beyond this a shard's start-up outweighs what it takes over
MIN_LEFT = 3  # unclaimed modules a target needs before another shard joins it
WORTH = 10.0  # seconds a target should still need before another shard joins it: a shard's start-up
# and collection take 1.2 s of CPU, about 5 s on a busy 2-core machine (rule 2)
MODULES = "modules.json"  # in a claims directory: the modules its children would run
SHARD_OPTION = "--gatecheck-shard"


def claims_args(groups: list, scratch: Path) -> list:
    """``groups`` ((targets, args) per child) with ``--gatecheck-shard <claims directory>`` added to each group of
    one cleartext target (rule 1)."""
    out = []
    for i, (members, args) in enumerate(groups):
        if len(members) == 1 and not members[0].capabilities.tls:
            claims = scratch / f"claims-{i}"
            claims.mkdir(parents=True, exist_ok=True)
            args = [*args, SHARD_OPTION, str(claims)]
        out.append((members, args))
    return out


def modules_left(directory: str | Path) -> int:
    """How many of the modules listed in a claims directory no child has claimed yet (0 before the list is
    written)."""
    return progress(directory)[1]


def progress(directory: str | Path) -> tuple:
    """(modules listed, modules no child has claimed yet) in a claims directory; (0, 0) before the list is
    written."""
    directory = Path(directory)
    try:
        modules = json.loads((directory / MODULES).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return 0, 0
    return len(modules), sum(1 for module in modules if not (directory / _file_name(module)).exists())


def time_left(listed: int, left: int, elapsed: float, children: int) -> float:
    """Seconds a target's running children should still need, from how fast they claimed its modules so far
    (rule 2): ``left`` modules at the pace of the ``listed - left`` claimed in ``elapsed`` s, shared by
    ``children``. Infinite before any is claimed, 0 when none is left."""
    done = listed - left
    if left <= 0:
        return 0.0
    if done <= 0 or children <= 0:
        return float("inf")
    return left * elapsed / done / children


def _file_name(module: str) -> str:
    return module.replace("/", "%")


class Claims:
    """One child's view of its target's claims directory (rule 1): which modules it runs."""

    def __init__(self, directory: str | Path) -> None:
        self.directory = Path(directory)
        self._mine: dict = {}
        self.listed = False

    def list_modules(self, modules: list) -> None:
        """Write the modules this child would run (its collection's, in order) for the parent (rule 2), unless a
        child listed them already: the first child's list is the target's whole (a shard collects less, rule 4)."""
        if not (self.directory / MODULES).exists():
            tmp = self.directory / f".{MODULES}.{os.getpid()}"
            tmp.write_text(json.dumps(modules), encoding="utf-8")
            os.replace(tmp, self.directory / MODULES)
        self.listed = True

    def taken(self, module: str) -> bool:
        """Whether another child has already claimed ``module``: a shard that starts late leaves it out of its
        collection (rule 4)."""
        return not self._mine.get(module, False) and (self.directory / _file_name(module)).exists()

    def mine(self, module: str) -> bool:
        """Whether this child runs ``module`` (a check file's node id, e.g. ``conformance/checks/test_x.py``): claimed
        now if no child has it yet."""
        if module not in self._mine:
            try:
                os.close(os.open(self.directory / _file_name(module), os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o644))
                self._mine[module] = True
            except FileExistsError:
                self._mine[module] = False
        return self._mine[module]
