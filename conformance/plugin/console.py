"""What a conformance run prints, kept short: counts per target and level, the failures in full, where the
results went. The known deviations and unsupported checks are in the results file and the matrix; ``-v`` lists
them in pytest's short summary too (its ``-r`` default is failures and errors only: ``data/pytest.ini``).

A serial session prints each failure in pytest's report (``reports.attach_details``); a ``--jobs`` run's
parent prints the same text from its children's records (:func:`write_failures`).
"""

from __future__ import annotations

from gatecheck.conformance.plugin.failures import failure_text, message_lines, rerun_options
from gatecheck.conformance.plugin.outcomes import FAILING, SPEC_GROUP, level_group

__all__ = ["verbose_lists", "write_targets", "write_failures", "LISTS_HINT"]

LISTS_HINT = "every outcome, known and unsupported included; -v lists them here; gatecheck matrix renders them"
_GROUPS = ((SPEC_GROUP, "MUST/SHOULD"), ("POLICY", "POLICY"), ("INFO", "INFO"))
_ORDER = ("passed", "failed", "error", "timeout", "interrupted", "fixed", "known", "noted")


def verbose_lists(config) -> None:
    """With ``-v`` and no ``-r`` of the user's, pytest's short summary lists every outcome but passes (``-ra``)."""
    if config.option.verbose > 0 and getattr(config.option, "reportchars", "") == "fE":
        config.option.reportchars = "a"


def _per_target(results) -> dict:
    """target -> {level group -> {outcome -> count}}, and "other" -> {outcome -> count} for unsupported/skipped."""
    table: dict = {}
    for rec in results.records.values():
        row = table.setdefault(rec["target"], {})
        outcome = rec["outcome"]
        group = "other" if outcome in ("unsupported", "skipped") else level_group(rec.get("level", ""))
        counts = row.setdefault(group, {})
        counts[outcome] = counts.get(outcome, 0) + 1
    return table


def _counts(counts: dict) -> str:
    order = [o for o in _ORDER if counts.get(o)] + sorted(set(counts) - set(_ORDER))
    return ", ".join(f"{counts[o]} {o}" for o in order)


def write_targets(tr, results) -> None:
    """One line per target: its checks' outcomes per level group (MUST/SHOULD, POLICY, INFO), then the
    unsupported and skipped ones."""
    table = _per_target(results)
    if not table:
        return
    width = min(48, max(len(t) for t in table))
    for target in sorted(table):
        row = table[target]
        parts = [f"{label} {_counts(row[group])}" for group, label in _GROUPS if row.get(group)]
        if row.get("other"):
            parts.append(_counts(row["other"]))
        failing = any(o in FAILING for counts in row.values() for o in counts)
        tr.write_line(f"  {target:<{width}}  " + " | ".join(parts), red=failing)


_LISTED_WITH_V = ("known", "noted", "unsupported", "skipped")


def write_failures(tw, results, config) -> None:
    """Each check × target that fails the run, in full (``failures.failure_text``), then one line each as
    pytest's short summary has them (with ``-v``, the known, noted, unsupported and skipped ones too): a
    ``--jobs`` run's parent prints these from its children's records."""
    records = sorted(results.records.values(), key=lambda r: (r["target"], r["check"]))
    failing = [rec for rec in records if rec["outcome"] in FAILING]
    listed = [rec for rec in records if rec["outcome"] in _LISTED_WITH_V] if config.option.verbose > 0 else []
    if failing:
        options = rerun_options(config)
        tw.sep("=", "FAILURES")
        for rec in failing:
            target = results.targets.get(rec["target"], {})
            versions = ", ".join(f"{k} {v}" for k, v in target.get("versions", {}).items())
            tw.sep("_", f"{rec['check']} @ {rec['target']}", red=True)
            for line in failure_text(rec, target.get("spec") or rec["target"], options, versions).splitlines():
                tw.line(line)
    if failing or listed:
        tw.sep("=", "short test summary info")
    for rec in listed + failing:
        tw.line(
            f"{rec['outcome'].upper()} {rec['check']} @ {rec['target']} - {message_lines(rec)[0][:160]}",
            red=rec["outcome"] in FAILING,
        )
