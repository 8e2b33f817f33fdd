"""The matrix's data: results files merged, each record placed in a spec area, and tallied per target × area.

A cell (target × area) counts the area's records of the target by the summary's level groups
(``outcomes.level_group``): the spec's keywords (MUST, MUST NOT, SHOULD, SHOULD NOT, MAY, DEFINED) make the
share; POLICY and INFO (the suite's readings) are counted apart and never enter it. In the share, a check
counts as decided when it passed, failed, was a known deviation, was fixed, erred, timed out or was
interrupted; only passed and fixed (a listed deviation that now passes) count as passed, so a known
deviation lowers the share and is shown as such. Not supported and skipped checks are outside the share: a
cell whose records are all not supported is "not supported"; a cell with no record at all is "n/a" (the
area does not apply to the target's interface).
"""

from __future__ import annotations

import json
import re
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path

from gatecheck.conformance.plugin.outcomes import SPEC_GROUP, level_group
from gatecheck.conformance.plugin.resultsfile import SCHEMA_VERSION
from gatecheck.conformance.spec.levels import row_for_check

__all__ = ["load_results", "Matrix", "Tally", "AREAS", "area_of", "slug", "SCHEMA_VERSIONS", "Source"]

SCHEMA_VERSIONS = (1, SCHEMA_VERSION)  # 2 only adds the outcomes timeout, interrupted and noted
#: spec area → the record areas (check module stems without "test_") it gathers, by prefix; in column order
AREAS = (
    ("ASGI", ("asgi_",)),
    ("RSGI", ("rsgi_",)),
    ("WSGI", ("wsgi_",)),
    ("HTTP/1.1", ("http1_",)),
    ("HTTP/2", ("h2_",)),
    ("h2spec", ("h2spec",)),
    ("WebSocket", ("websocket",)),
    ("TLS", ("tls",)),
    ("Echo, streaming, files", ("echo", "streaming", "files")),
    ("Robustness", ("robustness", "vanishing_clients")),
    ("Properties", ("properties",)),
    ("Interop (httpx, websockets)", ("interop",)),
)
DECIDED = frozenset({"passed", "fixed", "failed", "known", "error", "timeout", "interrupted", "crashed"})
_KEYWORD = {"MUST": "must", "MUST NOT": "must", "SHOULD": "should", "SHOULD NOT": "should"}
PASSED = frozenset({"passed", "fixed"})
#: outcomes a target page lists, in its order
LISTED = ("failed", "crashed", "error", "timeout", "interrupted", "fixed", "known", "noted")


def area_of(record_area: str) -> str:
    """The spec area of a record's ``area`` (its module stem); an unknown one is its own area."""
    for name, prefixes in AREAS:
        if any(record_area.startswith(p) for p in prefixes):
            return name
    return record_area


def slug(target: str) -> str:
    """A file name for a target: ``uvicorn:asgi:h1?impl=h11&loop=asyncio`` →
    ``uvicorn-asgi-h1-impl-h11-loop-asyncio``."""
    return re.sub(r"[^A-Za-z0-9_.]+", "-", target).strip("-") or "target"


@dataclass
class Tally:
    """Counts of one cell (or one target's whole row): the spec share, POLICY and INFO apart."""

    outcomes: dict = field(default_factory=lambda: defaultdict(int))  # every outcome, every level
    passed: int = 0  # spec group, passed or fixed
    decided: int = 0  # spec group, decided (see the module docstring)
    known: int = 0  # spec group, known deviations
    failed: int = 0  # spec group, failed, error, timeout or interrupted
    policy: list = field(default_factory=lambda: [0, 0])  # [passed, decided]
    info: list = field(default_factory=lambda: [0, 0])  # [passed, decided] ("noted" is a failed INFO check)
    must: list = field(default_factory=lambda: [0, 0])  # [passed, decided] of MUST and MUST NOT
    should: list = field(default_factory=lambda: [0, 0])  # [passed, decided] of SHOULD and SHOULD NOT

    def merge(self, other: "Tally") -> None:
        """Add ``other``'s counts (a server's area over its configurations)."""
        for outcome, n in other.outcomes.items():
            self.outcomes[outcome] += n
        self.passed += other.passed
        self.decided += other.decided
        self.known += other.known
        self.failed += other.failed
        for mine, theirs in (
            (self.policy, other.policy),
            (self.info, other.info),
            (self.must, other.must),
            (self.should, other.should),
        ):
            mine[0] += theirs[0]
            mine[1] += theirs[1]

    def add(self, record: dict) -> None:
        outcome = record["outcome"]
        self.outcomes[outcome] += 1
        group = level_group(record["level"])
        if group != SPEC_GROUP:
            pair = self.policy if group == "POLICY" else self.info
            if outcome in DECIDED or outcome == "noted":
                pair[1] += 1
                pair[0] += outcome in PASSED
            return
        if outcome in DECIDED:
            self.decided += 1
            self.passed += outcome in PASSED
            self.known += outcome == "known"
            self.failed += outcome not in PASSED and outcome != "known"
            keyword = _KEYWORD.get(record["level"])
            if keyword is not None:
                pair = self.must if keyword == "must" else self.should
                pair[1] += 1
                pair[0] += outcome in PASSED

    @property
    def share(self) -> float | None:
        """Passed / decided for the spec group, None when nothing was decided."""
        return self.passed / self.decided if self.decided else None

    @property
    def state(self) -> str:
        """ "n/a" (no record), "n/s" (nothing decided, something not supported), "policy-only", or "share"."""
        if not self.outcomes:
            return "n/a"
        if self.decided:
            return "share"
        if self.policy[1] or self.info[1]:
            return "policy-only"
        return "n/s" if self.outcomes.get("unsupported") else "n/a"


