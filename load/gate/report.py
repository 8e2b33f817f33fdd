"""The gate's outputs: the pull-request summary (Markdown), pairs.json and pytest-benchmark documents.

Rules of this module: it only reads a finished :class:`load.gate.GateResult`; it never measures and
never decides (the verdicts are already in the result). Files are created with mode ``x``: an output
directory is never overwritten.
"""

from __future__ import annotations

import statistics
from pathlib import Path
from typing import Dict, Optional

from ..records import benchjson, write_document
from .injection import cost_burst
from .model import (
    COST_ENV,
    COUNTED,
    DELAY_ENV,
    LOOPS_ENV,
    METRICS,
    STATISTIC_LABELS,
    CaseResult,
    GateOptions,
    GateResult,
)
from .verdict import Decision, Verdict

__all__ = ["render_markdown", "write_outputs"]

_EMOJI = {Verdict.REGRESSION: "❌", Verdict.IMPROVEMENT: "🚀", Verdict.INCONCLUSIVE: "❔", Verdict.NO_CHANGE: "✅"}


def _fmt_value(metric: str, v: float) -> str:
    if metric in ("lat", "lat50"):
        return f"{v * 1000:.0f} µs" if v < 10 else f"{v:.1f} ms"
    return {"rps": f"{v:,.0f}", "cpu": f"{v:.1f} µs", COUNTED: f"{v:,.0f}"}.get(metric, f"{v:.2f} ms")


def _duration(seconds: float) -> str:
    m, s = divmod(int(round(seconds)), 60)
    return f"{m} min {s:02d} s" if m else f"{s} s"


def render_markdown(result: GateResult) -> str:
    """The pull-request comment: headline verdict, one table per case, warnings, method."""
    opts = result.options
    failed = [r for r in result.results if r.failed(opts.fail_on)]
    regressions = [r for r in result.results if r.head_errors == 0 and r in failed]
    head = "❌ **regression**" if regressions else ("❌ **HEAD has errors**" if failed else "✅ **no regression**")
    if result.inconclusive:
        wide = sorted({METRICS[m][2] for r in result.results for m in r.inconclusive(opts.fail_on)})
        unmeasured = sorted({METRICS[m][2] for r in result.results for m in r.unmeasured(opts.fail_on)})
        why = (
            [f"{', '.join(wide)}: the interval is wider than the threshold; more pairs narrow it"] if wide else []
        ) + ([f"{', '.join(unmeasured)}: not measured, see below"] if unmeasured else [])
        head = (
            f"❔ **inconclusive**: no regression shown, and none of {opts.threshold:.0%} ruled out ({'; '.join(why)})"
        )
    if result.interrupted:
        head = (
            f"⏹ **interrupted** after {result.pairs} complete pair(s): not a verdict; what was measured so far "
            f"reads {head.split('**')[1]}"
        )
    b, h = result.base, result.head
    counted = f" (instructions {opts.count_threshold:.1%})" if COUNTED in opts.fail_on else ""
    lines = [
        f"## gatecheck gate: {b.get('spec', 'BASE')} → {h.get('spec', 'HEAD')}",
        "",
        f"{head} (gated on {', '.join(METRICS[m][2] for m in opts.fail_on)}; threshold {opts.threshold:.0%}"
        f"{counted}; {opts.confidence:.0%} family-wise intervals over {result.pairs} interleaved pairs; "
        f"took {_duration(result.seconds)})",
        "",
        *[_lead_line(r, opts) for r in result.results],
        "",
    ]
    if result.count_note:
        lines += [f"> ⚠️ {result.count_note}", ""]
    if h.get("cost_us"):
        burst, every = cost_burst(h["cost_us"])
        how = f"{burst:.0f} µs on every {every}th request" if every > 1 else "on every request"
        lines += [
            f"> HEAD ran with an injected cost of {h['cost_us']:.2f} µs of CPU per request on average "
            f"({how}; {COST_ENV}).",
            "",
        ]
    if h.get("loops"):
        lines += [f"> HEAD ran with {h['loops']} units of injected counted work on every request ({LOOPS_ENV}).", ""]
    if h.get("delay_us"):
        every = int(h.get("delay_every") or 1)
        lines += [
            f"> HEAD ran with an injected wait of {h['delay_us']:.0f} µs without CPU on "
            + ("every request" if every == 1 else f"every {every}th request")
            + f" ({DELAY_ENV}).",
            "",
        ]
    for r in result.results:
        lines += _case_lines(r, opts)
    return "\n".join(lines + _method_lines(result))


def _change(d: Optional[Decision]) -> str:
    """A ratio as a signed change with its interval, e.g. ``+1.02% (+0.71 … +1.33)``."""
    if d is None:
        return "not measured"
    pct = lambda v: f"{100 * (v - 1):+.2f}"
    return f"{pct(d.estimate.ratio)}% ({pct(d.estimate.low)} … {pct(d.estimate.high)})"


