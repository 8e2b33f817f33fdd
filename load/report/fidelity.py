"""Fidelity: how well our load profiles reproduce the seed tables: each seed table beside our rows.

Rules of this module:
- ``compare`` is a pure function of the records and the seed data (``load.report.seedtables``): no files, no
  clock. Its document (``benchmarks/load/fidelity.md``) is ``load.report.fidelity_md``'s business.
- Which run stands for a row is ``load.report.rows``' business: the latest session, the median repeat at the
  concurrency with the highest RPS; ``Row.cv`` is the run-to-run spread at that concurrency.
- A seed row is matched to the profile case it names (and, in tables with a Python column, to the runs on
  that Python version). Seed rows no profile reproduces are listed with their reason; our rows the seed
  lacks are shown as extras, never ranked. Spearman's rho and the inversions cover the rows both have.
- Explanations of inversions are data (``[table.explanations]`` in ``load/seeds/*.toml``), printed beside
  each inversion; an inversion without one says where to add it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping, Sequence

from .ranking import Inversion, inversions, spearman
from .rows import Row, env_value, latest_per_key, select_rows
from .seedtables import SeedDocument, SeedRow, SeedTable

__all__ = ["CV_TARGET", "Line", "Comparison", "compare", "FidelityError", "seed_profiles"]

CV_TARGET = 0.03  # the target: run-to-run CV of RPS at most 3% per row


class FidelityError(ValueError):
    """The results cannot be compared with the seeds (nothing of a seeded profile in them)."""


@dataclass(frozen=True)
class Line:
    """One seed row beside ours: ``ours`` is None when it was not measured (``missing`` says why, if known)."""

    seed: SeedRow
    ours: Row | None = None
    missing: str = ""

    @property
    def compared(self) -> bool:
        return self.ours is not None and not self.seed.reason


@dataclass(frozen=True)
class Comparison:
    """One seed table against the runs of its profile."""

    document: SeedDocument
    table: SeedTable
    lines: tuple[Line, ...]
    extras: tuple[Row, ...]
    runs: tuple[Mapping[str, Any], ...]  # every run behind the table's rows (load average, versions)

    @property
    def compared(self) -> list[Line]:
        return [line for line in self.lines if line.compared]

    @property
    def rho(self) -> float | None:
        both = self.compared
        return spearman([line.seed.rps for line in both], [float(line.ours.record["rps"]) for line in both])

    @property
    def inversions(self) -> list[Inversion]:
        """The pairs the two tables order differently; in a table with a Python column only pairs of one
        version (the rows' order on it) or of one row (its order across versions): a pair that differs in both
        compares two things at once and says nothing of either."""
        both = self.compared
        found = inversions([line.seed.rps for line in both], [float(line.ours.record["rps"]) for line in both])
        if not self.table.env:
            return found
        return [
            inv
            for inv in found
            if both[inv.first].seed.python == both[inv.second].seed.python
            or both[inv.first].seed.label == both[inv.second].seed.label
        ]

    @property
    def rho_by_env(self) -> dict:
        """In a table with a Python column: Spearman's rho over each version's rows (version -> rho)."""
        by: dict = {}
        for line in self.compared:
            by.setdefault(line.seed.python, []).append(line)
        return (
            {
                env: spearman([line.seed.rps for line in lines], [float(line.ours.record["rps"]) for line in lines])
                for env, lines in by.items()
            }
            if self.table.env
            else {}
        )

    @property
    def our_rows(self) -> list[Row]:
        return [line.ours for line in self.lines if line.ours] + list(self.extras)

    @property
    def cvs(self) -> list[float]:
        return [row.cv for row in self.our_rows if row.cv is not None]

    @property
    def host_cvs(self) -> list[float]:
        return [row.host_cv for row in self.our_rows if row.host_cv is not None]

    @property
    def load_range(self) -> tuple[float, float] | None:
        loads = [r["host_load"]["loadavg1"] for r in self.runs if r.get("host_load", {}).get("loadavg1") is not None]
        return (min(loads), max(loads)) if loads else None


def seed_profiles(seeds: Sequence[SeedDocument]) -> list[str]:
    """The profiles some seed table covers, in seed order."""
    names: list[str] = []
    for doc in seeds:
        for table in doc.tables:
            if table.profile not in names:
                names.append(table.profile)
    return names


def _env_columns(seeds: Sequence[SeedDocument], profile: str) -> tuple[str, ...]:
    """Rows of tables with a Python column are kept apart per Python and Granian version, as the profiles do."""
    has_env = any(t.env for d in seeds for t in d.tables if t.profile == profile)
    return ("python", "granian") if has_env else ()


def _match(table: SeedTable, seed: SeedRow, rows: Sequence[Row]) -> Row | None:
    found = [
        r
        for r in rows
        if r.label == seed.case_label
        and r.group == table.group
        and (not table.env or env_value(r.record, "python") == seed.python)
    ]
    return max(found, key=lambda r: str(r.record.get("session", ""))) if found else None


def _skip_reasons(records: Sequence[Mapping[str, Any]]) -> dict:
    """(profile, group, case, python) -> why the runner skipped it (latest skip wins)."""
    reasons = {}
    for record in sorted(
        (r for r in records if r.get("kind") in ("skip", "failure")), key=lambda r: str(r.get("session", ""))
    ):
        python = env_value(record, "python") if record.get("versions", {}).get("python") else ""
        reasons[(record.get("profile"), record.get("group", ""), record.get("case"), python)] = str(
            record.get("reason", "")
        )
    return reasons


def _missing(table: SeedTable, seed: SeedRow, skips: Mapping) -> str:
    if seed.reason:
        return ""
    for python in ((seed.python,) if table.env else ("",)) + ("",):
        for (profile, group, case, skip_python), reason in skips.items():
            if (profile, group, case) == (table.profile, table.group, seed.case_label) and (
                not python or skip_python == python
            ):
                return reason
    return ""


def _runs_of(rows: Sequence[Row], by_key: Mapping[tuple, list]) -> tuple:
    return tuple(run for row in rows for run in by_key.get(row.key, []))


def _profile_comparisons(
    profile: str, records: Sequence[Mapping[str, Any]], seeds: Sequence[SeedDocument]
) -> list[Comparison]:
    """The comparisons of one profile's seed tables; rows of groups no seed table covers are the last one's extras."""
    env_columns = _env_columns(seeds, profile)
    runs = [r for r in records if r.get("kind") == "run" and r.get("profile") == profile]
    rows = select_rows(runs, env_columns)
    by_key = latest_per_key(runs, env_columns)
    skips = _skip_reasons([r for r in records if r.get("profile") == profile])
    out, used = [], set()
    pairs = [(doc, table) for doc in seeds for table in doc.tables if table.profile == profile]
    for doc, table in pairs:
        lines = []
        for seed in table.rows:
            ours = None if seed.reason else _match(table, seed, rows)
            lines.append(Line(seed, ours, "" if ours else _missing(table, seed, skips)))
            if ours:
                used.add(ours.key)
        extras = tuple(r for r in rows if r.group == table.group and r.key not in used)
        used.update(r.key for r in extras)
        mine = [line.ours for line in lines if line.ours] + list(extras)
        out.append(Comparison(doc, table, tuple(lines), extras, _runs_of(mine, by_key)))
    leftover = tuple(r for r in rows if r.key not in used)
    if leftover and out:
        last = out[-1]
        out[-1] = Comparison(
            last.document, last.table, last.lines, last.extras + leftover, last.runs + _runs_of(leftover, by_key)
        )
    return [c for c in out if any(line.ours for line in c.lines) or c.extras]


def compare(records: Sequence[Mapping[str, Any]], seeds: Sequence[SeedDocument]) -> list[Comparison]:
    """Every seed table whose profile has runs in ``records``, in seed order."""
    present = {r.get("profile") for r in records if r.get("kind") == "run"}
    out: list[Comparison] = []
    for profile in seed_profiles(seeds):
        if profile in present:
            out += _profile_comparisons(profile, records, seeds)
    return out
