"""The regression gate: BASE and HEAD installs of one server, run interleaved, judged with an interval.

    python -m gatecheck.load gate --base granian==2.8.6 --head ./dist/granian-2.9.0-...whl [--threshold 5%]

Rules of this package:

1. **Pairs, interleaved, order randomised.** Each pair runs every case once on BASE and once on HEAD,
   back to back, in an order drawn from a seeded RNG (the seed is recorded). Whatever slows the
   machine for a few seconds hits both runs of a pair, and the per-pair ratio cancels it.
2. **Fresh processes per pair** (``--restart-every 1``, the default). A server process carries
   state the gate cannot see (memory layout, hash seeds, thread placement); if one BASE and one
   HEAD process served every run, that process-level luck would be in every pair, and the bootstrap
   over pairs would not see it (Kalibera & Jones 2013: repeat at the level that varies). Starting
   costs about 0.2 s per server here. Both servers of a pair are up at once but only one is ever
   under load; both are pinned to the server CPUs and oha to the others.
3. **Stopping depends on precision only**: after ``--pairs`` pairs the gate stops as soon as every
   gated interval is narrower than the threshold (so no verdict can be "inconclusive"), or at
   ``--max-pairs`` / ``--budget``. It never stops because an interval crossed 1: that would be
   optional stopping on the effect and would inflate false alarms.
4. **Only clean runs are numbers.** A run with errors or non-2xx answers is kept in the raw pairs
   but its pair is left out of the statistics and the route's verdict says so; errors on HEAD alone
   fail the gate (a server that errors under load is worse than a slow one).
5. Exit status: 1 when a gated metric (``--fail-on``, default server CPU per request, mean latency at one
   connection and instructions per request) is a regression or HEAD produced errors; else 3 when a gated metric
   is inconclusive (its interval cannot exclude the threshold: neither verdict can be said, and the headline
   says so); else 0; 2 for usage, install or harness failures, with the reason on stderr.
6. **Last in line.** The gate uses the other packages of ``load`` (the plan's routes and argument types,
   the run's pipeline, environments and latency client, the records' format); nothing but the command
   lines imports the gate.

The package, in the order its modules import each other (no cycles): :mod:`.stats` (paired ratios and
bootstrap intervals, pure), :mod:`.verdict` (the rule from an interval to a verdict, pure),
:mod:`.calibration` (sizing an injected slowdown, pure arithmetic over a probe), :mod:`.model` (the nouns
and the metrics), :mod:`.analysis` (run records to verdicts, pure), :mod:`.injection` (HEAD's injected
cost, loop and wait, their probes, the server's CPU time), :mod:`.counted` (the counted lane: instructions
per request under valgrind, in a process of its own), :mod:`.pair_runs` (one pair's measured runs),
:mod:`.running` (the pair loop, on the pipeline of :mod:`load.run.pipeline` that the profile runner uses too),
:mod:`.report` (summary.md, pairs.json, pytest-benchmark files), :mod:`.arguments` (the options), :mod:`.cli`
(the command line). Environments are in :mod:`load.run.envs`, the low-concurrency client in
:mod:`load.run.latency`.
"""

from .analysis import analyse
from .calibration import DELAY_WAIT_US, calibrate_cost, calibrate_delay, calibrate_loops
from .counted import CountLane, counted_records, run_lane
from .injection import (
    BURST_US,
    NEVER,
    burn_probe,
    cost_burst,
    count_probe,
    delay_probe,
    idle_env,
    injected_env,
    measure_cpu,
    spin_cost,
    tree_cpu_ns,
)
from .model import (
    COST_ENV,
    COST_EVERY_ENV,
    COUNTED,
    DEFAULT_ALPHA_WEIGHTS,
    DELAY_ENV,
    DELAY_EVERY_ENV,
    INCONCLUSIVE_STATUS,
    LATENCY_METRICS,
    LOOPS_ENV,
    METRICS,
    STATISTIC_LABELS,
    CaseResult,
    GateCase,
    GateError,
    GateOptions,
    GateResult,
)
from .running import run_gate
from .stats import (
    STATISTICS,
    Estimate,
    estimate_ratio,
    family_confidence,
    percentile,
    t_interval_ratio,
    weighted_levels,
)
from .verdict import SIZE_RULES, Decision, Verdict, decide

__all__ = [
    "GateCase",
    "GateOptions",
    "GateResult",
    "CaseResult",
    "GateError",
    "METRICS",
    "STATISTIC_LABELS",
    "INCONCLUSIVE_STATUS",
    "DEFAULT_ALPHA_WEIGHTS",
    "LATENCY_METRICS",
    "COUNTED",
    "COST_ENV",
    "COST_EVERY_ENV",
    "LOOPS_ENV",
    "DELAY_ENV",
    "DELAY_EVERY_ENV",
    "run_gate",
    "analyse",
    "CountLane",
    "counted_records",
    "run_lane",
    "injected_env",
    "idle_env",
    "NEVER",
    "cost_burst",
    "BURST_US",
    "measure_cpu",
    "burn_probe",
    "delay_probe",
    "tree_cpu_ns",
    "count_probe",
    "spin_cost",
    "calibrate_cost",
    "calibrate_delay",
    "calibrate_loops",
    "DELAY_WAIT_US",
    "STATISTICS",
    "Estimate",
    "estimate_ratio",
    "family_confidence",
    "percentile",
    "t_interval_ratio",
    "weighted_levels",
    "SIZE_RULES",
    "Decision",
    "Verdict",
    "decide",
]
