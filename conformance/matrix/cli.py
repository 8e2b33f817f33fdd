"""``python -m gatecheck.conformance.matrix RESULTS... --out DIR``: render the matrix pages into DIR."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from gatecheck.conformance.matrix.checkpage import by_check, check_pages, render_check_html, render_checks_html
from gatecheck.conformance.matrix.htmlpage import GENERATOR, render_index_html, render_target_html
from gatecheck.conformance.matrix.mdpage import MARKER, render_index_md, render_target_md
from gatecheck.conformance.matrix.model import Matrix, load_results, slug
from gatecheck.conformance.matrix.servers import server_rows

__all__ = ["main", "write_pages"]

USAGE = """\
RESULTS are results JSON files of conformance runs (--results-json; a directory stands for its *.json), e.g.
every server env's: python -m gatecheck.conformance.matrix results --out docs/matrix
Written into DIR: index.html and README.md (the overview: servers, then configurations × areas), <target>.html
and <target>.md per configuration, checks.html (every check × every server) and checks/<check>.html (one check
on every configuration, with the evidence); pages of an earlier render that this one did not write are removed
(only this command's own pages). The pages are static: they open from the file system or a downloaded artifact."""


def write_pages(matrix: Matrix, out: Path) -> list:
    """Write every page into ``out``; the paths written."""
    (out / "checks").mkdir(parents=True, exist_ok=True)
    records_of = by_check(matrix)
    names = check_pages(records_of)
    pages = {
        "index.html": render_index_html(matrix),
        "README.md": render_index_md(matrix),
        "checks.html": render_checks_html(matrix, records_of, names),
    }
    for target in matrix.targets:
        pages[f"{slug(target)}.html"] = render_target_html(matrix, target, lambda c: f"checks/{names[c]}")
        pages[f"{slug(target)}.md"] = render_target_md(matrix, target)
    order = {row.server: i for i, row in enumerate(server_rows(matrix))}
    for check, records in records_of.items():
        pages[f"checks/{names[check]}"] = render_check_html(matrix, check, records, order)
    for name, text in pages.items():
        (out / name).write_text(text, encoding="utf-8")
    _remove_stale(out, set(pages))
    return [out / name for name in pages]


def _remove_stale(out: Path, written: set) -> None:
    """Remove this command's pages of an earlier render that this one did not write (a target renamed or
    gone); a file is this command's when it carries its marker, so nothing else in DIR is touched."""
    for path in list(out.glob("*.html")) + list(out.glob("*.md")) + list(out.glob("checks/*.html")):
        if path.relative_to(out).as_posix() in written:
            continue
        with open(path, encoding="utf-8", errors="replace") as fh:
            head = fh.read(400)
        if GENERATOR in head or head.startswith(MARKER):
            path.unlink()


def main(argv: list | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m gatecheck.conformance.matrix",
        description="The compliance matrix: server targets × spec areas, and a page "
        "per target, as static HTML and Markdown.",
        epilog=USAGE,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("results", nargs="+", help="results JSON files (or directories of them)")
    parser.add_argument("--out", default="results/matrix", help="directory for the pages (default results/matrix)")
    args = parser.parse_args(argv)
    missing = [p for p in args.results if not Path(p).exists()]
    if missing:
        print(
            f"error: no such results file: {', '.join(missing)}; run the conformance envs first (tox -e granian, ...)",
            file=sys.stderr,
        )
        return 2
    try:
        matrix = Matrix(*load_results(args.results))
    except (ValueError, KeyError, TypeError, json.JSONDecodeError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    if not matrix.targets:
        print("error: the results hold no target; nothing to render", file=sys.stderr)
        return 2
    try:
        written = write_pages(matrix, Path(args.out))
    except OSError as exc:
        print(f"error: cannot write the matrix into {args.out}: {exc.strerror or exc}", file=sys.stderr)
        return 2
    servers = len({info["server"] for info in matrix.info.values()})
    print(
        f"matrix: {matrix.check_count} checks × {len(matrix.targets)} configurations of {servers} servers × "
        f"{len(matrix.areas)} areas → {len(written)} pages in {args.out} (open {Path(args.out) / 'index.html'})"
    )
    return 0
