"""Fake servers and runs for the gate's tests (tests/load/test_gate*.py): ``run_gate`` takes ``start``/
``measure_fn``/``check_fn`` seams, the pipeline's, so the pair loop runs without a server or oha."""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from types import SimpleNamespace

from gatecheck.load import gate
from gatecheck.load.gate import GateCase, GateOptions, run_gate
from gatecheck.load.run.pipeline import setup_for
from gatecheck.servers import Target


def gate_case(route: str, target: str = "granian:rsgi:auto", concurrency: int = 64) -> GateCase:
    return GateCase(setup_for(Target.parse(target)), route, concurrency)


CASE = gate_case("json")


@dataclass
class FakeServer:
    side: str
    env: dict
    stopped: bool = False
    versions: dict = field(default_factory=lambda: {"granian": "9.9.9", "python": "3.11.7"})

    def stop(self):
        self.stopped = True

    def log_tail(self, lines=40):
        return "fake log"

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.stop()


class FakeRun:
    def __init__(self, rps, p99_ms, cpu_us, errors=0, all_failed=False, duration=2.0, concurrency=64, mean_us=None):
        ok = 0 if all_failed else int(rps * duration)
        self.rps = 0.0 if all_failed else rps
        self.concurrency = concurrency
        self.server_cpu_seconds = cpu_us * ok / 1e6
        mean = (mean_us or concurrency / rps * 1e6) / 1e6
        self.result = SimpleNamespace(
            all_failed=all_failed,
            ok=ok,
            rps=self.rps,
            errors={},
            non_2xx={},
            latency_avg=mean,
            latency_p50=mean * 0.9,
            latency_p99=p99_ms / 1e3,
        )
        self._d = {
            "rps": self.rps,
            "ok": ok,
            "errors": {"connection reset": errors} if errors else {},
            "non_2xx": {},
            "latency_ms": {"p99": p99_ms},
            "server": {"cpu_seconds": self.server_cpu_seconds},
            "generator_bound": False,
        }

    def to_dict(self):
        return dict(self._d)


class FakeLab:
    """Servers whose RPS is ``level`` (× ``head_factor`` on HEAD), with seeded noise and shared drift."""

    def __init__(self, head_factor=1.0, noise=0.01, seed=0, head_errors_in_pair=None, head_dead=False):
        self.head_factor = head_factor
        self.latency_runs = []
        self.noise = noise
        self.rng = random.Random(seed)
        self.started = []
        self.measured = []
        self.head_errors_in_pair = head_errors_in_pair
        self.head_dead = head_dead
        self.machine = 1.0
        self.lane_specs = []
        self.lane_rng = random.Random(seed + 1)  # its own: the timed runs' noise stays what it was
        self.lane_note = None
        self.lane_fails_at = None  # the counted pair at which the lane stops writing records (None: never)
        self.missing = None  # why valgrind cannot count (None: it can)

    def start(self, target, *, app, log_dir, env, cpus, python, **kw):
        srv = FakeServer("head" if python == "/head/python" else "base", env)
        self.started.append(srv)
        return srv

    def measure(self, srv, route, concurrency, duration, **kwargs):
        if duration < 1.0:  # warm-up: the machine's speed drifts between pairs
            self.machine = 1.0 + self.rng.gauss(0, 0.10)
            return FakeRun(1000.0, 5.0, 50.0, concurrency=concurrency)
        factor = self.head_factor if srv.side == "head" else 1.0
        rps = 20_000 * self.machine * factor * (1 + self.rng.gauss(0, self.noise))
        self.measured.append(srv.side)
        pair = sum(1 for s in self.measured if s == "head") - 1
        errors = 3 if srv.side == "head" and self.head_errors_in_pair == pair else 0
        # an injected cost adds exactly its average here
        burn = float(srv.env.get(gate.COST_ENV, 0.0)) / int(srv.env.get(gate.COST_EVERY_ENV, 1))
        return FakeRun(
            rps, 3.0 / factor, 50.0 / factor + burn, errors=errors, all_failed=self.head_dead and srv.side == "head"
        )

    def latency(self, handles, route, duration, cpus=None):
        """The interleaved low-concurrency run: 200 µs, slower by HEAD's factor; a wait adds exactly its mean."""
        out = {}
        for side, srv in handles.items():
            self.latency_runs.append(srv.side)
            wait = float(srv.env.get(gate.DELAY_ENV, 0.0)) / int(srv.env.get(gate.DELAY_EVERY_ENV, 1))
            mean = (
                200.0 / (self.head_factor if srv.side == "head" else 1.0) * (1 + self.rng.gauss(0, self.noise)) + wait
            )
            out[side] = {
                "concurrency": 1,
                "ok": 1000,
                "errors": {},
                "non_2xx": {},
                "avg_ms": mean / 1000,
                "p50_ms": mean * 0.9 / 1000,
                "p99_ms": mean * 3 / 1000,
            }
        return out

    def count_lane(self, spec, out_dir):
        """The counted lane: BASE 60,000 instructions per request (0.1% noise), HEAD slower by its factor and
        70 more per unit of injected work; one record per side and pair in runs.jsonl, as the real lane writes."""
        from gatecheck.load.records import append_record

        self.lane_specs.append(spec)
        loops = int(spec["envs"]["head"].get(gate.LOOPS_ENV, 0))
        for pair in range(spec["pairs"] if self.lane_fails_at is None else self.lane_fails_at):
            for side in ("base", "head"):
                ipr = 60_000.0 * (1 + self.lane_rng.gauss(0, 0.001))
                ipr = ipr / self.head_factor + 70 * loops if side == "head" else ipr
                append_record(
                    out_dir / "runs.jsonl",
                    {
                        "kind": "gate-run",
                        "lane": "count",
                        "case": CASE.name,
                        "pair": pair,
                        "side": side,
                        "instructions_per_request": ipr,
                        "requests": 300,
                        "instructions": int(ipr * 300),
                    },
                )
        return SimpleNamespace(wait=lambda timeout: self.lane_note, stop=lambda: None)

    def gate(self, tmp_path, **opts):
        o = dict(cases=(CASE,), seed=1, resamples=500)
        slowdown = opts.pop("head_slowdown", None)
        increase = opts.pop("head_delay_increase", None)
        o.update(opts)
        return run_gate(
            GateOptions(**o),
            base_python="/base/python",
            head_python="/head/python",
            base_info={"spec": "granian==1.0"},
            head_info={"spec": "granian==1.1"},
            out_dir=tmp_path,
            start=self.start,
            measure_fn=self.measure,
            route_fn=lambda name: name,
            check_fn=lambda *a, **k: None,
            latency_fn=self.latency,
            head_slowdown=slowdown,
            head_delay_increase=increase,
            log=lambda s: None,
            lane_fn=self.count_lane,
            counting_missing=lambda: self.missing,
        )
