"""The matrix as Markdown (GitHub renders it beside the HTML): the same pages, a coloured mark per cell."""
from __future__ import annotations

from .model import Matrix, evidence_of, sentence_of, slug
from .view import LEGEND_NOTES, OUTCOME_WORDS, SECTIONS, by_area, cell_view, fraction, legend, sections

__all__ = ["render_index_md", "render_target_md"]


def _esc(text: str) -> str:
    return " ".join(str(text).split()).replace("|", "\\|")


def _cell(view) -> str:
    if view.css in ("na", "ro"):
        return view.main
    sub = f" {view.sub}" if view.sub and view.css != "ns" else ""
    sub += f" · {view.known}" if view.known else ""
    return f"{view.mark} {view.main}{sub}"


def _table(m: Matrix, targets: list, link) -> list:
    head = "| target | " + " | ".join(m.areas) + " | all MUST/SHOULD | POLICY | INFO |"
    out = [head, "| --- |" + " :---: |" * (len(m.areas) + 3)]
    for t in targets:
        cells = [_cell(cell_view(m.cell(t, a), "")) for a in m.areas]
        row = m.rows[t]
        out.append(f"| [`{_esc(t)}`]({link(t)}) | " + " | ".join(cells)
                   + f" | **{_cell(cell_view(row, ''))}** | {fraction(row.policy)} | {fraction(row.info)} |")
    return out


def render_index_md(m: Matrix) -> str:
    servers = len({m.info[t]["server"] for t in m.targets})
    out = ["# gatecheck compliance matrix", "",
           f"{len(m.targets)} targets of {servers} servers × {len(m.areas)} spec areas; {m.check_count} distinct "
           "checks. Each cell: the share of the area's MUST/SHOULD checks passed, then passed/decided and known "
           "deviations. The same page in colour: [index.html](index.html).", ""]
    out += _table(m, m.targets, lambda t: f"{slug(t)}.md")
    out += ["", "## Legend", ""]
    out += [f"- {mark} {words}" for _, mark, words in legend()]
    out += [""] + [f"{note}\n" for note in LEGEND_NOTES]
    out += ["## Versions", "", "| target | versions |", "| --- | --- |"]
    out += [f"| `{_esc(t)}` | {_esc(m.versions(t))} |" for t in m.targets]
    out += ["", "## Built from", ""]
    out += [f"- `{s.path}` ({s.created}): {len(s.targets)} targets" for s in m.sources]
    return "\n".join(out) + "\n"


def _entry(record: dict) -> list:
    sentence, accepts = sentence_of(record)
    outcome = record["outcome"]
    out = [f"#### `{record['check']}`", "",
           f"{record['level']} · {OUTCOME_WORDS.get(outcome, outcome)} · {record['clause']} · area "
           f"{record.get('area', '')}", ""]
    out += [f"> {_esc(sentence)}" if sentence else "(no sentence recorded)", ""]
    if accepts:
        out += [f"Passes when: {_esc(accepts)}", ""]
    evidence = evidence_of(record) or "(no message)"
    fence = "````" if "```" in evidence else "```"
    return out + ["Evidence:", "", fence + "text", evidence, fence, ""]


def render_target_md(m: Matrix, target: str) -> str:
    listed = sections(m.records.get(target, []))
    info = m.info[target]
    counts = ", ".join(f"{n} {o}" for o, n in sorted(m.rows[target].outcomes.items()))
    out = ["[← the matrix](README.md)", "", f"# `{target}`", "",
           f"{m.versions(target)} · interface {info['interface']}, HTTP {info.get('http', '')} · features "
           f"{', '.join(info.get('features', []))}", "", f"Checks × this target: {counts}.", ""]
    out += _table(m, [target], lambda t: f"{slug(t)}.md") + [""]
    out += [" · ".join(f"[{title}](#{anchor}) ({len(listed[anchor])})" for anchor, title, _ in SECTIONS), ""]
    for anchor, title, about in SECTIONS:
        out += [f"<a id=\"{anchor}\"></a>", "", f"## {title} ({len(listed[anchor])})", "", f"_{about}_", ""]
        for area, records in by_area(listed[anchor]):
            out += [f"### {area} ({len(records)})", ""]
            for record in records:
                out += _entry(record)
        if not listed[anchor]:
            out += ["None.", ""]
    return "\n".join(out) + "\n"
