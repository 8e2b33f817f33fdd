"""Load profiles: data files (``load/profiles/*.toml``), one per section of the seed benchmarks.

Rules of this module:
- A profile is data: a title, a paragraph, table columns, and ``[[case]]`` rows. Each case is one table row:
  a target (``{server}`` is replaced by the server the user names), a route of ``load.plan.routes``, and the
  concurrencies to try (the table shows the best one, as the seed tables do).
- Everything is validated on load, naming the file and the case; a profile that loads is runnable.
- Which cases run on this host is decided here too (``plan``), as data: a case is skipped, with a reason,
  when its server is not the one asked for, when it needs more cores than the host has (unless ``full``),
  or when the running Python is too new for it. Skips are recorded, never silent.

Case keys (TOML)::

    label = "RSGI get 1KB"          row label (required)
    target = "{server}:rsgi"        target string; {server} = the server named on the command line
    route = "b1k"                   a load.plan.routes name
    concurrency = [128]             one or more; the report shows the best (highest 2xx RPS)
    group = "Workers"               sub-table heading (optional)
    cells = ["RSGI", "1"]           values for the profile's ``columns`` (instead of the label)
    app = "gatecheck.fixtures.apps.asgi:app"  default: gatecheck.fixtures.apps.<interface>:app
    env = {GATECHECK_COST_US = "50"}
    requests = 1000000              fixed request count instead of a duration (quick_requests in --quick)
    h2_parallel = 1                 oha -p for HTTP/2 targets
    python_lt = "3.12"              skip on this Python version and newer
    http2 = true                    load over HTTP/2 (implied by an ``:h2`` target; needed for ``auto`` ones)
    needs = ["fastapi"]             modules the app needs; the case is skipped when one is not importable
    messages = 20000                messages each client sends, for a WebSocket route (``ws_broadcast``,
                                    ``load.run.wsbroadcast``): there ``concurrency`` is the number of clients
"""

from __future__ import annotations

import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Mapping, Sequence

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - exercised on 3.9/3.10 tox envs
    import tomli as tomllib

from gatecheck.servers import Target, TargetError

from .routes import RouteError
from .routes import route as lookup_route

__all__ = [
    "Case",
    "Profile",
    "ProfileError",
    "PlannedCase",
    "load_profile",
    "list_profiles",
    "PROFILE_DIR",
    "plan",
    "cores_needed",
]

PROFILE_DIR = Path(__file__).resolve().parent.parent / "profiles"

_CASE_KEYS = {
    "label",
    "target",
    "route",
    "concurrency",
    "group",
    "cells",
    "app",
    "env",
    "requests",
    "quick_requests",
    "h2_parallel",
    "python_lt",
    "note",
    "http2",
    "needs",
    "messages",
}
_PROFILE_KEYS = {
    "title",
    "description",
    "default_server",
    "columns",
    "env_columns",
    "bold_best",
    "case",
    "section",
    "note",
}


class ProfileError(ValueError):
    """A profile file is missing or malformed; the message names the file and the case."""


@dataclass(frozen=True)
class Case:
    label: str
    target: str
    route: str
    concurrency: tuple[int, ...]
    group: str = ""
    cells: tuple[str, ...] = ()
    app: str | None = None
    env: Mapping[str, str] = field(default_factory=dict)
    requests: int | None = None
    quick_requests: int | None = None
    h2_parallel: int = 1
    python_lt: str | None = None
    note: str = ""
    http2: bool = False
    needs: tuple[str, ...] = ()
    messages: int | None = None  # per client, WebSocket routes only

    @property
    def websocket(self) -> bool:
        """A WebSocket case (its route's kind is "ws"): loaded by load.run.wsbroadcast, ``concurrency`` = clients."""
        return lookup_route(self.route).kind == "ws"

    def target_for(self, server: str | None, default_server: str) -> Target:
        """The row's target with ``{server}`` filled in, parsed (TargetError if the row is malformed)."""
        return Target.parse(self.target.replace("{server}", server or default_server))


@dataclass(frozen=True)
class Profile:
    name: str
    title: str
    description: str
    cases: tuple[Case, ...]
    section: str = ""  # the seed document's section this reproduces
    default_server: str = "granian"
    columns: tuple[str, ...] = ("Request",)
    env_columns: tuple[str, ...] = ()  # environment values shown as leading columns, e.g. ("python",)
    bold_best: bool = False
    note: str = ""
    path: Path | None = None

    @property
    def max_concurrency(self) -> int:
        return max(c for case in self.cases for c in case.concurrency)


@dataclass(frozen=True)
class PlannedCase:
    """A case as it will run here: its concrete target, or why it is skipped."""

    case: Case
    target: Target
    skip: str = ""  # reason; empty means it runs


def _fail(path: Path, where: str, message: str) -> ProfileError:
    return ProfileError(f"{path.name}: {where}: {message}")


