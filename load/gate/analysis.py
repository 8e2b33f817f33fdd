"""From run records to verdicts: pure and deterministic (the bootstrap is seeded), so a stored gate
recomputes exactly (:func:`analyse`), and the stopping rule's test (:func:`_decisive`) is one function.
"""

from __future__ import annotations

from typing import Any, Dict, List, Optional, Sequence, Tuple

from .model import COUNTED, LATENCY_METRICS, METRICS, CaseResult, GateCase, GateOptions
from .stats import estimate_ratio, stability_warnings, t_interval_ratio
from .verdict import Decision, decide

__all__ = ["analyse"]


def _clean(run: Dict[str, Any]) -> bool:
    low = run.get("low_latency")
    if low is not None and (low.get("errors") or low.get("non_2xx") or not low.get("ok")):
        return False
    return not run.get("errors") and not run.get("non_2xx") and run.get("rps", 0) > 0


def _metric_value(run: Dict[str, Any], metric: str) -> Optional[float]:
    if metric == "rps":
        return run.get("rps")
    if metric == "cpu":  # µs per 2xx response; nanosecond counters when recorded, else psutil's ticks
        ok = run.get("ok")
        cpu = run["server_cpu_ns"] / 1e9 if run.get("server_cpu_ns") else (run.get("server") or {}).get("cpu_seconds")
        return cpu / ok * 1e6 if cpu and ok else None
    if metric in LATENCY_METRICS:
        return (run.get("low_latency") or {}).get("avg_ms" if metric == "lat" else "p50_ms")
    return (run.get("latency_ms") or {}).get("p99")


def _counted(run: Dict[str, Any]) -> bool:
    """A record of the counted lane (instructions per request), not of a timed pair."""
    return run.get("lane") == COUNTED


def _complete_pairs(
    runs: Sequence[Dict[str, Any]], name: str, max_pair: Optional[int]
) -> Dict[int, Dict[str, Dict[str, Any]]]:
    """pair -> side -> record, for the pairs of case ``name`` that have both sides."""
    by_pair: Dict[int, Dict[str, Dict[str, Any]]] = {}
    for run in runs:
        if run["case"] == name and (max_pair is None or run["pair"] < max_pair):
            by_pair.setdefault(run["pair"], {})[run["side"]] = run
    return {p: sides for p, sides in sorted(by_pair.items()) if "base" in sides and "head" in sides}


def _count_decision(
    case: GateCase,
    counted: Sequence[Dict[str, Any]],
    opts: GateOptions,
    out: Tuple[Dict[str, Any], Dict[str, List[float]], Dict[str, List[float]]],
) -> None:
    """The counted metric of ``case`` into ``out`` (decisions, BASE values, HEAD values): geometric mean of the
    per-pair ratios with a t interval (:func:`load.gate.stats.t_interval_ratio`), at its own threshold."""
    decisions, base_vals, head_vals = out
    pairs = [
        (s["base"].get("instructions_per_request"), s["head"].get("instructions_per_request"))
        for s in _complete_pairs(counted, case.name, None).values()
    ]
    pairs = [(b, h) for b, h in pairs if b and h and b > 0 and h > 0]
    base_vals[COUNTED], head_vals[COUNTED] = [b for b, _ in pairs], [h for _, h in pairs]
    if len(pairs) < 2:
        decisions[COUNTED] = None
        return
    est = t_interval_ratio(base_vals[COUNTED], head_vals[COUNTED], opts.level(COUNTED))
    decisions[COUNTED] = decide(est, opts.count_threshold, False, opts.size_by)


def analyse(runs: Sequence[Dict[str, Any]], opts: GateOptions, max_pair: Optional[int] = None) -> List[CaseResult]:
    """Verdicts per case from run records (each with ``case``, ``pair``, ``side``, ``rps``, ...).

    Pure and deterministic (the bootstrap is seeded with ``opts.seed``), so it recomputes a stored
    gate exactly; ``max_pair`` analyses only the first timed pairs (used to study how many are needed).
    Every interval is at :meth:`GateOptions.level` of its metric, so the family of gated comparisons
    raises a false alarm with probability at most ``1 - opts.confidence``. The counted lane's records
    (``lane: count``) have pairs of their own and decide the counted metric only.
    """
    timed = [r for r in runs if not _counted(r)]
    counted = [r for r in runs if _counted(r)]
    out = []
    for case in opts.cases:
        complete = _complete_pairs(timed, case.name, max_pair)
        head_errors = sum(1 for s in complete.values() if not _clean(s["head"]))
        base_errors = sum(1 for s in complete.values() if not _clean(s["base"]))
        clean = [s for s in complete.values() if _clean(s["base"]) and _clean(s["head"])]
        decisions: Dict[str, Optional[Decision]] = {}
        base_vals: Dict[str, List[float]] = {}
        head_vals: Dict[str, List[float]] = {}
        warnings: List[str] = []
        for metric, (_attr, higher, label) in METRICS.items():
            if metric == COUNTED:
                if COUNTED in opts.fail_on or any(r["case"] == case.name for r in counted):
                    _count_decision(case, counted, opts, (decisions, base_vals, head_vals))
                continue
            pairs = [(_metric_value(s["base"], metric), _metric_value(s["head"], metric)) for s in clean]
            pairs = [(b, h) for b, h in pairs if b and h and b > 0 and h > 0]
            base_vals[metric] = [b for b, _ in pairs]
            head_vals[metric] = [h for _, h in pairs]
            if len(pairs) < 2:
                decisions[metric] = None
                continue
            est = estimate_ratio(
                base_vals[metric], head_vals[metric], opts.statistic, opts.level(metric), opts.resamples, opts.seed
            )
            decisions[metric] = decide(est, opts.threshold, higher, opts.size_by)
            if metric == "rps":
                warnings += stability_warnings(f"BASE {label}", base_vals[metric])
                warnings += stability_warnings(f"HEAD {label}", head_vals[metric])
        warnings += _warnings(complete, clean, head_errors, base_errors)
        out.append(
            CaseResult(
                case,
                decisions,
                base_vals,
                head_vals,
                len(complete) - len(clean),
                head_errors,
                base_errors,
                tuple(warnings),
            )
        )
    return out


def _warnings(
    complete: Dict[int, Dict[str, Dict[str, Any]]], clean: List[Any], head_errors: int, base_errors: int
) -> List[str]:
    """A saturated oha, and the pairs left out for errors."""
    warnings = []
    bound = sum(1 for s in complete.values() for r in s.values() if r.get("generator_bound"))
    if bound > len(complete) // 2:
        warnings.append(
            f"oha saturated its CPUs in {bound} of {2 * len(complete)} runs: the RPS measures oha as much "
            "as the server; give oha more CPUs (--oha-cpus) or gate a heavier route"
        )
    if head_errors or base_errors:
        warnings.append(
            f"{len(complete) - len(clean)} pair(s) left out: HEAD had errors or non-2xx in {head_errors}, "
            f"BASE in {base_errors}; see the raw runs in pairs.json"
        )
    return warnings


def _decisive(results: Sequence[CaseResult], fail_on: Sequence[str]) -> bool:
    """True when no gated timed interval is wider than the threshold (rule 3: precision, not direction); the
    counted metric has its own fixed number of pairs and does not stop the timed ones."""
    for r in results:
        for metric in fail_on:
            if metric == COUNTED:
                continue
            d = r.decisions.get(metric)
            if d is None or d.estimate.width > d.threshold:
                return False
    return True
