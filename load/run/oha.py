"""oha, the load generator: find or build it, build its command line, parse its JSON summary.

Rules of this module:
- oha is pinned to one version (``OHA_VERSION``); its JSON layout is read from that version's
  ``src/printer.rs``. A binary of another version found on PATH is used, but its version is recorded.
- oha's own ``requestsPerSec`` divides *every* outcome (2xx, non-2xx, connection errors, deadline aborts)
  by the elapsed time. Here RPS is responses with a 2xx status over the elapsed time; non-2xx responses and
  errors are kept apart and never averaged in.
- oha exits 0 even when every request failed (connection refused, timeouts): ``OhaResult.all_failed`` says
  so, and the runner refuses such a run.
- Nothing here starts a server or touches the network; ``run`` is the one function that spawns oha.

JSON fields used (oha 1.16.0)::

    summary.total              elapsed seconds (with -w: until the last in-flight request finished)
    summary.requestsPerSec     *all* outcomes / total: not used (35,400 "RPS" for a refused port)
    summary.average/slowest    latency of *successful* (got a response) requests, seconds; null if none
    summary.totalData          response body bytes received
    summary.sizePerRequest     bytes per response, null if none
    latencyPercentiles.p50/p99 seconds (all responses), null if none
    statusCodeDistribution     {"200": n, "404": m}: every request that got a response
    errorDistribution          {"connection refused ...": n, "aborted due to deadline": m}
"""

from __future__ import annotations

import json
import math
import os
import re
import shutil
import subprocess
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Mapping, Sequence

from gatecheck.tools import cache_dir, find_or_build, say_stderr

__all__ = [
    "OHA_VERSION",
    "OhaError",
    "OhaNotFound",
    "OhaResult",
    "cache_dir",
    "find_oha",
    "build_oha",
    "oha_version",
    "build_argv",
    "parse_json",
    "DEADLINE_ERROR",
    "error_kind",
]

OHA_VERSION = "1.16.0"

# The error text oha uses for requests cut by the -z deadline (ClientError::Deadline in client.rs).
DEADLINE_ERROR = "aborted due to deadline"


class OhaError(RuntimeError):
    """oha could not be run, or its output could not be understood (a harness fault, not a server's)."""


class OhaNotFound(OhaError):
    """No oha binary, and it could not be built."""


def _cached_binary(cache: Path) -> Path:
    return cache / f"oha-{OHA_VERSION}" / "bin" / "oha"


def find_oha(*, build: bool = True, log: Callable[[str], None] | None = None) -> Path:
    """Return a usable oha binary.

    Order: ``$GATECHECK_OHA`` (an explicit path), the pinned build in the cache, ``oha`` on PATH, and
    finally (when ``build``) ``cargo install`` of the pinned version into the cache, under the cache's build
    lock (``gatecheck.tools``: a concurrent run waits for this build, then reuses it).
    """
    explicit = os.environ.get("GATECHECK_OHA")
    if explicit:
        path = Path(explicit).expanduser()
        if not os.access(path, os.X_OK):
            raise OhaNotFound(f"GATECHECK_OHA={explicit!r} is not an executable file; unset it or fix the path")
        return path
    cached = _cached_binary(cache_dir())
    if os.access(cached, os.X_OK):
        return cached
    on_path = shutil.which("oha")
    if on_path:
        return Path(on_path)
    if not build:
        raise OhaNotFound(
            f"oha not found on PATH nor at {cached}; run 'python -m gatecheck.load run ...' once to build it, "
            f"or install it with 'cargo install oha --version {OHA_VERSION} --locked'"
        )
    cache = cache_dir()

    def cached_build() -> Path | None:
        return cached if os.access(cached, os.X_OK) else None

    return find_or_build("oha", cached_build, lambda: build_oha(cache, log=log), log or say_stderr)


