"""The session's results: one record per (check, target), appended as decided, one JSON document at the end.

While the session runs, ``<results>.partial.jsonl`` (next to ``--results-json``) gets one JSON line per
target started and per check decided, so a run killed by SIGKILL or the OOM killer leaves what it decided.
At the end the JSON document is written (atomically) and the partial file removed. A session killed before
its end is finished by ``finish.py``, run by the server reaper once the session's process is gone: the same
document from the partial file, marked ``"incomplete"``, and the JUnit XML from the same records.

Schema history (``schema_version``):
  1 — first version: {"schema_version", "created", "targets": [...], "checks": [...]}; each check record has
      check, target, server, interface, outcome, clause, level, area, duration, message.
  2 — outcomes "timeout", "interrupted" and "noted" (a failed INFO check) (``outcomes.py``); an outcome is
      never null; "known" only for a listed check that failed its assertion (an error on a listed check is
      "error"); each check record also has ``sentence`` and ``accepts`` (its row of the levels table,
      ``conformance/levels/``), and ``level`` may be INFO; a document finished after the session was killed
      has ``"incomplete"`` (why).
      Added later, without a version change (readers of 2 ignore them): the outcome "crashed" (the server died
      while the check's request was in flight) and a top-level ``by_level`` ({level group: {"failed", "crashed",
      "timeout": count}}, the summary's failures by level); a failed MAY check is "noted"; a top-level ``expectations``
      section, the expectation files read and the entries that matched no check (``stale.py``): {"files",
      "entries", "matched", "out_of_range", "stale": [{"file", "line", "check", "server", "targets",
      "versions", "why"}]}.

An optional ``incomplete`` string (no schema change: absent when empty) says what the session could not run,
e.g. "h2spec not installed — Go is missing ...": such a run exits non-zero. A check the session deadline cut
before it ran is a record too, outcome ``interrupted``, with ``"incomplete"`` (why) in the record. An optional
``restarts`` list has one entry per server found dead and started again: {"target", "after" (the check decided
last on it), "exit_code", "log" (its end)}.

Partial lines: {"record": "session", "schema_version", "created", "pid"} first, then {"record": "target", ...target
fields} and {"record": "check", ...check fields}. The session holds an exclusive lock (``flock``) on the partial
file while it runs: a second run on the same ``--results-json`` is refused in one line. An append that fails (a
full disk) is said at once, the run fails, and the summary says how many records the partial file kept.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import time
from pathlib import Path

import pytest

from gatecheck.conformance.plugin.outcomes import FINDINGS, OUTCOMES, Verdict, level_group, worse
from gatecheck.conformance.spec.results import NO_TARGET, check_id_of

__all__ = [
    "Results",
    "ResultsBusy",
    "check_id_of",
    "partial_path",
    "partial_record",
    "SCHEMA_VERSION",
    "set_meta",
    "meta_of",
    "document",
    "document_text",
    "write_document",
    "NO_TARGET",
]

SCHEMA_VERSION = 2
_META_KEY = pytest.StashKey[dict]()


def set_meta(item, meta: dict) -> None:
    item.stash[_META_KEY] = meta


def meta_of(item) -> dict | None:
    return item.stash.get(_META_KEY, None)


def partial_path(path: Path) -> Path:
    return path.with_name(path.name + ".partial.jsonl")


class ResultsBusy(Exception):
    """Another run holds the lock of this results file (``str()``: one line for the user)."""


class Results:
    """Records by (check, target), the targets, and the partial file they are appended to."""

    def __init__(self, path: Path) -> None:
        self.path = Path(path)
        self.partial = partial_path(self.path)
        self.records: dict = {}
        self.targets: dict = {}
        self._written: set = set()
        self.extra: dict = {}  # further top-level sections of the document ("expectations")
        self.incomplete: list = []  # why the session did not run all it selected, e.g. "h2spec not installed — ..."
        self.restarts: list = []  # servers found dead between or during checks and started again
        self.last_check: dict = {}  # target -> the check decided last on it
        self.kept = 0  # check records appended to the partial file
        self.lost = ""  # the first failed append (the partial file then lacks records)
        self.on_loss = None  # called once with that message, as it happens
        self._lock = None

    def open(self) -> None:
        """Create the partial file now (so a bad path fails before any work), holding its lock for the whole
        run: a second run on the same ``--results-json`` gets :class:`ResultsBusy` instead of overwriting it."""
        self.path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(self.partial, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            holder = _holder(fd)
            os.close(fd)
            raise ResultsBusy(
                f"--results-json {self.path}: another gatecheck run{holder} is writing it; wait "
                "for it to end or give this run another --results-json"
            ) from None
        self._lock = fd
        os.ftruncate(fd, 0)
        header = {"record": "session", "schema_version": SCHEMA_VERSION, "created": _now(), "pid": os.getpid()}
        os.write(fd, (json.dumps(header) + "\n").encode())

    def add_target(self, st, versions: dict | None = None) -> None:
        record = self.targets.setdefault(
            st.target.name,
            {
                "target": st.target.name,
                "server": st.target.server,
                "interface": st.target.interface,
                "http": st.target.http,
                "features": st.capabilities.features(),
                "versions": {},
            },
        )
        if st.target.name != str(st.target):
            record["spec"] = str(st.target)  # a named or command target: what was started
        if versions and record["versions"] != versions:
            record["versions"] = dict(versions)
            self._append({"record": "target", **record})

    def fold(self, item, verdict: Verdict, duration: float) -> dict | None:
        """Fold one phase's verdict (None: the phase said nothing) into the record of its item."""
        meta = meta_of(item)
        if meta is None:
            return None
        rec = self.records.setdefault(
            (meta["check"], meta["target"]), {**meta, "outcome": None, "duration": 0.0, "message": ""}
        )
        rec["duration"] = round(rec["duration"] + duration, 4)
        if verdict is not None and worse(rec["outcome"], verdict.outcome):
            rec["outcome"], rec["message"] = verdict.outcome, verdict.message[:1000]
        return rec

    def decided(self, item) -> None:
        """The item's phases are over: append its record to the partial file."""
        meta = meta_of(item)
        key = (meta["check"], meta["target"]) if meta else None
        rec = self.records.get(key)
        if rec is None or key in self._written:
            return
        if rec["outcome"] is None:  # e.g. a phase that produced no report at all
            rec["outcome"], rec["message"] = "error", "the check produced no result"
        self.last_check[key[1]] = key[0]
        self._written.add(key)
        self._append({"record": "check", **rec}, checks=1)

    def restarted(self, target: str, exit_code, after: str, log: str) -> None:
        """``target``'s server was found dead and is started again: a restart record (``after`` the check that
        used it last, its exit code, the end of its log), in the partial file now and in the document's
        ``restarts``."""
        record = {
            "target": target,
            "after": after or self.last_check.get(target, ""),
            "exit_code": exit_code,
            "log": log[-2000:],
        }
        self._take_restart(record)

    def _take_restart(self, record: dict) -> bool:
        if record in self.restarts:
            return False
        self.restarts.append(dict(record))
        self._append({"record": "restart", **record})
        return True

    def take_target(self, record: dict) -> None:
        """A target record written by another session (a ``--jobs`` child): kept, and appended when new. One
        without versions never replaces one with them (a shard whose server never started knows less)."""
        if self._keep_target(record):
            self._append({"record": "target", **record})

    def take_check(self, record: dict) -> None:
        """A check record decided by another session (a ``--jobs`` child): kept and appended, once."""
        if self._keep_check(record):
            self._append({"record": "check", **record}, checks=1)

    def take_lines(self, lines: list) -> int:
        """Another session's new partial-file lines (``partial_record``): its target and check records taken
        as ``take_target`` and ``take_check`` take them, the new ones appended as that session wrote them, in
        one write; how many records the lines held."""
        new, taken, checks = [], 0, 0
        for line in lines:
            kind, record = partial_record(line)
            if kind == "target":
                kept = self._keep_target(record)
            elif kind == "check":
                kept = self._keep_check(record)
            elif kind == "restart":
                self._take_restart(record)
                continue
            else:
                continue
            taken += 1
            if kept:
                new.append(line)
                checks += kind == "check"
        self._write_lines(new, checks)
        return taken

    def _keep_target(self, record: dict) -> bool:
        current = self.targets.get(record["target"])
        if current is not None and current.get("versions") and not record.get("versions"):
            return False
        if current == record:
            return False
        self.targets[record["target"]] = dict(record)
        return True

    def _keep_check(self, record: dict) -> bool:
        key = (record["check"], record["target"])
        if key in self._written:
            return False
        self.records[key] = dict(record)
        self._written.add(key)
        return True

    def write(self) -> bool:
        """Write the document (when any check ran) and remove the partial file; whether it was written."""
        if not self.records:
            self._drop_partial()
            return False
        incomplete = "; ".join(self.incomplete) or None
        data = document(self.targets.values(), self.records.values(), incomplete)
        restarts = {"restarts": self.restarts} if self.restarts else {}
        write_document(self.path, {**data, "by_level": self.findings_by_level(), **restarts, **self.extra})
        self._drop_partial()
        return True

    def _drop_partial(self) -> None:
        try:
            self.partial.unlink()
        except OSError:
            pass

    def counts(self) -> dict:
        totals = {o: 0 for o in OUTCOMES}
        for rec in self.records.values():
            if rec["outcome"] in totals:
                totals[rec["outcome"]] += 1
        return totals

    def failures_by_level(self) -> dict:
        """level group (MUST/SHOULD (spec), POLICY, MAY, INFO) -> checks × targets that failed, crashed the server
        or timed out."""
        return {group: sum(outcomes.values()) for group, outcomes in self.findings_by_level().items()}

    def findings_by_level(self) -> dict:
        """level group -> {outcome: checks × targets} for the outcomes in ``FINDINGS`` (the document's
        ``by_level``): a crash counts at the level of the check whose request was in flight."""
        groups: dict = {}
        for rec in self.records.values():
            if rec["outcome"] in FINDINGS:
                outcomes = groups.setdefault(level_group(rec["level"]), {})
                outcomes[rec["outcome"]] = outcomes.get(rec["outcome"], 0) + 1
        return groups

    def kept_line(self) -> str:
        """Where the records are when the document could not be written: how many of them the partial file
        kept, and how many were lost."""
        total = len(self.records)
        lost = f"; {total - self.kept} lost ({self.lost})" if self.kept < total else ""
        return f"{self.kept} of {total} records decided are kept in {self.partial}{lost}"

    def _append(self, record: dict, checks: int = 0) -> None:
        self._write_lines([json.dumps(record, sort_keys=True)], checks)

    def _write_lines(self, lines: list, checks: int = 0) -> None:
        """Append ``lines`` (``checks`` of them check records); a failure is said once, at once (``on_loss``),
        and counted: the run then fails."""
        if not lines:
            return
        data = "".join(text + "\n" for text in lines).encode()
        size = None
        try:
            with open(self.partial, "ab") as fh:
                size = fh.tell()
                fh.write(data)
        except OSError as exc:
            if size is not None:  # what part of the lines went in is taken back: no torn line, a true count
                with contextlib.suppress(OSError):
                    os.truncate(self.partial, size)
            if not self.lost:
                self.lost = f"could not append to {self.partial}: {exc.strerror or exc}"
                if self.on_loss is not None:
                    self.on_loss(
                        f"gatecheck: {self.lost}; records decided from now on are kept in memory only, "
                        "until the results document is written"
                    )
            return
        self.kept += checks


