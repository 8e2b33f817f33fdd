"""The ``gatecheck`` command: one entry for the conformance checks, load profiles, the gate, the matrix and
the server adapters. Each subcommand is the existing command line of its package, unchanged:

    gatecheck conformance [PYTEST OPTIONS]   pytest over the installed checks (gatecheck.conformance)
    gatecheck load ...                       python -m gatecheck.load ...
    gatecheck gate ...                       python -m gatecheck.load gate ...
    gatecheck matrix ...                     python -m gatecheck.conformance.matrix ...
    gatecheck servers ...                    python -m gatecheck.servers ...
    gatecheck annotate RESULTS ...           GitHub annotations on a server's own expectation file
"""

from __future__ import annotations

import os
import sys
from typing import Callable, Sequence

__all__ = ["main", "conformance_args"]


def conformance_args(args: Sequence[str]) -> list:
    """pytest's argv for ``gatecheck conformance ARGS``: the checks' folder, with gatecheck's own pytest
    settings (not those of whatever project surrounds the current directory or the installed package), and
    pytest's cache (``--lf``) in gatecheck's cache, one per working directory, never next to the installed
    checks; pytest-benchmark, when installed, left out (it writes .benchmarks/ into the working directory);
    ARGS come last, so they override. A check named in ARGS as a run printed it (its check id, or
    pytest's node id from any directory) is collected from the installed checks alone (``selection.py``)."""
    import hashlib
    from pathlib import Path

    import gatecheck.conformance as checks
    from gatecheck.conformance.plugin.selection import split_args
    from gatecheck.tools import cache_dir

    folder = os.path.dirname(os.path.abspath(checks.__file__))
    files, rest = split_args(list(args), Path(folder) / "checks")
    here = hashlib.sha256(os.path.abspath(os.getcwd()).encode()).hexdigest()[:16]
    cache = cache_dir() / "pytest" / here
    return [
        *(files or [folder]),
        "-c",
        os.path.join(folder, "data", "pytest.ini"),
        "--rootdir",
        os.path.dirname(folder),
        "--confcutdir",
        folder,
        "-o",
        f"cache_dir={cache}",
        "-p",
        "no:benchmark",
        *rest,
    ]


def _conformance(args: list) -> int:
    import pytest

    from gatecheck.tools import cache_dir

    # hypothesis keeps its files in gatecheck's cache, not in a .hypothesis/ of the current directory
    os.environ.setdefault("HYPOTHESIS_STORAGE_DIRECTORY", str(cache_dir() / "hypothesis"))
    return int(pytest.main(conformance_args(args)))


def _load(args: list) -> int:
    from gatecheck.load.__main__ import main
    from gatecheck.load.run import stop_on_signals

    stop_on_signals()
    return main(args)


def _gate(args: list) -> int:
    return _load(["gate", *args])


def _matrix(args: list) -> int:
    from gatecheck.conformance.matrix import main

    return main(args)


def _annotate(args: list) -> int:
    from gatecheck.annotate import main

    return main(args)


def _servers(args: list) -> int:
    from gatecheck.servers.__main__ import main

    return main(args)


COMMANDS: dict = {
    "conformance": (
        "check servers against the specs (pytest; its options pass through, e.g. -k, -x, --junitxml)",
        _conformance,
    ),
    "load": ("load profiles, reports (run, report, list-profiles)", _load),
    "gate": ("regression gate between two installs of a server (docs/gate.md)", _gate),
    "matrix": ("render the compliance matrix from results JSON files", _matrix),
    "servers": ("list the server adapters and their targets, or start one (list, run)", _servers),
    "annotate": ("GitHub Actions annotations on a server's own expectation file from a results file", _annotate),
}

_USAGE = "usage: gatecheck COMMAND [ARGS...]   (gatecheck COMMAND --help for its options)"


def _help() -> str:
    lines = [_USAGE, "", "conformance and load test suite for Python gateway servers", "", "commands:"]
    lines += [f"  {name:<12} {text}" for name, (text, _run) in COMMANDS.items()]
    lines += [
        "",
        "examples:",
        "  gatecheck servers list -v",
        "  gatecheck conformance --server granian:asgi -k http1 --results-json results/granian.json",
        "  gatecheck load run granian --profile smoke --quick",
    ]
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if not argv or argv[0] in ("-h", "--help", "help"):
        print(_help(), file=sys.stdout if argv else sys.stderr)
        return 0 if argv else 2
    if argv[0] in ("-V", "--version"):
        from importlib import metadata

        try:
            print(f"gatecheck {metadata.version('gatecheck')}")
        except metadata.PackageNotFoundError:
            print("gatecheck (a checkout, not installed)")
        return 0
    name, rest = argv[0], argv[1:]
    entry = COMMANDS.get(name)
    if entry is None:
        print(
            f"gatecheck: unknown command {name!r}; choose one of {', '.join(COMMANDS)} (gatecheck --help)",
            file=sys.stderr,
        )
        return 2
    run: Callable[[list], int] = entry[1]
    return run(rest)
