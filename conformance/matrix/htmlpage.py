"""The matrix as static HTML: one self-contained file per page (inline CSS, no script, no external asset), with
relative links only, so it opens from the file system, a downloaded CI artifact and GitHub Pages alike.

The overview (``index.html``) leads with one row per server (``servers.py``: its best configuration, MUST and
SHOULD pass rates with their spread over its configurations, failing checks with the known deviations among
them, crashes, versions, and per area every configuration together), then the configurations × areas; filters
by interface and area (``style.py``). A page per configuration lists what did not pass; the checks' pages
(``checkpage.py``) show one check across every server and configuration.
"""

from __future__ import annotations

from dataclasses import replace
from html import escape as e

from gatecheck.conformance.matrix.model import Matrix, evidence_of, sentence_of, slug
from gatecheck.conformance.matrix.servers import server_rows
from gatecheck.conformance.matrix.style import CSS, area_class, band_css, filter_css, filter_form
from gatecheck.conformance.matrix.view import (
    LEGEND_NOTES,
    OUTCOME_WORDS,
    SECTIONS,
    band_of,
    by_area,
    cell_view,
    fraction,
    legend,
    percent,
    sections,
    short_area,
)

__all__ = ["render_index_html", "render_target_html", "GENERATOR", "page", "entry_html", "upstream_html"]

#: in every page's head: how ``cli`` knows its own pages
GENERATOR = '<meta name=generator content="gatecheck.conformance.matrix">'


def page(title: str, body: str, extra_css: str = "") -> str:
    return (
        f"<!doctype html>\n<html lang=en><head><meta charset=utf-8>{GENERATOR}"
        f'<meta name=viewport content="width=device-width,initial-scale=1"><title>{e(title)}</title>'
        f"<style>{CSS}{band_css()}{extra_css}</style></head><body>\n{body}\n</body></html>\n"
    )


def _cell(view, extra: str = "") -> str:
    sub = f"<small>{e(view.sub)}</small>" if view.sub else ""
    sub += f"<small class=f>{e(view.failed)}</small>" if view.failed else ""
    sub += f"<small class=k>{e(view.known)}</small>" if view.known else ""
    return f'<td class="{view.css}{extra}" title="{e(view.title)}"><b>{e(view.main)}</b>{sub}</td>'


def _area_heads(m: Matrix) -> str:
    return "".join(f'<th class="ac {area_class(m.areas, a)}" title="{e(a)}">{e(short_area(a))}</th>' for a in m.areas)


# -- the servers -------------------------------------------------------------------------------------------


def _rate_cell(m: Matrix, row, which: str, label: str) -> str:
    passed, decided = getattr(m.rows[row.best], which)
    if not decided:
        return f'<td class=na title="no {label} check decided on {e(row.best)}">·</td>'
    share = passed / decided
    low, high = row.spread(m, which)
    spread = f"{percent(low)[:-1]}–{percent(high)}" if low is not None and low != high else "all alike"
    title = (
        f"{label}: {passed} of {decided} passed on {row.best}; over its {len(row.full)} full configurations {spread}"
    )
    return f'<td class={band_of(share)[0]} title="{e(title)}"><b>{percent(share)}</b><small>{e(spread)}</small></td>'


def _brief(view):
    """A server's area cell, narrow: the share, then ✗ and its known deviations, and its failures; the counts are
    in its tooltip."""
    known = view.known.split()[0] if view.known else ""
    failed = view.failed.replace(" failed", " fail") if view.failed else ""
    return replace(view, sub="", known=known, failed=failed)


