"""Reports: the seed documents' Markdown tables (plus p99, errors, memory), a ``vs`` table, and plots.

Rules of this module:
- Rendering is a pure function of the records (``render``): no clock, no machine, so golden-text tests
  can pin it down. ``write_report`` is the only function that touches files.
- Which run stands for a row is ``load.report.rows``' business (best concurrency, median repeat, latest session).
- A row with errors or non-2xx responses is marked ⚠ and a generator-bound one †; both are explained under
  the table (``load.report.notes``). Skips and failures are listed with their reasons, never dropped.
"""

from __future__ import annotations

from collections import OrderedDict
from datetime import datetime
from pathlib import Path
from typing import Any, Mapping, Sequence

from ..plan import SETTLE, format_cpu_list
from ..records import RUNNER_KINDS, check_compatible, load_records
from .notes import _busy, _errors, _is_ws, footnotes
from .rows import Row, oha_ceiling, select_rows, version_key

__all__ = ["render", "render_vs", "write_report", "version_lines", "METHOD_TEXT", "Row", "select_rows", "oha_ceiling"]

METRIC_COLUMNS = ("Total requests", "RPS", "avg latency", "max latency", "p99 latency", "errors", "peak RSS")

METHOD_TEXT = (
    "Each case is checked first (status and body size), then loaded with [oha]({oha_url}) {oha}: "
    "{method}. Total requests and RPS count 2xx responses only (RPS = 2xx responses / elapsed time); "
    "non-2xx responses and connection errors are counted apart, in *errors*. The load generator and the "
    "server are pinned to separate CPUs ({pinning}). *peak RSS* is the server's whole process tree."
)
OHA_URL = "https://github.com/hatoo/oha"

ENV_COLUMN_TITLES = {"python": "Python version"}


def _ms(value: float | None) -> str:
    return "-" if value is None else f"{round(value, 3)}ms"


def _mib(value: int | None) -> str:
    return "-" if not value else f"{value / 1048576:.1f} MiB"


def _marks(record: Mapping[str, Any]) -> str:
    marks = ""
    if _errors(record):
        marks += " ⚠"
    if record.get("generator_bound"):
        marks += " †"
    if _busy(record):
        marks += " ‡"
    return marks


def _table(rows: Sequence[Row], columns: Sequence[str], env_columns: Sequence[str], bold_best: bool) -> list[str]:
    use_cells = any(r.cells for r in rows)
    head = [ENV_COLUMN_TITLES.get(c, f"{c.capitalize()} version") for c in env_columns] + list(columns)
    if use_cells:
        head.append("Concurrency")
    head += METRIC_COLUMNS
    lines = ["| " + " | ".join(head) + " |", "| " + " | ".join("---" for _ in head) + " |"]
    best = max(rows, key=lambda r: r.record["rps"]) if bold_best and len(rows) > 1 else None
    for row in rows:
        rec = row.record
        lat = rec.get("latency_ms", {})
        if use_cells:
            label_cells = list(row.cells) + [str(row.concurrency)]
        else:
            label_cells = [f"{row.label} (c{row.concurrency})"]
        rps = f"{rec['rps']:.0f}"
        if row is best:
            rps = f"**{rps}**"
        cells = (
            list(row.env_values)
            + label_cells
            + [
                str(rec["ok"]),
                rps + _marks(rec),
                _ms(lat.get("avg")),
                _ms(lat.get("max")),
                _ms(lat.get("p99")),
                str(_errors(rec)),
                _mib(rec.get("server", {}).get("peak_rss")),
            ]
        )
        lines.append("| " + " | ".join(cells) + " |")
    return lines


WS_COLUMNS = ("Send throughput", "Receive throughput", "Combined throughput", "server CPU", "client CPU", "peak RSS")

WS_TEXT = (
    "WebSocket broadcast (`load.wsbroadcast`, the seed's benchmarks/ws method): N clients connect to "
    "`/ws_broadcast`, wait {settle} s once all are open, then each sends M messages while receiving all N × M; "
    "throughputs in messages per second, summed over the clients (send: M / send time; receive: N × M / "
    "receive time; combined: (N + 1) × M / the longer of the two). The client (websockets {client}, its defaults "
    "but for keepalive pings, off) runs as one process on oha's CPU; "
    "*server CPU* and *client CPU* are shares of the measured phase (first client's start to last client's end), "
    "the client's of one CPU (it is one asyncio thread), and † marks a run where it used 90% or more."
)


