"""The gate's injected slowdowns and the server CPU it reads: the fixture apps' variables for a CPU cost and an
off-CPU wait, the probes that calibrate them, and the server tree's CPU time in nanoseconds.

Rules of this module:
- HEAD gets the injection, BASE the same variables with nothing ever due (:func:`idle_env`), so both pay the
  apps' per-request check and only the bursts and waits differ.
- A CPU cost is an average per request, burnt as :data:`BURST_US` bursts on every N-th request
  (:func:`cost_burst`); its size is found by measurement (:mod:`load.gate.calibration`, with the probes here).
- The probes start fresh servers through the pipeline each call and stop them before returning.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any, Callable, Dict, Optional, Sequence, Tuple

from ..run import COUNT_ENV, Pipeline, callgrind_wrap, count_batch, count_program, cpu_times
from .model import COST_ENV, COST_EVERY_ENV, DELAY_ENV, DELAY_EVERY_ENV, LOOPS_ENV, GateCase, GateError

__all__ = [
    "tree_cpu_ns",
    "BURST_US",
    "cost_burst",
    "NEVER",
    "idle_env",
    "injected_env",
    "measure_cpu",
    "burn_probe",
    "delay_probe",
    "count_probe",
    "spin_cost",
    "LatencyFn",
]

LatencyFn = Callable[..., Dict[str, Dict[str, Any]]]


def tree_cpu_ns(pid: Optional[int]) -> Optional[int]:
    """Nanoseconds on CPU of every thread of ``pid`` and its descendants (Linux ``schedstat``).

    ``psutil``'s CPU times come in clock ticks (10 ms): on a 2 s run that is 1-2% of quantisation
    noise per run, as large as the effects the gate looks for. The scheduler's own per-thread
    counter is in nanoseconds. A thread that exits between two readings drops out of the sum, so the
    difference is only meaningful for servers whose threads live as long as the run (they do here).
    Returns None where ``/proc`` or psutil is not available.
    """
    if pid is None:
        return None
    try:
        import psutil

        parent = psutil.Process(pid)
        pids = [pid] + [c.pid for c in parent.children(recursive=True)]
    except Exception:
        return None
    total, seen = 0, False
    for p in pids:
        try:
            tasks = os.listdir(f"/proc/{p}/task")
        except OSError:
            continue
        for task in tasks:
            try:
                with open(f"/proc/{p}/task/{task}/schedstat", encoding="ascii") as f:
                    total += int(f.read().split()[0])
                seen = True
            except (OSError, ValueError, IndexError):
                continue
    return total if seen else None


#: A CPU cost of ``c`` µs per request is injected as a burst of this many µs on every N-th request,
#: N = round(BURST / c): measured on granian 2.8.9 (rsgi json c64, 2-core VM; benchmarks/gate/README.md,
#: sixth experiment), a burn on every request was neither linear nor stable below a few µs (0.001 µs added
#: 1.7 µs; 0.25 µs added 2 to 12% in eight rounds), while 50 µs every 100th, 50th, 30th request added 5.3,
#: 8.8 and 12.8% with every round within 1% of its median.
BURST_US = 50.0


def cost_burst(cost_us: float) -> Tuple[float, int]:
    """(µs burnt, every N-th request) for an average of ``cost_us`` µs per request: :data:`BURST_US` on
    every N-th request, N = round(BURST_US / cost_us) (a cost of BURST_US or more: on every request)."""
    if cost_us >= BURST_US:
        return cost_us, 1
    every = max(1, round(BURST_US / cost_us))
    return BURST_US, every


NEVER = 2**62  # a period no run reaches: the injection's machinery runs on every request, nothing is ever due


def idle_env(cost_us: float = 0.0, delay: Tuple[float, int] = (0.0, 1), loops: int = 0) -> Dict[str, str]:
    """BASE's variables beside a HEAD given :func:`injected_env` ``(cost_us, delay)``: the same variables with
    a period of :data:`NEVER`, so BASE's app runs the same check on every request and burns and waits nothing.
    The slowdown measured is then the bursts and waits alone: the check itself cost granian's RSGI json route
    1.3 µs per request (x1.036 in a gate that burnt nothing; benchmarks/gate/README.md, seventh experiment)."""
    env = injected_env(cost_us, delay, loops)
    if COST_ENV in env:
        env[COST_EVERY_ENV] = str(NEVER)
    if LOOPS_ENV in env:
        env[LOOPS_ENV] = "0"  # the same call on every request, doing no work
    if DELAY_ENV in env:
        env[DELAY_EVERY_ENV] = str(NEVER)
    return env


def injected_env(cost_us: float = 0.0, delay: Tuple[float, int] = (0.0, 1), loops: int = 0) -> Dict[str, str]:
    """The fixture apps' variables for burning ``cost_us`` µs of CPU per request on average (0: none; as
    bursts, :func:`cost_burst`), ``loops`` units of counted work on every request (0: none;
    ``fixtures.payloads.spin``) and waiting ``delay[0]`` µs without CPU on every ``delay[1]``-th request
    (0: none)."""
    env = {LOOPS_ENV: str(int(loops))} if loops > 0 else {}
    if cost_us > 0:
        burst, every = cost_burst(cost_us)
        env[COST_ENV] = f"{burst:.3f}"
        if every > 1:
            env[COST_EVERY_ENV] = str(every)
    if delay[0] > 0:
        env[DELAY_ENV] = f"{delay[0]:.3f}"
        env[DELAY_EVERY_ENV] = str(int(delay[1]))
    return env


def measure_cpu(
    pipeline: Pipeline, srv: Any, route: Any, case: GateCase, duration: float, cpus: Optional[Sequence[int]] = None
) -> Tuple[Any, Optional[int], Any]:
    """One measured run with the server tree's CPU nanoseconds around it (None where not readable) and,
    with ``cpus``, those CPUs' busy and steal time over it (a :class:`load.run.pinning.CpuTimes` or None)."""
    pid = getattr(srv, "pid", None)
    cpu0, box0 = tree_cpu_ns(pid), cpu_times(cpus) if cpus else None
    run = pipeline.measure(srv, route, case.concurrency, duration, http2=case.http2)
    cpu1, box1 = tree_cpu_ns(pid), cpu_times(cpus) if cpus else None
    cpu_ns = cpu1 - cpu0 if cpu0 is not None and cpu1 is not None and cpu1 > cpu0 else None
    box = box1 - box0 if box0 is not None and box1 is not None else None
    return run, cpu_ns, box


