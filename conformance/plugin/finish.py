"""Finish the results of a conformance session that was killed before it could (SIGKILL, out of memory).

The session appends each decided record to ``<results>.partial.jsonl`` and registers this command with the
server reaper (:func:`gatecheck.servers.reaper.after_death`), cancelling it once it has written its files
itself. If the session dies first, the reaper runs::

    python -m gatecheck.conformance.plugin.finish PARTIAL RESULTS_JSON [--junit JUNIT_XML]

which writes the results document from the partial file (marked ``"incomplete"``) and, when the session was
asked for JUnit, the JUnit XML from the same records, so both count the same checks. Nothing happens when
the partial file is gone (the session finished normally).
"""

from __future__ import annotations

import argparse
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

from gatecheck.conformance.plugin.resultsfile import document, partial_record, write_document

__all__ = ["finish", "read_partial", "junit_of", "finish_if_killed", "FINISH_JOB"]

INCOMPLETE = "the session was killed before it finished; these are the checks it had decided"
FINISH_JOB = "finish-results"  # the reaper's name for this command of a session
_FAILED = ("failed", "crashed", "timeout", "fixed")
_ERRORS = ("error", "interrupted")
_SKIPPED = ("unsupported", "noted", "skipped", "known")


def read_partial(path: Path) -> tuple:
    """(targets, checks) from a partial file; the last line of a (check, target) wins; a torn last line
    (the process died mid-write) is ignored."""
    targets: dict = {}
    checks: dict = {}
    for line in path.read_text(encoding="utf-8", errors="replace").splitlines():
        kind, rec = partial_record(line)
        if kind == "target":
            targets[rec["target"]] = rec
        elif kind == "check":
            checks[(rec["check"], rec["target"])] = rec
    return list(targets.values()), list(checks.values())


def junit_of(checks: list, name: str = "gatecheck") -> ET.ElementTree:
    """A JUnit document with one testcase per (check, target) record."""
    counts = {"tests": len(checks), "failures": 0, "errors": 0, "skipped": 0}
    suite = ET.Element("testsuite", name=name)
    for rec in sorted(checks, key=lambda r: (r["check"], r["target"])):
        file, _, func = rec["check"].partition("::")
        case = ET.SubElement(
            suite,
            "testcase",
            classname=f"conformance.{Path(file).stem}",
            name=f"{func} @ {rec['target']}",
            time=str(rec.get("duration", 0.0)),
        )
        props = ET.SubElement(case, "properties")
        for key in ("check", "target"):
            ET.SubElement(props, "property", name=key, value=str(rec[key]))
        outcome, message = rec.get("outcome"), rec.get("message", "")
        if outcome in _FAILED:
            counts["failures"] += 1
            ET.SubElement(case, "failure", message=f"{outcome}: {message}"[:1000])
        elif outcome in _ERRORS:
            counts["errors"] += 1
            ET.SubElement(case, "error", message=f"{outcome}: {message}"[:1000])
        elif outcome in _SKIPPED:
            counts["skipped"] += 1
            ET.SubElement(case, "skipped", message=f"{outcome}: {message}"[:1000])
    for key, value in counts.items():
        suite.set(key, str(value))
    root = ET.Element("testsuites")
    root.append(suite)
    return ET.ElementTree(root)


def finish(partial: Path, results: Path, junit: Path | None = None) -> bool:
    """Write the results (and JUnit) from ``partial``; whether there was anything to finish."""
    if not partial.exists():
        return False
    targets, checks = read_partial(partial)
    write_document(results, document(targets, checks, incomplete=INCOMPLETE))
    if junit is not None:
        junit.parent.mkdir(parents=True, exist_ok=True)
        junit_of(checks).write(junit, encoding="utf-8", xml_declaration=True)
    partial.unlink()
    return True


def finish_if_killed(config, results) -> None:
    """Ask the server reaper to finish ``results`` (and the JUnit XML asked for) if this process dies before
    its session does; ``reaper.cancel(FINISH_JOB)`` once the files are written."""
    import os

    from gatecheck import IMPORT_ROOT
    from gatecheck.servers.reaper import after_death

    argv = [sys.executable, "-m", "gatecheck.conformance.plugin.finish", str(results.partial), str(results.path)]
    junit = getattr(config.option, "xmlpath", None)
    if junit:
        argv += ["--junit", os.path.abspath(junit)]
    after_death(FINISH_JOB, argv, env={"PYTHONPATH": IMPORT_ROOT}, cwd=os.getcwd())


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m gatecheck.conformance.plugin.finish", description=__doc__.splitlines()[0]
    )
    parser.add_argument("partial", type=Path)
    parser.add_argument("results", type=Path)
    parser.add_argument("--junit", type=Path)
    args = parser.parse_args(argv)
    try:
        finish(args.partial, args.results, args.junit)
    except OSError as exc:
        print(f"gatecheck: could not finish {args.results}: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
