"""The end-of-run report on expectation entries: which matched a check that ran, and which are stale.

An entry is judged on the session's targets it is for (its server and ``targets`` patterns) whose recorded
version its ``versions`` range holds:

    matched       its check ran on one of them (whatever the outcome: known, fixed, unsupported ...)
    not selected  its check was collected for one of them but did not run (``-k``, ``--deselect``, a session
                  that stopped early), or applies to none of the session's interfaces, or its file was not
                  collected at all (``pytest conformance/checks/test_x.py``): not stale
    out of range  the session has targets it is for, but none whose version its range holds (or their
                  version is unknown): it does not apply, and is not stale
    stale         none of the above: its check was renamed, split or removed, or never ran where its
                  ``targets`` say; a fixed deviation shows as the outcome "fixed" instead

Entries for servers that the session does not check are not judged.
"""

from __future__ import annotations

from pathlib import Path

from gatecheck.conformance.plugin.expectations import Expectations, server_version

__all__ = ["judge", "judge_session", "write_summary", "Collected"]


class Collected:
    """What the collection held before anything was deselected: (check id, target or None) pairs, and the
    check files (a ``None`` target: the check applies to none of the session's targets)."""

    def __init__(self, check_dir: Path | None = None) -> None:
        self.pairs: set = set()
        self.files: set = set()
        self.check_dir = check_dir

    def add(self, check: str, target: str | None, path: Path) -> None:
        self.pairs.add((check, target))
        self.files.add(path.name)
        self.check_dir = self.check_dir or path.parent


def judge_session(gs) -> dict:
    """The report of a session (``session.GatecheckSession``) at its end."""
    targets = [(st.target.server, st.target.name) for st in gs.targets]
    versions = {name: server_version(t.get("versions", {})) for name, t in gs.results.targets.items()}
    return judge(gs.expectations, targets, versions, set(gs.results.records), gs.collected)


def write_summary(tr, report: dict) -> None:
    """The report's lines in the terminal summary: the counts, then each stale entry with its file and line."""
    if not report or not report["entries"]:
        return
    stale = report["stale"]
    tr.write_line(
        f"expectations: {report['entries']} entries for these targets, {report['matched']} matched a "
        f"check that ran, {report['out_of_range']} outside their version range, {len(stale)} stale"
        + (":" if stale else ""),
        yellow=bool(stale),
    )
    for entry in stale:
        where = f"{entry['file']}:{entry['line']}" if entry["line"] else entry["file"]
        tr.write_line(f"  stale {where} {entry['check']}: {entry['why']}", yellow=True)


def judge(expectations: Expectations, targets: list, versions: dict, ran: set, collected: Collected) -> dict:
    """The report: {"files", "entries", "matched", "out_of_range", "stale": [{file, line, check, ...}]}.

    ``targets``: (server, target) of the session; ``versions``: target -> server version or None;
    ``ran``: (check, target) pairs with a record."""
    report = {"files": list(expectations.files), "entries": 0, "matched": 0, "out_of_range": 0, "stale": []}
    ran_by_check, collected_by_check = _by_check(ran), _by_check(collected.pairs)
    for entry in expectations.entries:
        mine = [target for server, target in targets if entry.on_target(server, target)]
        if not mine:
            continue
        report["entries"] += 1
        verdict = _verdict(
            entry, [t for t in mine if entry.in_range(versions.get(t))], ran_by_check, collected, collected_by_check
        )
        if verdict == "stale":
            report["stale"].append(
                {
                    "file": entry.source,
                    "line": entry.line,
                    "check": entry.check,
                    "server": entry.server,
                    "targets": list(entry.targets),
                    "versions": entry.versions,
                    "why": _why(entry, mine, collected),
                }
            )
        elif verdict in ("matched", "out_of_range"):
            report[verdict] += 1
    return report


def _by_check(pairs) -> dict:
    """(check, target) pairs as check -> its targets."""
    out: dict = {}
    for check, target in pairs:
        out.setdefault(check, set()).add(target)
    return out


def _named(entry, by_check: dict, targets: set) -> bool:
    """Whether a check the entry names is in ``by_check`` with one of ``targets``."""
    if "*" not in entry.check:
        return not by_check.get(entry.check, set()).isdisjoint(targets)
    return any(entry.names(check) and not these.isdisjoint(targets) for check, these in by_check.items())


def _verdict(entry, targets: list, ran_by_check: dict, collected: Collected, collected_by_check: dict) -> str:
    if not targets:
        return "out_of_range"
    if _named(entry, ran_by_check, set(targets)):
        return "matched"
    if _named(entry, collected_by_check, set(targets) | {None}):
        return "not_selected"
    file = entry.check.split("::", 1)[0]
    if "*" not in file and file not in collected.files:
        exists = collected.check_dir is not None and (collected.check_dir / file).exists()
        return "not_selected" if exists else "stale"
    return "stale"


def _why(entry, targets: list, collected: Collected) -> str:
    file = entry.check.split("::", 1)[0]
    if "*" not in file and collected.check_dir is not None and not (collected.check_dir / file).exists():
        return f"there is no check file {file}"
    if any(entry.names(check) for check, _ in collected.pairs):
        return "its check ran on none of its targets here: " + ", ".join(targets)
    return "no check has this id (renamed or split? the results file's 'check' field has the ids)"
