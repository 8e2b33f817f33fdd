"""``gatecheck annotate RESULTS [--root DIR] [--fail-on-stale]``: GitHub Actions annotations on a server's own
expectation file, from a conformance run's results file.

    stale entry         the entry matched no check that ran (renamed, removed, or its targets match nothing)
    out of its range    the entry names a check that failed, but its version range leaves this version out:
                        re-confirm it (and widen the range) or remove it

Each is a ``::warning file=PATH,line=N,title=...::text`` line on standard output, which the runner turns into an
annotation on that line of the pull request's file. ``PATH`` must be the file's path in the repository, so
``--root DIR`` (where the workflow checked the pull request out, e.g. ``head``) is taken off the paths the run
recorded; entries of files outside DIR (gatecheck's own) get none. A failed check has no file of the
repository to point at: the JUnit report shows those. Exit status 1 with ``--fail-on-stale`` when an entry is
stale, else 0; 2 when RESULTS cannot be read.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import sys
from pathlib import Path

__all__ = ["main", "annotations"]

_WHERE = re.compile(r" at (?P<file>.+):(?P<line>\d+), not ")


def _escape(text: str, prop: bool = False) -> str:
    """GitHub's escaping of a workflow command's message (and, for properties, of ``:`` and ``,``)."""
    text = text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")
    return text.replace(":", "%3A").replace(",", "%2C") if prop else text


def _relative(path: str, root: Path | None) -> str | None:
    if root is None:
        return path
    try:
        return Path(os.path.abspath(path)).relative_to(Path(os.path.abspath(root))).as_posix()
    except ValueError:
        return None


def annotations(data: dict, root: Path | None = None) -> tuple:
    """(workflow command lines, how many stale entries) for a results document."""
    lines, stale = [], 0
    for entry in (data.get("expectations") or {}).get("stale", []):
        path = _relative(entry["file"], root)
        if path is None:
            continue
        stale += 1
        lines.append(
            f"::warning file={_escape(path, True)},line={entry.get('line') or 1},title=stale expectation "
            f"entry::{_escape(entry['check'] + ': ' + entry['why'])}"
        )
    seen: dict = {}
    for record in data.get("checks", []):
        note = record.get("out_of_range", "")
        found = _WHERE.search(note)
        if not found:
            continue
        path = _relative(found["file"], root)
        if path is not None:
            seen.setdefault((path, int(found["line"]), note.split(" at ")[0]), []).append(record["target"])
    for (path, line, head), targets in seen.items():
        text = (
            f"{head}, not the version checked on {', '.join(sorted(targets))}: re-confirm (and widen the range) "
            "or remove"
        )
        lines.append(
            f"::warning file={_escape(path, True)},line={line},title=expectation out of its version "
            f"range::{_escape(text)}"
        )
    return lines, stale


def main(argv: list | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="gatecheck annotate",
        description=__doc__.split("\n\n")[0],
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("results", help="a results JSON file of a conformance run (--results-json)")
    parser.add_argument(
        "--root",
        default=None,
        help="the folder the server's repository is checked out in: paths "
        "are given relative to it, and entries of files outside it get no annotation",
    )
    parser.add_argument("--fail-on-stale", action="store_true", help="exit 1 when an entry is stale")
    args = parser.parse_args(argv)
    try:
        data = json.loads(Path(args.results).read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        print(f"gatecheck annotate: cannot read {args.results}: {exc}", file=sys.stderr)
        return 2
    lines, stale = annotations(data, Path(args.root) if args.root else None)
    for line in lines:
        print(line)
    print(f"gatecheck annotate: {len(lines)} annotations, {stale} stale entries", file=sys.stderr)
    return 1 if stale and args.fail_on_stale else 0
