"""Checks named on the command line: ``gatecheck conformance --server T 'test_x.py::test_f[param]'``.

A user names a check as a run printed it, from any directory: the check id of the results and of a failure's
``rerun`` line (``test_x.py::test_f[param]``, no target), or pytest's node id from a ``FAILED`` line
(``../venv/lib/.../gatecheck/conformance/checks/test_x.py::test_f[granian:asgi:auto-param]``, the target's id
inside the brackets), or a check file, or a function (every parameter). The ``gatecheck`` command resolves each
against the installed checks folder (:func:`split_args`): the file is what pytest collects instead of the whole
folder, and the rest is handed to the plugin (``--gatecheck-check``), which keeps the items it names
(:func:`select_items`). ``*`` in a name matches anything, as in expectation entries.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from gatecheck.conformance.spec.results import check_id_of

__all__ = ["OPTION", "split_args", "select_items", "VALUE_OPTIONS"]

OPTION = "--gatecheck-check"
#: options whose value is the next argument (pytest's and gatecheck's): that argument is never a check
VALUE_OPTIONS = frozenset(
    {
        "-k",
        "-m",
        "-o",
        "-c",
        "-p",
        "-r",
        "--tb",
        "--server",
        "--server-cmd",
        "--interface",
        "--http",
        "--features",
        "--results-json",
        "--server-log-dir",
        "--ready-timeout",
        "--check-timeout",
        "--session-timeout",
        "--expectations",
        "--jobs",
        "--junitxml",
        "--junit-xml",
        "--junit-prefix",
        "--rootdir",
        "--confcutdir",
        "--basetemp",
        "--deselect",
        "--ignore",
        "--ignore-glob",
        "--hypothesis-profile",
        "--hypothesis-seed",
        "--maxfail",
        "--durations",
        "--durations-min",
        "--log-level",
        "--log-file",
        "--capture",
        "--override-ini",
        "--config-file",
        "--lfnf",
        "--last-failed-no-failures",
        "--import-mode",
        "--color",
        "--code-highlight",
        "--cache-show",
        "--pyargs-root",
        "--hypothesis-verbosity",
        "--hypothesis-show-statistics",
        OPTION,
        "--gatecheck-collected",
        "--gatecheck-shard",
    }
)
_CHECK_ARG = re.compile(r"^(?:.*[/\\])?(test_\w+\.py)(?:::(.+))?$")


def split_args(args: list, checks: Path) -> tuple:
    """(check files to collect, the arguments with each named check replaced by ``--gatecheck-check NAME``).
    An argument is a named check when it is not an option's value, looks like ``[dir/]test_x.py[::name]`` and
    its file is one of the installed checks (a path of the user's own stays a path)."""
    files: list = []
    rest: list = []
    value_next = False
    for arg in args:
        if value_next or arg.startswith("-"):
            rest.append(arg)
            value_next = not value_next and arg in VALUE_OPTIONS
            continue
        match = _CHECK_ARG.match(arg)
        named = match is not None and (checks / match.group(1)).is_file()
        if not named or (Path(arg).exists() and not _inside(Path(arg), checks)):
            rest.append(arg)
            continue
        file = str(checks / match.group(1))
        if file not in files:
            files.append(file)
        rest += [OPTION, match.group(1) + (f"::{match.group(2)}" if match.group(2) else "")]
    return files, rest


def _inside(path: Path, folder: Path) -> bool:
    try:
        path.resolve().relative_to(folder.resolve())
        return True
    except ValueError:
        return False


def _pattern(text: str) -> "re.Pattern":
    return re.compile(".*".join(re.escape(part) for part in text.split("*")))


def _names(item, file: str, name: str | None) -> bool:
    """Whether ``item`` is what ``file::name`` names: the whole file, a function, pytest's item name (with the
    target's id), or the check id (without it)."""
    if Path(str(item.path)).name != file:
        return False
    if name is None:
        return True
    if "*" in name:
        pattern = _pattern(f"{file}::{name}")
        return bool(pattern.fullmatch(check_id_of(item)) or pattern.fullmatch(f"{file}::{item.name}"))
    if "[" not in name:
        return getattr(item, "originalname", item.name) == name
    return item.name == name or check_id_of(item) == f"{file}::{name}"


def select_items(config, items: list, targets: list) -> None:
    """Keep the items the named checks name (of the files that have one); the others are deselected. A name that
    matches nothing on this run's targets is a usage error saying why."""
    named = [(text.split("::", 1) + [None])[:2] for text in config.getoption(OPTION) or ()]
    if not named:
        return
    files = {file for file, _ in named}
    keep, dropped, matched = [], [], set()
    for item in items:
        hits = {i for i, (file, name) in enumerate(named) if _names(item, file, name)}
        matched |= hits
        (keep if hits or Path(str(item.path)).name not in files else dropped).append(item)
    missing = [f"{file}::{name}" if name else file for i, (file, name) in enumerate(named) if i not in matched]
    if missing and not config.getoption("--gatecheck-collected"):  # a --jobs child has part of the targets
        shown = ", ".join(st.target.name for st in targets)
        raise pytest.UsageError(
            f"no check of this run matches {', '.join(missing)} on its targets ({shown}). Name a check as the "
            "results file's 'check' field spells it (test_x.py::test_function[parameters]) with --server TARGET, "
            "or as pytest printed it, with the target it names among the --server options"
        )
    if dropped:
        config.hook.pytest_deselected(items=dropped)
        items[:] = keep
