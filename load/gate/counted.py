"""The counted lane: instructions per request of BASE and HEAD, in pairs of fresh counted servers, measured in a
process of its own while the timed pairs run.

Rules of this module:

1. **A pair is one counted batch on a BASE and a HEAD server** started together under callgrind
   (:func:`load.run.counting.callgrind_wrap`), each with the environment the timed pairs give its side plus
   :data:`load.run.COUNT_ENV`: the same requests on both sides, interleaved, counted from a zero to a dump
   (:func:`load.run.counting.count_batches`; the warm-up before a server pair's first batch is not counted).
   Servers are fresh every ``restart_every`` pairs (default 3): a process's luck belongs in the interval, but a
   counted start costs seconds of CPU under valgrind, and measured here the spread of a ratio between server
   pairs was no larger than between batches of one server pair (docs/gate.md, method). Which side the client
   asks first is drawn per pair from the gate's seed.
2. **Its own process.** The lane runs as a child interpreter (:class:`CountLane` starts it, :func:`main` with
   the path of its spec), so its client never holds the gate's interpreter lock while the timed latency client measures
   microseconds. It appends one ``gate-run`` record per side and pair (``lane: count``) to the gate's
   ``runs.jsonl`` the moment a pair ends, and its log to ``logs/counted.log``.
3. The counted servers are not pinned: counts do not depend on which CPU runs them, and the lane takes what
   CPU the timed pairs leave. A dump is deleted once read (its total is in the record); valgrind's own
   messages stay in ``counted/``.
4. A failure (valgrind, vgdb, a request) ends the lane with its reason on stderr, exit status 3; the gate then
   says so in one line and decides on what the timed metrics show.
5. **More pairs only to decide.** ``pairs`` counted pairs always; past them, up to ``max_pairs``, another server
   pair is counted for a case only while its count is *inconclusive* by the gate's own rule (interval wider
   than the threshold, neither verdict reached) and only when the next server pair, timed by the longest so far,
   ends before the gate's budget (``deadline``, wall clock). A decided count is never counted further, so the
   extra pairs can turn an inconclusive count into a verdict, never look again at a decided one. Measured
   here: at 6 pairs granian's count was inconclusive in 9 of 20 A/A gates (the per-pair spread of 0.3% gives
   an interval about as wide as the 1% threshold), uvicorn's in none.
6. **Out of the latency runs' way.** While a timed pair's low-concurrency run measures latency, the lane (its
   client) and its valgrind servers are stopped (:func:`paused_tree`; never its reaper) and continued after it,
   however it ends: counts do not depend on when they run, and beside unpinned valgrind
   servers BASE's latency at one connection rose by about 20% and the latency interval doubled in width (the
   ninth experiment, docs/gate.md).
"""

from __future__ import annotations

import json
import random
import signal
import subprocess
import sys
import threading
import time
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Callable, ContextManager, Dict, Iterator, List, Mapping, Optional, Sequence

import psutil

from gatecheck.servers.process import die_with_parent
from gatecheck.servers.tree import TOKEN_ENV, descendants

from ..plan import route as lookup_route
from ..records import append_records, load_records
from ..run import COUNT_ENV, CountError, Pipeline, callgrind_wrap, count_batches
from .model import COUNTED, GateCase
from .stats import t_interval_ratio
from .verdict import Verdict, decide

__all__ = ["CountLane", "run_lane", "counted_records", "paused_tree", "main", "SPEC_FILE", "LOG_FILE"]

SPEC_FILE = "counted-spec.json"
_RUN = "import sys; from gatecheck.load.gate.counted import main; sys.exit(main())"
LOG_FILE = "counted.log"
FAILED = 3  # exit status of a lane that could not count
_READY_TIMEOUT = 300.0  # a server's start-up runs under valgrind (uninstrumented), slower on a busy machine


