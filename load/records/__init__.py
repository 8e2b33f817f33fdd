"""Records: the one versioned format of everything ``load`` writes, and its pytest-benchmark export.

Rules of this package:
- It imports nothing else of ``load``: the run and the gate write records through it, the reports and the
  gate read them through it; it knows neither side.
- A record is written once, appended and fsync'ed (``results.append_record``), and read in the current
  version whatever version wrote it (``results.upgrade``); gzipped files read as plain ones.
- No clock and no machine: what a record says about the host was measured by the run.
"""

from __future__ import annotations

from . import benchjson
from .results import (
    CHECKED_ENVIRONMENT,
    RESULTS_FILE,
    RUNNER_KINDS,
    SCHEMA_VERSION,
    ResultsError,
    append_record,
    append_records,
    check_compatible,
    load_document,
    load_records,
    open_text,
    record_files,
    upgrade,
    writable_dir,
    write_document,
)

__all__ = [
    "SCHEMA_VERSION",
    "RESULTS_FILE",
    "RUNNER_KINDS",
    "CHECKED_ENVIRONMENT",
    "ResultsError",
    "append_record",
    "append_records",
    "write_document",
    "load_records",
    "load_document",
    "upgrade",
    "check_compatible",
    "writable_dir",
    "open_text",
    "record_files",
    "benchjson",
]
