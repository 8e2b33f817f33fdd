"""Run: put a started server under load and measure it: oha, pinning, the pipeline, the profile runner, the
WebSocket broadcast, the one-request-at-a-time latency client, counted servers (valgrind), the gate's environments,
the host's state.

Rules of this package:
- It reads the plan (``load.plan``) and writes what it measures as records (``load.records``, appended as
  each run ends); it never imports the reports or the gate.
- Every process it starts is pinned as the plan says, has a deadline, and is stopped by whoever started it,
  also on Ctrl-C and SIGTERM (``signals``); a failed or empty run is an error or a failure record, never a
  number.
- Servers are started, checked and measured only through one ``Pipeline`` (``pipeline``), shared with the gate.
"""

from __future__ import annotations

from .counting import COUNT_ENV, CountError, callgrind_wrap, count_batch, count_batches, count_program, valgrind_missing
from .envs import EnvError, InstallSpec, PythonEnv, ensure_env, ensure_pair, parse_spec
from .host import environment, host_load, host_speed
from .latency import interleaved_latency
from .measure import GENERATOR_BOUND_UTIL, LoadRun, RouteCheckError, check_route, is_generator_bound, measure
from .oha import OHA_VERSION, OhaError, OhaNotFound, OhaResult, find_oha, oha_version, parse_json
from .options import RunOptions, RunSummary
from .pinning import CpuTimes, Pinning, available_cpus, cpu_times, require_available, split_cpus
from .pipeline import Pipeline, ServerSetup, setup_for
from .runner import run_profile
from .signals import INTERRUPTED, stop_on_signals
from .wsbroadcast import BroadcastError, BroadcastRun, broadcast, check_broadcast

__all__ = [
    "OHA_VERSION",
    "OhaError",
    "OhaNotFound",
    "OhaResult",
    "find_oha",
    "oha_version",
    "parse_json",
    "GENERATOR_BOUND_UTIL",
    "LoadRun",
    "RouteCheckError",
    "check_route",
    "is_generator_bound",
    "measure",
    "CpuTimes",
    "Pinning",
    "available_cpus",
    "cpu_times",
    "require_available",
    "split_cpus",
    "Pipeline",
    "ServerSetup",
    "setup_for",
    "RunOptions",
    "RunSummary",
    "run_profile",
    "BroadcastError",
    "BroadcastRun",
    "broadcast",
    "check_broadcast",
    "interleaved_latency",
    "COUNT_ENV",
    "CountError",
    "callgrind_wrap",
    "count_batch",
    "count_batches",
    "count_program",
    "valgrind_missing",
    "EnvError",
    "InstallSpec",
    "PythonEnv",
    "ensure_env",
    "ensure_pair",
    "parse_spec",
    "environment",
    "host_load",
    "host_speed",
    "INTERRUPTED",
    "stop_on_signals",
]