def _ws_table(rows: Sequence[Row]) -> list[str]:
    head = ("Server (clients)", "Messages per client") + WS_COLUMNS
    lines = ["| " + " | ".join(head) + " |", "| " + " | ".join("---" for _ in head) + " |"]
    for row in rows:
        rec = row.record
        ws = rec["ws"]
        cells = [
            row.label,
            str(rec.get("messages_per_client", "?")),
            f"{ws['send']:,.0f}",
            f"{ws['recv']:,.0f}",
            f"{ws['combined']:,.0f}" + _marks(rec),
            f"{rec.get('server', {}).get('util', 0):.0%}",
            f"{rec.get('client', {}).get('util', 0):.0%}",
            _mib(rec.get("server", {}).get("peak_rss")),
        ]
        lines.append("| " + " | ".join(cells) + " |")
    return lines


def version_lines(records: Sequence[Mapping[str, Any]]) -> list[str]:
    seen: "OrderedDict[str, list]" = OrderedDict()
    for record in records:
        for name, version in sorted(record.get("versions", {}).items()):
            if version is None:  # e.g. no oha in a run of WebSocket rows only
                continue
            if version not in seen.setdefault(name, []):
                seen[name].append(version)
    for name in seen:
        seen[name].sort(key=version_key)
    lines = []
    if "python" in seen:
        lines.append(f"Python version: {', '.join(seen.pop('python'))}")
    oha = seen.pop("oha", None)
    for name, versions in seen.items():
        lines.append(f"{name.capitalize()} version: {', '.join(versions)}")
    if oha:
        lines.append(f"oha version: {', '.join(oha)}")
    return lines


def _run_at(session: str) -> str:
    try:
        stamp = datetime.strptime(session.split("-")[0], "%Y%m%dT%H%M%SZ")
    except ValueError:
        return session or "?"
    return stamp.strftime("%a %d %b %Y, %H:%M UTC")


def _describe_pinning(pinning: Mapping[str, Any] | None) -> str:
    if not pinning or not pinning.get("server") or not pinning.get("oha"):
        return "not pinned"
    return f"server on CPU {format_cpu_list(pinning['server'])}, oha on CPU {format_cpu_list(pinning['oha'])}"


def _method_text(record: Mapping[str, Any]) -> str:
    m = record.get("method") if isinstance(record.get("method"), dict) else {}
    per = (
        f"{record['requests_planned']:,} requests" if record.get("requests_planned") else f"{m.get('duration', 10):g} s"
    )
    method = (
        f"a primer at c{m.get('primer_concurrency', 8)} for {m.get('primer', 4):g} s, a warm-up at the highest "
        f"concurrency for {m.get('warmup', 3):g} s, then {per} per concurrency"
    )
    if record.get("quick"):
        method += f" (--quick {record['quick']:g})"
    oha = record.get("versions", {}).get("oha", "")
    return METHOD_TEXT.format(oha_url=OHA_URL, oha=oha, method=method, pinning=_describe_pinning(record.get("pinning")))


def render(records: Sequence[Mapping[str, Any]], *, profile=None, plots: Mapping[str, str] | None = None) -> str:
    """Markdown for one profile's records. ``profile`` (a load.plan.Profile) supplies the title,
    paragraph and columns; ``plots`` maps a caption to an image path relative to the report."""
    if not records:
        return "# gatecheck load\n\nNo results.\n"
    name = records[0].get("profile", "?")
    title = profile.title if profile else name
    columns = profile.columns if profile else ("Request",)
    env_columns = profile.env_columns if profile else ()
    rows = select_rows(records, env_columns)
    if profile:
        rows = _profile_order(rows, profile)
    runs = [r.record for r in rows]
    head = runs[0] if runs else records[0]
    env = head.get("environment", {})
    latest = max(str(r.get("session", "")) for r in records)
    out = [f"# gatecheck load: {title}", ""]
    meta = [
        f"Run at: {_run_at(latest)}",
        f"Environment: {env.get('cpu_model', '?')} @ {env.get('os', '?')}, Linux {env.get('kernel', '?')} "
        f"(CPUs: {env.get('cpu_count', '?')})",
    ] + version_lines(runs or records)
    out += [line + "    " for line in meta[:-1]] + [meta[-1], ""]
    if not rows or not all(_is_ws(r) for r in rows):  # WebSocket rows carry their own method paragraph
        out += [_method_text(head), ""]
    if profile and profile.description:
        out += [profile.description, ""]
    if profile and profile.note:
        out += [f"*Note: {profile.note}*", ""]
    groups: "OrderedDict[str, list]" = OrderedDict()
    for row in rows:
        groups.setdefault(row.group, []).append(row)
    for group, group_rows in groups.items():
        if group:
            out += [f"### {group}", ""]
        if all(_is_ws(r) for r in group_rows):
            client = ", ".join(sorted({str(r.record["ws"].get("websockets")) for r in group_rows}))
            out += [WS_TEXT.format(settle=f"{SETTLE:g}", client=client), "", *_ws_table(group_rows), ""]
            continue
        out += _table(group_rows, columns, env_columns, profile.bold_best if profile else False) + [""]
    out += footnotes(rows, records)
    for caption, path in (plots or {}).items():
        out += [f"![{caption}]({path})", ""]
    return "\n".join(out).rstrip() + "\n"


