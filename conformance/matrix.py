"""The compliance matrix: checks grouped by spec clause × targets, as Markdown and a self-contained HTML page.

    python -m gatecheck.conformance.matrix results/*.json [--md results/matrix.md] [--html results/matrix.html]

Input: results files written by the conformance session (schema_version 1 or 2). Cells: pass, FAIL, known
deviation, not supported, n/a (the check does not apply to that target's interface), error, timeout,
interrupted, skipped.
Totals per target and per spec level come first. Each check's row ends with the sentence of its clause, taken
from the record's ``sentence`` field when the results carry one, else from the levels table
(``conformance/levels/*.toml``) by check id.
"""
from __future__ import annotations

import argparse
import html
import json
import sys
from collections import defaultdict
from pathlib import Path

from .levels import row_for_check
from .plugin.resultsfile import SCHEMA_VERSION

__all__ = ["load_results", "Matrix", "render_markdown", "render_html", "main"]

SYMBOL = {"passed": "pass", "failed": "FAIL", "error": "error", "known": "known", "fixed": "fixed",
          "timeout": "timeout", "interrupted": "interrupted", "noted": "info", "unsupported": "n/s", "skipped": "skip", None: "n/a"}
COLOUR = {"passed": "#d9f2d9", "failed": "#f7c6c6", "error": "#f7c6c6", "known": "#fde9b8", "fixed": "#c6dcf7",
          "timeout": "#f7c6c6", "interrupted": "#f2f2f2", "noted": "#ece3f7", "unsupported": "#e6e6e6", "skipped": "#f2f2f2",
          None: "#ffffff"}
SCHEMA_VERSIONS = (1, SCHEMA_VERSION)   # 2 only adds the outcomes timeout and interrupted
LEVEL_ORDER = ("MUST", "MUST NOT", "SHOULD", "SHOULD NOT", "MAY", "DEFINED", "POLICY", "INFO")


def load_results(paths: list) -> tuple:
    """(targets by name, checks) merged from several results files; later files win for a (check, target)."""
    targets, checks = {}, {}
    for path in paths:
        data = json.loads(Path(path).read_text(encoding="utf-8"))
        version = data.get("schema_version")
        if version not in SCHEMA_VERSIONS:
            raise ValueError(f"{path}: results schema_version {version!r} not supported "
                             f"(expected one of {', '.join(map(str, SCHEMA_VERSIONS))})")
        for target in data["targets"]:
            targets[target["target"]] = target
        for check in data["checks"]:
            checks[(check["check"], check["target"])] = check
    return targets, list(checks.values())


class Matrix:
    def __init__(self, targets: dict, checks: list) -> None:
        self.targets = sorted(targets, key=lambda t: (targets[t]["server"], targets[t]["interface"], t))
        self.info = targets
        self.cells = {(c["check"], c["target"]): c for c in checks}
        rows, self.sentences = {}, {}
        for c in checks:
            rows.setdefault(c["check"], (c["clause"], c["level"], c.get("area", "")))
            if c.get("sentence"):
                self.sentences.setdefault(c["check"], c["sentence"])
        # grouped by clause, then check id
        self.groups = defaultdict(list)
        for check, (clause, level, area) in sorted(rows.items(), key=lambda kv: (kv[1][0], kv[0])):
            self.groups[clause].append((check, level))

    def sentence(self, check: str) -> str:
        """The quoted sentence of the check's clause ("" when neither the results nor the table have it)."""
        if check not in self.sentences:
            row = row_for_check(check)
            self.sentences[check] = row.sentence if row else ""
        return self.sentences[check]

    def outcome(self, check: str, target: str):
        cell = self.cells.get((check, target))
        return cell["outcome"] if cell else None

    def totals(self) -> dict:
        """target → outcome → count."""
        result = {t: defaultdict(int) for t in self.targets}
        for (check, target), cell in self.cells.items():
            result[target][cell["outcome"]] += 1
        return result

    def level_totals(self) -> dict:
        """(target, level) → (passed, applicable) counting pass over pass+fail+known."""
        result = defaultdict(lambda: [0, 0])
        for (check, target), cell in self.cells.items():
            if cell["outcome"] in ("passed", "failed", "known", "fixed"):
                key = (target, cell["level"])
                result[key][1] += 1
                if cell["outcome"] in ("passed", "fixed"):
                    result[key][0] += 1
        return result

    @property
    def check_count(self) -> int:
        return sum(len(v) for v in self.groups.values())


def _short(target: str) -> str:
    return target.replace("?", " ?")


