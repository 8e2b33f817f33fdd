"""The fidelity document: the comparisons of ``load.report.fidelity`` as Markdown (``benchmarks/load/fidelity.md``).

Rules of this module:
- ``render`` is a pure function of the comparisons and the seeds: no files, no clock, so golden-text tests
  can pin it down. ``write_fidelity`` is the only function that touches files.
- Explanations of inversions are data (``[table.explanations]`` in ``load/seeds/*.toml``), printed beside
  each inversion; an inversion without one says where to add it.
- A table's rows must come from one machine (``load.records.check_compatible``); two tables may come from two.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Mapping, Sequence

from ..records import check_compatible, load_records
from .fidelity import CV_TARGET, Comparison, FidelityError, Line, compare, seed_profiles
from .ranking import average_ranks
from .rows import Row
from .seedtables import SeedDocument, load_seeds
from .tables import version_lines

__all__ = ["render", "write_fidelity", "INTRO"]


def _pct(value: float | None) -> str:
    return "-" if value is None else f"{value * 100:.1f}%"


def _cv_cell(row: Row | None) -> str:
    if row is None or row.cv is None:
        return "-"
    text = _pct(row.cv) + (" ⚠" if row.cv > CV_TARGET else "")
    host = row.host_cv
    return text if host is None else f"{text} (host {_pct(host)})"


def _host_range(cvs: Sequence[float]) -> str:
    if not cvs:
        return "-"
    return _pct(cvs[0]) if len(cvs) == 1 else f"{_pct(min(cvs))} to {_pct(max(cvs))}"


def _rho(value: float | None) -> str:
    return "-" if value is None else f"{value:.3f}"


def _load(span: tuple[float, float] | None) -> str:
    if span is None:
        return "-"
    return f"{span[0]:g}" if span[0] == span[1] else f"{span[0]:g} to {span[1]:g}"


def _concurrency_cell(row: Row) -> str:
    """The concurrency that stands for the row; where several ran, which won out of which."""
    if len(row.by_concurrency) < 2:
        return str(row.concurrency)
    return f"**{row.concurrency}** of {'/'.join(str(c) for c in row.by_concurrency)}"


def _title(c: Comparison) -> str:
    return (
        f"{c.table.profile}: {c.table.title}"
        if c.table.title.lower() != c.table.profile.replace("_", " ")
        else c.table.title
    )


def _summary(comparisons: Sequence[Comparison]) -> list[str]:
    out = [
        "| table | rows compared | Spearman | max CV | rows over 3% | host probe CV | load average (1-min) |",
        "| --- | --- | --- | --- | --- | --- | --- |",
    ]
    for c in comparisons:
        cvs, host = c.cvs, c.host_cvs
        over = sum(1 for v in cvs if v > CV_TARGET)
        rho = "no seed order" if not c.table.rows else _rho(c.rho)
        out.append(
            f"| {_title(c)} | {len(c.compared)} | {rho} | {_pct(max(cvs)) if cvs else '-'} | {over} | "
            f"{_host_range(host)} | {_load(c.load_range)} |"
        )
    return out


def _line_cells(
    c: Comparison, line: Line, seed_ranks: Mapping[str, float], our_ranks: Mapping[str, float]
) -> list[str]:
    seed, ours = line.seed, line.ours
    cells = [seed.python] if c.table.env else []
    cells += [seed.label, str(seed.concurrency), f"{seed.rps:,.0f}"]
    if ours is None:
        status = "not reproduced" if seed.reason else "not measured"
        return cells + [status, "-", "-", "-", "-", "-"]
    index = seed.row_id
    cells += [
        f"{float(ours.record['rps']):,.0f}",
        _concurrency_cell(ours),
        str(len(ours.samples) or ours.repeats),
        _cv_cell(ours),
    ]
    ranked = index in seed_ranks
    cells += [f"{seed_ranks[index]:g}" if ranked else "-", f"{our_ranks[index]:g}" if ranked else "-"]
    return cells


def _rows_table(c: Comparison) -> list[str]:
    metric = c.table.metric
    head = (["Python"] if c.table.env else []) + [
        "Row",
        "seed c",
        f"seed {metric}",
        f"our {metric}",
        "our c",
        "repeats",
        "CV",
        "seed rank",
        "our rank",
    ]
    both = c.compared
    ids = [line.seed.row_id for line in both]
    seed_ranks = dict(zip(ids, average_ranks([line.seed.rps for line in both])))
    our_ranks = dict(zip(ids, average_ranks([float(line.ours.record["rps"]) for line in both])))
    out = ["| " + " | ".join(head) + " |", "|" + " --- |" * len(head)]
    for line in c.lines:
        out.append("| " + " | ".join(_line_cells(c, line, seed_ranks, our_ranks)) + " |")
    return out


def _inversion_lines(c: Comparison) -> list[str]:
    both = c.compared
    found = c.inversions
    if not found:
        return [f"Inversions: none over the {len(both)} rows compared."] if both else []
    where = f"`load/seeds/{c.table.document}.toml`, table {c.table.title!r}"
    out = [
        f"Inversions ({len(found)}; seed gap: how much faster the seed's faster row was; ours: how much faster "
        "the other row was here):",
        "",
    ]
    for inv in found:
        hi, lo = both[inv.first].seed.row_id, both[inv.second].seed.row_id
        text = (
            c.table.explanation(hi, lo)
            or f'*unexplained: add `"{hi} | {lo}" = "..."` under `[table.explanations]` in {where}*'
        )
        out.append(
            f"- {hi} above {lo} in the seed (+{_pct(inv.reference_gap)}), below it here "
            f"(+{_pct(inv.other_gap)}){_overlap(both[inv.first].ours, both[inv.second].ours, c.table.metric)}: {text}"
        )
    return out


def _overlap(a: Row | None, b: Row | None, metric: str = "RPS") -> str:
    """When our repeats of the two rows overlap (each row's lowest to highest RPS), the inversion is inside
    our own run-to-run spread: said beside it, with both ranges."""
    if a is None or b is None or len(a.samples) < 2 or len(b.samples) < 2:
        return ""
    if max(a.samples) < min(b.samples) or max(b.samples) < min(a.samples):
        return ""
    span = lambda r: f"{min(r.samples):,.0f}-{max(r.samples):,.0f}"  # noqa: E731
    return f" (our repeats overlap: {span(a)} and {span(b)} {metric})"


def _extras_table(c: Comparison) -> list[str]:
    out = [
        "Extra rows (our profile has them, the seed does not; not ranked):",
        "",
        f"| Row | our {c.table.metric} | our c | repeats | CV |",
        "| --- | --- | --- | --- | --- |",
    ]
    for row in c.extras:
        label = " ".join(v for v in row.env_values[:1] if v) + (" " if row.env_values[:1] else "") + row.label
        if row.group and row.group != c.table.group:
            label = f"{row.group}: {label}"
        out.append(
            f"| {label} | {float(row.record['rps']):,.0f} | {_concurrency_cell(row)} | "
            f"{len(row.samples) or row.repeats} | {_cv_cell(row)} |"
        )
    return out


def _measured(runs: Sequence[Mapping[str, Any]]) -> str:
    """When the runs were measured (their ``started_at``, UTC): "YYYY-MM-DD HH:MM-HH:MM UTC", or both dates."""
    stamps = sorted(str(r["started_at"]) for r in runs if r.get("started_at"))
    if not stamps:
        return ""
    first, last = stamps[0], stamps[-1]
    if first[:10] == last[:10]:
        return f"measured {first[:10]} {first[11:16]}-{last[11:16]} UTC; "
    return f"measured {first[:10]} {first[11:16]} to {last[:10]} {last[11:16]} UTC; "


def _ours_line(c: Comparison) -> str:
    env = c.runs[0].get("environment", {}) if c.runs else {}
    versions = "; ".join(version_lines(c.runs)) if c.runs else "no runs"
    return (
        f"Ours: {_measured(c.runs)}{env.get('cpu_model', '?')} (CPUs: {env.get('cpu_count', '?')}), {versions}; "
        f"load average (1-min) {_load(c.load_range)} over {len(c.runs)} runs."
    )


def _section(c: Comparison) -> list[str]:
    out = [f"## {_title(c)}", "", c.document.source_line()]
    if c.table.note:
        out += ["", f"Seed settings: {c.table.note}"]
    out += ["", _ours_line(c), ""]
    if c.table.reason:
        out += [f"No ranking: {c.table.reason}.", ""]
    if c.table.rows:
        out += _rows_table(c) + [""]
        n = len(c.compared)
        out += [
            f"Spearman's rho: {_rho(c.rho)} (n = {n} rows both tables have; ranks: 1 = fastest, ties averaged).",
            "",
        ]
        if c.rho_by_env:
            out += [
                "Spearman's rho over each Python version's rows: "
                + ", ".join(f"{env} {_rho(rho)}" for env, rho in c.rho_by_env.items())
                + ".",
                "",
            ]
        out += _inversion_lines(c) + [""]
    gone = [line for line in c.lines if line.ours is None]
    if gone:
        out += ["Seed rows without a number here:", ""]
        out += [
            f"- {line.seed.row_id}: "
            + (
                f"not reproduced: {line.seed.reason}"
                if line.seed.reason
                else f"not measured{': ' + line.missing if line.missing else ''}"
            )
            for line in gone
        ]
        out.append("")
    if c.extras:
        out += _extras_table(c) + [""]
    return out


INTRO = (
    "Each table below puts the seed's rows, in the seed's order, beside ours. *our RPS* is the median over the "
    "repeats (2xx responses per second) at the concurrency that won (*our c*: where several were run, the "
    "winner in bold out of those run); *CV* is the sample standard deviation of RPS over its mean across those "
    "repeats (target at most 3%, ⚠ above); *host*, where each run timed a fixed piece of interpreter work on "
    "the server's core just before it (`host_speed`), is the CV of those timings over the same repeats: how "
    "much the machine's own speed moved between them. Ranks: 1 = fastest, ties share their average rank; "
    "Spearman's rho is computed over the rows both tables have. An inversion is a pair of rows the two tables "
    "order the other way round (in a table with a Python column, a pair of one version or of one row across "
    "versions); its explanation comes from `[table.explanations]` in `load/seeds/*.toml`."
)


def render(comparisons: Sequence[Comparison], seeds: Sequence[SeedDocument] = ()) -> str:
    """The fidelity document for ``comparisons``; ``seeds`` lists the seed tables that had no results."""
    out = [
        "# Load fidelity: gatecheck's profiles against Granian's published tables",
        "",
        "Generated by `python -m gatecheck.load fidelity RESULTS_DIR... --out benchmarks/load/fidelity.md`; do not "
        "edit by hand (explanations are data in `load/seeds/*.toml`).",
        "",
        INTRO,
        "",
    ]
    if not comparisons:
        return "\n".join(out + ["No results of a seeded profile."]) + "\n"
    out += ["## Summary", ""] + _summary(comparisons) + [""]
    shown = {(c.table.document, c.table.title) for c in comparisons}
    absent = [
        f"{t.profile}: {t.title}" if t.title.lower() != t.profile.replace("_", " ") else t.title
        for d in seeds
        for t in d.tables
        if (d.name, t.title) not in shown
    ]
    if absent:
        out += [f"Seed tables with no results here: {', '.join(absent)}.", ""]
    for c in comparisons:
        out += _section(c)
    return "\n".join(out).rstrip() + "\n"


def write_fidelity(
    paths: Sequence[Path | str], out: Path | str, *, seeds: Sequence[SeedDocument] | None = None
) -> Path:
    """Render the results under ``paths`` against the seeds into ``out``; FidelityError or ResultsError (one line)."""
    seeds = load_seeds() if seeds is None else seeds
    known = seed_profiles(seeds)
    records = []
    for path in paths:
        found = load_records([path], kinds=("run", "skip", "failure"))
        profiles = sorted({str(r.get("profile")) for r in found if r.get("kind") == "run"})
        if not any(p in known for p in profiles):
            raise FidelityError(
                f"{path}: no runs of a profile the seeds cover (found: {', '.join(profiles) or 'no runs'}; "
                f"seeded: {', '.join(known)})"
            )
        records += found
    # A table ranks its rows against each other, so they must come from one machine; two tables may come from
    # two (each table's "Ours" line says when and on what it was measured).
    runs = [r for r in records if r.get("kind") == "run"]
    for table in sorted({(str(r.get("profile")), str(r.get("group", ""))) for r in runs}):
        check_compatible([r for r in runs if (str(r.get("profile")), str(r.get("group", ""))) == table])
    out = Path(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(render(compare(records, seeds), seeds), encoding="utf-8")
    return out
