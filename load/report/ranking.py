"""Rank agreement between two orderings of the same rows: average ranks, Spearman's rho, inversions.

Rules of this module:
- Pure functions of numbers; rank 1 is the highest value (the fastest row), as a reader of a benchmark
  table ranks it.
- Ties share the average of the ranks they span (1, 2.5, 2.5, 4), and Spearman's rho is the Pearson
  correlation of those ranks, which is exact with ties (the 1 - 6Σd²/(n(n²-1)) shortcut is not).
- An inversion is a pair of rows that the two orderings put the other way round; a pair tied on either
  side is not an inversion.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Sequence

__all__ = ["average_ranks", "spearman", "Inversion", "inversions"]


def average_ranks(values: Sequence[float]) -> list[float]:
    """Rank of each value, 1 for the highest; tied values share the average of their ranks."""
    order = sorted(range(len(values)), key=lambda i: -values[i])
    ranks = [0.0] * len(values)
    start = 0
    while start < len(order):
        end = start
        while end + 1 < len(order) and values[order[end + 1]] == values[order[start]]:
            end += 1
        shared = (start + end) / 2 + 1  # positions start..end hold ranks start+1..end+1
        for position in range(start, end + 1):
            ranks[order[position]] = shared
        start = end + 1
    return ranks


def spearman(a: Sequence[float], b: Sequence[float]) -> float | None:
    """Spearman's rho of two equally long value lists; None under 2 values or when one side is all ties."""
    if len(a) != len(b):
        raise ValueError(f"spearman needs lists of one length, got {len(a)} and {len(b)}")
    if len(a) < 2:
        return None
    ra, rb = average_ranks(a), average_ranks(b)
    mean = (len(a) + 1) / 2  # the mean of average ranks is always (n + 1) / 2
    cov = sum((x - mean) * (y - mean) for x, y in zip(ra, rb))
    var_a = sum((x - mean) ** 2 for x in ra)
    var_b = sum((y - mean) ** 2 for y in rb)
    if not var_a or not var_b:
        return None
    return cov / math.sqrt(var_a * var_b)


@dataclass(frozen=True)
class Inversion:
    """Rows ``first`` and ``second`` (indices, ``first`` ahead in the reference order) that the other order swaps."""

    first: int
    second: int
    reference_gap: (
        float  # (reference[first] - reference[second]) / reference[second]: how far apart the reference put them
    )
    other_gap: float  # (other[second] - other[first]) / other[first]: how far the other order put them the other way


def inversions(reference: Sequence[float], other: Sequence[float]) -> list[Inversion]:
    """Every pair the two value lists order differently, the reference's faster row first in each pair."""
    found = []
    for i in range(len(reference)):
        for j in range(i + 1, len(reference)):
            if (reference[i] - reference[j]) * (other[i] - other[j]) >= 0:
                continue
            hi, lo = (i, j) if reference[i] > reference[j] else (j, i)
            found.append(
                Inversion(
                    first=hi,
                    second=lo,
                    reference_gap=(reference[hi] - reference[lo]) / reference[lo] if reference[lo] else math.inf,
                    other_gap=(other[lo] - other[hi]) / other[hi] if other[hi] else math.inf,
                )
            )
    return found
