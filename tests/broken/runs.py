"""Running conformance checks against broken targets and their controls: batched, in parallel, bounded.

A *run* is one target (a break, or a control, served one way) and the check ids it must run. Runs are
packed into twice as many batches as run at once (so one slow batch does not hold up the rest); each
batch is one ``pytest conformance/...`` subprocess with one ``--server command:...`` per run, ``-p
tests.broken.pick`` so each target runs only its own checks (and its server stops as soon as they are
done), and ``--no-expectations`` so a deviation is a plain failure. The results file of each batch says,
per (check, target), what happened. A subprocess costs more than a server start, so batches are few and
large, and pytest plugins are not auto-loaded.

Rules of this module:

1. Every subprocess has a deadline. Past it the conformance session gets SIGTERM (its conftest stops
   every server it started), then SIGKILL; nothing it started outlives the run.
2. A target is recognised in the results by its ``name`` option only.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import tempfile
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import quote, urlencode

from tests.installed import PYTEST, RUN_DIR

from .pick import ENV as PICK_ENV
from .pick import PROFILE

__all__ = ["Via", "Run", "Outcomes", "run_all", "REPO"]

REPO = Path(__file__).resolve().parents[2]
WORKERS = int(os.environ.get("GATECHECK_CAN_FAIL_WORKERS", "5"))
DEADLINE = 300.0


@dataclass(frozen=True)
class Via:
    """How a break is served: the interface, a command template in which ``{break}`` is the break's name
    (``control`` names the unbroken variant), the HTTP mode and the features the command has."""

    interface: str
    command: str
    http: str = "h1"
    features: str = ""
    control: str = "control"

    def target(self, behaviour: str, name: str) -> str:
        options = [("cmd", self.command.replace("{break}", behaviour)), ("name", name)]
        if self.features:
            options.append(("features", self.features))
        return f"command:{self.interface}:{self.http}?" + urlencode(options, quote_via=quote, safe="{}/:")


@dataclass(frozen=True)
class Run:
    name: str  # the target's name option, unique in a session
    via: str
    behaviour: str  # a break name, or the via's control
    checks: tuple  # check ids: "test_x.py::test_y[params]"
    control: bool = False
    wait: float = 0.0  # seconds its checks are known to spend waiting (for scheduling only)


class Outcomes:
    """What each run's checks did: ``outcome(run_name, check)`` and the batch output for messages."""

    def __init__(self) -> None:
        self.records: dict = {}
        self.logs: dict = {}

    def outcome(self, name: str, check: str) -> str:
        return self.records.get(name, {}).get(check, {}).get("outcome", "not run")

    def message(self, name: str, check: str) -> str:
        return self.records.get(name, {}).get(check, {}).get("message", "")

    def log(self, name: str) -> str:
        return self.logs.get(name, "")


def _cost(run: Run) -> float:
    """A rough cost in seconds: a server start, a fraction of a second per check, and known waits."""
    return 1.0 + 0.3 * len(run.checks) + run.wait


def _batches(runs: list, count: int) -> list:
    """``runs`` spread over ``count`` batches of about equal cost (largest first into the cheapest)."""
    batches = [[] for _ in range(max(1, min(count, len(runs))))]
    totals = [0.0] * len(batches)
    for run in sorted(runs, key=_cost, reverse=True):
        i = totals.index(min(totals))
        batches[i].append(run)
        totals[i] += _cost(run)
    return sorted((b for b in batches if b), key=lambda b: -sum(map(_cost, b)))


def _execute(batch: list, vias: dict, workdir: Path, index: int) -> tuple:
    """Run one batch; return (records by run name, output text)."""
    files = sorted({check.split("::", 1)[0] for run in batch for check in run.checks})
    pick = workdir / f"pick-{index}.json"
    pick.write_text(json.dumps({run.name: list(run.checks) for run in batch}), encoding="utf-8")
    results = workdir / f"results-{index}.json"
    argv = [
        *PYTEST,
        *[f"gatecheck/conformance/checks/{f}" for f in files],
        "-q",
        "-p",
        "no:cacheprovider",
        "-p",
        "tests.broken.pick",
        "-p",
        "_hypothesis_pytestplugin",
        "--no-expectations",
        "--results-json",
        str(results),
        "--server-log-dir",
        str(workdir / f"logs-{index}"),
        "--ready-timeout",
        "60",
        "--hypothesis-profile",
        PROFILE,
    ]
    for run in batch:
        argv += ["--server", vias[run.via].target(run.behaviour, run.name)]
    env = dict(os.environ, PYTHONPATH=str(REPO), PYTEST_DISABLE_PLUGIN_AUTOLOAD="1", **{PICK_ENV: str(pick)})
    proc = subprocess.Popen(
        argv,
        cwd=RUN_DIR,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        stdin=subprocess.DEVNULL,
        start_new_session=True,
    )
    try:
        output, _ = proc.communicate(timeout=DEADLINE)
    except subprocess.TimeoutExpired:
        proc.send_signal(signal.SIGTERM)  # the session's conftest stops its servers on SIGTERM
        try:
            output, _ = proc.communicate(timeout=20)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            output, _ = proc.communicate()
        output += f"\n[killed after {DEADLINE:.0f} s]".encode()
    records: dict = {}
    if results.exists():
        for rec in json.loads(results.read_text(encoding="utf-8"))["checks"]:
            name = rec["target"]  # the target's name= option is what results call it
            records.setdefault(name, {})[rec["check"]] = rec
    return records, output.decode("utf-8", "replace")


def run_all(runs: list, vias: dict) -> Outcomes:
    """Run every run (batched, WORKERS subprocesses at a time) and collect the outcomes."""
    outcomes = Outcomes()
    batches = _batches(runs, 2 * WORKERS)
    with tempfile.TemporaryDirectory(prefix="gatecheck-can-fail-") as tmp:
        with ThreadPoolExecutor(max_workers=max(1, WORKERS)) as pool:
            futures = [(batch, pool.submit(_execute, batch, vias, Path(tmp), i)) for i, batch in enumerate(batches)]
            for batch, future in futures:
                records, output = future.result()
                for run in batch:
                    outcomes.records[run.name] = records.get(run.name, {})
                    outcomes.logs[run.name] = output[-4000:]
    return outcomes
