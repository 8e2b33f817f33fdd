"""The session's results: one record per (check, target), written as JSON at the end.

Schema history (``schema_version``):
  1 — first version: {"schema_version", "created", "targets": [...], "checks": [...]}; each check record has
      check, target, server, interface, outcome, clause, level, area, duration, message.

Outcomes: passed, failed, error (the check could not run: e.g. the server did not start), known (a known
deviation that still deviates), fixed (a known deviation that now passes: update the expectation file),
unsupported (the target lacks a feature the check needs), skipped.
"""
from __future__ import annotations

import json
import os
import time
from pathlib import Path

__all__ = ["Results", "check_id_of", "SCHEMA_VERSION", "UNSUPPORTED_PREFIX", "OUTCOMES"]

SCHEMA_VERSION = 1
UNSUPPORTED_PREFIX = "not supported:"
OUTCOMES = ("passed", "failed", "error", "known", "fixed", "unsupported", "skipped")


def check_id_of(item) -> str:
    """``file.py::function[params]`` without the target: the same check on several targets shares an id."""
    base = f"{Path(str(item.path)).name}::{getattr(item, 'originalname', item.name)}"
    callspec = getattr(item, "callspec", None)
    if callspec is None:
        return base
    ids = callspec.id
    server = callspec.params.get("server")
    server_id = getattr(server, "id", None)
    if server_id:
        for form in (f"{server_id}-", f"-{server_id}", server_id):
            if form in ids:
                ids = ids.replace(form, "", 1)
                break
    return f"{base}[{ids}]" if ids else base


class Results:
    def __init__(self) -> None:
        self.records: dict = {}
        self.targets: dict = {}

    def add_target(self, st, versions: dict | None = None) -> None:
        record = self.targets.setdefault(str(st.target), {
            "target": str(st.target),
            "server": st.target.server,
            "interface": st.target.interface,
            "http": st.target.http,
            "features": st.capabilities.features(),
            "versions": {},
        })
        if versions:
            record["versions"] = dict(versions)

    def record(self, item, report) -> None:
        """Fold one pytest report (setup/call/teardown) into the record of its item."""
        meta = item.stash.get(_META_KEY, None) if hasattr(item, "stash") else None
        if meta is None:
            return
        key = (meta["check"], meta["target"])
        rec = self.records.setdefault(key, {**meta, "outcome": None, "duration": 0.0, "message": ""})
        rec["duration"] = round(rec["duration"] + getattr(report, "duration", 0.0), 4)
        outcome = _outcome(report)
        if outcome is None:
            return
        # A failing teardown never hides a failing call; the first non-pass outcome wins.
        if rec["outcome"] in (None, "passed") or outcome in ("failed", "error"):
            if not (rec["outcome"] == "failed" and outcome == "error"):
                rec["outcome"] = outcome
                rec["message"] = _message(report)

    def write(self, path: Path) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        data = {
            "schema_version": SCHEMA_VERSION,
            "created": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
            "targets": sorted(self.targets.values(), key=lambda t: t["target"]),
            "checks": sorted(self.records.values(), key=lambda r: (r["check"], r["target"])),
        }
        tmp = path.with_suffix(path.suffix + ".tmp")
        tmp.write_text(json.dumps(data, indent=1, sort_keys=True) + "\n", encoding="utf-8")
        os.replace(tmp, path)

    def counts(self) -> dict:
        totals = {o: 0 for o in OUTCOMES}
        for rec in self.records.values():
            if rec["outcome"] in totals:
                totals[rec["outcome"]] += 1
        return totals


def _outcome(report) -> str | None:
    if report.when == "call" or report.outcome != "passed":
        if hasattr(report, "wasxfail"):
            return "known" if report.skipped else "fixed"
        if report.passed:
            return "passed" if report.when == "call" else None
        if report.skipped:
            reason = report.longrepr[2] if isinstance(report.longrepr, tuple) else str(report.longrepr)
            return "unsupported" if UNSUPPORTED_PREFIX in reason else "skipped"
        if report.failed:
            if "[XPASS(strict)]" in str(report.longrepr):
                return "fixed"
            return "failed" if report.when == "call" else "error"
    return None


def _message(report) -> str:
    if hasattr(report, "wasxfail") and report.wasxfail:
        return str(report.wasxfail)[:500]
    if isinstance(report.longrepr, tuple):
        return str(report.longrepr[2])[:500]
    text = getattr(report, "longreprtext", "") or ""
    lines = [ln for ln in text.splitlines() if ln.startswith("E ")]
    return "\n".join(lines[:8])[:1000] if lines else text[-500:]


try:  # pytest >= 7
    import pytest

    _META_KEY = pytest.StashKey[dict]()
except AttributeError:  # pragma: no cover
    _META_KEY = None


def set_meta(item, meta: dict) -> None:
    item.stash[_META_KEY] = meta