def _start_both(
    pipeline: Pipeline, case: GateCase, spec: Mapping[str, Any], pair: int, folder: Path, release: threading.Event
) -> Dict[str, Any]:
    """BASE's and HEAD's counted servers for ``case``, started at once; side -> handle. Each is started from a
    thread that lives until ``release`` is set: a server dies with the thread that started it (its parent-death
    signal follows the thread), so ``release`` is set only once both are stopped."""
    handles: Dict[str, Any] = {}
    errors: List[BaseException] = []
    started = threading.Barrier(3)

    def start(side: str) -> None:
        try:
            handles[side] = pipeline.start(
                case.setup,
                python=spec["pythons"][side],
                env={**spec["envs"][side], **COUNT_ENV},
                wrap=callgrind_wrap(folder, f"{side}-{pair}"),
                ready_timeout=_READY_TIMEOUT,
            )
        except BaseException as exc:  # noqa: B902 - re-raised below, in the lane's thread
            errors.append(exc)
        started.wait()
        release.wait()

    for side in ("base", "head"):
        threading.Thread(target=start, args=(side,), daemon=True).start()
    started.wait()
    if errors:
        for h in handles.values():
            h.stop()
        release.set()
        raise errors[0]
    return handles


def _cleanup(folder: Path, labels: Sequence[str]) -> None:
    """Delete a pair's callgrind files (read already; each holds a whole profile)."""
    for label in labels:
        for f in folder.glob(f"{label}.callgrind.*"):
            f.unlink(missing_ok=True)


def _block(
    pipeline: Pipeline,
    case: GateCase,
    spec: Mapping[str, Any],
    pairs: Sequence[int],
    rng: random.Random,
    log: Callable[[str], None],
) -> List[Dict[str, Any]]:
    """Counted pairs ``pairs`` of ``case`` on one fresh BASE and one fresh HEAD server: both started, one batch
    per pair (which side the client asks first drawn per pair), both stopped; two records per pair."""
    folder = Path(spec["out_dir"]) / "counted"
    t0 = time.monotonic()
    release = threading.Event()
    handles = _start_both(pipeline, case, spec, pairs[0], folder, release)
    labels = {side: f"{side}-{pairs[0]}" for side in ("base", "head")}
    orders = [rng.sample(["base", "head"], 2) for _ in pairs]
    try:
        batches = count_batches(
            handles,
            lookup_route(case.route).resolve(),
            requests=spec["requests"],
            warmup=spec["warmup"],
            out_dir=folder,
            labels=labels,
            orders=orders,
            pause=spec.get("pause", 0.0),
        )
    finally:
        for h in handles.values():
            h.stop()
        release.set()
        _cleanup(folder, list(labels.values()))
    records = []
    for pair, order, res in zip(pairs, orders, batches):
        log(
            f"counted pair {pair + 1} of {case.name}: BASE {res['base']['instructions_per_request']:,.0f}, HEAD "
            f"{res['head']['instructions_per_request']:,.0f} instructions per request"
        )
        records += [
            dict(
                res[side],
                kind="gate-run",
                lane=COUNTED,
                case=case.name,
                pair=pair,
                side=side,
                position=i,
                processes_pair=pairs[0],
            )
            for i, side in enumerate(order)
        ]
    log(f"  {len(pairs)} pair(s) on one BASE and one HEAD server in {time.monotonic() - t0:.0f} s")
    return records


