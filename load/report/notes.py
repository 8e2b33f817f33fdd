"""The notes under a report's tables, in this order: errors, generator-bound rows, oha's ceiling, a busy machine,
the run-to-run spread, and the cases skipped or failed (``tables.render`` puts them there). Pure functions of the
rows and records, like the tables."""

from __future__ import annotations

from typing import Any, Mapping, Sequence

from .rows import Row, env_value, latest_per_key, oha_ceiling

__all__ = ["footnotes"]


def _errors(record: Mapping[str, Any]) -> int:
    return sum(record.get("non_2xx", {}).values()) + sum(record.get("errors", {}).values())


def _busy(record: Mapping[str, Any]) -> bool:
    load = record.get("host_load", {}).get("loadavg1")
    return load is not None and load > record.get("environment", {}).get("cpu_count", 1)


def _is_ws(row: Row) -> bool:
    return "ws" in row.record


def footnotes(rows: Sequence[Row], records: Sequence[Mapping[str, Any]]) -> list[str]:
    """Under the tables, in this order: errors, generator-bound rows, oha's ceiling, a busy machine, the
    run-to-run spread, and the cases skipped or failed."""
    return (
        _error_notes(rows)
        + _bound_notes(rows)
        + _ceiling_notes(rows)
        + _busy_notes(rows)
        + _spread_notes(rows)
        + _skip_notes(rows, records)
    )


def _error_notes(rows: Sequence[Row]) -> list[str]:
    flagged = [r for r in rows if _errors(r.record)]
    if not flagged:
        return []
    out = ["⚠ errors or non-2xx responses in the run (not counted in RPS):"]
    for row in flagged:
        rec = row.record
        detail = {**{f"HTTP {k}": v for k, v in rec.get("non_2xx", {}).items()}, **rec.get("errors", {})}
        out.append(f"- {row.label} (c{row.concurrency}): " + ", ".join(f"{k}: {v}" for k, v in sorted(detail.items())))
    return out + [""]


def _bound_notes(rows: Sequence[Row]) -> list[str]:
    bound = [r for r in rows if r.record.get("generator_bound")]
    out: list[str] = []
    if not bound:
        return out
    ws = sum(1 for r in bound if _is_ws(r))
    if ws < len(bound):
        out += [
            f"† generator-bound: oha used ≥90% of its CPUs, so the number is partly oha's ceiling on this machine "
            f"({len(bound) - ws} of {len(rows)} rows).",
            "",
        ]
    if ws:
        out += [
            f"† (WebSocket rows) generator-bound: the broadcast client used ≥90% of its one CPU in the measured "
            f"phase, so the number is partly the client's ceiling on this machine ({ws} of {len(rows)} rows).",
            "",
        ]
    return out


def _ceiling_notes(rows: Sequence[Row]) -> list[str]:
    ceiling = oha_ceiling(rows)
    if not ceiling:
        return []
    fastest, per_cpu, cpus = ceiling
    return [
        f"oha's ceiling here: about {per_cpu * cpus:,.0f} RPS on its {cpus} CPU{'s' if cpus > 1 else ''} "
        f"({per_cpu:,.0f} 2xx responses per oha CPU-second in the fastest row); the fastest row, {fastest.label} "
        f"(c{fastest.concurrency}), reached {fastest.record['rps']:,.0f} RPS, "
        f"{fastest.record['rps'] / (per_cpu * cpus):.0%} of it.",
        "",
    ]


def _busy_notes(rows: Sequence[Row]) -> list[str]:
    busy = [r for r in rows if _busy(r.record)]
    if not busy:
        return []
    return [
        f"‡ the machine was busy when {len(busy)} of {len(rows)} rows were measured (1-minute load average above "
        "its CPU count): other processes competed for the CPUs; rerun on an idle machine for firm numbers.",
        "",
    ]


def _spread_notes(rows: Sequence[Row]) -> list[str]:
    repeated = [r for r in rows if r.cv is not None]
    if not repeated:
        return []
    out = [
        "Run-to-run spread: each number is the median-RPS run of its concurrency; coefficient of variation "
        "of RPS over the repeats (each repeat restarts the server):",
        "",
    ]
    for row in repeated:
        warn = " (unstable: rerun with more repeats, on an idle machine)" if row.cv >= 0.10 else ""
        unit = "combined msg/s" if _is_ws(row) else "RPS"
        out.append(
            f"- {row.label} (c{row.concurrency}): CV {row.cv:.1%} over {len(row.samples)} runs, "
            f"{unit} {min(row.samples):.0f} to {max(row.samples):.0f}{warn}"
        )
    return out + [""]


def _skip_notes(rows: Sequence[Row], records: Sequence[Mapping[str, Any]]) -> list[str]:
    """The latest skip or failure of each case (per Python version) that has no row."""
    others = latest_per_key([r for r in records if r.get("kind") in ("skip", "failure")], ("python",))
    done_labels = {r.label for r in rows}
    done_with_python = {(r.label, env_value(r.record, "python")) for r in rows}
    notes = []
    for _key, items in others.items():
        rec = items[-1]
        with_python = bool(rec.get("versions", {}).get("python"))
        if with_python and (rec.get("case"), env_value(rec, "python")) in done_with_python:
            continue
        if not with_python and rec.get("case") in done_labels:
            continue
        word = "Not run" if rec["kind"] == "skip" else "FAILED"
        where = f"{rec.get('target')}, Python {env_value(rec, 'python')}" if with_python else rec.get("target")
        notes.append(f"- {word}: {rec.get('case')} ({where}): {str(rec.get('reason', '')).splitlines()[0]}")
    return ["Skipped and failed cases:", ""] + notes + [""] if notes else []