#: What moved, named by the kind of cost it points to (docs/gate.md, "What each metric sees").
_KINDS = {COUNTED: "instructions", "cpu": "CPU time", "lat": "latency"}


def _moved(r: CaseResult) -> str:
    """Which of instructions, CPU time and latency moved significantly (interval off 1), and what that points to."""
    moved = [
        name
        for m, name in _KINDS.items()
        if r.decisions.get(m) is not None and not r.decisions[m].estimate.low <= 1.0 <= r.decisions[m].estimate.high
    ]
    if not moved:
        return "nothing moved"
    hint = ""
    if "instructions" not in moved and COUNTED in r.decisions and "CPU time" in moved:
        hint = ": CPU time without instructions (kernel time, system calls, cache misses)"
    elif moved == ["latency"] and r.decisions.get(COUNTED) is not None:
        hint = ": latency alone (a wait, a lock, Nagle)"
    return "moved: " + ", ".join(moved) + hint


def _lead_line(r: CaseResult, opts: GateOptions) -> str:
    """One line per case: counted change, timed changes, each with its interval, what moved, and the verdict."""
    gated = {m: d for m, d in r.decisions.items() if m in opts.fail_on and d is not None}
    worst = next(
        (
            v
            for v in (Verdict.REGRESSION, Verdict.IMPROVEMENT, Verdict.INCONCLUSIVE)
            if any(d.verdict is v for d in gated.values())
        ),
        Verdict.NO_CHANGE,
    )
    which = [_KINDS.get(m, m) for m, d in gated.items() if d.verdict is worst and worst is not Verdict.NO_CHANGE]
    verdict = (
        "❌ HEAD has errors"
        if r.head_errors
        else (f"{_EMOJI[worst]} {worst.value}" + (f" ({', '.join(which)})" if which else ""))
    )
    parts = [f"instructions {_change(r.decisions[COUNTED])}"] if COUNTED in r.decisions else []
    parts += [
        f"{name} {_change(r.decisions.get(m))}" for m, name in (("cpu", "CPU"), ("lat", "latency")) if m in r.decisions
    ]
    return f"- **{r.case.name}**: " + " · ".join(parts) + f"; {_moved(r)} → {verdict}"


def _case_lines(r: CaseResult, opts: GateOptions) -> list:
    """One case's table: each metric's medians, ratio, interval and verdict; then HEAD's errors and warnings."""
    lines = [
        f"### {r.case.name}",
        "",
        "| metric | base | head | head/base | interval | verdict |",
        "| --- | ---: | ---: | ---: | :---: | --- |",
    ]
    for metric, d in r.decisions.items():
        label = METRICS[metric][2].replace("at low concurrency", "at c1") + (" (counted)" if metric == COUNTED else "")
        label += "" if metric in opts.fail_on else " (not gated)"
        if d is None:
            lines.append(f"| {label} | - | - | - | - | no clean pairs |")
            continue
        bm, hm = statistics.median(r.base[metric]), statistics.median(r.head[metric])
        more = ""
        if d.more_pairs:
            more = (
                f" (~{d.more_pairs} more pairs)"
                if d.more_pairs <= 10 * max(opts.max_pairs, 1)
                else " (too noisy here to narrow in practice)"
            )
        lines.append(
            f"| {label} | {_fmt_value(metric, bm)} | {_fmt_value(metric, hm)} | {d.estimate.ratio:.3f} | "
            f"{d.estimate.low:.3f} – {d.estimate.high:.3f} | {_EMOJI[d.verdict]} {d.verdict.value}{more} |"
        )
    if r.head_errors:
        lines.append(f"| errors | - | {r.head_errors} run(s) | - | - | ❌ HEAD returned errors or non-2xx |")
    lines.append("")
    lines += [f"- ⚠️ {w}" for w in r.warnings]
    if r.warnings:
        lines.append("")
    return lines


