"""Results: one JSON line per measured run, appended as each run finishes, never overwritten.

Rules of this module:
- Every line is a complete record (``schema_version``, kind, what ran, what was measured, and the
  environment), so a crash or Ctrl-C loses nothing already measured and any line can be read alone.
- Files are only ever opened for appending; each line is flushed and fsync'ed before the next run starts.
- Keys are sorted, so records diff cleanly. An unknown ``schema_version`` is refused with a clear message.
- Records measured on different machines (``CHECKED_ENVIRONMENT``) are not compared; ``check_compatible``
  says which key differs.

Schema history::

    1  (gatecheck 0.1) kinds "run", "skip", "failure". A "run" carries the LoadRun fields of
       load.measure (rps = 2xx responses / elapsed; latency_ms avg/p50/p99/max; non_2xx, errors,
       aborted; server {peak_rss, cpu_seconds, util, cpus}; oha {cpu_seconds, util, cpus, argv};
       generator_bound; flags) plus profile, case, group, cells, target, server, session, repeat,
       quick, method, pinning, versions and environment. A "skip" for an error (a target that
       does not resolve) also carries ``error: true``; plan skips (too few cores, ...) do not.
"""
from __future__ import annotations

import json
import os
import platform
import socket
import sys
from pathlib import Path
from typing import Any, Iterable, Mapping

__all__ = [
    "SCHEMA_VERSION",
    "RESULTS_FILE",
    "ResultsError",
    "append_record",
    "append_line",
    "load_records",
    "environment",
    "check_compatible",
    "CHECKED_ENVIRONMENT",
    "host_load",
    "writable_dir",
]

SCHEMA_VERSION = 1
SUPPORTED_VERSIONS = (1,)
RESULTS_FILE = "results.jsonl"
KINDS = ("run", "skip", "failure")

# Environment keys that must match for two records to be compared side by side (pyperf's _CHECKED_METADATA).
CHECKED_ENVIRONMENT = ("cpu_model", "cpu_count", "kernel")


class ResultsError(ValueError):
    """A results file cannot be read, or records cannot be compared."""


def append_record(path: Path, record: Mapping[str, Any]) -> None:
    """Append one record as a JSON line (sorted keys), flushed to disk before returning."""
    if record.get("kind") not in KINDS:
        raise ValueError(f"record kind must be one of {KINDS}, got {record.get('kind')!r}")
    append_line(path, {"schema_version": SCHEMA_VERSION, **record})


def append_line(path: Path, record: Mapping[str, Any]) -> None:
    """The record step of every run (the runner's records, the gate's runs.jsonl): one JSON line with sorted
    keys, flushed and fsync'ed before returning, so a crash or Ctrl-C keeps every record already written."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "a", encoding="utf-8") as fh:
        fh.write(json.dumps(record, sort_keys=True, separators=(",", ":")) + "\n")
        fh.flush()
        os.fsync(fh.fileno())


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
        raise ResultsError(f"{option} {path}: cannot write there ({exc.strerror or exc}); choose another directory") from None
    return path


def _files(paths: Iterable[Path | str]) -> list[Path]:
    out: list[Path] = []
    for raw in paths:
        path = Path(raw)
        if path.is_dir():
            found = sorted(path.rglob("*.jsonl"))
            if not found:
                raise ResultsError(f"no *.jsonl results under {path}")
            out.extend(found)
        elif path.is_file():
            out.append(path)
        else:
            raise ResultsError(f"{path}: no such results file or directory")
    return out


def load_records(paths: Iterable[Path | str]) -> list[dict]:
    """Every record of the given files (directories: every ``*.jsonl`` below them), in file order."""
    records = []
    for path in _files(paths):
        with open(path, encoding="utf-8") as fh:
            for number, line in enumerate(fh, 1):
                if not line.strip():
                    continue
                try:
                    record = json.loads(line)
                except ValueError as exc:
                    if number > 1 and not line.endswith("\n"):
                        continue  # a last line cut short by a crash: everything before it stands
                    raise ResultsError(f"{path}:{number}: not a JSON line ({exc})") from None
                version = record.get("schema_version") if isinstance(record, dict) else None
                if version not in SUPPORTED_VERSIONS:
                    raise ResultsError(
                        f"{path}:{number}: results format version {version!r} not supported "
                        f"(this gatecheck reads {', '.join(map(str, SUPPORTED_VERSIONS))}); "
                        "render it with the gatecheck version that wrote it"
                    )
                records.append(record)
    return records


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


def _cpu_model() -> str:
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as fh:
            for line in fh:
                if line.lower().startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine() or "unknown"


def _os_name() -> str:
    try:
        with open("/etc/os-release", encoding="utf-8") as fh:
            for line in fh:
                if line.startswith("PRETTY_NAME="):
                    return line.split("=", 1)[1].strip().strip('"')
    except OSError:
        pass
    return platform.system()


def environment() -> dict:
    """The machine a run was measured on (the same for every record of a session)."""
    try:
        available = len(os.sched_getaffinity(0))
    except AttributeError:  # pragma: no cover
        available = os.cpu_count() or 1
    return {
        "cpu_model": _cpu_model(),
        "cpu_count": os.cpu_count() or 1,
        "cpus_available": available,
        "kernel": platform.release(),
        "os": _os_name(),
        "hostname": socket.gethostname(),
        "harness_python": ".".join(map(str, sys.version_info[:3])),
    }


def host_load() -> dict:
    """How busy the machine was just before a run: 1-minute load average and CPU pressure (PSI, % of
    the last 10 s some task waited for a CPU). On a shared machine this explains outliers."""
    load: dict = {}
    try:
        load["loadavg1"] = round(os.getloadavg()[0], 2)
    except OSError:  # pragma: no cover
        pass
    try:
        with open("/proc/pressure/cpu", encoding="utf-8") as fh:
            first = fh.readline().split()
        load["cpu_pressure_avg10"] = float(dict(kv.split("=") for kv in first[1:])["avg10"])
    except (OSError, KeyError, ValueError, IndexError):
        pass
    return load
