"""The matrix as static HTML: one self-contained file per page (inline CSS, no script, no external asset), with
relative links only, so it opens from the file system and on GitHub Pages alike."""
from __future__ import annotations

from html import escape as e

from gatecheck.conformance.matrix.model import Matrix, evidence_of, sentence_of, slug
from gatecheck.conformance.matrix.view import BANDS, LEGEND_NOTES, OUTCOME_WORDS, SECTIONS, by_area, cell_view, fraction, legend, sections

__all__ = ["render_index_html", "render_target_html", "GENERATOR"]

#: in every page's head: how ``cli`` knows its own pages
GENERATOR = "<meta name=generator content=\"gatecheck.conformance.matrix\">"

_CSS = """
body{font:14px/1.45 system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;margin:1.2em 2em;color:#222;background:#fff}
h1{font-size:1.6em;margin:.2em 0}h2{font-size:1.25em;margin:1.4em 0 .4em}h3.area{font-size:1.05em;margin:1em 0 .2em;color:#444}h4{font-size:1em;margin:0 0 .3em}
a{color:#1a57a5}p.lead{color:#444;max-width:70em}
table.grid{border-collapse:separate;border-spacing:2px}
table.grid th{font-weight:600;font-size:12px;padding:4px 6px;text-align:center;vertical-align:bottom;background:#f3f3f3}
table.grid th.tg,table.grid td.tg{text-align:left;white-space:nowrap}
table.grid td{padding:3px 6px;text-align:center;min-width:5.2em;border-radius:3px}
table.grid td b{display:block;font-size:15px}table.grid td small{display:block;font-size:11px;color:#333;white-space:nowrap}
table.grid td small.k{color:#7a3e00;font-weight:600}table.grid td small.f{color:#8b0000;font-weight:700}
table.grid td.v{font-size:11px;color:#555;text-align:left;background:none;min-width:0}
table.grid td.gap,table.grid th.gap{background:none;min-width:.8em;padding:0}
table.grid td.apart{background:#ede7f6}table.grid th.apart{background:#e3dcf0}
td.ns{background:repeating-linear-gradient(135deg,#eee 0 5px,#d5d5d5 5px 10px);color:#555}
td.na{background:#fafafa;color:#aaa}td.ro{background:#f0f0f0;color:#777}
tr.first td{border-top:3px solid #bbb}
td.total{outline:2px solid #666;outline-offset:-2px}
.legend{display:flex;flex-wrap:wrap;gap:.4em 1.4em;margin:.6em 0;font-size:13px}
.legend span.sw{display:inline-block;width:2.2em;height:1.1em;vertical-align:middle;border-radius:3px;margin-right:.4em}
.notes{font-size:13px;color:#444;max-width:70em}
article{border-left:4px solid #ccc;padding:.3em .8em;margin:.8em 0;max-width:75em}
article.spec-failures{border-color:#e57373}article.known{border-color:#ffb74d}article.policy{border-color:#9575cd}
article.info{border-color:#90a4ae}
article code.id{font-size:13px;word-break:break-all}
span.lvl{font-size:11px;background:#eee;border-radius:3px;padding:1px 5px;margin-left:.4em}
span.out{font-size:11px;border-radius:3px;padding:1px 5px;margin-left:.3em;background:#fde0dc}
span.out.known{background:#ffe0b2}span.out.noted{background:#eceff1}
p.meta{font-size:12px;color:#555;margin:.1em 0}
blockquote{margin:.3em 0;padding:.2em .8em;border-left:3px solid #bbb;background:#f8f8f8;font-style:italic}
p.accepts{font-size:13px;margin:.2em 0}
pre{white-space:pre-wrap;word-break:break-word;background:#fbf7f0;padding:.4em .6em;font-size:12px;margin:.3em 0;
max-height:22em;overflow:auto}
"""


def _page(title: str, body: str) -> str:
    return (f"<!doctype html>\n<html lang=en><head><meta charset=utf-8>{GENERATOR}"
            f"<meta name=viewport content=\"width=device-width,initial-scale=1\"><title>{e(title)}</title>"
            f"<style>{_CSS}{_band_css()}</style></head><body>\n{body}\n</body></html>\n")


def _band_css() -> str:
    return "".join(f"td.{css}{{background:{colour}}}.sw.{css}{{background:{colour}}}"
                   for _, css, colour, _, _ in BANDS) + ".sw.ns{background:repeating-linear-gradient(" \
        "135deg,#eee 0 5px,#d5d5d5 5px 10px)}.sw.na{background:#fafafa;border:1px solid #ddd}.sw.ro{background:#f0f0f0}"


def _cell(view, extra: str = "") -> str:
    sub = f"<small>{e(view.sub)}</small>" if view.sub else ""
    sub += f"<small class=f>{e(view.failed)}</small>" if view.failed else ""
    sub += f"<small class=k>{e(view.known)}</small>" if view.known else ""
    return f"<td class=\"{view.css}{extra}\" title=\"{e(view.title)}\"><b>{e(view.main)}</b>{sub}</td>"


