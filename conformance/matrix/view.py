"""What the pages say, independent of HTML or Markdown: a cell's colour band and words, the legend, and the
sections of a target page."""

from __future__ import annotations

from dataclasses import dataclass

from gatecheck.conformance.matrix.model import AREAS, Tally, area_of
from gatecheck.conformance.plugin.outcomes import level_group

__all__ = [
    "BANDS",
    "CellView",
    "cell_view",
    "fraction",
    "SECTIONS",
    "sections",
    "by_area",
    "legend",
    "LEGEND_NOTES",
    "OUTCOME_WORDS",
    "short_area",
    "percent",
    "band_of",
]

#: (lowest share, css class, colour, Markdown mark, words), best first: a share falls in the first band it reaches
BANDS = (
    (1.0, "b100", "#4caf50", "🟩", "100% passed"),
    (0.95, "b95", "#a5d6a7", "🟢", "95% or more"),
    (0.80, "b80", "#fff176", "🟨", "80% or more"),
    (0.50, "b50", "#ffb74d", "🟧", "50% or more"),
    (0.0, "b0", "#e57373", "🟥", "under 50%"),
)
NOT_SUPPORTED = (
    "ns",
    "▨",
    "not supported: the target lacks what every check of the area needs (a feature such as "
    "HTTP/2, WebSocket, a tool such as h2spec)",
)
NOT_APPLICABLE = (
    "na",
    "·",
    "n/a: no check of the area applies to the target (another interface; cleartext checks on a TLS listener)",
)
READINGS_ONLY = ("ro", "–", "only POLICY/INFO checks decided here (counted in their own columns)")
LEGEND_NOTES = (
    "Each cell is the share of the area's MUST/SHOULD checks (every BCP 14 or interface-text keyword level but "
    "MAY, and DEFINED) the target passed: passed ÷ decided, where decided is passed, failed, crashed (the server "
    "died of the check's request), known deviation, error, timeout or interrupted. A known deviation (recorded "
    "with evidence in the server's expectation file) is a failure the server knows of: it counts as not passed "
    'and is shown as "✗N known".',
    'POLICY (the suite\'s reading where the text is silent or says only "ought to"/"can") and INFO (the '
    "text's letter, no MUST/SHOULD broken; MAY checks, permissions, with them) are counted apart, in their own "
    "columns, passed/decided; they never enter the share.",
)
#: an area's column label where columns are narrow (the full name is its tooltip)
_SHORT = {
    "WebSocket": "WS",
    "Echo, streaming, files": "Echo",
    "Robustness": "Robust",
    "Properties": "Props",
    "Interop (httpx, websockets)": "Interop",
    "byte_classes": "Bytes",
    "connection_states": "Conn",
}


def short_area(area: str) -> str:
    return _SHORT.get(area, area)


OUTCOME_WORDS = {
    "failed": "failed",
    "error": "error",
    "timeout": "timeout",
    "interrupted": "interrupted",
    "fixed": "fixed (listed as known, now passes)",
    "known": "known deviation",
    "noted": "noted (INFO or MAY)",
    "crashed": "crashed the server",
}
_FAILING = ("failed", "error", "timeout", "interrupted", "fixed", "crashed")


@dataclass(frozen=True)
class CellView:
    css: str  # css class (colour band, ns, na, ro)
    mark: str  # Markdown mark
    main: str  # the big text: "97%", "n/s", "·"
    sub: str  # the small text: "130/134"
    title: str  # everything, for a tooltip
    known: str = ""  # "2 known" when the cell has known deviations
    failed: str = ""  # "1 failed" when the cell has failures (error, timeout, interrupted included)


def fraction(pair) -> str:
    return f"{pair[0]}/{pair[1]}" if pair[1] else "–"


