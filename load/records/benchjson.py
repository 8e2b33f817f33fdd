"""Export gate runs in pytest-benchmark's JSON format, so histories can be kept and viewed with its tools.

Rules of this module:

1. One document per side (BASE or HEAD) of a gate, laid out as pytest-benchmark 5.x writes with
   ``--benchmark-json``: ``machine_info``, ``commit_info``, ``benchmarks``, ``datetime``,
   ``version``. ``pytest-benchmark compare base.json head.json`` then shows the two side by side,
   and :func:`save_to_storage` files a document under ``.benchmarks/<machine id>/NNNN_<name>.json``
   as ``--benchmark-autosave`` would, so ``pytest-benchmark compare`` finds the history by itself.
2. One benchmark per gate route (same ``fullname`` on both sides, so the tools pair them). Each
   load run is one *round*; its value is **seconds per successful request** (``1 / RPS``), the
   unit pytest-benchmark expects (time per operation, lower is better). pytest-benchmark's ``ops``
   is ``1 / mean``, so it reads as requests per second. The runs' own RPS and p99 latency are kept
   in ``extra_info``.
3. The ``stats`` block is computed exactly as ``pytest_benchmark.stats.Stats`` computes it
   (quartiles by its methods 2/3, Tukey fences, outlier counts), stdlib only: gatecheck does not
   depend on pytest-benchmark. A test checks the two agree when pytest-benchmark is installed.
"""

from __future__ import annotations

import json
import os
import platform
import re
import socket
import statistics
from bisect import bisect_left, bisect_right
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Dict, List, Mapping, Optional, Sequence

__all__ = [
    "FORMAT_VERSION",
    "benchmark_entry",
    "document",
    "machine_id",
    "machine_info",
    "save_to_storage",
    "stats_block",
    "write_json",
]

#: The pytest-benchmark version whose file layout this module writes (read from 5.3.1's output).
FORMAT_VERSION = "5.3.1"


