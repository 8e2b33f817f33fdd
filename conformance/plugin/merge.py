"""Merging the child sessions of a ``--jobs`` run (``jobs.py``) into what one serial session would have written.

Rules of this module:

1. Every child session writes its own results JSON (its partial file while it runs), JUnit XML and collection
   (the ``(check, target)`` pairs it collected before deselection) in the run's scratch directory; the merged
   files are the union of those, one record per (check, target), as a serial run has.
2. Expectation entries are judged over the merged records and the merged collection, never per child: a child
   that did not run a target would call that target's entries stale. A check collected with no target in a
   child (it applies to none of that child's targets) counts as collected with none only if no child
   collected it with a target, as one session of all the targets would have.
3. A child that ended without its results (killed, crashed, usage error) is an error for each of its targets:
   one record ``session`` per target, and the run is incomplete; what it decided before is kept.
"""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from pathlib import Path

from gatecheck.conformance.plugin.finish import junit_of, read_partial
from gatecheck.conformance.plugin.resultsfile import partial_path
from gatecheck.conformance.plugin.stale import Collected

__all__ = [
    "read_child",
    "write_collected",
    "read_collected",
    "merge_junit",
    "crash_record",
    "exit_status",
    "CRASH_CHECK",
]

CRASH_CHECK = "session"  # the check id of a crashed child's record for each of its targets


def read_child(results: Path) -> tuple:
    """(targets, checks, incomplete, restarts) a child left: its results document, else (killed before it wrote
    it, or its reaper is still finishing it) its partial file (whose restarts the parent took as they came)."""
    for _ in range(2):  # the reaper writes the document before it removes the partial file
        try:
            data = json.loads(results.read_text(encoding="utf-8"))
            return data.get("targets", []), data.get("checks", []), data.get("incomplete"), data.get("restarts", [])
        except (OSError, ValueError):
            pass
        try:
            targets, checks = read_partial(partial_path(results))
            return targets, checks, "its session was killed before it finished", []
        except OSError:
            continue
    return [], [], None, []


def write_collected(path: Path, collected: Collected) -> None:
    """A child's collection (``stale.Collected``), for the parent's judgement of the expectation entries."""
    data = {
        "pairs": sorted(collected.pairs, key=lambda p: (p[0], p[1] or "")),
        "files": sorted(collected.files),
        "check_dir": str(collected.check_dir) if collected.check_dir else None,
    }
    path.write_text(json.dumps(data), encoding="utf-8")


def read_collected(paths: list) -> Collected:
    """The children's collections as one session's (rule 2)."""
    merged = Collected()
    unplaced: set = set()
    for path in paths:
        try:
            data = json.loads(Path(path).read_text(encoding="utf-8"))
        except (OSError, ValueError):
            continue
        for check, target in data["pairs"]:
            (unplaced.add(check) if target is None else merged.pairs.add((check, target)))
        merged.files.update(data["files"])
        if data["check_dir"] and merged.check_dir is None:
            merged.check_dir = Path(data["check_dir"])
    placed = {check for check, _ in merged.pairs}
    merged.pairs.update((check, None) for check in unplaced - placed)
    return merged


def crash_record(st, why: str) -> dict:
    """The error record of a target whose child session ended without its results (rule 3)."""
    return {
        "check": CRASH_CHECK,
        "target": st.target.name,
        "server": st.target.server,
        "interface": st.interface,
        "clause": "",
        "level": "",
        "sentence": "",
        "accepts": "",
        "area": CRASH_CHECK,
        "outcome": "error",
        "duration": 0.0,
        "message": why[:1000],
    }


def merge_junit(out: Path, xml_paths: list, records: list) -> None:
    """One JUnit document from the children's (``xml_paths``), holding one test case per record of the merged
    results (``records``), no more, no fewer: a case is known by its ``check`` and ``target`` properties; a
    record without a case in any child's XML (a crashed child's ``session`` record, a child killed before it
    wrote its XML) gets one as ``finish.junit_of`` writes it. The counts are the cases'."""
    cases: dict = {}
    elapsed = 0.0
    for xml_path in xml_paths:
        try:
            root = ET.parse(xml_path).getroot()
        except (OSError, ET.ParseError):
            continue
        for child_suite in root.iter("testsuite"):
            elapsed += float(child_suite.get("time", "0") or 0)
            for case in child_suite.findall("testcase"):
                key = _case_key(case) or ("", str(len(cases)))
                if key in cases:  # a second case of one check (a teardown error after its call): one case
                    cases[key].extend(e for e in case if e.tag in ("error", "failure"))
                else:
                    cases[key] = case
    missing = [r for r in records if (r["check"], r["target"]) not in cases]
    for case in junit_of(missing).getroot().iter("testcase"):
        cases[_case_key(case) or ("", str(len(cases)))] = case
    suite = ET.Element("testsuite", name="pytest")
    totals = {"tests": len(cases), "failures": 0, "errors": 0, "skipped": 0}
    for case in cases.values():
        tags = {e.tag for e in case}
        kind = (
            "errors"
            if "error" in tags
            else "failures"
            if "failure" in tags
            else ("skipped" if "skipped" in tags else None)
        )
        if kind:
            totals[kind] += 1
        suite.append(case)
    for key, value in totals.items():
        suite.set(key, str(value))
    suite.set("time", f"{elapsed:.3f}")
    root = ET.Element("testsuites")
    root.append(suite)
    out.parent.mkdir(parents=True, exist_ok=True)
    ET.ElementTree(root).write(out, encoding="utf-8", xml_declaration=True)


def _case_key(case) -> tuple | None:
    """(check, target) of a JUnit test case, from its properties (the plugin's user properties)."""
    props = {p.get("name"): p.get("value") for p in case.iter("property")}
    return (props["check"], props["target"]) if "check" in props and "target" in props else None


def exit_status(codes: list, interrupted: bool, incomplete: bool) -> int:
    """The exit status a serial session of all the targets would have had: 2 when interrupted or past a
    session deadline, 1 when a check failed (or a child crashed, or the run is incomplete), 4 when every
    child refused its command line, 5 when none collected a check, else 0."""
    if interrupted or 2 in codes:
        return 2
    if codes and all(code == 4 for code in codes):
        return 4
    if incomplete or any(code not in (0, 5) for code in codes):
        return 1
    return 5 if codes and all(code == 5 for code in codes) else 0
