"""One pair's measured runs of a gate: both sides' servers (re)started and warmed, the main runs in the pair's
order, the interleaved low-concurrency run, each side's record streamed to runs.jsonl. A mixin of the running
gate's session (:mod:`load.gate.running`), whose state it uses: ``opts``, ``routes``, ``servers``, ``pipeline``,
``latency_fn``, ``result``, ``out_dir``, ``clock``, ``t0``, ``server_cpus``, ``launch`` and ``lane_paused``."""

from __future__ import annotations

from typing import Any, Dict, List, Optional, Sequence

from ..records import append_record
from ..run import interleaved_latency
from .injection import LatencyFn, measure_cpu
from .model import GateCase, GateError, GateOptions

__all__ = ["PairRuns"]


def _interleaved(
    handles: Dict[str, Any], route: Any, duration: float, cpus: Optional[Sequence[int]] = None
) -> Dict[str, Dict[str, Any]]:
    """The default low-concurrency run: :func:`load.run.latency.interleaved_latency` over the handles' URLs."""
    return interleaved_latency({side: h.url for side, h in handles.items()}, route, duration, cpus)


def _stop_all(handles: Sequence[Any]) -> None:
    """Stop servers concurrently (each stop waits out its own grace period)."""
    import threading

    threads = [threading.Thread(target=h.stop) for h in handles]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=30)


def _run_record(run: Any, case: GateCase, pair: int, side: str, position: int) -> Dict[str, Any]:
    rec = run.to_dict() if hasattr(run, "to_dict") else dict(run)
    rec.update({"kind": "gate-run", "case": case.name, "pair": pair, "side": side, "position": position})
    return rec


def _low_latency_run(
    latency_fn: LatencyFn, handles: Dict[str, Any], route: Any, case: GateCase, opts: GateOptions
) -> Dict[str, Dict[str, Any]]:
    """Both sides' low-concurrency latencies in one pair, interleaved request by request (the ``lat``
    metrics); a side that answers nothing stops the gate like one that answers nothing under load."""
    res = latency_fn(handles, route, opts.latency_duration, opts.oha_cpus)
    for side, rec in res.items():
        if not rec.get("ok"):
            srv = handles[side]
            raise GateError(
                f"{side.upper()} answered no request with 2xx at one connection on {case.name}; server log "
                f"tail:\n{srv.log_tail(20) if hasattr(srv, 'log_tail') else ''}"
            )
    return res


class PairRuns:
    """The measuring steps of a pair (see the module's docstring for the session state they use)."""

    def measure_case(self, case: GateCase, pair: int, order: List[str]) -> None:
        """One case of one pair: (re)start and warm both sides, the main runs in ``order``, then the
        interleaved low-concurrency run; each side's record is appended and streamed to runs.jsonl."""
        opts, route = self.opts, self.routes[case.route]
        restart = opts.restart_every > 0 and pair % opts.restart_every == 0
        for side in order:
            key = (case.name, side)
            if restart and key in self.servers:
                self.servers.pop(key).stop()
            if key not in self.servers:
                self.servers[key] = self.launch(case, side)
                if opts.warmup > 0:
                    self.pipeline.measure(self.servers[key], route, case.concurrency, opts.warmup, http2=case.http2)
        records = {side: self._main_run(case, pair, side, position) for position, side in enumerate(order)}
        if opts.latency_duration > 0 and not case.http2:  # the latency client speaks HTTP/1.1
            with self.lane_paused():  # the counted lane's valgrind servers off the CPUs meanwhile
                low = _low_latency_run(
                    self.latency_fn, {side: self.servers[(case.name, side)] for side in order}, route, case, opts
                )
            for side in order:
                records[side]["low_latency"] = low[side]
        for side in order:
            records[side]["gate_seconds"] = round(self.clock() - self.t0, 3)  # when this side's runs ended
            # streamed as it ends, so a crash keeps every finished run
            self.result.runs.append(append_record(self.out_dir / "runs.jsonl", records[side]))
        if opts.restart_every == 1:
            _stop_all([self.servers.pop((case.name, side)) for side in order])

    def _main_run(self, case: GateCase, pair: int, side: str, position: int) -> Dict[str, Any]:
        """One side's run at the case's concurrency, with its server CPU and the CPUs' diagnostics."""
        srv = self.servers[(case.name, side)]
        run, cpu_ns, used = measure_cpu(
            self.pipeline, srv, self.routes[case.route], case, self.opts.duration, self.server_cpus
        )
        if run.result.all_failed:
            raise GateError(
                f"{side.upper()} answered no request with 2xx on {case.name} in pair {pair + 1}; "
                f"server log tail:\n{srv.log_tail(20) if hasattr(srv, 'log_tail') else ''}"
            )
        rec = _run_record(run, case, pair, side, position)
        if cpu_ns:
            rec["server_cpu_ns"] = cpu_ns
        if used is not None:
            # Diagnostic only (never used in a verdict): what else ran on the server's CPUs.
            own = cpu_ns / 1e9 if cpu_ns else run.server_cpu_seconds
            rec["server_cpus_busy_seconds"] = round(used.busy, 3)
            rec["foreign_cpu_seconds"] = round(max(0.0, used.busy - own), 3)
            rec["steal_seconds"] = round(used.steal, 3)
        return rec
