"""Report: records as the seed documents' tables, SVG plots, and the fidelity document against the seed tables.

Rules of this package:
- It reads records (``load.records``) and the plan's profiles for titles and columns (``load.plan``); it
  never measures and never imports the run or the gate.
- Rendering is a pure function of the records (no clock, no machine), so golden-text tests pin it down; only
  ``write_report`` and ``write_fidelity`` touch files.
- Which run stands for a row is decided once (``rows``): the latest session, the best concurrency, the
  median repeat. Skips, failures and flagged runs are shown with their reasons, never dropped.
"""

from __future__ import annotations

from .fidelity import CV_TARGET, Comparison, FidelityError, Line, compare, seed_profiles
from .fidelity_md import write_fidelity
from .plot import latency_svg, rps_svg
from .ranking import Inversion, average_ranks, inversions, spearman
from .rows import Row, env_value, latest_per_key, oha_ceiling, select_rows, version_key
from .seedtables import SEED_DIR, SeedDocument, SeedError, SeedRow, SeedTable, load_seed_file, load_seeds
from .tables import METHOD_TEXT, render, render_vs, version_lines, write_report

__all__ = [
    "render",
    "render_vs",
    "write_report",
    "version_lines",
    "METHOD_TEXT",
    "latency_svg",
    "rps_svg",
    "Row",
    "select_rows",
    "oha_ceiling",
    "env_value",
    "version_key",
    "latest_per_key",
    "CV_TARGET",
    "Comparison",
    "FidelityError",
    "Line",
    "compare",
    "seed_profiles",
    "write_fidelity",
    "Inversion",
    "average_ranks",
    "inversions",
    "spearman",
    "SEED_DIR",
    "SeedDocument",
    "SeedError",
    "SeedRow",
    "SeedTable",
    "load_seed_file",
    "load_seeds",
]