def run_lane(
    spec: Mapping[str, Any], log: Callable[[str], None] = lambda s: None, pipeline: Optional[Pipeline] = None
) -> int:
    """Every counted pair of every HTTP/1 case of an HTTP route (the counted client speaks HTTP/1.1), fresh
    servers every ``restart_every`` pairs, records appended to ``runs.jsonl`` as each server pair ends; returns
    how many pairs were measured.

    ``pairs`` pairs always; then (rule 5) more, a server pair at a time up to ``max_pairs``, for each case whose
    count is still inconclusive, while the next server pair is expected to end before ``deadline``."""
    out_dir = Path(spec["out_dir"])
    pipeline = pipeline or Pipeline(out_dir / "counted")
    cases = [GateCase.from_dict(c) for c in spec["cases"]]
    cases = [c for c in cases if not c.http2 and lookup_route(c.route).kind == "http"]
    rng = random.Random(spec["seed"])
    every = max(1, int(spec.get("restart_every", 1)))
    counts: Dict[str, List[Dict[str, Any]]] = {c.name: [] for c in cases}
    longest = 0.0  # the longest server pair so far, the estimate of the next one's
    first = 0
    while True:
        last = spec["pairs"] if first < spec["pairs"] else spec.get("max_pairs", spec["pairs"])
        if first >= last:
            break
        todo = cases if first < spec["pairs"] else [c for c in cases if _undecided(counts[c.name], spec)]
        if not todo:
            break
        if first >= spec["pairs"] and time.time() + longest * len(todo) > spec.get("deadline", 0.0):
            log(f"no more counted pairs: {len(todo)} case(s) still undecided, but the next would end after the budget")
            break
        pairs = list(range(first, min(first + every, last)))
        for case in todo:
            t0 = time.monotonic()
            records = _block(pipeline, case, spec, pairs, rng, log)
            append_records(out_dir / "runs.jsonl", records)
            counts[case.name] += records
            longest = max(longest, time.monotonic() - t0)
        first = pairs[-1] + 1
    return sum(len(r) for r in counts.values()) // 2


def _undecided(records: Sequence[Mapping[str, Any]], spec: Mapping[str, Any]) -> bool:
    """Whether a case's counted pairs so far leave its count *inconclusive* at the gate's level, threshold and
    size rule (the gate's own verdict: :func:`load.gate.verdict.decide` on
    :func:`load.gate.stats.t_interval_ratio`)."""
    sides: Dict[str, Dict[int, float]] = {"base": {}, "head": {}}
    for r in records:
        sides[r["side"]][r["pair"]] = r["instructions_per_request"]
    both = sorted(set(sides["base"]) & set(sides["head"]))
    if len(both) < 2:
        return True
    est = t_interval_ratio([sides["base"][p] for p in both], [sides["head"][p] for p in both], spec["level"])
    return decide(est, spec["threshold"], False, spec.get("size_by", "interval")).verdict is Verdict.INCONCLUSIVE


@contextmanager
def paused_tree(pid: Optional[int], wait_for: str = "vgdb", wait: float = 5.0) -> Iterator[int]:
    """``pid`` and the servers under it stopped (SIGSTOP, psutil's checks against a reused PID) for the ``with``
    block, continued (SIGCONT) when it ends however it ends; yields how many were stopped. None stops nothing.

    Only what dies without help is stopped: the root (the lane: parent-death SIGKILL) and the processes under it
    that carry a server token (:data:`gatecheck.servers.tree.TOKEN_ENV`: their leaders' parent-death SIGKILL and
    the reaper's SIGKILL reach them stopped). Nothing else under it: not the reaper, which must run to kill them if
    the gate dies meanwhile, not vgdb. The root is stopped first, so it starts nothing new; a ``wait_for``
    process under it (vgdb) is let finish before the servers stop (up to ``wait`` s; else only the root stays
    stopped): vgdb talking to a stopped valgrind hangs (measured: ``vgdb zero`` to a SIGSTOPped callgrind never
    answered; an idle one stopped and continued answers the next at once). The tree is walked twice for a child
    one of the servers started meanwhile."""
    stopped: List[psutil.Process] = []
    try:
        if pid is not None:
            root = _suspend(psutil.Process(pid), stopped)
            if root is not None and _wait_for(root, wait_for, wait):
                for p in descendants(root) + descendants(root):
                    if p not in stopped and _is_server(p):
                        _suspend(p, stopped)
        yield len(stopped)
    finally:
        for p in reversed(stopped):
            try:
                p.resume()
            except psutil.Error:
                pass


def _is_server(p: psutil.Process) -> bool:
    try:
        return TOKEN_ENV in p.environ()
    except psutil.Error:
        return False


def _suspend(p: psutil.Process, stopped: List[psutil.Process]) -> Optional[psutil.Process]:
    try:
        p.suspend()
    except psutil.Error:
        return None  # ended meanwhile
    stopped.append(p)
    return p


