"""gatecheck load: put a gateway server under the seed benchmarks' load profiles, driven by oha.

Modules, one noun each: ``oha`` (the load generator), ``routes`` (what to request and what a correct answer
is), ``pinning`` (CPU sets), ``measure`` (one run against a started server), ``pipeline`` (a target resolved
once, its app, and start -> check -> measure: shared by the runner and the gate), ``profile`` (profiles as
data), ``runner`` (a whole profile), ``results`` (JSON lines), ``report`` and
``plot`` (Markdown and SVG). ``python -m gatecheck.load`` is the command line.

Importing ``load`` is cheap and starts nothing; the names below are the public API.
"""
from __future__ import annotations

from .measure import GENERATOR_BOUND_UTIL, LoadRun, RouteCheckError, check_route, is_generator_bound, measure
from .oha import OHA_VERSION, OhaError, OhaNotFound, OhaResult, find_oha, parse_json
from .pinning import Pinning, split_cpus
from .routes import ROUTES, RouteSpec, route

__all__ = [
    "measure", "check_route", "LoadRun", "RouteCheckError", "is_generator_bound", "GENERATOR_BOUND_UTIL",
    "OHA_VERSION", "OhaError", "OhaNotFound", "OhaResult", "find_oha", "parse_json",
    "Pinning", "split_cpus",
    "ROUTES", "RouteSpec", "route",
]
