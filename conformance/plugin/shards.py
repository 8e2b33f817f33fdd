"""Shards: one target's checks split over several ``--jobs`` child sessions, a test module at a time.

Rules of this module:

1. Only idle slots are filled. When a run has fewer child sessions than ``--jobs`` (one target, as in
   ``tox -e daphne``), the heaviest groups of one target each (cleartext first, as ``jobs.target_groups``
   orders them; never a TLS target, which runs only its few dozen TLS checks) get more children, the target's shards, round by round until the run has ``--jobs`` children
   (at most ``MAX_SHARDS`` per target). A run with as many groups as slots is not sharded: a shard costs a
   child's start-up and collection and a server of its own.
2. The shards of a target share a claims directory. Each collects every check of the target (so each
   collection, and the stale report judged over them, is a serial run's) and runs a test module only if it
   claims the module first: an exclusive create of a file named after it (``O_CREAT | O_EXCL``, atomic).
   A module another shard claimed is passed over without a record. So every check runs once, in one shard,
   with its module's fixtures (a private server, h2spec's run) set up there only, and the shards take the
   modules from the one ordered list as each gets free: their ends differ by about one module's time.
3. Each shard runs its own server for the target, as every child does, so no check sees another shard's
   clients; their records are merged by (check, target) as any children's are (``merge.py``).
"""
from __future__ import annotations

import os
from pathlib import Path

__all__ = ["MAX_SHARDS", "SHARD_OPTION", "Claims", "with_shards"]

MAX_SHARDS = 8              # per target: beyond this a shard's start-up outweighs what it takes over
SHARD_OPTION = "--gatecheck-shard"


def with_shards(groups: list, jobs: int, scratch: Path) -> list:
    """``groups`` ((targets, args) per child, heaviest first) with shards added for idle slots (rule 1): a
    sharded group becomes one entry per shard, each with ``--gatecheck-shard <its claims directory>``."""
    shardable = [i for i, (members, _) in enumerate(groups) if len(members) == 1 and not members[0].capabilities.tls]
    counts = [1] * len(groups)
    free = jobs - len(groups)
    while free > 0 and any(counts[i] < MAX_SHARDS for i in shardable):
        for i in shardable:
            if free > 0 and counts[i] < MAX_SHARDS:
                counts[i] += 1
                free -= 1
    out = []
    for i, (members, args) in enumerate(groups):
        if counts[i] == 1:
            out.append((members, args))
            continue
        claims = scratch / f"claims-{i}"
        claims.mkdir(parents=True, exist_ok=True)
        out.extend((members, [*args, SHARD_OPTION, str(claims)]) for _ in range(counts[i]))
    return out


class Claims:
    """One shard's view of its target's claims directory (rule 2): which modules it runs."""

    def __init__(self, directory: str | Path) -> None:
        self.directory = Path(directory)
        self._mine: dict = {}

    def mine(self, module: str) -> bool:
        """Whether this shard runs ``module`` (a check file's node id, e.g. ``conformance/test_x.py``): claimed
        now if no shard has it yet."""
        if module not in self._mine:
            path = self.directory / module.replace("/", "%")
            try:
                os.close(os.open(path, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o644))
                self._mine[module] = True
            except FileExistsError:
                self._mine[module] = False
        return self._mine[module]
