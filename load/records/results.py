"""Records: the one versioned format of everything load/ writes, written and read only here.

Rules of this module:
- Every record is a JSON object with ``schema_version`` and ``kind``. JSON-lines files (the runner's
  ``results.jsonl``, the gate's ``runs.jsonl``, an experiment's ``gates.jsonl`` and its packed
  ``.jsonl.gz``) hold one record a line; a whole gate (``pairs.json``) is one record in one file.
- Any file may be gzipped (``results.jsonl.gz``, ``pairs.json.gz``, as large committed data is kept): every
  reader opens files through :func:`open_text`, and a directory's records are its ``*.jsonl`` and
  ``*.jsonl.gz`` files (:func:`record_files`).
- Files of lines are only ever opened for appending; each line is flushed and fsync'ed before returning, so
  a crash or Ctrl-C loses nothing already written and any line can be read alone. Keys are sorted, so
  records diff cleanly. A document (``pairs.json``) is never overwritten.
- Reading upgrades every older form to the current version (:func:`upgrade`), so committed data stays
  readable; an unknown ``schema_version`` is refused with a clear message.
- Records measured on different machines (``CHECKED_ENVIRONMENT``) are not compared; ``check_compatible``
  says which key differs.

Kinds: ``run``, ``skip``, ``failure`` (the profile runner: one a measured run, skipped or failed case);
``gate-run`` (one side's measured run in one pair of a gate); ``gate`` (a whole gate: options, runs,
verdicts; ``load.gate.GateResult``); ``experiment-gate`` (one finished gate of an experiment, with its
``treatment`` label, and in a packed file the ``gate`` itself).

Schema history::

    1  (gatecheck 0.1) the runner's kinds "run", "skip", "failure". A "run" carries the LoadRun fields of
       load.run.measure (rps = 2xx responses / elapsed; latency_ms avg/p50/p99/max; non_2xx, errors,
       aborted; server {peak_rss, cpu_seconds, util, cpus}; oha {cpu_seconds, util, cpus, argv};
       generator_bound; flags) plus profile, case, group, cells, target, server, session, repeat,
       quick, method, pinning, versions and environment. A "skip" for an error (a target that
       does not resolve) also carries ``error: true``; plan skips (too few cores, ...) do not.
       In that version the gate wrote its own forms: runs.jsonl lines without a version or kind,
       pairs.json with kind "gatecheck-gate" (its own version 1), and an experiment's gates.jsonl lines
       without a version, whose "kind" was the treatment label (a packed line held pairs.json under
       "pairs", in place of the pair count).
    2  one format for all: the runner's kinds unchanged; "gate-run", "gate" and "experiment-gate" as above.
"""

from __future__ import annotations

import gzip
import json
import os
from pathlib import Path
from typing import IO, Any, Dict, Iterable, Mapping, Optional, Sequence

from .benchjson import write_json

__all__ = [
    "SCHEMA_VERSION",
    "RESULTS_FILE",
    "RUNNER_KINDS",
    "ResultsError",
    "append_record",
    "append_records",
    "write_document",
    "load_records",
    "load_document",
    "upgrade",
    "check_compatible",
    "CHECKED_ENVIRONMENT",
    "writable_dir",
    "open_text",
    "record_files",
]

SCHEMA_VERSION = 2
RESULTS_FILE = "results.jsonl"
RUNNER_KINDS = ("run", "skip", "failure")
KINDS = RUNNER_KINDS + ("gate-run", "gate", "experiment-gate")

# Environment keys that must match for two records to be compared side by side (pyperf's _CHECKED_METADATA).
CHECKED_ENVIRONMENT = ("cpu_model", "cpu_count", "kernel")


class ResultsError(ValueError):
    """A records file cannot be read, or records cannot be compared."""


def _stamped(record: Mapping[str, Any]) -> Dict[str, Any]:
    if record.get("kind") not in KINDS:
        raise ValueError(f"record kind must be one of {KINDS}, got {record.get('kind')!r}")
    return {**record, "schema_version": SCHEMA_VERSION}


def open_text(path: Path | str, mode: str = "r") -> IO[str]:
    """A records file as text, gzipped or not: ``.gz`` files through gzip (appending adds a gzip member, which
    readers join), so ``results.jsonl`` and ``results.jsonl.gz`` read alike."""
    path = Path(path)
    if path.suffix == ".gz":
        return gzip.open(path, mode + "t", encoding="utf-8")  # type: ignore[return-value]
    return open(path, mode, encoding="utf-8")


def append_records(path: Path, records: Iterable[Mapping[str, Any]]) -> list[dict]:
    """Append records as JSON lines (sorted keys, stamped with the version), flushed and fsync'ed
    before returning; returns them as written."""
    written = [_stamped(r) for r in records]
    path.parent.mkdir(parents=True, exist_ok=True)
    with open_text(path, "a") as fh:
        for record in written:
            fh.write(json.dumps(record, sort_keys=True, separators=(",", ":")) + "\n")
        fh.flush()
        os.fsync(fh.fileno())
    return written


def append_record(path: Path, record: Mapping[str, Any]) -> dict:
    """The record step of every run (the runner's results.jsonl, the gate's runs.jsonl, an experiment's
    gates.jsonl): one line, on disk before returning; returns the record as written."""
    return append_records(path, [record])[0]


