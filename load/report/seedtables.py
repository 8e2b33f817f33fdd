"""The seed tables as data: Granian's published benchmark numbers (``load/seeds/*.toml``), read and checked.

Rules of this module:
- One TOML file per seed document (``README.toml`` for benchmarks/README.md, ``asyncio.toml``, ...), holding
  the document's source, commit, run date, environment line, Python and Granian versions, and its tables.
  The numbers are copied from the published Markdown and never computed here.
- A table maps to one load profile (and one of its groups); each row names the profile case it corresponds
  to (``case``, default: the seed's own label). A row no profile reproduces carries ``reason`` instead; a
  table no profile reproduces at all carries ``reason`` and may have no rows.
- Explanations of rank inversions are data too: ``[table.explanations]``, keyed ``"ROW A | ROW B"`` by the
  rows' ids (the label, prefixed by the Python version in tables with ``env = "python"``), in either order. A
  name ending in ``*`` stands for every row whose id starts with the rest (``"Granian* | Gunicorn*"``), for a
  cause shared by a class of pairs; an exact key wins, then the first pattern that matches, in file order.
- Everything is validated on load, naming the file and the table; a file that loads can be rendered.

File keys (TOML)::

    source = "emmett-framework/granian benchmarks/README.md"
    commit = "9a20b17..."           run_at = "Wed 05 Aug 2026, 16:42"
    environment = "AMD Ryzen 7 5700X @ Gentoo Linux 6.18.41 (CPUs: 16)"
    python = "3.13"                 granian = "2.8.1"

    [[table]]
    profile = "interfaces"          the load profile whose rows are compared
    title = "Interfaces"            the seed's section title
    group = ""                      the profile's group (sub-table), e.g. "Workers" (default "")
    env = ""                        "python" when rows carry the Python version they ran on
    note = ""                       what the seed ran with (options, concurrency), printed with the table
    reason = ""                     why no profile reproduces the table (then rows may be empty)
    metric = "RPS"                  what ``rps`` counts: "RPS" (requests per second, the default) or "msg/s"
                                    (the WebSocket table: combined messages per second; rows then need only
                                    label, concurrency = clients, and rps; ``send``/``recv`` may be given)
    rows = [ { label = "RSGI get 1KB", concurrency = 128, total = 1430994, rps = 143073,
               avg_ms = 0.891, max_ms = 49.009, case = "...", python = "3.11", reason = "..." } ]
    [table.explanations]
    "RSGI echo 1KB | ASGI get 1KB" = "why our order differs (version, cores, settings)"
"""

from __future__ import annotations

import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Mapping

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - exercised on 3.9/3.10 tox envs
    import tomli as tomllib

__all__ = [
    "SeedRow",
    "SeedTable",
    "SeedDocument",
    "SeedError",
    "load_seeds",
    "load_seed_file",
    "SEED_DIR",
    "SEED_ORDER",
]

SEED_DIR = Path(__file__).resolve().parent.parent / "seeds"
SEED_ORDER = ("README", "asyncio", "concurrency", "pyver", "vs", "json")  # the table order

_DOC_KEYS = {"source", "commit", "run_at", "environment", "python", "granian", "table"}
_TABLE_KEYS = {"profile", "title", "group", "env", "note", "reason", "rows", "explanations", "metric"}
_ROW_KEYS = {"label", "concurrency", "total", "rps", "avg_ms", "max_ms", "case", "python", "reason", "send", "recv"}
_ROW_NUMBERS = ("concurrency", "total", "rps", "avg_ms", "max_ms")
_METRICS = {"RPS": _ROW_NUMBERS, "msg/s": ("concurrency", "rps")}  # metric -> the numbers a row must give


class SeedError(ValueError):
    """A seed file is missing or malformed; the message names the file and the table."""