def _server_row(m: Matrix, row) -> str:
    interfaces = sorted({m.info[t]["interface"] for t in row.targets})
    failing, known = row.failing(m)
    n = len(row.targets)
    versions = ", ".join(row.versions) or "version unknown"
    head = (
        f'<td class="tg srv"><b>{e(row.server)}</b><small>{e(versions)} · {e(" ".join(interfaces))} · '
        f'{n} configuration{"s" if n != 1 else ""}</small><small>best: <a href="{e(slug(row.best))}.html">'
        f"{e(row.best)}</a></small></td>"
    )
    fail = (
        f'<td class="num{" bad" if failing else ""}" title="spec checks of {e(row.best)} that did not pass; '
        f'known deviations are recorded failures"><b>{failing}</b><small>{known} known</small></td>'
    )
    crash = (
        f'<td class="num{" bad" if row.crashes else ""}" title="checks × configurations where the '
        f'server process died"><b>{row.crashes}</b></td>'
    )
    areas = "".join(
        _cell(
            _brief(cell_view(row.areas[a], f"{a}, every configuration of {row.server}")),
            f" ac {area_class(m.areas, a)}",
        )
        if a in row.areas
        else f'<td class="na ac {area_class(m.areas, a)}">·</td>'
        for a in m.areas
    )
    return (
        f'<tr data-i="{" ".join(interfaces)}">{head}{_rate_cell(m, row, "must", "MUST")}'
        f"{_rate_cell(m, row, 'should', 'SHOULD')}{fail}{crash}<td class=gap></td>{areas}</tr>"
    )


def _servers_table(m: Matrix) -> str:
    head = (
        "<thead><tr><th class=tg>server (its best configuration)</th>"
        '<th title="MUST and MUST NOT checks passed on the best configuration; below, the spread over its '
        'full configurations">MUST</th><th title="SHOULD and SHOULD NOT checks passed on the best '
        'configuration; below, the spread">SHOULD</th><th title="spec checks of the best configuration '
        'that did not pass, known deviations among them">failing</th><th>crashes</th><th class=gap></th>'
        f"{_area_heads(m)}</tr></thead>"
    )
    rows = "".join(_server_row(m, row) for row in server_rows(m))
    return f"<table class=grid id=servers>{head}<tbody>{rows}</tbody></table>"


# -- the configurations ------------------------------------------------------------------------------------


def _head(m: Matrix) -> str:
    return (
        f"<thead><tr><th class=tg>configuration</th><th class=tg>version</th>{_area_heads(m)}"
        '<th title="every area\'s MUST/SHOULD checks">all</th><th class=gap></th>'
        '<th class=apart title="the suite\'s readings, apart from the share">POLICY</th>'
        '<th class=apart title="shown apart, never failing a run">INFO</th></tr></thead>'
    )


def _row(m: Matrix, target: str, link: str, first: bool = False) -> str:
    cells = "".join(
        _cell(cell_view(m.cell(target, a), f"{a} on {target}"), f" ac {area_class(m.areas, a)}") for a in m.areas
    )
    row = m.rows[target]
    total = _cell(cell_view(row, f"every area on {target}"), " total")
    return (
        f'<tr data-i="{e(m.info[target]["interface"])}"{" class=first" if first else ""}><td class=tg>'
        f'<a href="{e(link)}">{e(target)}</a></td><td class=v title="{e(m.versions(target))}">'
        f"{e(m.version(target))}</td>{cells}{total}<td class=gap></td><td class=apart>{fraction(row.policy)}</td>"
        f"<td class=apart>{fraction(row.info)}</td></tr>"
    )


def _legend() -> str:
    items = "".join(f'<div><span class="sw {css}"></span>{e(words)}</div>' for css, _, words in legend())
    notes = "".join(f"<p>{e(n)}</p>" for n in LEGEND_NOTES)
    return (
        f"<div class=legend>{items}</div><div class=notes>{notes}<p>Hover a cell for its counts. A server's best "
        "configuration is the one with the highest MUST/SHOULD share among those that ran at least half as many "
        "spec checks as its largest (a TLS or HTTP/2-only listener runs only a part). A configuration's name "
        'opens its page; <a href="checks.html">every check</a> opens one check across every server.</p></div>'
    )