def _holder(fd: int) -> str:
    """ " (pid N)" of the run whose header the locked partial file holds, or ""."""
    try:
        first = os.pread(fd, 4096, 0).split(b"\n", 1)[0]
        return f" (pid {int(json.loads(first)['pid'])})"
    except (OSError, ValueError, KeyError, TypeError):
        return ""


def partial_record(line: str) -> tuple:
    """(kind, record) of one partial-file line: kind "target", "check", or None for a torn or foreign line."""
    try:
        rec = json.loads(line)
    except ValueError:
        return None, None
    return rec.pop("record", None), rec


def document(targets, records, incomplete: str | None = None) -> dict:
    """The results document of a session (``incomplete``: why it was not finished by the session itself)."""
    data = {
        "schema_version": SCHEMA_VERSION,
        "created": _now(),
        "targets": sorted(targets, key=lambda t: t["target"]),
        "checks": sorted(records, key=lambda r: (r["check"], r["target"])),
    }
    if incomplete:
        data["incomplete"] = incomplete
    return data


def write_document(path: Path, data: dict) -> None:
    """Write ``data`` to ``path`` atomically (a reader never sees half a file)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(path.suffix + ".tmp")
    try:
        tmp.write_text(document_text(data), encoding="utf-8")
        os.replace(tmp, path)
    except OSError:
        tmp.unlink(missing_ok=True)  # a full disk: no torn file left beside the results
        raise


def document_text(data: dict) -> str:
    """``data`` as JSON, its keys sorted: a list of records (targets, checks) one record per line, anything
    else indented. (Python's JSON encoder is ten times slower indenting: 2.5 s of CPU for a run's 7,500
    records, where a line per record takes its C encoder a tenth of that.)"""
    keys = sorted(data)
    lines = ["{"]
    for i, key in enumerate(keys):
        value = data[key]
        if isinstance(value, list) and value and all(isinstance(item, dict) for item in value):
            text = "[\n" + ",\n".join("  " + json.dumps(item, sort_keys=True) for item in value) + "\n ]"
        else:
            text = json.dumps(value, indent=1, sort_keys=True).replace("\n", "\n ")
        lines.append(f" {json.dumps(key)}: {text}{',' if i < len(keys) - 1 else ''}")
    lines.append("}")
    return "\n".join(lines) + "\n"


def _now() -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