def write_document(path: Path, record: Mapping[str, Any]) -> Path:
    """One record as a whole file (a gate's pairs.json: indented, sorted keys), refusing to overwrite."""
    return write_json(_stamped(record), path)


def upgrade(record: Any, where: str = "record") -> dict:
    """``record`` in the current version, from any version this gatecheck has written (the history above)."""
    if not isinstance(record, dict):
        raise ResultsError(f"{where}: not a JSON object")
    version = record.get("schema_version")
    if version == SCHEMA_VERSION:
        return record
    if version == 1 and record.get("kind") in RUNNER_KINDS:
        return {**record, "schema_version": SCHEMA_VERSION}
    if version == 1 and record.get("kind") == "gatecheck-gate":
        runs = [upgrade(r, where) for r in record.get("runs", [])]
        return {**record, "schema_version": SCHEMA_VERSION, "kind": "gate", "runs": runs}
    if version is None and "pair" in record and "side" in record:
        return {**record, "schema_version": SCHEMA_VERSION, "kind": "gate-run"}
    if version is None and "dir" in record and "kind" in record:
        out = {**record, "schema_version": SCHEMA_VERSION, "kind": "experiment-gate", "treatment": record["kind"]}
        if isinstance(record.get("pairs"), dict):  # packed: the gate's pairs.json where the pair count was
            out["gate"] = upgrade(out.pop("pairs"), where)
            out["pairs"] = out["gate"]["pairs"]
        return out
    raise ResultsError(
        f"{where}: record format version {version!r} not supported (this gatecheck reads "
        f"1 and {SCHEMA_VERSION}); render it with the gatecheck version that wrote it"
    )


def writable_dir(path: Path | str, option: str) -> Path:
    """Create ``path`` if needed and prove a file can be written in it, before any work starts.

    Raises ResultsError with one line naming ``option`` (e.g. ``--out``) and the system's reason, so a
    bad output path fails in a second instead of losing a run at its end.
    """
    import tempfile

    path = Path(path)
    try:
        path.mkdir(parents=True, exist_ok=True)
        with tempfile.NamedTemporaryFile(dir=path, prefix=".gatecheck-probe-"):
            pass
    except OSError as exc:
        raise ResultsError(
            f"{option} {path}: cannot write there ({exc.strerror or exc}); choose another directory"
        ) from None
    return path


def record_files(paths: Iterable[Path | str]) -> list[Path]:
    """The files of ``paths``: a file as given, a directory as every ``*.jsonl`` and ``*.jsonl.gz`` below it
    (sorted); ResultsError for a path that does not exist, a directory without one, or a file present both
    plain and gzipped (the same records twice, e.g. after ``gunzip -k``)."""
    out: list[Path] = []
    for raw in paths:
        path = Path(raw)
        if path.is_dir():
            found = sorted([*path.rglob("*.jsonl"), *path.rglob("*.jsonl.gz")])
            if not found:
                raise ResultsError(f"no *.jsonl or *.jsonl.gz results under {path}")
            twice = [p for p in found if p.suffix == ".gz" and p.with_suffix("") in found]
            if twice:
                raise ResultsError(f"{twice[0].with_suffix('')} is there both plain and gzipped; keep one of them")
            out.extend(found)
        elif path.is_file():
            out.append(path)
        else:
            raise ResultsError(f"{path}: no such results file or directory")
    return out


def load_records(paths: Iterable[Path | str], kinds: Optional[Sequence[str]] = None) -> list[dict]:
    """Every record of the given files (directories: every ``*.jsonl`` and ``*.jsonl.gz`` below them), in file
    order, in the current version; only those of ``kinds`` when given."""
    records = []
    for path in record_files(paths):
        with open_text(path, "r") as fh:
            for number, line in enumerate(fh, 1):
                if not line.strip():
                    continue
                try:
                    record = json.loads(line)
                except ValueError as exc:
                    if number > 1 and not line.endswith("\n"):
                        continue  # a last line cut short by a crash: everything before it stands
                    raise ResultsError(f"{path}:{number}: not a JSON line ({exc})") from None
                record = upgrade(record, f"{path}:{number}")
                if kinds is None or record["kind"] in kinds:
                    records.append(record)
    return records


def load_document(path: Path | str) -> dict:
    """The one record of a document file (a gate's pairs.json, or pairs.json.gz), in the current version."""
    try:
        with open_text(path, "r") as fh:
            return upgrade(json.load(fh), str(path))
    except OSError as exc:
        raise ResultsError(f"{path}: cannot read ({exc.strerror or exc})") from None
    except ValueError as exc:
        if isinstance(exc, ResultsError):
            raise
        raise ResultsError(f"{path}: not a JSON document ({exc})") from None


def check_compatible(records: Iterable[Mapping[str, Any]]) -> None:
    """Raise ResultsError if the records were measured on machines that differ in a checked key."""
    seen: dict[str, tuple[Any, str]] = {}
    for record in records:
        env = record.get("environment", {})
        for key in CHECKED_ENVIRONMENT:
            value = env.get(key)
            if key in seen and seen[key][0] != value:
                raise ResultsError(
                    f"incompatible results: environment {key!r} is {seen[key][0]!r} in session {seen[key][1]} "
                    f"but {value!r} in session {record.get('session')}; compare runs from one machine, "
                    "or pass --force to render them anyway"
                )
            seen.setdefault(key, (value, str(record.get("session"))))