def _wait_for(root: psutil.Process, name: str, wait: float) -> bool:
    """True once no process called ``name`` runs under ``root`` (within ``wait`` s)."""
    deadline = time.monotonic() + wait
    while True:
        busy = []
        for p in descendants(root):
            try:
                if p.name() == name and p.status() != psutil.STATUS_ZOMBIE:  # a zombie has finished
                    busy.append(p)
            except psutil.Error:
                pass
        if not busy:
            return True
        if time.monotonic() >= deadline:
            return False
        psutil.wait_procs(busy, timeout=min(0.5, max(0.0, deadline - time.monotonic())))


def counted_records(out_dir: Path) -> List[Dict[str, Any]]:
    """The counted lane's records in ``runs.jsonl`` (none when it has not written any)."""
    path = Path(out_dir) / "runs.jsonl"
    return [r for r in load_records([path]) if r.get("lane") == COUNTED] if path.exists() else []


class CountLane:
    """The counted lane running beside the gate: started with a spec, waited for, stopped on interrupt."""

    def __init__(self, spec: Mapping[str, Any], out_dir: Path) -> None:
        self.out_dir = Path(out_dir)
        (self.out_dir / "logs").mkdir(parents=True, exist_ok=True)
        spec_path = self.out_dir / "logs" / SPEC_FILE
        spec_path.write_text(json.dumps(spec, indent=1, sort_keys=True), encoding="utf-8")
        self.log_path = self.out_dir / "logs" / LOG_FILE
        self._log = open(self.log_path, "ab")
        self.proc = subprocess.Popen(
            [sys.executable, "-c", _RUN, str(spec_path)],
            stdout=self._log,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            preexec_fn=die_with_parent,  # a gate killed while the lane is stopped (rule 6) must not leave it so
        )

    def wait(self, timeout: float) -> Optional[str]:
        """Wait for the lane to end; None when it counted every pair, else why not (one line)."""
        try:
            status = self.proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.stop()
            return f"the counted lane did not finish within {timeout:.0f} s (see {self.log_path})"
        finally:
            self._log.close()
        if status == 0:
            return None
        lines = self.log_path.read_text(encoding="utf-8", errors="replace").strip().splitlines()
        reason = next((ln for ln in reversed(lines) if ln.startswith("error:")), lines[-1] if lines else "")
        return f"counting failed ({reason.removeprefix('error: ')[:300]}; log: {self.log_path})"

    def paused(self) -> ContextManager[int]:
        """Rule 6: the lane's whole tree stopped for the ``with`` block (:func:`paused_tree`)."""
        return paused_tree(self.proc.pid if self.proc.poll() is None else None)

    def stop(self, grace: float = 30.0) -> None:
        """SIGTERM the lane (it stops its servers), then SIGKILL it after ``grace`` s. SIGCONT after the SIGTERM:
        a lane left stopped (rule 6) handles nothing until continued."""
        if self.proc.poll() is None:
            self.proc.terminate()
            self.proc.send_signal(signal.SIGCONT)
            try:
                self.proc.wait(timeout=grace)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(timeout=10)
        if not self._log.closed:
            self._log.close()


def main(argv: Optional[Sequence[str]] = None) -> int:
    """The lane's process: run the lane the spec (a JSON file named by the one argument) describes (rule 2)."""
    from ..run import INTERRUPTED, stop_on_signals

    args = list(sys.argv[1:] if argv is None else argv)
    stop_on_signals()
    log = lambda s: print(s, file=sys.stderr, flush=True)
    try:
        spec = json.loads(Path(args[0]).read_text(encoding="utf-8"))
        log(f"counted lane: {run_lane(spec, log)} pair(s) counted")
    except KeyboardInterrupt:
        return INTERRUPTED
    except Exception as exc:  # noqa: BLE001 - the reason goes to the gate in one line
        log(f"error: {type(exc).__name__}: {exc}" if not isinstance(exc, CountError) else f"error: {exc}")
        return FAILED
    return 0