@dataclass(frozen=True)
class SeedRow:
    label: str
    concurrency: int
    total: int
    rps: float
    avg_ms: float
    max_ms: float
    case: str = ""  # the profile case's label; empty: the same as ``label``
    python: str = ""  # the Python version the row ran on (tables with env = "python")
    reason: str = ""  # why no profile reproduces this row; empty: one does
    send: float = 0.0  # the WebSocket table's send and receive throughputs (msg/s); 0 elsewhere
    recv: float = 0.0

    @property
    def row_id(self) -> str:
        """How explanations and inversions name the row: the label, after the Python version if any."""
        return f"{self.python} {self.label}" if self.python else self.label

    @property
    def case_label(self) -> str:
        return self.case or self.label


@dataclass(frozen=True)
class SeedTable:
    profile: str
    title: str
    rows: tuple[SeedRow, ...]
    group: str = ""
    env: str = ""
    note: str = ""
    reason: str = ""
    explanations: Mapping[frozenset, str] = field(default_factory=dict)
    document: str = ""  # the seed file's stem, e.g. "README"
    metric: str = "RPS"  # what the rows' ``rps`` counts: "RPS" or "msg/s"

    def explanation(self, a: str, b: str) -> str:
        exact = self.explanations.get(frozenset((a, b)))
        if exact:
            return exact
        for key, text in self.explanations.items():
            if len(key) == 2 and any(name.endswith("*") for name in key):
                first, second = sorted(key)
                if (_matches(first, a) and _matches(second, b)) or (_matches(first, b) and _matches(second, a)):
                    return text
            elif len(key) == 1 and next(iter(key)).endswith("*"):  # "X* | X*": both rows of the class
                (name,) = key
                if _matches(name, a) and _matches(name, b):
                    return text
        return ""


def _matches(name: str, row_id: str) -> bool:
    return row_id.startswith(name[:-1]) if name.endswith("*") else row_id == name


@dataclass(frozen=True)
class SeedDocument:
    name: str
    source: str
    commit: str
    run_at: str
    environment: str
    python: str
    granian: str
    tables: tuple[SeedTable, ...]
    path: Path | None = None

    def source_line(self) -> str:
        """One line saying where the numbers come from."""
        if not self.commit:
            return f"Seed: {self.source}."
        return (
            f"Seed: {self.source} at {self.commit[:7]} (run {self.run_at}; {self.environment}; "
            f"Python {self.python}; Granian {self.granian})."
        )


def _fail(path: Path, where: str, message: str) -> SeedError:
    return SeedError(f"{path.name}: {where}: {message}")


def _row(path: Path, where: str, raw: Any, metric: str = "RPS") -> SeedRow:
    if not isinstance(raw, dict):
        raise _fail(path, where, f"a row must be a table, got {raw!r}")
    unknown = set(raw) - _ROW_KEYS
    if unknown:
        raise _fail(
            path, where, f"row {raw.get('label', '?')!r}: unknown keys {sorted(unknown)}; known: {sorted(_ROW_KEYS)}"
        )
    required = _METRICS[metric]
    missing = [k for k in ("label",) + required if k not in raw]
    if missing:
        raise _fail(path, where, f"row {raw.get('label', '?')!r}: missing {missing}")
    numbers = [k for k in _ROW_NUMBERS + ("send", "recv") if k in raw]
    if not all(isinstance(raw[k], (int, float)) and raw[k] >= 0 for k in numbers):
        raise _fail(path, where, f"row {raw['label']!r}: {', '.join(numbers)} must be non-negative numbers")
    return SeedRow(
        label=str(raw["label"]),
        concurrency=int(raw["concurrency"]),
        total=int(raw.get("total", 0)),
        rps=float(raw["rps"]),
        avg_ms=float(raw.get("avg_ms", 0)),
        max_ms=float(raw.get("max_ms", 0)),
        case=str(raw.get("case", "")),
        python=str(raw.get("python", "")),
        reason=str(raw.get("reason", "")),
        send=float(raw.get("send", 0)),
        recv=float(raw.get("recv", 0)),
    )