@dataclass(frozen=True)
class Source:
    path: str
    created: str
    targets: tuple


def _read(path) -> dict:
    data = json.loads(Path(path).read_text(encoding="utf-8"))
    version = data.get("schema_version") if isinstance(data, dict) else None
    if version not in SCHEMA_VERSIONS:
        raise ValueError(
            f"{path}: results schema_version {version!r} not supported "
            f"(expected one of {', '.join(map(str, SCHEMA_VERSIONS))})"
        )
    return data


def load_results(paths: list) -> tuple:
    """(targets by name, checks, sources) merged from several results files; later files win for a
    (check, target). A directory stands for the results files in it (``*.json``, sorted)."""
    targets, checks, sources = {}, {}, []
    for path in _expand(paths):
        data = _read(path)
        for target in data["targets"]:
            targets[target["target"]] = target
        for check in data["checks"]:
            checks[(check["check"], check["target"])] = check
        sources.append(
            Source(Path(path).name, data.get("created", ""), tuple(sorted(t["target"] for t in data["targets"])))
        )
    return targets, list(checks.values()), sources


def _expand(paths: list) -> list:
    result = []
    for path in map(Path, paths):
        result += sorted(path.glob("*.json")) if path.is_dir() else [path]
    return result


class Matrix:
    """Targets × spec areas, with each target's records for its page."""

    def __init__(self, targets: dict, checks: list, sources: list = ()) -> None:
        self.info = targets
        self.sources = list(sources)
        self.targets = sorted(targets, key=lambda t: (targets[t]["server"], "tls=on" in t, targets[t]["interface"], t))
        self.records = defaultdict(list)  # target → records
        self.cells = defaultdict(Tally)  # (target, area) → Tally
        self.rows = defaultdict(Tally)  # target → Tally over every area
        seen = set()
        for record in sorted(checks, key=lambda r: (r["check"], r["target"])):
            area = area_of(record.get("area", ""))
            seen.add(area)
            self.records[record["target"]].append(record)
            self.cells[(record["target"], area)].add(record)
            self.rows[record["target"]].add(record)
        known_order = [name for name, _ in AREAS]
        self.areas = [a for a in known_order if a in seen] + sorted(seen - set(known_order))
        self.check_count = len({r["check"] for r in checks})

    def cell(self, target: str, area: str) -> Tally:
        return self.cells.get((target, area)) or Tally()

    def listed(self, target: str) -> dict:
        """outcome → the target's records with that outcome, for the outcomes a target page lists."""
        result = {outcome: [] for outcome in LISTED}
        for record in self.records.get(target, ()):
            if record["outcome"] in result:
                result[record["outcome"]].append(record)
        return result

    def version(self, target: str) -> str:
        """The server's own version ("" when not recorded)."""
        info = self.info[target]
        return str(info.get("versions", {}).get(info["server"], ""))

    def versions(self, target: str) -> str:
        return ", ".join(f"{k} {v}" for k, v in self.info[target].get("versions", {}).items())


def sentence_of(record: dict) -> tuple:
    """(sentence, accepts) of a record: its own fields, else its row of the levels table, else ("", "")."""
    sentence, accepts = record.get("sentence", ""), record.get("accepts", "")
    if not sentence:
        row = row_for_check(record["check"])
        if row is not None:
            sentence, accepts = row.sentence, accepts or row.accepts
    return sentence, accepts


def evidence_of(record: dict) -> str:
    """The evidence shown for a listed record: a known deviation's expectation entry (the record's message is
    "known deviation [clause]: evidence (link)", an intermittent one's "known intermittent deviation [clause]:
    evidence; intermittent: how often", after "held this run; " when it did), else the failure message."""
    message = (record.get("message") or "").strip()
    message = re.sub(r"(?m)^E {0,7}", "", message)  # pytest's "E       " before each assertion line
    return re.sub(r"^(held this run; )?known (intermittent )?deviation \[[^\]]*\]:\s*", "", message)