def build_oha(cache: Path, *, log: Callable[[str], None] | None = None, timeout: float = 3600.0) -> Path:
    """Build the pinned oha with cargo into ``cache/oha-VERSION``; show progress through ``log``.

    Takes several minutes on two cores. Raises OhaNotFound when cargo is missing or the build fails.
    """
    say = log or say_stderr
    home_cargo = Path.home() / ".cargo" / "bin" / "cargo"
    cargo = shutil.which("cargo") or (str(home_cargo) if home_cargo.exists() else None)
    if not cargo:
        raise OhaNotFound(
            "oha is not installed and cargo (the Rust toolchain) is missing, so it cannot be built; "
            f"install Rust (rustup) and rerun, or put oha {OHA_VERSION} on PATH"
        )
    root = cache / f"oha-{OHA_VERSION}"
    root.mkdir(parents=True, exist_ok=True)
    argv = [cargo, "install", "oha", "--version", OHA_VERSION, "--locked", "--root", str(root)]
    say(f"oha not found: building oha {OHA_VERSION} with cargo into {root} (several minutes on 2 cores)")
    say("  $ " + " ".join(argv))
    log_path = cache / "oha-build.log"
    compiled = 0
    with open(log_path, "w") as build_log:
        proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        try:
            assert proc.stdout is not None
            for line in proc.stdout:
                build_log.write(line)
                stripped = line.strip()
                if stripped.startswith("Compiling"):
                    compiled += 1
                    if compiled % 20 == 1:
                        say(f"  [{compiled} crates compiled] {stripped}")
                elif stripped.startswith(("Installing", "Installed", "Finished", "error")):
                    say("  " + stripped)
            code = proc.wait(timeout=timeout)
        except BaseException:
            proc.kill()
            proc.wait()
            raise
        build_log.write(f"exit {code}\n")
    binary = _cached_binary(cache)
    if code != 0 or not os.access(binary, os.X_OK):
        raise OhaNotFound(f"building oha failed (exit {code}); see {log_path}")
    say(f"oha {OHA_VERSION} built: {binary}")
    return binary


def oha_version(binary: Path | str) -> str:
    """The version oha reports (``oha --version`` prints ``oha 1.16.0``)."""
    try:
        out = subprocess.run([str(binary), "--version"], capture_output=True, text=True, timeout=10).stdout
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise OhaError(f"could not run {binary} --version: {exc}") from exc
    match = re.search(r"(\d+\.\d+\.\d+\S*)", out)
    if not match:
        raise OhaError(f"unexpected output from {binary} --version: {out!r}")
    return match.group(1)


def _duration_arg(seconds: float) -> str:
    # oha parses durations with humantime, which takes integers with units but not "2.5s".
    return f"{max(1, int(round(seconds * 1000)))}ms"


def build_argv(
    binary: Path | str,
    url: str,
    *,
    concurrency: int,
    duration: float | None = None,
    requests: int | None = None,
    http2: bool = False,
    h2_parallel: int = 1,
    method: str = "GET",
    body_file: Path | str | None = None,
    worker_threads: int = 1,
    request_timeout: float = 10.0,
    wait_ongoing: bool = True,
    keepalive: bool = True,
) -> list[str]:
    """The oha command line for one run: exactly one of ``duration`` (seconds) or ``requests``;
    ``keepalive=False`` opens a connection per request (HTTP/1 only: oha has no such mode for HTTP/2)."""
    if (duration is None) == (requests is None):
        raise ValueError("give exactly one of duration or requests")
    if concurrency < 1 or worker_threads < 1 or h2_parallel < 1:
        raise ValueError("concurrency, worker_threads and h2_parallel must be at least 1")
    argv = [str(binary), "--no-tui", "--output-format", "json", "-c", str(concurrency)]
    if duration is not None:
        argv += ["-z", _duration_arg(duration)]
        if wait_ongoing:
            # Without -w, requests in flight at the deadline count as "aborted due to deadline" errors.
            argv.append("-w")
    else:
        argv += ["-n", str(requests)]
    if http2:
        argv += ["--http2", "-p", str(h2_parallel)]
    elif not keepalive:
        argv.append("--disable-keepalive")
    if method.upper() != "GET":
        argv += ["-m", method.upper()]
    if body_file is not None:
        argv += ["-D", str(body_file)]
    argv += ["-t", _duration_arg(request_timeout), "--worker-threads", str(worker_threads), "--no-color", url]
    return argv