def _explanations(path: Path, where: str, raw: Mapping[str, Any], ids: set) -> dict:
    out = {}
    for key, text in raw.items():
        names = [part.strip() for part in str(key).split("|")]
        if len(names) != 2 or not all(names):
            raise _fail(path, where, f'explanation key {key!r}: expected "ROW A | ROW B"')
        unknown = [n for n in names if not any(_matches(n, i) for i in ids)]
        if unknown:
            raise _fail(path, where, f"explanation key {key!r}: no row {unknown[0]!r}; rows: {', '.join(sorted(ids))}")
        out[frozenset(names)] = str(text).strip()
    return out


def _table(path: Path, index: int, raw: Mapping[str, Any]) -> SeedTable:
    where = f"table {index + 1} ({raw.get('title', '?')!r})"
    unknown = set(raw) - _TABLE_KEYS
    if unknown:
        raise _fail(path, where, f"unknown keys {sorted(unknown)}; known: {sorted(_TABLE_KEYS)}")
    for key in ("profile", "title"):
        if not raw.get(key):
            raise _fail(path, where, f"missing {key!r}")
    metric = str(raw.get("metric", "RPS"))
    if metric not in _METRICS:
        raise _fail(path, where, f"metric must be one of {sorted(_METRICS)}, got {metric!r}")
    rows = tuple(_row(path, where, r, metric) for r in raw.get("rows", []))
    if not rows and not raw.get("reason"):
        raise _fail(path, where, "no rows: give the rows, or a reason why no profile reproduces the table")
    env = str(raw.get("env", ""))
    if env not in ("", "python"):
        raise _fail(path, where, f'env must be "python" or absent, got {env!r}')
    if env and not all(r.python for r in rows):
        raise _fail(path, where, 'env = "python": every row needs python = "3.X"')
    ids = [r.row_id for r in rows]
    if len(set(ids)) != len(ids):
        raise _fail(path, where, f"duplicate rows {sorted({i for i in ids if ids.count(i) > 1})}")
    return SeedTable(
        profile=str(raw["profile"]),
        title=str(raw["title"]),
        rows=rows,
        group=str(raw.get("group", "")),
        env=env,
        note=str(raw.get("note", "")).strip(),
        reason=str(raw.get("reason", "")).strip(),
        explanations=_explanations(path, where, raw.get("explanations", {}), set(ids)),
        document=path.stem,
        metric=metric,
    )


def load_seed_file(path: Path | str) -> SeedDocument:
    path = Path(path)
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise SeedError(f"{path}: cannot read ({exc.strerror or exc})") from None
    except tomllib.TOMLDecodeError as exc:
        raise SeedError(f"{path.name}: not valid TOML: {exc}") from None
    unknown = set(data) - _DOC_KEYS
    if unknown:
        raise _fail(path, "top level", f"unknown keys {sorted(unknown)}; known: {sorted(_DOC_KEYS)}")
    tables = tuple(_table(path, i, raw) for i, raw in enumerate(data.get("table", [])))
    if not tables:
        raise _fail(path, "top level", "no [[table]]")
    return SeedDocument(
        name=path.stem,
        source=str(data.get("source", "")),
        commit=str(data.get("commit", "")),
        run_at=str(data.get("run_at", "")),
        environment=str(data.get("environment", "")),
        python=str(data.get("python", "")),
        granian=str(data.get("granian", "")),
        tables=tables,
        path=path,
    )


def load_seeds(directory: Path | str = SEED_DIR) -> list[SeedDocument]:
    """Every seed document of ``directory``: the known ones in the issue's order, then any others by name."""
    directory = Path(directory)
    paths = sorted(
        directory.glob("*.toml"),
        key=lambda p: (SEED_ORDER.index(p.stem) if p.stem in SEED_ORDER else len(SEED_ORDER), p.stem),
    )
    if not paths:
        raise SeedError(f"no seed tables (*.toml) in {directory}")
    return [load_seed_file(p) for p in paths]