def burn_probe(
    pipeline: Pipeline, case: GateCase, route: Any, *, python: str, warmup: float, duration: float
) -> Callable[[float], float]:
    """``cost_us -> server CPU µs per 2xx response`` of ``python``'s install burning ``cost_us`` per request,
    one warm run on a fresh process each call: what :func:`load.gate.calibration.calibrate_cost` measures with."""

    def cpu_per_request(cost: float) -> float:
        env = injected_env(cost) if cost else idle_env(BURST_US)  # 0: BASE as the gate runs it beside a burning HEAD
        with pipeline.start(case.setup, python=python, env=env) as srv:
            if warmup > 0:
                pipeline.measure(srv, route, case.concurrency, warmup, http2=case.http2)
            run, cpu_ns, _ = measure_cpu(pipeline, srv, route, case, duration)
        if run.result.all_failed or not run.result.ok:
            raise GateError(f"calibration: no 2xx answer on {case.name} (burning {cost:.2f} µs per request)")
        cpu = cpu_ns / 1e9 if cpu_ns else run.server_cpu_seconds
        return cpu / run.result.ok * 1e6

    return cpu_per_request


def delay_probe(
    pipeline: Pipeline,
    case: GateCase,
    route: Any,
    *,
    python: str,
    latency_fn: LatencyFn,
    duration: float,
    wait_us: float,
) -> Callable[[int], Tuple[float, float]]:
    """``every -> (BASE mean latency µs, trial/BASE ratio)``: two fresh servers of ``python``'s install,
    the trial one waiting ``wait_us`` on every ``every``-th request (0: never), measured interleaved:
    what :func:`load.gate.calibration.calibrate_delay` measures with."""

    def measure(every: int) -> Tuple[float, float]:
        idle = idle_env(delay=(wait_us, 1))  # BASE as the gate runs it beside a waiting HEAD
        trial = injected_env(delay=(wait_us, every)) if every else idle
        with (
            pipeline.start(case.setup, python=python, env=idle) as base,
            pipeline.start(case.setup, python=python, env=trial) as head,
        ):
            latency_fn({"base": base, "head": head}, route, min(duration, 0.5), pipeline.oha_cpus)  # warm both
            res = latency_fn({"base": base, "head": head}, route, duration, pipeline.oha_cpus)
        if not res["base"].get("ok") or not res["head"].get("ok"):
            raise GateError(f"calibration: no 2xx answer at one connection on {case.name}")
        return res["base"]["avg_ms"] * 1000, res["head"]["avg_ms"] / res["base"]["avg_ms"]

    return measure


def count_probe(
    pipeline: Pipeline, case: GateCase, route: Any, *, python: str, requests: int, warmup: int, out_dir: Path
) -> float:
    """BASE's instructions per request as the gate runs it beside a looping HEAD: one counted server of
    ``python``'s install (``load.run.counting``), ``warmup`` uncounted then ``requests`` counted requests."""
    env = {**idle_env(loops=1), **COUNT_ENV}  # spin(0) on every request, as BASE runs beside a spinning HEAD
    with pipeline.start(
        case.setup, python=python, env=env, wrap=callgrind_wrap(out_dir, "calibrate"), ready_timeout=300.0
    ) as srv:
        res = count_batch(
            {"base": srv}, route, requests=requests, warmup=warmup, out_dir=out_dir, labels={"base": "calibrate"}
        )
    for f in out_dir.glob("calibrate.callgrind.*"):
        f.unlink(missing_ok=True)
    return res["base"]["instructions_per_request"]


#: The loop program counted by :func:`spin_cost`: the fixtures' own ``spin``, called ``k`` times with ``n``.
_SPIN_DRIVER = "\nimport sys\nn, k = int(sys.argv[1]), int(sys.argv[2])\nfor _ in range(k):\n    spin(n)\n"


def spin_cost(python: str, out_dir: Path, calls: int = 1000, loops: int = 100) -> Tuple[float, float]:
    """(instructions per unit, instructions per call) of ``fixtures.payloads.spin`` in ``python``, counted
    under callgrind: three runs of one program that differ only in its arguments (no call, ``calls`` calls of
    ``spin(0)``, ``calls`` calls of ``spin(loops)``), so start-up cancels exactly. BASE calls ``spin(0)`` on
    every request, so only the units are HEAD's injected work."""
    import inspect

    from gatecheck.fixtures.payloads import spin

    code = "_UNITS = [1] * 4096\n" + inspect.getsource(spin) + _SPIN_DRIVER
    empty, called, looped = (
        count_program(python, code, [str(n), str(k)], out_dir, f"spin-{n}-{k}")
        for n, k in ((0, 0), (0, calls), (loops, calls))
    )
    return (looped - called) / (calls * loops), (called - empty) / calls