def _case(path: Path, index: int, raw: Mapping[str, Any], columns: Sequence[str]) -> Case:
    where = f"case {index + 1} ({raw.get('label', '?')!r})"
    unknown = set(raw) - _CASE_KEYS
    if unknown:
        raise _fail(path, where, f"unknown keys {sorted(unknown)}; known: {sorted(_CASE_KEYS)}")
    for key in ("label", "target", "route", "concurrency"):
        if key not in raw:
            raise _fail(path, where, f"missing {key!r}")
    try:
        spec = lookup_route(raw["route"])
        Target.parse(str(raw["target"]).replace("{server}", "server"))
    except (RouteError, TargetError) as exc:
        raise _fail(path, where, str(exc)) from None
    conc = raw["concurrency"]
    conc = [conc] if isinstance(conc, int) else conc
    if not conc or not all(isinstance(c, int) and c >= 1 for c in conc):
        raise _fail(
            path, where, f"concurrency must be a positive integer or a list of them, got {raw['concurrency']!r}"
        )
    cells = tuple(str(c) for c in raw.get("cells", ()))
    if cells and len(cells) != len(columns):
        raise _fail(path, where, f"{len(cells)} cells for {len(columns)} columns {list(columns)}")
    for key in ("requests", "quick_requests", "messages"):
        if key in raw and not (isinstance(raw[key], int) and raw[key] >= 1):
            raise _fail(path, where, f"{key} must be a positive integer")
    if spec.kind == "ws" and "messages" not in raw:
        raise _fail(path, where, f"route {spec.name!r} is a WebSocket route: give messages (per client)")
    if spec.kind != "ws" and "messages" in raw:
        raise _fail(path, where, f"messages is for WebSocket routes; route {spec.name!r} is HTTP")
    return Case(
        label=str(raw["label"]),
        target=str(raw["target"]),
        route=str(raw["route"]),
        concurrency=tuple(conc),
        group=str(raw.get("group", "")),
        cells=cells,
        app=raw.get("app"),
        env={str(k): str(v) for k, v in raw.get("env", {}).items()},
        requests=raw.get("requests"),
        quick_requests=raw.get("quick_requests"),
        h2_parallel=int(raw.get("h2_parallel", 1)),
        python_lt=raw.get("python_lt"),
        note=str(raw.get("note", "")),
        http2=bool(raw.get("http2", False)),
        needs=tuple(str(n) for n in raw.get("needs", ())),
        messages=raw.get("messages"),
    )


def load_profile(name_or_path: str | Path) -> Profile:
    """Load a profile by name (``interfaces``) or path; raise ProfileError listing the known names."""
    path = Path(name_or_path)
    if path.suffix != ".toml":
        path = PROFILE_DIR / f"{name_or_path}.toml"
    if not path.is_file():
        raise ProfileError(f"no profile {str(name_or_path)!r}; known profiles: {', '.join(list_profiles())}")
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except tomllib.TOMLDecodeError as exc:
        raise ProfileError(f"{path.name}: not valid TOML: {exc}") from None
    unknown = set(data) - _PROFILE_KEYS
    if unknown:
        raise _fail(path, "top level", f"unknown keys {sorted(unknown)}; known: {sorted(_PROFILE_KEYS)}")
    columns = tuple(data.get("columns", ("Request",)))
    cases = tuple(_case(path, i, raw, columns) for i, raw in enumerate(data.get("case", [])))
    if not cases:
        raise _fail(path, "top level", "no [[case]] rows")
    return Profile(
        name=path.stem,
        title=str(data.get("title", path.stem)),
        description=str(data.get("description", "")).strip(),
        cases=cases,
        section=str(data.get("section", "")),
        default_server=str(data.get("default_server", "granian")),
        columns=columns,
        env_columns=tuple(data.get("env_columns", ())),
        bold_best=bool(data.get("bold_best", False)),
        note=str(data.get("note", "")).strip(),
        path=path,
    )


def list_profiles() -> list[str]:
    return sorted(p.stem for p in PROFILE_DIR.glob("*.toml"))


def cores_needed(target: Target) -> int:
    """Cores a target wants busy at once: worker processes × runtime threads (both default 1)."""
    try:
        return int(target.option("workers", "1")) * int(target.option("runtime-threads", "1"))
    except ValueError:
        return 1


def _version_tuple(text: str) -> tuple[int, ...]:
    return tuple(int(x) for x in text.split(".")[:2])


def plan(
    profile: Profile,
    server: str | None,
    *,
    host_cores: int,
    full: bool = False,
    python_version: tuple[int, int] = sys.version_info[:2],
    select: str | None = None,
    interface: str | None = None,
    importable=None,
) -> list[PlannedCase]:
    """Which cases run, with which target, and why the others are skipped.

    ``server`` is a server name (fills ``{server}``; fixed-target cases of other servers are skipped) or
    None (every case, ``{server}`` = the profile's default). ``select`` keeps cases whose label contains it;
    ``interface`` keeps cases of that interface. ``importable(module) -> bool`` decides ``needs`` (default:
    importable by this interpreter).
    """
    if importable is None:
        import importlib.util

        def importable(module: str) -> bool:
            return importlib.util.find_spec(module) is not None

    planned = []
    for case in profile.cases:
        if select and select.lower() not in case.label.lower():
            continue
        target = case.target_for(server, profile.default_server)
        if interface and target.interface != interface:
            continue
        if server and "{server}" not in case.target and target.server != server:
            continue  # a fixed-target row of another server (e.g. in "vs"): not asked for
        skip = ""
        if case.python_lt and python_version >= _version_tuple(case.python_lt):
            skip = f"needs Python < {case.python_lt}"
        elif any(not importable(m) for m in case.needs):
            missing = [m for m in case.needs if not importable(m)]
            skip = f"needs {', '.join(missing)} (not installed)"
        elif not full and cores_needed(target) > host_cores:
            skip = f"needs {cores_needed(target)} cores, host has {host_cores} (use --full to run anyway)"
        planned.append(PlannedCase(case, target, skip))
    return planned
