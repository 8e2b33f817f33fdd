"""Plan: what to run, how long, and where, as data: profiles, routes, the seeds' method, CPU lists and the
command lines' values.

Rules of this package:
- It imports nothing else of ``load``: the run, the records and the reports read the plan, never the reverse.
- Data and pure functions only: nothing here starts a process, opens a socket or writes a file (profiles
  are read from ``load/profiles/*.toml``; an interpreter named by ``--python`` is asked nothing here).
- Everything a user types is validated when read, naming the file, the case or the option.
"""

from __future__ import annotations

from .argtypes import at_least, cpu_list, non_negative_float, percent, positive_float, positive_int, server_or_target
from .cpulist import format_cpu_list, parse_cpu_list
from .method import DEFAULT_QUICK, SETTLE, Method
from .profile import (
    PROFILE_DIR,
    Case,
    PlannedCase,
    Profile,
    ProfileError,
    cores_needed,
    list_profiles,
    load_profile,
    plan,
)
from .routes import ROUTES, RouteError, RouteSpec, route

__all__ = [
    "Case",
    "PlannedCase",
    "Profile",
    "ProfileError",
    "PROFILE_DIR",
    "cores_needed",
    "list_profiles",
    "load_profile",
    "plan",
    "ROUTES",
    "RouteError",
    "RouteSpec",
    "route",
    "Method",
    "DEFAULT_QUICK",
    "SETTLE",
    "parse_cpu_list",
    "format_cpu_list",
    "at_least",
    "cpu_list",
    "non_negative_float",
    "percent",
    "positive_float",
    "positive_int",
    "server_or_target",
]