def _method_lines(result: GateResult) -> list:
    """The folded method: installs, pairs and order, the latency run, statistics and levels, the rule, the stop."""
    opts, b, h = result.options, result.base, result.head
    versions = lambda side: ", ".join(f"{k} {v}" for k, v in sorted((side.get("versions") or {}).items()))
    restarts = (
        "every pair"
        if opts.restart_every == 1
        else f"every {opts.restart_every} pairs"
        if opts.restart_every
        else "once"
    )
    statistic = STATISTIC_LABELS.get(opts.statistic, opts.statistic)
    latency = [
        f"- after both main runs of a pair, {opts.latency_duration:g} s of single requests alternating "
        "between BASE and HEAD (one connection each, ABBA order) for the latency metrics"
    ]
    latency = latency if opts.latency_duration else []
    if opts.count_pairs and COUNTED in (result.results[0].decisions if result.results else {}):
        ns = sorted({d.estimate.n for d in (r.decisions.get(COUNTED) for r in result.results) if d})
        n = "no" if not ns else str(ns[0]) if len(ns) == 1 else f"{ns[0]}-{ns[-1]}"
        more = f" ({opts.count_pairs} always, up to {opts.count_max_pairs} while undecided)"
        more = more if opts.count_max_pairs > opts.count_pairs else ""
        latency.append(
            f"- instructions per request: {n} counted pairs{more} beside the timed ones, each "
            f"{opts.count_requests} requests per side alternating between a BASE and a HEAD server under "
            f"valgrind (callgrind, every process; start-up and {opts.count_warmup} requests per side not "
            f"counted; fresh servers every {opts.count_restart_every} pairs; all stopped during each latency run); "
            "head/base is the geometric "
            f"mean of the per-pair ratios with a t interval; threshold {opts.count_threshold:.1%}"
        )
    return [
        "<details><summary>method</summary>",
        "",
        f"- BASE: `{b.get('spec', '?')}` ({versions(b)}); HEAD: `{h.get('spec', '?')}` ({versions(h)})",
        f"- {result.pairs} pairs; each pair runs BASE and HEAD back to back in random order (seed {opts.seed}), "
        f"{opts.duration:g} s per run after a {opts.warmup:g} s warm-up, fresh server processes " + restarts,
        *latency,
        f"- values are medians over the pairs; head/base is the {statistic}; intervals are "
        f"percentile bootstraps over pairs ({opts.resamples:,} resamples), " + _levels_text(opts),
        (
            f"- regression = whole interval on the worse side of 1 and its worse end ≥ {opts.threshold:.0%} "
            f"(a slowdown of {opts.threshold:.0%} not ruled out); inconclusive = interval containing 1 and wider "
            f"than {opts.threshold:.0%}"
            if opts.size_by == "interval"
            else f"- regression = whole interval on the worse side of 1 and the change ≥ {opts.threshold:.0%}; "
            f"inconclusive = interval wider than {opts.threshold:.0%}"
        )
        + (f" ({opts.count_threshold:.1%} for instructions per request)" if opts.count_pairs else ""),
        f"- stopped: {result.stopped_because}",
        "",
        "</details>",
        "",
    ]


def _levels_text(opts: GateOptions) -> str:
    """Each interval's level, and why: the gated metrics' shares of alpha (weighted Bonferroni)."""
    weights = opts.weights
    levels = ", ".join(f"{m} at {100 * opts.level(m):.4g}%" for m in opts.fail_on)
    shares = (
        "equal shares"
        if len(set(weights.values())) == 1
        else "weighted " + ":".join(f"{w:g}" for w in weights.values()) + " (--alpha-weights)"
    )
    ungated = [m for m in METRICS if m not in opts.fail_on]
    return (
        f"{levels}, so that all {opts.comparisons} gated comparisons hold together at {opts.confidence:.0%} "
        f"(Bonferroni, {shares})" + (f"; the ungated at {100 * opts.interval_confidence:.4g}%" if ungated else "")
    )


def write_outputs(result: GateResult, out_dir: Path, storage: Optional[Path] = None) -> Dict[str, Path]:
    """summary.md, pairs.json and the pytest-benchmark documents (refusing to overwrite)."""
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    paths = {"summary": out_dir / "summary.md", "pairs": out_dir / "pairs.json"}
    with open(paths["summary"], "x", encoding="utf-8") as f:
        f.write(render_markdown(result))
    write_document(paths["pairs"], result.to_dict())
    for side in ("base", "head"):
        info = getattr(result, side)
        entries = []
        for r in result.results:
            rps = r.base["rps"] if side == "base" else r.head["rps"]
            p99 = r.base["p99"] if side == "base" else r.head["p99"]
            if rps:
                entries.append(
                    benchjson.benchmark_entry(
                        r.case.name, rps, p99_ms=p99, extra={"side": side, "spec": info.get("spec")}
                    )
                )
        version = ", ".join(f"{k} {v}" for k, v in sorted((info.get("versions") or {}).items()))
        doc = benchjson.document(
            entries,
            commit_id=f"{info.get('spec', side)} ({version})" if version else str(info.get("spec", side)),
            project=result.options.cases[0].setup.target.server,
        )
        paths[f"benchmark_{side}"] = benchjson.write_json(doc, out_dir / "benchmark" / f"{side}.json")
        if storage:
            paths[f"storage_{side}"] = benchjson.save_to_storage(doc, storage, f"gate_{side}")
    return paths