def render_markdown(m: Matrix) -> str:
    out = ["# gatecheck compliance matrix", ""]
    out.append(f"{m.check_count} distinct checks × {len(m.targets)} targets. Cells: pass, FAIL, known "
               "(recorded deviation), n/s (not supported by the target), n/a (not applicable to its interface).")
    out.append("")
    out += ["## Totals per target", "", "| target | versions | pass | FAIL | known | error | n/s |",
            "| --- | --- | ---: | ---: | ---: | ---: | ---: |"]
    totals = m.totals()
    for t in m.targets:
        versions = ", ".join(f"{k} {v}" for k, v in m.info[t].get("versions", {}).items())
        c = totals[t]
        out.append(f"| `{t}` | {versions} | {c['passed']} | {c['failed']} | {c['known']} | {c['error']} | "
                   f"{c['unsupported']} |")
    out += ["", "## Pass rate per spec level", "", "| target | " + " | ".join(LEVEL_ORDER) + " |",
            "| --- |" + " ---: |" * len(LEVEL_ORDER)]
    levels = m.level_totals()
    for t in m.targets:
        cells = []
        for level in LEVEL_ORDER:
            passed, total = levels.get((t, level), (0, 0))
            cells.append(f"{passed}/{total}" if total else "–")
        out.append(f"| `{t}` | " + " | ".join(cells) + " |")
    out += ["", "## Checks by clause", ""]
    header = "| check | level | " + " | ".join(f"`{_short(t)}`" for t in m.targets) + " | sentence |"
    for clause, rows in m.groups.items():
        out += [f"### {clause}", "", header, "| --- | --- |" + " --- |" * len(m.targets) + " --- |"]
        for check, level in rows:
            cells = [SYMBOL[m.outcome(check, t)] for t in m.targets]
            sentence = m.sentence(check).replace("|", "\\|")
            out.append(f"| `{check}` | {level} | " + " | ".join(cells) + f" | {sentence} |")
        out.append("")
    return "\n".join(out) + "\n"


def render_html(m: Matrix) -> str:
    e = html.escape
    head = "".join(f"<th class=t>{e(t)}</th>" for t in m.targets)
    rows = []
    for clause, checks in m.groups.items():
        rows.append(f"<tr class=clause><td colspan={len(m.targets) + 3}>{e(clause)}</td></tr>")
        for check, level in checks:
            cells = []
            for t in m.targets:
                outcome = m.outcome(check, t)
                cell = m.cells.get((check, t)) or {}
                title = e(cell.get("message", "") or "")
                cells.append(f"<td style='background:{COLOUR[outcome]}' title=\"{title}\">{SYMBOL[outcome]}</td>")
            rows.append(f"<tr><td class=c>{e(check)}</td><td>{e(level)}</td>{''.join(cells)}"
                        f"<td class=s>{e(m.sentence(check))}</td></tr>")
    totals = m.totals()
    total_rows = "".join(
        f"<tr><td>{e(t)}</td>" + "".join(f"<td>{totals[t][k]}</td>" for k in ("passed", "failed", "known", "error", "unsupported"))
        + "</tr>" for t in m.targets)
    return f"""<!doctype html><html><head><meta charset=utf-8><title>gatecheck compliance matrix</title>
<style>body{{font:13px system-ui,sans-serif;margin:1em}}table{{border-collapse:collapse}}td,th{{border:1px solid #ccc;
padding:2px 5px}}th.t{{writing-mode:vertical-rl;transform:rotate(180deg);font-weight:normal}}tr.clause td{{background:#333;
color:#fff;font-weight:bold}}td.c{{font-family:monospace;white-space:nowrap}}td.s{{min-width:30em}}</style></head><body>
<h1>gatecheck compliance matrix</h1><p>{m.check_count} distinct checks × {len(m.targets)} targets. Hover a cell for
the message.</p><table><tr><th>target</th><th>pass</th><th>FAIL</th><th>known</th><th>error</th><th>n/s</th></tr>
{total_rows}</table><h2>Checks by clause</h2><table><tr><th>check</th><th>level</th>{head}<th>sentence</th></tr>{''.join(rows)}</table>
</body></html>
"""


def main(argv: list | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m gatecheck.conformance.matrix", description=__doc__.splitlines()[0])
    parser.add_argument("results", nargs="+", help="results JSON files from conformance runs")
    parser.add_argument("--md", default="results/matrix.md", help="Markdown output (default results/matrix.md)")
    parser.add_argument("--html", default="results/matrix.html", help="HTML output (default results/matrix.html)")
    args = parser.parse_args(argv)
    missing = [p for p in args.results if not Path(p).exists()]
    if missing:
        print(f"error: no such results file: {', '.join(missing)}; run the conformance envs first", file=sys.stderr)
        return 2
    try:
        matrix = Matrix(*load_results(args.results))
    except (ValueError, KeyError, json.JSONDecodeError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    for path, text in ((args.md, render_markdown(matrix)), (args.html, render_html(matrix))):
        Path(path).parent.mkdir(parents=True, exist_ok=True)
        Path(path).write_text(text, encoding="utf-8")
    print(f"matrix: {matrix.check_count} checks × {len(matrix.targets)} targets → {args.md}, {args.html}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
