"""Table rows: which measured run stands for each case, and what the runs say about oha's ceiling.

Rules of this module:
- One row per case (and per environment value, e.g. Python version, when a profile asks for it). Its number
  is the best concurrency's (highest 2xx RPS), as in the seed tables; when a concurrency was repeated, the
  run with the median RPS stands for it, and the repeats give the row's coefficient of variation.
- When one case was measured in several sessions, the latest session wins, so rerunning a profile into the
  same directory updates the report.
- Pure functions of the records: no files, no clock.
"""

from __future__ import annotations

import statistics
from collections import OrderedDict
from dataclasses import dataclass
from typing import Any, Iterable, Mapping, Sequence

__all__ = ["Row", "select_rows", "oha_ceiling", "env_value", "version_key", "latest_per_key"]


@dataclass(frozen=True)
class Row:
    """One table row: a case at its best concurrency."""

    key: tuple
    profile: str
    group: str
    label: str
    cells: tuple[str, ...]
    env_values: tuple[str, ...]
    target: str
    route: str
    record: Mapping[str, Any]  # the chosen run
    by_concurrency: Mapping[int, float]  # concurrency -> RPS (median over repeats)
    repeats: int
    samples: tuple[float, ...] = ()  # RPS of every repeat at the chosen concurrency
    speeds: tuple[float, ...] = ()  # the host's probe (ms, ``results.host_speed``) before each of them, if all had one

    @property
    def cv(self) -> float | None:
        """Coefficient of variation of RPS over the repeats (sample std dev / mean); None under 2 repeats."""
        if len(self.samples) < 2 or not statistics.mean(self.samples):
            return None
        return statistics.stdev(self.samples) / statistics.mean(self.samples)

    @property
    def host_cv(self) -> float | None:
        """The CV of the host's probe over the same repeats (``results.host_speed``): how much the machine's own
        speed for a fixed piece of work moved between them. None without a probe per repeat."""
        if len(self.speeds) != len(self.samples) or len(self.speeds) < 2 or not statistics.mean(self.speeds):
            return None
        return statistics.stdev(self.speeds) / statistics.mean(self.speeds)

    @property
    def concurrency(self) -> int:
        return int(self.record["concurrency"])


def env_value(record: Mapping[str, Any], name: str) -> str:
    versions = record.get("versions", {})
    if name == "python":  # 3.11.7 -> 3.11, as the seed tables print it
        return ".".join(str(versions.get("python", "?")).split(".")[:2])
    return str(versions.get(name) or record.get("environment", {}).get(name, "?"))


def _row_key(record: Mapping[str, Any], env_columns: Sequence[str]) -> tuple:
    return (
        record.get("profile"),
        tuple(env_value(record, c) for c in env_columns),
        record.get("group", ""),
        record.get("case"),
        record.get("target"),
    )


def latest_per_key(records: Iterable[Mapping[str, Any]], env_columns: Sequence[str]) -> "OrderedDict[tuple, list]":
    """Records per row key, keeping only each key's latest session (sessions sort by their UTC stamp)."""
    by_key: "OrderedDict[tuple, list]" = OrderedDict()
    for record in records:
        by_key.setdefault(_row_key(record, env_columns), []).append(record)
    for key, items in by_key.items():
        last = max(str(r.get("session", "")) for r in items)
        by_key[key] = [r for r in items if str(r.get("session", "")) == last]
    return by_key


def select_rows(records: Sequence[Mapping[str, Any]], env_columns: Sequence[str] = ()) -> list[Row]:
    """The table rows of ``records`` (kind "run" only), in the order cases first appear."""
    rows = []
    for key, items in latest_per_key([r for r in records if r.get("kind") == "run"], env_columns).items():
        per_conc: dict[int, list] = {}
        for record in items:
            per_conc.setdefault(int(record["concurrency"]), []).append(record)
        chosen: dict[int, Mapping[str, Any]] = {}
        for conc, runs in per_conc.items():
            ordered = sorted(runs, key=lambda r: r["rps"])
            chosen[conc] = ordered[(len(ordered) - 1) // 2]  # the median run (lower median when even)
        best = max(chosen.values(), key=lambda r: r["rps"])
        first = items[0]
        rows.append(
            Row(
                key=key,
                profile=str(first.get("profile")),
                group=str(first.get("group", "")),
                label=str(first.get("case")),
                cells=tuple(first.get("cells") or ()),
                env_values=key[1],
                target=str(first.get("target")),
                route=str(first.get("route")),
                record=best,
                by_concurrency={c: float(r["rps"]) for c, r in sorted(chosen.items())},
                repeats=max(len(v) for v in per_conc.values()),
                samples=tuple(float(r["rps"]) for r in per_conc[int(best["concurrency"])]),
                speeds=_speeds(per_conc[int(best["concurrency"])]),
            )
        )
    return rows


def version_key(text: str) -> tuple:
    """'3.9' < '3.10' < '3.13'; anything not a version sorts as text after the versions."""
    try:
        return (0,) + tuple(int(x) for x in text.split("."))
    except ValueError:
        return (1, text)


def oha_ceiling(rows: Sequence[Row]) -> tuple[Row, float, int] | None:
    """(fastest row, 2xx responses per oha CPU-second in it, oha's CPU count): oha's throughput if it had its
    CPUs to itself, extrapolated from its own CPU time (exact, from rusage) in the fastest run."""
    timed = [r for r in rows if r.record.get("oha", {}).get("cpu_seconds")]
    if not timed:
        return None
    fastest = max(timed, key=lambda r: r.record["rps"])
    oha = fastest.record["oha"]
    cpus = len(oha.get("cpus") or []) or int(fastest.record.get("environment", {}).get("cpus_available", 1))
    return fastest, fastest.record["ok"] / oha["cpu_seconds"], cpus


def _speeds(runs: Sequence[Mapping[str, Any]]) -> tuple:
    """Each run's host probe (ms), or () unless every run has one."""
    speeds = [r.get("host_speed", {}).get("probe_ms") for r in runs]
    return tuple(float(v) for v in speeds) if speeds and all(v for v in speeds) else ()
