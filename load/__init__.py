"""gatecheck load: put a gateway server under the seed benchmarks' load profiles, driven by oha.

Its packages, by stage; data flows one way, plan -> run -> records -> report, and the gate uses them all:

- ``plan``: profiles, routes, the seeds' method, CPU lists and the command lines' values, as data;
- ``run``: oha, pinning, the pipeline (start -> check -> measure, shared by the runner and the gate), the
  profile runner, the WebSocket broadcast, the latency client, the gate's environments, the host's state;
- ``records``: the one versioned format of everything written (JSON lines), and the pytest-benchmark export;
- ``report``: Markdown tables and SVG plots of the records, and the fidelity document against the seed tables;
- ``gate``: the regression gate (statistics, verdicts, injected slowdowns, its command line).

Rules of this package:
- Imports follow the flow: ``plan`` and ``records`` import nothing else of ``load``; ``run`` imports
  ``plan`` and writes through ``records``; ``report`` imports ``plan`` and ``records``, never ``run``;
  ``gate`` may import any of them, and only the command lines (``__main__``, ``gatecheck.cli``) import it.
- Each package's ``__init__`` names its public API (``__all__``); another package imports from the package,
  not from its modules.
- Importing ``load`` is cheap and starts nothing; the names below are the public API. ``python -m
  gatecheck.load`` is the command line.
"""

from __future__ import annotations

from .plan import ROUTES, RouteSpec, route
from .run import (
    GENERATOR_BOUND_UTIL,
    OHA_VERSION,
    LoadRun,
    OhaError,
    OhaNotFound,
    OhaResult,
    Pinning,
    RouteCheckError,
    check_route,
    find_oha,
    is_generator_bound,
    measure,
    parse_json,
    split_cpus,
)

__all__ = [
    "measure",
    "check_route",
    "LoadRun",
    "RouteCheckError",
    "is_generator_bound",
    "GENERATOR_BOUND_UTIL",
    "OHA_VERSION",
    "OhaError",
    "OhaNotFound",
    "OhaResult",
    "find_oha",
    "parse_json",
    "Pinning",
    "split_cpus",
    "ROUTES",
    "RouteSpec",
    "route",
]