def render_index_html(m: Matrix) -> str:
    servers = [m.info[t]["server"] for t in m.targets]
    rows = "".join(
        _row(m, t, f"{slug(t)}.html", i > 0 and servers[i - 1] != servers[i]) for i, t in enumerate(m.targets)
    )
    built = "".join(
        f"<li><code>{e(s.path)}</code> ({e(s.created)}): {len(s.targets)} configurations</li>" for s in m.sources
    )
    body = (
        f"<h1>gatecheck compliance matrix</h1><p class=lead>{len(set(servers))} servers in {len(m.targets)} "
        f"configurations × {len(m.areas)} spec areas; {m.check_count} distinct checks "
        f'(<a href="checks.html">each across every server</a>). A known deviation is a failure the server '
        f"has recorded: it counts as not passed.</p>{filter_form(m.areas, short_area)}"
        f"<h2>Servers</h2>{_servers_table(m)}<h2>Configurations</h2>"
        f"<table class=grid id=configurations>{_head(m)}<tbody>{rows}</tbody></table>"
        f"<h2>Legend</h2>{_legend()}<h2>Built from</h2><ul>{built}</ul>"
    )
    return page("gatecheck compliance matrix", body, filter_css(m.areas))


# -- a configuration's page --------------------------------------------------------------------------------


def upstream_html(record: dict) -> str:
    url = record.get("upstream", "")
    return f'<p class=meta><b>Upstream:</b> <a href="{e(url)}">{e(url)}</a></p>' if url else ""


def _details(record: dict) -> str:
    parts = []
    if record.get("out_of_range"):
        parts.append(f"<p class=meta><b>Expectation:</b> {e(record['out_of_range'])}</p>")
    if record.get("exchange"):
        parts.append(f"<details><summary>bytes sent and received</summary><pre>{e(record['exchange'])}</pre></details>")
    if record.get("log"):
        parts.append(f"<details><summary>server log during the check</summary><pre>{e(record['log'])}</pre></details>")
    return "".join(parts)


def entry_html(record: dict, anchor: str, checks_link: str = "") -> str:
    sentence, accepts = sentence_of(record)
    quoted = f"<blockquote>{e(sentence)}</blockquote>" if sentence else "<p class=meta>(no sentence recorded)</p>"
    passes = f"<p class=accepts><b>Passes when:</b> {e(accepts)}</p>" if accepts else ""
    evidence = evidence_of(record) or "(no message)"
    outcome = record["outcome"]
    name = f'<a href="{e(checks_link)}">{e(record["check"])}</a>' if checks_link else e(record["check"])
    return (
        f"<article class={anchor}><h4><code class=id>{name}</code><span class=lvl>"
        f'{e(record["level"])}</span><span class="out {outcome}">{e(OUTCOME_WORDS.get(outcome, outcome))}'
        f"</span></h4><p class=meta>{e(record['clause'])} · area {e(record.get('area', ''))}</p>{quoted}{passes}"
        f"<p class=meta><b>Evidence:</b></p><pre>{e(evidence)}</pre>{upstream_html(record)}{_details(record)}"
        "</article>"
    )


def render_target_html(m: Matrix, target: str, check_page=None) -> str:
    """A configuration's page; ``check_page(check id)`` the relative link of a check's page (or None)."""
    listed = sections(m.records.get(target, []))
    index = " · ".join(f'<a href="#{a}">{e(title)}</a> ({len(listed[a])})' for a, title, _ in SECTIONS)
    parts = []
    for anchor, title, about in SECTIONS:
        entries = "".join(
            f"<h3 class=area>{e(area)} ({len(records)})</h3>"
            + "".join(entry_html(r, anchor, check_page(r["check"]) if check_page else "") for r in records)
            for area, records in by_area(listed[anchor])
        )
        parts.append(
            f"<h2 id={anchor}>{e(title)} ({len(listed[anchor])})</h2><p class=notes>{e(about)}</p>"
            f"{entries or '<p>None.</p>'}"
        )
    counts = ", ".join(f"{n} {o}" for o, n in sorted(m.rows[target].outcomes.items()))
    info = m.info[target]
    body = (
        f'<p><a href="index.html">← the matrix</a></p><h1>{e(target)}</h1><p class=lead>{e(m.versions(target))}'
        f" · interface {e(info['interface'])}, HTTP {e(info.get('http', ''))} · features "
        f"{e(', '.join(info.get('features', [])))}<br>checks × this configuration: {e(counts)}</p>"
        f"<table class=grid>{_head(m)}<tbody>{_row(m, target, '#')}</tbody></table>"
        f"<p>{index}</p>{''.join(parts)}"
    )
    return page(f"{target}: gatecheck compliance", body)