def _profile_order(rows: Sequence[Row], profile) -> list[Row]:
    """Rows in the profile's case order (runs are grouped by server start, so they finish in another order)."""
    order = {(c.group, c.label): i for i, c in enumerate(profile.cases)}
    groups = {c.group: i for i, c in reversed(list(enumerate(profile.cases)))}
    return sorted(
        rows,
        key=lambda r: (
            groups.get(r.group, len(groups)),
            tuple(version_key(v) for v in r.env_values),
            order.get((r.group, r.label), len(order)),
        ),
    )


def render_vs(records: Sequence[Mapping[str, Any]]) -> str:
    """Servers side by side: one row per route, one column per target; RPS and ratio to the first target (HTTP
    rows only: the WebSocket rows count messages and have their own table)."""
    rows = [r for r in select_rows(records) if not _is_ws(r)]
    targets: list[str] = []
    table: "OrderedDict[str, dict]" = OrderedDict()
    for row in rows:
        if row.target not in targets:
            targets.append(row.target)
        table.setdefault(row.route, {})[row.target] = row
    out = ["## Side by side (RPS, ratio to the first server)", ""]
    out.append("| Route | " + " | ".join(f"`{t}`" for t in targets) + " |")
    out.append("| --- | " + " | ".join("---" for _ in targets) + " |")
    for route_name, by_target in table.items():
        base = next((by_target[t].record["rps"] for t in targets if t in by_target), None)
        cells = []
        for t in targets:
            row = by_target.get(t)
            if row is None:
                cells.append("-")
                continue
            rps = row.record["rps"]
            ratio = f" ({rps / base:.2f}x)" if base else ""
            cells.append(f"{rps:.0f}{ratio} c{row.concurrency}{_marks(row.record)}")
        out.append(f"| {route_name} | " + " | ".join(cells) + " |")
    return "\n".join(out) + "\n"


def write_report(
    paths: Sequence[Path | str], out_dir: Path | str, *, plots: bool = True, vs: bool = False, force: bool = False
) -> Path:
    """Render ``report.md`` (and SVG plots) for the records under ``paths`` into ``out_dir``."""
    from ..plan import ProfileError, load_profile
    from .plot import latency_svg, rps_svg

    records = load_records(paths, kinds=RUNNER_KINDS)
    if not force:
        check_compatible(r for r in records if r.get("kind") == "run")
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    by_profile: "OrderedDict[str, list]" = OrderedDict()
    for record in records:
        by_profile.setdefault(str(record.get("profile")), []).append(record)
    parts = []
    for name, items in by_profile.items():
        try:
            profile = load_profile(name)
        except ProfileError:
            profile = None
        images = {}
        rows = [r for r in select_rows(items, profile.env_columns if profile else ()) if not _is_ws(r)]
        if plots and rows:  # requests per second only: the WebSocket rows count messages
            rps_path = out_dir / f"{name}-rps.svg"
            rps_path.write_text(rps_svg(rows, title=f"{profile.title if profile else name}: RPS"), encoding="utf-8")
            lat_path = out_dir / f"{name}-latency.svg"
            lat_path.write_text(
                latency_svg(rows, title=f"{profile.title if profile else name}: latency"), encoding="utf-8"
            )
            images = {
                "RPS (2xx) per case and concurrency": rps_path.name,
                "Latency percentiles (p50, p99, max)": lat_path.name,
            }
        parts.append(render(items, profile=profile, plots=images))
        if vs:
            parts.append(render_vs(items))
    path = out_dir / "report.md"
    path.write_text("\n".join(parts), encoding="utf-8")
    return path
