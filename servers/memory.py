"""The memory bound every started server runs under: its whole process tree's resident memory (RSS), watched.

A server that grows without limit (a request it buffers forever, a leak per connection) would otherwise take the
machine with it: minutes of swapping before the kernel's OOM killer picks a process, perhaps not the server's.
So each ``ServerProcess`` has a watcher thread that sums the RSS of every process of its tree (``tree.py``) every
``INTERVAL`` s; past the bound it writes one line to the server's log (the RSS, the bound, the largest process)
and SIGKILLs the tree. The check whose request was in flight then sees its server die, with that line in the log
excerpt it reports: the line names the check that drove the server there.

Why RSS and not ``RLIMIT_AS``: address space is not memory. Runtimes reserve far more than they touch (a Rust
runtime's thread stacks, glibc's per-thread malloc arenas of 64 MiB, a JIT's code cache), so an address-space
limit that lets every healthy server start is too loose to stop a runaway one in time, and one tight enough
breaks healthy servers at random. The tree's RSS is what the machine actually loses.

The bound: ``DEFAULT_BOUND`` (4 GiB), a target's ``memory=SIZE`` option, or whoever starts the server
(``start_server(memory=...)``; the conformance plugin's ``--server-memory``). SIZE is bytes with an optional
K, M, G or T (binary: 1G = 1024 MiB) suffix, or ``off``.
"""

from __future__ import annotations

import re
import threading

__all__ = ["DEFAULT_BOUND", "INTERVAL", "parse_size", "describe", "MemoryWatch"]

DEFAULT_BOUND = 4 << 30
INTERVAL = 0.25  # seconds between two sums of the tree's RSS
_SIZE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([kmgt]?)(?:i?b)?\s*$", re.IGNORECASE)
_UNITS = {"": 1, "k": 1 << 10, "m": 1 << 20, "g": 1 << 30, "t": 1 << 40}
_FLOOR = 16 << 20  # below this no interpreter starts: a typo, not a bound


def parse_size(text: str | int | None) -> int | None:
    """Bytes for ``4G``, ``512M``, ``1.5g``, ``2147483648``; None for ``off``. A ValueError says what is wanted."""
    if isinstance(text, int):
        value = text
    elif str(text).strip().lower() in ("off", "none", "unbounded"):
        return None
    else:
        match = _SIZE.match(str(text))
        if not match:
            raise ValueError(f"memory bound {text!r}: give a size such as 4G, 512M or 2147483648 bytes, or off")
        value = int(float(match.group(1)) * _UNITS[match.group(2).lower()])
    if value < _FLOOR:
        raise ValueError(
            f"memory bound {text!r} is below {describe(_FLOOR)}: no server starts in that; "
            f"give a size such as 4G, or off"
        )
    return value


def describe(size: int) -> str:
    for unit, scale in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if size >= scale:
            return f"{size / scale:.1f} {unit}"
    return f"{size} B"


class MemoryWatch:
    """Sums ``proc``'s tree RSS every ``interval`` s; past ``bound`` calls ``on_exceeded(message)`` once."""

    def __init__(self, proc, bound: int, on_exceeded, interval: float = INTERVAL) -> None:
        self.bound = bound
        self.exceeded: str | None = None
        self.latest = 0  # the tree's resident bytes at the last sample
        self._proc = proc
        self._on_exceeded = on_exceeded
        self._interval = interval
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name=f"memory-{proc.pid}", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while not self._stop.wait(self._interval):
            total, largest = self._measure()
            self.latest = total
            if total > self.bound:
                pid, rss = largest
                self.exceeded = (
                    f"memory bound: the server's processes held {describe(total)} resident, over its "
                    f"bound of {describe(self.bound)} (largest: pid {pid}, {describe(rss)}); "
                    f"killed (SIGKILL). Raise it with the target's memory= option or --server-memory"
                )
                self._on_exceeded(self.exceeded)
                return

    def _measure(self) -> tuple:
        total, largest = 0, (0, 0)
        for member in self._proc.tree.live():
            try:
                rss = member.memory_info().rss
            except Exception:  # psutil.Error: it ended meanwhile
                continue
            total += rss
            largest = max(largest, (member.pid, rss), key=lambda pair: pair[1])
        return total, largest

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not threading.current_thread():
            self._thread.join(timeout=2)
