"""A profile run's options as given, and what they make of each case here (the plan, scaled by ``--quick``).

Rules of this module:
- ``RunOptions`` is what the command line gives, parsed once: a profile, a target, where results go, how
  durations scale, where server and oha run. ``RunOptions.planned`` asks the plan which cases run here.
- Python-version limits and ``needs`` are judged for the interpreter that runs the server (``--python``),
  asked once, in a child process; the rest is pure.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Callable

from gatecheck.servers import Target

from ..plan import Case, Method, PlannedCase, Profile, plan
from .pinning import Pinning

__all__ = ["RunOptions", "RunSummary", "case_concurrencies", "requests_for", "messages_for", "interpreter"]


@dataclass(frozen=True)
class RunOptions:
    profile: Profile
    # From the command line, parsed once: a server name fills the profile's ``{server}``; a full target
    # (``granian:asgi:h1?loop=uvloop``) also keeps only cases of its interface and sets its HTTP mode and options.
    target: Target | None = None
    out_dir: Path = Path("results")
    quick: float | None = None
    full: bool = False
    repeat: int = 1
    pinning: Pinning | None = None  # None: split the available CPUs
    oha: Path | None = None
    python: str | None = None
    select: str | None = None
    concurrency: tuple[int, ...] | None = None  # overrides every case's list
    method: Method = Method()

    def effective_method(self) -> Method:
        return self.method.scaled(self.quick) if self.quick else self.method

    def planned(self, host_cores: int) -> list[PlannedCase]:
        """The profile's cases as they run here: filtered, customised, or skipped with a reason.

        Python-version limits and ``needs`` are judged for the interpreter that runs the server."""
        version, importable = interpreter(self.python)
        given = self.target
        items = plan(
            self.profile,
            given.server if given else None,
            host_cores=host_cores,
            full=self.full,
            select=self.select,
            interface=given.interface if given else None,
            python_version=version,
            importable=importable,
        )
        return [replace(p, target=_customise(p.target, given)) for p in items]


@dataclass
class RunSummary:
    results: Path
    runs: int = 0
    skipped: int = 0  # cases the plan leaves out here, each with its reason (too few cores, ...)
    errors: int = 0  # cases skipped for an error (a target that does not resolve): never a clean run
    failures: int = 0
    flagged: int = 0
    session: str = ""
    messages: list = field(default_factory=list)


def case_concurrencies(case: Case, opts: RunOptions) -> tuple[int, ...]:
    return opts.concurrency or case.concurrency


def requests_for(case: Case, opts: RunOptions) -> int | None:
    if case.requests is None:
        return None
    if opts.quick:
        return case.quick_requests or max(1000, int(case.requests * opts.quick * 0.05))
    return case.requests


def messages_for(case: Case, opts: RunOptions) -> int:
    """Messages per client of a WebSocket case (scaled by --quick, at least 100)."""
    messages = case.messages or 0
    return max(100, int(messages * opts.quick)) if opts.quick else messages


def interpreter(python: str | None) -> tuple[tuple[int, int], Callable[[str], bool] | None]:
    """(major, minor) of the server's interpreter and an ``importable(module)`` test run inside it."""
    if not python:
        return sys.version_info[:2], None
    import subprocess

    path = Path(python)
    exe = str(path / "bin" / "python") if path.is_dir() else str(path)
    script = "import sys; print('%d.%d' % sys.version_info[:2])"
    try:
        out = subprocess.run([exe, "-c", script], capture_output=True, text=True, timeout=30, stdin=subprocess.DEVNULL)
        major, minor = (int(x) for x in out.stdout.strip().split("."))
    except (OSError, ValueError, subprocess.TimeoutExpired):
        return sys.version_info[:2], None  # start_server will report the broken interpreter clearly

    def importable(module: str) -> bool:
        probe = f"import importlib.util, sys; sys.exit(importlib.util.find_spec({module!r}) is None)"
        try:
            return subprocess.run([exe, "-c", probe], timeout=30, stdin=subprocess.DEVNULL).returncode == 0
        except (OSError, subprocess.TimeoutExpired):
            return False

    return (major, minor), importable


def _customise(target: Target, given: Target | None) -> Target:
    """Apply a command-line target's HTTP mode and options to a case's target."""
    if given is None or not (given.options or given.http):
        return target
    if given.http:
        target = replace(target, http=given.http)
    return target.with_options(**dict(given.options))
