"""The matrix per server: what someone choosing a server reads first.

A server's configurations are its targets (``granian:asgi:auto``, ``granian:rsgi:auto?tls=on``, ...). Its row:

    best         the configuration with the highest MUST/SHOULD share among its *full* configurations: those that
                 decided at least half as many spec checks as its largest (a TLS listener runs only the TLS checks,
                 an HTTP/2-only one no HTTP/1.1 check: their shares are not comparable)
    MUST, SHOULD the best configuration's pass rates of the MUST (and MUST NOT) and SHOULD (and SHOULD NOT) checks,
                 and their spread (lowest-highest) over the full configurations
    failing      the best configuration's spec checks that did not pass, known deviations among them (a known
                 deviation is a recorded failure, never a pass)
    crashes      checks × configurations where the server process died (an error saying so, or a crashed child
                 session), over every configuration
    versions     every server version the configurations recorded
    areas        per spec area, every configuration together: passed ÷ decided over check × configuration pairs
"""

from __future__ import annotations

from dataclasses import dataclass, field

from gatecheck.conformance.matrix.model import Matrix, Tally

__all__ = ["ServerRow", "server_rows", "is_crash", "FULL_SHARE"]

FULL_SHARE = 0.5  # a full configuration decided at least this share of the server's largest spec count
_CRASH_WORDS = ("server process exited during this check", "ended with signal", "without finishing its results")


def is_crash(record: dict) -> bool:
    """Whether the record says the server (or its child session) died: the outcome ``crashed``, or an error
    whose message says the process exited."""
    if record["outcome"] == "crashed":
        return True
    return record["outcome"] == "error" and any(w in (record.get("message") or "") for w in _CRASH_WORDS)


@dataclass
class ServerRow:
    server: str
    targets: list  # its configurations, in the matrix's order
    full: list  # the configurations its best and spreads are taken over
    best: str
    versions: list
    crashes: int = 0
    areas: dict = field(default_factory=dict)  # area -> Tally over every configuration

    def rate(self, m: Matrix, target: str, which: str) -> float | None:
        passed, decided = getattr(m.rows[target], which)
        return passed / decided if decided else None

    def spread(self, m: Matrix, which: str) -> tuple:
        """(lowest, highest) rate of ``which`` ("must", "should", "share") over the full configurations."""
        rates = [r for r in (self._rate(m, t, which) for t in self.full) if r is not None]
        return (min(rates), max(rates)) if rates else (None, None)

    def _rate(self, m: Matrix, target: str, which: str) -> float | None:
        return m.rows[target].share if which == "share" else self.rate(m, target, which)

    def failing(self, m: Matrix) -> tuple:
        """(spec checks of the best configuration that did not pass, known deviations among them)."""
        row = m.rows[self.best]
        return row.decided - row.passed, row.known


def _full(m: Matrix, targets: list) -> list:
    most = max((m.rows[t].decided for t in targets), default=0)
    full = [t for t in targets if most and m.rows[t].decided >= FULL_SHARE * most]
    return full or list(targets)


def server_rows(m: Matrix) -> list:
    """One :class:`ServerRow` per server, best first (its best configuration's share, then its name)."""
    by_server: dict = {}
    for target in m.targets:
        by_server.setdefault(m.info[target]["server"], []).append(target)
    rows = []
    for server, targets in by_server.items():
        full = _full(m, targets)
        # the highest share; on a tie the one that decided more, then the first in the matrix's order (the plainest)
        best = max(full, key=lambda t: (m.rows[t].share or 0.0, m.rows[t].decided, -targets.index(t)))
        versions = sorted({m.version(t) for t in targets if m.version(t)})
        row = ServerRow(server, targets, full, best, versions)
        for target in targets:
            for record in m.records.get(target, ()):
                row.crashes += is_crash(record)
            for area in m.areas:
                cell = m.cell(target, area)
                if cell.outcomes:
                    row.areas.setdefault(area, Tally()).merge(cell)
        rows.append(row)
    return sorted(rows, key=lambda r: (-(m.rows[r.best].share or 0.0), r.server))
