"""CPU lists as users type them (``0-3,6``) and as reports print them.

Rules of this module: pure functions of text and numbers; ``parse_cpu_list`` rejects anything else than
numbers and ranges, quoting the text; ``format_cpu_list`` is its inverse on sorted, distinct CPUs.
"""

from __future__ import annotations

from typing import Sequence

__all__ = ["parse_cpu_list", "format_cpu_list"]


def parse_cpu_list(text: str) -> tuple[int, ...]:
    """Parse ``0-3,6`` into (0, 1, 2, 3, 6); raise ValueError quoting bad input."""
    cpus: set[int] = set()
    try:
        for part in text.split(","):
            part = part.strip()
            if "-" in part:
                lo, hi = (int(x) for x in part.split("-", 1))
                if lo > hi or lo < 0:
                    raise ValueError
                cpus.update(range(lo, hi + 1))
            else:
                number = int(part)
                if number < 0:
                    raise ValueError
                cpus.add(number)
    except ValueError:
        raise ValueError(f"invalid CPU list: {text!r} (expected e.g. '0', '0-3' or '0,2-3')") from None
    return tuple(sorted(cpus))


def format_cpu_list(cpus: Sequence[int] | None) -> str:
    """(0, 1, 2, 5) -> '0-2,5'."""
    if not cpus:
        return "-"
    ordered = sorted(set(cpus))
    runs: list[str] = []
    start = prev = ordered[0]
    for cpu in ordered[1:] + [None]:  # type: ignore[operator]
        if cpu is not None and cpu == prev + 1:
            prev = cpu
            continue
        runs.append(str(start) if start == prev else f"{start}-{prev}")
        if cpu is not None:
            start = prev = cpu
    return ",".join(runs)