@dataclass(frozen=True)
class OhaResult:
    """What one oha run measured, with 2xx, non-2xx and errors kept apart. Latencies in seconds."""

    elapsed: float
    ok: int
    non_2xx: Mapping[str, int] = field(default_factory=dict)
    errors: Mapping[str, int] = field(default_factory=dict)
    latency_avg: float | None = None
    latency_p50: float | None = None
    latency_p99: float | None = None
    latency_max: float | None = None
    bytes_total: int = 0
    size_per_request: int | None = None
    aborted: int = 0  # cut by the -z deadline (oha's own doing, not the server's); 0 with -w on HTTP/1

    def __post_init__(self) -> None:
        if self.elapsed < 0 or self.ok < 0:
            raise ValueError(f"negative elapsed or count in {self!r}")

    @property
    def rps(self) -> float:
        """Responses with a 2xx status per second of elapsed time."""
        return self.ok / self.elapsed if self.elapsed > 0 else 0.0

    @property
    def error_count(self) -> int:
        """Connection and protocol errors (deadline aborts are counted apart, in ``aborted``)."""
        return sum(self.errors.values())

    @property
    def non_2xx_count(self) -> int:
        return sum(self.non_2xx.values())

    @property
    def total(self) -> int:
        """Every request oha started: answered, failed or cut at the deadline."""
        return self.ok + self.non_2xx_count + self.error_count + self.aborted

    @property
    def all_failed(self) -> bool:
        """No 2xx response at all: the run measured nothing (oha still exits 0)."""
        return self.ok == 0

    @property
    def clean(self) -> bool:
        return self.ok > 0 and not self.non_2xx and not self.errors


def _seconds(value: object) -> float | None:
    # serde_json writes NaN (no successful request) as null.
    if value is None:
        return None
    number = float(value)  # type: ignore[arg-type]
    return None if math.isnan(number) or math.isinf(number) else number


def parse_json(text: str) -> OhaResult:
    """Parse oha's ``--output-format json`` summary. Raises OhaError on anything unexpected."""
    try:
        data = json.loads(text)
        summary = data["summary"]
        statuses = {str(k): int(v) for k, v in data.get("statusCodeDistribution", {}).items()}
        errors = {str(k): int(v) for k, v in data.get("errorDistribution", {}).items()}
        aborted = errors.pop(DEADLINE_ERROR, 0)
        percentiles = data.get("latencyPercentiles") or {}
        elapsed = float(summary["total"])
    except (ValueError, KeyError, TypeError) as exc:
        head = text[:200].strip()
        raise OhaError(
            f"could not parse oha JSON output ({exc.__class__.__name__}: {exc}); output began {head!r}"
        ) from exc
    ok = sum(n for code, n in statuses.items() if code.startswith("2") and len(code) == 3)
    non_2xx = {code: n for code, n in statuses.items() if not (code.startswith("2") and len(code) == 3)}
    size = summary.get("sizePerRequest")
    return OhaResult(
        elapsed=elapsed,
        ok=ok,
        non_2xx=non_2xx,
        errors=errors,
        latency_avg=_seconds(summary.get("average")),
        latency_p50=_seconds(percentiles.get("p50")),
        latency_p99=_seconds(percentiles.get("p99")),
        latency_max=_seconds(summary.get("slowest")),
        bytes_total=int(summary.get("totalData") or 0),
        size_per_request=int(size) if size is not None else None,
        aborted=aborted,
    )


def error_kind(message: str) -> str:
    """A short, stable name for one of oha's error messages (for tables and grouping)."""
    lowered = message.lower()
    for needle, kind in _ERROR_KINDS:
        if needle in lowered:
            return kind
    return "other"


# Substrings of oha/hyper/std error messages, first match wins.
_ERROR_KINDS: Sequence[tuple[str, str]] = (
    (DEADLINE_ERROR, "deadline"),
    ("connection refused", "refused"),
    ("connection reset", "reset"),
    ("broken pipe", "reset"),
    ("timeout", "timeout"),
    ("timed out", "timeout"),
    ("too many open files", "fd-limit"),
    ("connection closed", "closed"),
    ("incomplete message", "closed"),
    ("connect", "connect"),
)
