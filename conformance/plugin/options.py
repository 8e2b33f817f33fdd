"""The command-line options of a conformance session, and their validation before anything starts.

Every bad value is one clear line (a pytest usage error, exit status 4), never a traceback or a lost run:
numbers are checked by argparse, output paths are created and written to before any server starts.
"""

from __future__ import annotations

import argparse
import os
import tempfile
from pathlib import Path

import pytest

from gatecheck.servers import available_cpus
from gatecheck.servers.memory import DEFAULT_BOUND, parse_size

__all__ = [
    "add_options",
    "check_output_paths",
    "session_timeout",
    "jobs_wanted",
    "CHECK_TIMEOUT",
    "SESSION_TIMEOUT_PER_TARGET",
    "JOBS_DEFAULT",
]

CHECK_TIMEOUT = 60.0  # seconds; the longest check on Granian takes about 7
SESSION_TIMEOUT_PER_TARGET = 1200.0  # seconds; a full run of one Granian target takes about 1 minute
JOBS_DEFAULT = "1"  # --jobs: see jobs_wanted; tox.ini's server envs ask for auto
AUTO_JOBS_PER_CPU = 4
AUTO_JOBS_MAX = 16


def _seconds(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number of seconds, got {text!r}") from None
    if not value > 0 or value != value or value == float("inf"):
        raise argparse.ArgumentTypeError(f"must be a positive number of seconds, got {text!r}")
    return value


def _memory(text: str) -> int | None:
    try:
        return parse_size(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def _jobs(text: str) -> str:
    if text == "auto" or (text.isdigit() and int(text) > 0):
        return text
    raise argparse.ArgumentTypeError(f"expected a positive number of sessions or 'auto', got {text!r}")


def jobs_wanted(given: str) -> int:
    """How many child sessions run at once: ``auto`` is 4 per CPU this process may use, at most 16 (8 on 2 cores).
    The checks mostly wait on servers: measured for tox -e granian's 13 targets on 2 cores, --jobs 4 took 115 s,
    6 102 s, 8 93 s and 90 s, 12 104 s. With fewer targets than that, their checks are split over the sessions
    left free (``shards.py``); 1 runs every target in this process, one after another."""
    return min(AUTO_JOBS_MAX, AUTO_JOBS_PER_CPU * len(available_cpus())) if given == "auto" else int(given)


def add_options(parser) -> None:
    add = parser.getgroup("gatecheck", "gatecheck conformance").addoption
    _add_target_options(add)
    _add_output_and_limit_options(add)
    _add_expectation_and_session_options(add)


def _add_target_options(add) -> None:
    """What to check: built-in targets, or any server from a command template."""
    add(
        "--server",
        action="append",
        default=[],
        metavar="TARGET",
        help="target to check, e.g. granian:asgi, granian:rsgi:h2, uvicorn:asgi?loop=uvloop "
        "(repeatable; default: granian:rsgi, granian:asgi, granian:wsgi)",
    )
    add(
        "--server-cmd",
        default=None,
        metavar="TEMPLATE",
        help="check any server from a command template with {app} {host} {port}, "
        'e.g. "uvicorn --port {port} {app}" (needs --interface)',
    )
    add("--interface", default=None, choices=("asgi", "rsgi", "wsgi"), help="interface of the --server-cmd server")
    add("--http", default=None, choices=("h1", "h2", "auto"), help="HTTP mode of the --server-cmd server (default h1)")
    add(
        "--features",
        default=None,
        metavar="LIST",
        help="comma-separated features of the --server-cmd server, e.g. h2c,websockets,lifespan",
    )


def _add_output_and_limit_options(add) -> None:
    """Where results and logs go, and how long (and how big) a server and a check may get."""
    add(
        "--results-json",
        default="results/conformance.json",
        metavar="PATH",
        help="where to write the JSON results (default: results/conformance.json); records are appended to "
        "PATH.partial.jsonl while the session runs",
    )
    add(
        "--server-log-dir",
        default=None,
        metavar="DIR",
        help="keep the server logs (private servers' too) in DIR (default: a temporary directory, removed)",
    )
    add(
        "--ready-timeout",
        type=_seconds,
        default=30.0,
        metavar="SECONDS",
        help="how long a server may take to answer its first request (default 30)",
    )
    add(
        "--server-memory",
        type=_memory,
        default=DEFAULT_BOUND,
        metavar="SIZE",
        help="kill a server whose processes together hold more resident memory than SIZE (e.g. 8G, 512M, or off), "
        "with a line in its log, so the check that drove it there shows it (default 4G; a target's memory= "
        "option wins)",
    )
    add(
        "--check-timeout",
        type=_seconds,
        default=CHECK_TIMEOUT,
        metavar="SECONDS",
        help=f"a check still running after this is stopped with the outcome 'timeout' (default {CHECK_TIMEOUT:.0f})",
    )
    add(
        "--session-timeout",
        type=_seconds,
        default=None,
        metavar="SECONDS",
        help="the whole session stops after this (the running check times out, the rest do not run); "
        f"default {SESSION_TIMEOUT_PER_TARGET:.0f} s per target",
    )


def _add_expectation_and_session_options(add) -> None:
    """Which known deviations are read, and how many pytest sessions run at once."""
    add(
        "--no-expectations",
        action="store_true",
        help="read no expectation file at all (neither the built-in ones nor --expectations): known deviations "
        "fail like any other",
    )
    add(
        "--expectations",
        action="append",
        default=[],
        metavar="FILE",
        help="also read known deviations from FILE (repeatable; a server keeps its own in its repository); "
        "read after the built-in file, a later entry for the same check wins",
    )
    add(
        "--no-builtin-expectations",
        action="store_true",
        help="do not read gatecheck's conformance/expectations/<server>.toml: only the --expectations files",
    )
    add(
        "--jobs",
        type=_jobs,
        default=JOBS_DEFAULT,
        metavar="N",
        help="run up to N pytest sessions at once, one per target (a target's checks are split over sessions "
        "left free), merged into one set of results (default 1: every target in this process, one after "
        "another; auto: 4 per CPU, at most 16)",
    )
    add("--gatecheck-check", action="append", default=[], help=argparse.SUPPRESS)  # a named check (selection.py)
    add("--gatecheck-collected", default=None, help=argparse.SUPPRESS)  # a --jobs child: where its collection goes
    add("--gatecheck-shard", default=None, help=argparse.SUPPRESS)  # a --jobs shard: its claims directory


def session_timeout(config, targets: int) -> float:
    given = config.getoption("--session-timeout")
    return given if given is not None else SESSION_TIMEOUT_PER_TARGET * max(1, targets)


def check_output_paths(config) -> None:
    """Create and try each output location now; a path that cannot be written is a usage error."""
    results = config.getoption("--results-json")
    _writable_dir("--results-json", Path(results).parent, results)
    if Path(results).is_dir():
        raise pytest.UsageError(f"--results-json {results}: is a directory; give a file path")
    log_dir = config.getoption("--server-log-dir")
    if log_dir:
        _writable_dir("--server-log-dir", Path(log_dir), log_dir)
    xml = getattr(config.option, "xmlpath", None)
    if xml:
        _writable_dir("--junitxml", Path(os.path.abspath(xml)).parent, xml)


def _writable_dir(option: str, directory: Path, given: str) -> None:
    try:
        directory.mkdir(parents=True, exist_ok=True)
        with tempfile.TemporaryFile(dir=directory):
            pass
    except OSError as exc:
        raise pytest.UsageError(
            f"{option} {given}: cannot write to {directory} ({exc.strerror or exc}); "
            "give a path in a writable directory"
        ) from None