def cell_view(tally: Tally, where: str) -> CellView:
    """How one cell (or a row's total) shows: its band by the spec share, and its counts."""
    state = tally.state
    if state == "n/a":
        return CellView(NOT_APPLICABLE[0], NOT_APPLICABLE[1], "·", "", f"{where}: n/a")
    unsupported = tally.outcomes.get("unsupported", 0)
    if state == "n/s":
        return CellView(
            NOT_SUPPORTED[0],
            NOT_SUPPORTED[1],
            "n/s",
            f"{unsupported} check{'s' if unsupported != 1 else ''}",
            f"{where}: not supported ({unsupported} checks)",
        )
    if state == "policy-only":
        return CellView(READINGS_ONLY[0], READINGS_ONLY[1], "–", "", f"{where}: {READINGS_ONLY[2]}")
    share = tally.share
    css, _, mark = next((c, col, m) for low, c, col, m, _ in BANDS if share >= low)
    sub = f"{tally.passed}/{tally.decided}"
    title = (
        f"{where}: {tally.passed} of {tally.decided} MUST/SHOULD checks passed; {tally.failed} failed "
        f"(error, timeout included); {tally.known} known deviations; {unsupported} not supported; "
        f"POLICY {fraction(tally.policy)}; INFO {fraction(tally.info)}"
    )
    return CellView(
        css,
        mark,
        _percent(share),
        sub,
        title,
        f"✗{tally.known} known" if tally.known else "",
        f"{tally.failed} failed" if tally.failed else "",
    )


def band_of(share: float) -> tuple:
    """(css class, Markdown mark) of the band ``share`` falls in."""
    return next((c, m) for low, c, _, m, _ in BANDS if share >= low)


def percent(share: float) -> str:
    return _percent(share)


def _percent(share: float) -> str:
    if share < 1.0:  # never round a failure up to 100%
        return f"{min(round(share * 100, 1), 99.9):g}%"
    return "100%"


def legend() -> list:
    """(css class, Markdown mark, words) for every kind of cell."""
    rows = [(css, mark, words) for _, css, _, mark, words in BANDS]
    return rows + [
        (NOT_SUPPORTED[0], NOT_SUPPORTED[1], NOT_SUPPORTED[2]),
        (NOT_APPLICABLE[0], NOT_APPLICABLE[1], NOT_APPLICABLE[2]),
        (READINGS_ONLY[0], READINGS_ONLY[1], READINGS_ONLY[2]),
    ]


#: a target page's sections: (anchor, title, what it lists)
SECTIONS = (
    (
        "spec-failures",
        "MUST/SHOULD failures",
        "checks of the spec's levels that failed, erred, timed out or were interrupted (and listed deviations that "
        "now pass: the expectation entry is stale)",
    ),
    (
        "known",
        "Known deviations",
        "recorded in the server's expectation file, each confirmed by hand; the evidence is the entry's",
    ),
    (
        "policy",
        "POLICY failures",
        'the suite\'s reading where the text is silent or says only "ought to"/"can": not a requirement of the text',
    ),
    (
        "info",
        "INFO and MAY noted",
        "the text's letter contradicted, or a permission not taken, no MUST/SHOULD broken; never fails a run",
    ),
)


def _section_of(record: dict) -> str | None:
    outcome, group = record["outcome"], level_group(record["level"])
    if outcome == "known":
        return "known"
    if outcome == "noted" or (group in ("INFO", "MAY") and outcome in _FAILING and outcome != "crashed"):
        return "info"
    if outcome in _FAILING:
        return "policy" if group == "POLICY" else "spec-failures"
    return None


def sections(records: list) -> dict:
    """anchor → the records a target page lists under it (every anchor present, maybe empty)."""
    result = {anchor: [] for anchor, _, _ in SECTIONS}
    for record in records:
        anchor = _section_of(record)
        if anchor:
            result[anchor].append(record)
    return result


def by_area(records: list) -> list:
    """[(spec area, its records sorted by check id)] in the overview's column order."""
    order = {name: i for i, (name, _) in enumerate(AREAS)}
    groups: dict = {}
    for record in records:
        groups.setdefault(area_of(record.get("area", "")), []).append(record)
    return [
        (area, sorted(groups[area], key=lambda r: r["check"]))
        for area in sorted(groups, key=lambda a: (order.get(a, len(order)), a))
    ]