def _quartiles(data: Sequence[float]) -> tuple:
    """q1, q3 as pytest-benchmark computes them (Wikipedia's quartile methods 2 and 3)."""
    d = sorted(data)
    n = len(d)
    if n == 1:
        return d[0], d[0]
    if n % 2:  # method 3
        k, r = n // 4, n % 4
        if r == 1:
            q1 = 0.25 * d[k - 1] + 0.75 * d[k]
            q3 = 0.75 * d[3 * k] + 0.25 * d[3 * k + 1]
        else:
            q1 = 0.75 * d[k] + 0.25 * d[k + 1]
            q3 = 0.25 * d[3 * k + 1] + 0.75 * d[3 * k + 2]
        return q1, q3
    return statistics.median(d[: n // 2]), statistics.median(d[n // 2 :])  # method 2


def stats_block(data: Sequence[float], include_data: bool = True) -> Dict[str, Any]:
    """pytest-benchmark's ``stats`` dict for a list of per-round times (seconds)."""
    if not data:
        raise ValueError("a benchmark needs at least one round")
    d = sorted(data)
    mean = statistics.mean(data)
    stddev = statistics.stdev(data) if len(data) > 1 else 0
    q1, q3 = _quartiles(data)
    iqr = q3 - q1
    lo_fence, hi_fence = q1 - 1.5 * iqr, q3 + 1.5 * iqr
    iqr_outliers = sum(1 for v in data if v < lo_fence or v > hi_fence)
    stddev_outliers = sum(1 for v in data if v < mean - stddev or v > mean + stddev)
    if len(data) == 1:
        ld15iqr = hd15iqr = data[0]
    else:
        ld15iqr = d[bisect_left(d, lo_fence)]
        hd15iqr = d[bisect_right(d, hi_fence) - 1]
    out: Dict[str, Any] = {
        "min": d[0],
        "max": d[-1],
        "mean": mean,
        "stddev": stddev,
        "rounds": len(data),
        "median": statistics.median(data),
        "iqr": iqr,
        "q1": q1,
        "q3": q3,
        "iqr_outliers": iqr_outliers,
        "stddev_outliers": stddev_outliers,
        "outliers": f"{stddev_outliers};{iqr_outliers}",
        "ld15iqr": ld15iqr,
        "hd15iqr": hd15iqr,
        "ops": 1.0 / mean if mean else 0,
        "total": sum(data),
        "iterations": 1,
    }
    if include_data:
        out["data"] = list(data)
    return out


def machine_id() -> str:
    """pytest-benchmark's storage folder name for this machine, e.g. ``Linux-CPython-3.11-64bit``."""
    return "{}-{}-{}-{}".format(
        platform.system(),
        platform.python_implementation(),
        ".".join(platform.python_version_tuple()[:2]),
        platform.architecture()[0],
    )


def _cpu_brand() -> str:
    try:
        with open("/proc/cpuinfo", encoding="utf-8", errors="replace") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor()


def machine_info(python_version: Optional[str] = None) -> Dict[str, Any]:
    """The ``machine_info`` block, with the fields pytest-benchmark fills without py-cpuinfo.

    ``python_version`` is the *server's* interpreter version when it differs from the harness's.
    """
    return {
        "node": socket.gethostname(),
        "processor": platform.processor(),
        "machine": platform.machine(),
        "python_compiler": platform.python_compiler(),
        "python_implementation": platform.python_implementation(),
        "python_implementation_version": platform.python_version(),
        "python_version": python_version or platform.python_version(),
        "python_build": list(platform.python_build()),
        "release": platform.release(),
        "system": platform.system(),
        "cpu": {"count": os.cpu_count(), "brand_raw": _cpu_brand(), "arch_string_raw": platform.machine()},
    }


def benchmark_entry(
    route: str,
    rps: Sequence[float],
    *,
    group: str = "gatecheck gate",
    p99_ms: Sequence[Optional[float]] = (),
    extra: Optional[Mapping[str, Any]] = None,
    include_data: bool = True,
) -> Dict[str, Any]:
    """One benchmark: ``route``'s runs on one side, one round per run (rule 2)."""
    if not rps or any(not (v > 0) for v in rps):
        raise ValueError(
            f"route {route!r}: every run needs a positive RPS to become seconds per request, got {list(rps)!r}"
        )
    info: Dict[str, Any] = {"unit": "seconds per successful request (1 / RPS)", "rps": [round(v, 3) for v in rps]}
    if p99_ms:
        info["p99_ms"] = list(p99_ms)
    info.update(extra or {})
    safe = re.sub(r"[^A-Za-z0-9_.-]+", "_", route)
    return {
        "group": group,
        "name": f"gate[{route}]",
        "fullname": f"load/gate.py::gate[{safe}]",
        "params": {"route": route},
        "param": route,
        "extra_info": info,
        "options": {
            "disable_gc": False,
            "timer": "oha",
            "min_rounds": len(rps),
            "max_time": None,
            "min_time": None,
            "precision": None,
            "confidence": None,
            "warmup": True,
        },
        "stats": stats_block([1.0 / v for v in rps], include_data=include_data),
    }


def document(
    benchmarks: List[Dict[str, Any]],
    *,
    commit_id: str,
    project: str,
    when: Optional[datetime] = None,
    python_version: Optional[str] = None,
    branch: str = "(unknown)",
) -> Dict[str, Any]:
    """A whole pytest-benchmark JSON document.

    ``commit_id`` names the install measured (e.g. ``granian 2.8.6 (granian==2.8.6)``): for a gate
    the "commit" is the install, which may not be a git commit at all.
    """
    stamp = (when or datetime.now(timezone.utc)).isoformat()
    return {
        "machine_info": machine_info(python_version),
        "commit_info": {
            "id": commit_id,
            "time": None,
            "author_time": None,
            "dirty": False,
            "project": project,
            "branch": branch,
        },
        "benchmarks": benchmarks,
        "datetime": stamp,
        "version": FORMAT_VERSION,
    }


def write_json(doc: Mapping[str, Any], path: Path, replace: bool = False) -> Path:
    """Write ``doc`` to ``path`` (sorted keys, indented); refuse to overwrite unless ``replace``."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    mode = "w" if replace else "x"
    with open(path, mode, encoding="utf-8") as f:
        json.dump(doc, f, indent=2, sort_keys=True)
        f.write("\n")
    return path


def save_to_storage(doc: Mapping[str, Any], storage: Path, name: str) -> Path:
    """File ``doc`` as ``<storage>/<machine id>/NNNN_<name>.json``, numbering as pytest-benchmark does."""
    folder = Path(storage) / machine_id()
    folder.mkdir(parents=True, exist_ok=True)
    safe = re.sub(r"[^A-Za-z0-9_.-]+", "_", name)
    numbers = [int(p.name[:4]) for p in folder.glob("[0-9][0-9][0-9][0-9]_*.json")]
    for attempt in range(100):  # another writer may take a number between our listing and our write
        path = folder / f"{max(numbers, default=0) + 1 + attempt:04d}_{safe}.json"
        try:
            return write_json(doc, path)
        except FileExistsError:
            continue
    raise FileExistsError(f"could not find a free NNNN_{safe}.json name in {folder}")
