"""The CPUs a server may be pinned to: this process's affinity mask, and a requested set checked against it."""

from __future__ import annotations

import os
from typing import Sequence

from .errors import TargetError

__all__ = ["available_cpus", "checked_cpus"]


def available_cpus() -> list[int]:
    """The CPUs this process may run on (its affinity mask, which cgroups and taskset narrow)."""
    try:
        return sorted(os.sched_getaffinity(0))
    except AttributeError:  # pragma: no cover - not Linux
        return list(range(os.cpu_count() or 1))


def checked_cpus(cpus: Sequence[int] | None) -> list | None:
    """The CPU set as a sorted list, or a TargetError naming the CPUs this host lets us use."""
    if not cpus:
        return None
    chosen = sorted(set(cpus))
    available = available_cpus()
    missing = [c for c in chosen if c not in available]
    if missing:
        raise TargetError(
            f"cannot pin the server to CPU {', '.join(map(str, missing))}: this process may use "
            f"CPU {', '.join(map(str, available))} only"
        )
    return chosen