def _head(m: Matrix) -> str:
    areas = "".join(f"<th>{e(a)}</th>" for a in m.areas)
    return (f"<thead><tr><th class=tg>target</th><th class=tg>version</th>{areas}<th>all MUST/SHOULD</th>"
            "<th class=gap></th><th class=apart title=\"the suite's readings, apart from the share\">POLICY</th>"
            "<th class=apart title=\"shown apart, never failing a run\">INFO</th></tr></thead>")


def _row(m: Matrix, target: str, link: str, first: bool = False) -> str:
    cells = "".join(_cell(cell_view(m.cell(target, a), f"{a} on {target}")) for a in m.areas)
    row = m.rows[target]
    total = _cell(cell_view(row, f"every area on {target}"), " total")
    return (f"<tr{' class=first' if first else ''}><td class=tg><a href=\"{e(link)}\">{e(target)}</a></td><td class=v title=\"{e(m.versions(target))}\">"
            f"{e(m.version(target))}</td>"
            f"{cells}{total}<td class=gap></td><td class=apart>{fraction(row.policy)}</td>"
            f"<td class=apart>{fraction(row.info)}</td></tr>")


def _legend() -> str:
    items = "".join(f"<div><span class=\"sw {css}\"></span>{e(words)}</div>" for css, _, words in legend())
    notes = "".join(f"<p>{e(n)}</p>" for n in LEGEND_NOTES)
    return f"<div class=legend>{items}</div><div class=notes>{notes}<p>Hover a cell for its counts; a target's " \
           "name opens its page (failures and known deviations, each with its clause's sentence and the evidence).</p></div>"


def render_index_html(m: Matrix) -> str:
    servers = [m.info[t]["server"] for t in m.targets]
    rows = "".join(_row(m, t, f"{slug(t)}.html", i > 0 and servers[i - 1] != servers[i]) for i, t in enumerate(m.targets))
    built = "".join(f"<li><code>{e(s.path)}</code> ({e(s.created)}): {len(s.targets)} targets</li>" for s in m.sources)
    body = (f"<h1>gatecheck compliance matrix</h1><p class=lead>{len(m.targets)} targets of {len(set(servers))} servers × "
            f"{len(m.areas)} spec areas; {m.check_count} distinct checks. Each cell: the share of the area's "
            f"MUST/SHOULD checks passed, with passed/decided, failures and known deviations below it.</p>"
            f"<table class=grid>{_head(m)}<tbody>{rows}</tbody></table><h2>Legend</h2>{_legend()}"
            f"<h2>Built from</h2><ul>{built}</ul>")
    return _page("gatecheck compliance matrix", body)


def _entry(record: dict, anchor: str) -> str:
    sentence, accepts = sentence_of(record)
    quoted = f"<blockquote>{e(sentence)}</blockquote>" if sentence else "<p class=meta>(no sentence recorded)</p>"
    passes = f"<p class=accepts><b>Passes when:</b> {e(accepts)}</p>" if accepts else ""
    evidence = evidence_of(record) or "(no message)"
    outcome = record["outcome"]
    return (f"<article class={anchor}><h4><code class=id>{e(record['check'])}</code><span class=lvl>"
            f"{e(record['level'])}</span><span class=\"out {outcome}\">{e(OUTCOME_WORDS.get(outcome, outcome))}"
            f"</span></h4><p class=meta>{e(record['clause'])} · area {e(record.get('area', ''))}</p>{quoted}{passes}"
            f"<p class=meta><b>Evidence:</b></p><pre>{e(evidence)}</pre></article>")


def render_target_html(m: Matrix, target: str) -> str:
    listed = sections(m.records.get(target, []))
    index = " · ".join(f"<a href=\"#{a}\">{e(title)}</a> ({len(listed[a])})" for a, title, _ in SECTIONS)
    parts = []
    for anchor, title, about in SECTIONS:
        entries = "".join(f"<h3 class=area>{e(area)} ({len(records)})</h3>" + "".join(_entry(r, anchor) for r in records)
                          for area, records in by_area(listed[anchor]))
        parts.append(f"<h2 id={anchor}>{e(title)} ({len(listed[anchor])})</h2><p class=notes>{e(about)}</p>"
                     f"{entries or '<p>None.</p>'}")
    counts = ", ".join(f"{n} {o}" for o, n in sorted(m.rows[target].outcomes.items()))
    info = m.info[target]
    body = (f"<p><a href=\"index.html\">← the matrix</a></p><h1>{e(target)}</h1><p class=lead>{e(m.versions(target))}"
            f" · interface {e(info['interface'])}, HTTP {e(info.get('http', ''))} · features "
            f"{e(', '.join(info.get('features', [])))}<br>checks × this target: {e(counts)}</p>"
            f"<table class=grid>{_head(m)}<tbody>{_row(m, target, '#')}</tbody></table>"
            f"<p>{index}</p>{''.join(parts)}")
    return _page(f"{target}: gatecheck compliance", body)
