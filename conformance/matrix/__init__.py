"""The compliance matrix: server targets × spec areas, and one page per target, as static HTML and Markdown.

    python -m gatecheck.conformance.matrix results/*.json --out docs/matrix

Input: results files of conformance runs (schema_version 1 or 2), merged (later files win for a check ×
target). ``model`` tallies each target × area (the share of MUST/SHOULD checks passed; POLICY and INFO apart),
``view`` says how a cell and a target page's sections show, ``htmlpage`` and ``mdpage`` render them, ``cli``
writes the pages: ``index.html`` and ``README.md`` (the overview), ``<target>.html`` and ``<target>.md``
(its failures and known deviations, each with its clause's sentence and the evidence).
"""

from gatecheck.conformance.matrix.cli import main, write_pages
from gatecheck.conformance.matrix.htmlpage import render_index_html, render_target_html
from gatecheck.conformance.matrix.mdpage import render_index_md, render_target_md
from gatecheck.conformance.matrix.model import AREAS, Matrix, Tally, area_of, load_results, slug

__all__ = [
    "main",
    "write_pages",
    "render_index_html",
    "render_target_html",
    "render_index_md",
    "render_target_md",
    "AREAS",
    "Matrix",
    "Tally",
    "area_of",
    "load_results",
    "slug",
]
