"""Which CPUs the server and the load generator run on.

Rules of this module:
- Server and oha get disjoint CPU sets whenever at least two CPUs are available: the server takes the
  first half (rounded up), oha the rest. On one CPU nothing is pinned and the results say so.
- The split is a pure function of the CPU list, so it is tested without touching the machine;
  ``available_cpus`` (from ``servers``, which pins servers by it too) is the only call that asks the kernel.
- CPU lists are typed and printed as ``0-3,6`` (``load.plan.cpulist``).
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Sequence

from gatecheck.servers import available_cpus

from ..plan import format_cpu_list

__all__ = ["Pinning", "split_cpus", "available_cpus", "CpuTimes", "cpu_times", "parse_proc_stat", "require_available"]


@dataclass(frozen=True)
class Pinning:
    """CPU sets for the server tree and for oha; ``None`` means not pinned (any CPU)."""

    server: tuple[int, ...] | None
    oha: tuple[int, ...] | None

    def __post_init__(self) -> None:
        if self.server is not None and self.oha is not None and set(self.server) & set(self.oha):
            overlap = sorted(set(self.server) & set(self.oha))
            raise ValueError(f"server and oha CPU sets overlap on {format_cpu_list(overlap)}")
        for cpus in (self.server, self.oha):
            if cpus is not None and not cpus:
                raise ValueError("an empty CPU set; use None for 'not pinned'")

    @property
    def pinned(self) -> bool:
        return self.server is not None and self.oha is not None

    def oha_threads(self) -> int:
        """oha's tokio worker threads: one per CPU it may use."""
        if self.oha is not None:
            return len(self.oha)
        return len(available_cpus())

    def describe(self) -> str:
        if not self.pinned:
            return "not pinned (one CPU available, or --no-pin)"
        return f"server on CPU {format_cpu_list(self.server)}, oha on CPU {format_cpu_list(self.oha)}"

    def to_dict(self) -> dict:
        return {
            "server": list(self.server) if self.server is not None else None,
            "oha": list(self.oha) if self.oha is not None else None,
        }


def split_cpus(cpus: Sequence[int]) -> Pinning:
    """Split ``cpus`` into a server half (rounded up) and an oha half; unpinned with fewer than two."""
    ordered = tuple(sorted(set(cpus)))
    if len(ordered) < 2:
        return Pinning(None, None)
    cut = (len(ordered) + 1) // 2
    return Pinning(ordered[:cut], ordered[cut:])


def require_available(cpus: Sequence[int] | None, option: str, available: Sequence[int] | None = None) -> None:
    """Raise ValueError (one line naming ``option``) when ``cpus`` asks for a CPU this process may not use.

    Checked before anything starts: pinning a child to a missing CPU fails only inside its ``fork``,
    as a traceback far from the option that caused it.
    """
    if not cpus:
        return
    have = sorted(available if available is not None else available_cpus())
    missing = sorted(set(cpus) - set(have))
    if missing:
        raise ValueError(
            f"{option} {format_cpu_list(cpus)}: CPU {format_cpu_list(missing)} is not available here "
            f"(this process may use CPUs {format_cpu_list(have)})"
        )


@dataclass(frozen=True)
class CpuTimes:
    """Seconds some CPUs spent busy (any process, any mode) and stolen by the hypervisor, since boot."""

    busy: float
    steal: float

    def __sub__(self, other: "CpuTimes") -> "CpuTimes":
        return CpuTimes(self.busy - other.busy, self.steal - other.steal)


def parse_proc_stat(text: str, cpus: Sequence[int], ticks_per_second: int) -> CpuTimes | None:
    """Busy and steal time of ``cpus`` from the text of ``/proc/stat`` (``cpuN user nice system idle
    iowait irq softirq steal ...``, in clock ticks); None when a CPU is missing. Busy is
    user + nice + system + irq + softirq (guest time is already inside user)."""
    wanted = {f"cpu{c}" for c in cpus}
    busy = steal = 0
    found = set()
    for line in text.splitlines():
        fields = line.split()
        if not fields or fields[0] not in wanted:
            continue
        try:
            user, nice, system, _idle, _iowait, irq, softirq, stolen = (int(v) for v in fields[1:9])
        except ValueError:
            return None
        busy += user + nice + system + irq + softirq
        steal += stolen
        found.add(fields[0])
    if found != wanted:
        return None
    return CpuTimes(busy / ticks_per_second, steal / ticks_per_second)


def cpu_times(cpus: Sequence[int]) -> CpuTimes | None:
    """Busy and steal seconds of ``cpus`` since boot (Linux ``/proc/stat``; None elsewhere).

    The gate reads it around each run: the server CPUs' busy time minus the server's own CPU time is
    the time *other* processes took on them, which tells a disturbed run from a clean one.
    Resolution is one clock tick (10 ms).
    """
    try:
        with open("/proc/stat", encoding="ascii") as f:
            text = f.read()
        return parse_proc_stat(text, cpus, os.sysconf("SC_CLK_TCK"))
    except (OSError, ValueError):
        return None
