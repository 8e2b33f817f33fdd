"""One check across every server: ``checks.html`` (every check × every server, the features-by-server view) and a
page per check under ``checks/`` (what each configuration did, with the evidence: the message, the known
deviation's entry and its upstream link, the bytes sent and received, the server's log, and the command that
reruns it there)."""

from __future__ import annotations

import hashlib
import re
from html import escape as e

from gatecheck.conformance.matrix.htmlpage import _details, page, upstream_html
from gatecheck.conformance.matrix.model import PASSED, Matrix, area_of, evidence_of, sentence_of, slug
from gatecheck.conformance.matrix.servers import server_rows
from gatecheck.conformance.matrix.style import area_class, filter_css, filter_form
from gatecheck.conformance.matrix.view import OUTCOME_WORDS, band_of, by_area, short_area
from gatecheck.conformance.plugin.failures import rerun_command

__all__ = ["check_pages", "render_checks_html", "render_check_html", "by_check"]

_UNDECIDED = ("unsupported", "skipped")


def by_check(m: Matrix) -> dict:
    """check id -> its records on every configuration."""
    out: dict = {}
    for target in m.targets:
        for record in m.records.get(target, ()):
            out.setdefault(record["check"], []).append(record)
    return out


def check_pages(checks) -> dict:
    """check id -> its page's file name under ``checks/`` (a slug of the id; a clash gets a hash of the id)."""
    names, seen = {}, set()
    for check in sorted(checks):
        base = re.sub(r"[^A-Za-z0-9_.-]+", "-", check.replace(".py::", "--")).strip("-")[:150] or "check"
        name = base if base not in seen else f"{base}-{hashlib.sha1(check.encode()).hexdigest()[:8]}"
        seen.add(name)
        names[check] = f"{name}.html"
    return names


def _server_cell(records: list, server: str, check: str) -> str:
    if not records:
        return "<td class=na>·</td>"
    decided = [r for r in records if r["outcome"] not in _UNDECIDED]
    if not decided:
        return f'<td class=ns title="not supported on any configuration of {e(server)}">n/s</td>'
    passed = sum(r["outcome"] in PASSED for r in decided)
    known = sum(r["outcome"] == "known" for r in decided)
    words = ", ".join(f"{r['target']}: {r['outcome']}" for r in records)
    note = f"<small class=k>✗{known} known</small>" if known else ""
    return (
        f'<td class="s {band_of(passed / len(decided))[0]}" title="{e(words)}"><b>{passed}/{len(decided)}'
        f"</b>{note}</td>"
    )


def render_checks_html(m: Matrix, records_of: dict, pages: dict) -> str:
    rows_by_server = server_rows(m)
    servers = [row.server for row in rows_by_server]
    head = "".join(f"<th>{e(s)}</th>" for s in servers)
    body_rows = []
    for area, _ in by_area([{"area": r[0]["area"], "check": c} for c, r in records_of.items()]):
        checks = sorted(c for c, r in records_of.items() if area_of(r[0]["area"]) == area)
        body_rows.append(
            f"<tr data-a={area_class(m.areas, area)}><td colspan={len(servers) + 2}>"
            f"<h3 class=area>{e(area)} ({len(checks)})</h3></td></tr>"
        )
        for check in checks:
            records = records_of[check]
            interfaces = " ".join(sorted({r.get("interface", "") for r in records}))
            cells = "".join(_server_cell([r for r in records if r.get("server") == s], s, check) for s in servers)
            body_rows.append(
                f'<tr data-i="{e(interfaces)}" data-a={area_class(m.areas, area)}><td class=c>'
                f'<a href="checks/{e(pages[check])}"><code class=id>{e(check)}</code></a></td>'
                f"<td class=v>{e(records[0].get('level', ''))}</td>{cells}</tr>"
            )
    body = (
        f'<p><a href="index.html">← the matrix</a></p><h1>Every check × every server</h1><p class=lead>'
        f"{len(records_of)} checks. Each cell: the server's configurations that passed the check, of those that "
        "decided it (known deviations are failures); n/s: not supported on any; ·: no configuration it applies "
        f"to. A check opens its page: what every configuration did, with the evidence.</p>"
        f'{filter_form(m.areas, short_area)}<table class="grid checks"><thead><tr><th class=tg>check</th>'
        f"<th>level</th>{head}</tr></thead><tbody>{''.join(body_rows)}</tbody></table>"
    )
    return page("gatecheck: every check × every server", body, filter_css(m.areas))


def _evidence(m: Matrix, record: dict) -> str:
    if record["outcome"] in PASSED:
        return ""
    if record["outcome"] in _UNDECIDED:
        return f"<pre>{e(record.get('message', ''))}</pre>" if record.get("message") else ""
    spec = m.info.get(record["target"], {}).get("spec") or record["target"]
    # a known deviation fails again, bytes and all, without the expectation file that lists it
    options = ["--no-expectations"] if record["outcome"] == "known" else []
    return (
        f"<pre>{e(evidence_of(record) or '(no message)')}</pre>{upstream_html(record)}{_details(record)}"
        f"<p class=meta>rerun: <code>{e(rerun_command(spec, record['check'], options))}</code></p>"
    )


def render_check_html(m: Matrix, check: str, records: list, order: dict) -> str:
    """One check's page; ``order``: server -> its place in the overview (``servers.server_rows``)."""
    first = records[0]
    sentence, accepts = sentence_of(first)
    rows = []
    for record in sorted(
        records,
        key=lambda r: (
            order.get(r.get("server", ""), 99),
            m.targets.index(r["target"]) if r["target"] in m.targets else 0,
        ),
    ):
        outcome = record["outcome"]
        rows.append(
            f'<tr><td>{e(record.get("server", ""))}</td><td><a href="../{e(slug(record["target"]))}.html">'
            f"{e(record['target'])}</a></td><td>{e(m.version(record['target']))}</td><td class=o><span "
            f'class="out {e(outcome)}">{e(OUTCOME_WORDS.get(outcome, outcome))}</span></td>'
            f"<td>{_evidence(m, record)}</td></tr>"
        )
    passed = sum(r["outcome"] in PASSED for r in records)
    decided = sum(r["outcome"] not in _UNDECIDED for r in records)
    body = (
        f'<p><a href="../index.html">← the matrix</a> · <a href="../checks.html">every check</a></p>'
        f"<h1><code class=id>{e(check)}</code></h1><p class=meta>{e(first.get('clause', ''))} · "
        f"<span class=lvl>{e(first.get('level', ''))}</span> · area {e(first.get('area', ''))} · passed on "
        f"{passed} of the {decided} configurations that decided it</p>"
        + (f"<blockquote>{e(sentence)}</blockquote>" if sentence else "")
        + (f"<p class=accepts><b>Passes when:</b> {e(accepts)}</p>" if accepts else "")
        + "<table class=list><thead><tr><th>server</th><th>configuration</th><th>version</th><th>outcome</th>"
        f"<th>evidence</th></tr></thead><tbody>{''.join(rows)}</tbody></table>"
    )
    return page(f"{check}: gatecheck", body)
