"""Every conformance area can fail: a deliberately broken app or server makes the right check fail.

Each row of ``ROWS`` names an area (a ``conformance/test_<area>.py`` file), how the broken behaviour is
served (``VIAS``: an app wrapper under uvicorn or granian, the stdlib server of ``tests/broken/server.py``,
or the relay of ``tests/broken/proxy.py`` in front of a real server), the break (a name in that via's
``BREAKS``) and the checks that must fail because of it. The same checks must *pass* on the control: the
same server and wrapper machinery with nothing broken. A check that passes while the behaviour it checks
is broken cannot fail, and that is a defect.

The rows are tables beside this file (``can_fail_rows.py``, ``can_fail_rows_more.py``; the vias in
``can_fail_vias.py``). Adding an area is adding a row. ``test_every_area_has_a_row`` fails when a committed conformance
file has neither a row nor an entry in ``UNCOVERED`` saying why it cannot have one;
``test_every_check_has_a_row_or_is_listed`` does the same per check function (the older checks without a row are listed
in ``data/checks_without_rows.txt``).

All runs happen once per session, batched into a few parallel conformance subprocesses
(``tests/broken/runs.py``, ``GATECHECK_CAN_FAIL_WORKERS`` at a time); each row then only reads its outcomes.
A failing row shows what the check said on the broken target and the tail of that conformance run.
"""

from __future__ import annotations

import ast
import subprocess
from pathlib import Path

import pytest

from tests.broken.runs import REPO, Run, run_all
from tests.conformance.can_fail_rows import ROWS as _HTTP_ROWS
from tests.conformance.can_fail_rows import Row
from tests.conformance.can_fail_rows_more import ROWS as _MORE_ROWS
from tests.conformance.can_fail_vias import CATALOGUES, VIAS
from tests.installed import CHECKS

#: the rows (tables in can_fail_rows.py and can_fail_rows_more.py; the vias in can_fail_vias.py)
ROWS = _HTTP_ROWS + _MORE_ROWS


UNCOVERED = {
    "h2spec": "its cases are h2spec's own verdicts on the server's HTTP/2 framing layer, reported as they come; "
    "the harness's part (parsing the report, counting the cases) has tests of its own"
}


def _runs(rows) -> dict:
    """{(via, break or None for the control): Run}: one run per (via, break) with the union of its rows'
    checks, and one control per via with the union of all its rows' checks."""
    checks: dict = {}
    waits: dict = {}
    for row in rows:
        waits[(row.via, row.brk)] = waits.get((row.via, row.brk), 0.0) + row.wait
        for key in ((row.via, row.brk), (row.via, None)):
            ids = checks.setdefault(key, [])
            ids.extend(c for c in row.checks() if c not in ids)
    # short target names: the harness puts the whole target (command included) into log file names
    return {
        (via, brk): Run(
            f"r{n}", via, brk or VIAS[via].control, tuple(ids), control=brk is None, wait=waits.get((via, brk), 0.0)
        )
        for n, ((via, brk), ids) in enumerate(checks.items())
    }


@pytest.fixture(scope="session")
def outcomes(request):
    """({(via, break): run name}, outcomes) for every run the selected rows need (all conformance
    subprocesses run here, once)."""
    rows = [
        item.callspec.params["row"]
        for item in request.session.items
        if hasattr(item, "callspec") and isinstance(item.callspec.params.get("row"), Row)
    ]
    runs = _runs(rows)
    return {key: run.name for key, run in runs.items()}, run_all(list(runs.values()), VIAS)


@pytest.mark.parametrize("row", ROWS, ids=[row.id for row in ROWS])
def test_broken_behaviour_fails_its_check(outcomes, row):
    """The check fails on the broken behaviour and passes on the unbroken control."""
    names, outcomes = outcomes
    control, broken = names[(row.via, None)], names[(row.via, row.brk)]
    problems = []
    for check in row.checks():
        got_control, got_broken = outcomes.outcome(control, check), outcomes.outcome(broken, check)
        if got_control != "passed":
            problems.append(
                f"{check}: {got_control} on the control ({row.via}), expected passed: "
                f"{outcomes.message(control, check)[:300]}"
            )
        if got_broken not in ("failed", "noted"):  # noted: an INFO check's failure (it never fails a run)
            problems.append(
                f"{check}: {got_broken} with {row.brk!r} broken, expected failed "
                f"(a check that cannot fail): {outcomes.message(broken, check)[:300]}"
            )
    if problems:
        tail = outcomes.log(broken) if any(" with " in p for p in problems) else outcomes.log(control)
        pytest.fail("\n".join(problems) + "\n--- conformance run output (tail) ---\n" + tail[-2000:], pytrace=False)


def _untracked(paths: list) -> set:
    """The installed check files whose twin in the checkout git does not track yet (a file someone is still
    writing); empty when git cannot tell. The installed files themselves are never asked about: tox installs
    them under the checkout's own .tox/, where git sees every file as untracked."""
    twins = {(REPO / "conformance" / "checks" / Path(p).name).resolve(): Path(p).resolve() for p in paths}
    try:
        out = subprocess.run(
            ["git", "ls-files", "--others", "--exclude-standard", "--", *map(str, twins)],
            cwd=REPO,
            capture_output=True,
            text=True,
            timeout=30,
            stdin=subprocess.DEVNULL,
        )
    except (OSError, subprocess.TimeoutExpired):
        return set()
    if out.returncode != 0:
        return set()
    return {twins[(REPO / line).resolve()] for line in out.stdout.splitlines() if (REPO / line).resolve() in twins}


def test_every_area_has_a_row():
    """Every conformance/test_<area>.py has a row here (or a reason in UNCOVERED); an area file not yet
    committed is only reported (skipped), so a check file still being written does not break this test."""
    files = sorted(CHECKS.glob("test_*.py"))
    covered = {row.area for row in ROWS} | set(UNCOVERED)
    missing = [p for p in files if p.stem[len("test_") :] not in covered]
    untracked = _untracked(missing) if missing else set()
    committed = sorted(p.stem[len("test_") :] for p in missing if p.resolve() not in untracked)
    assert not committed, (
        f"conformance areas without a broken-behaviour row: {committed}; add a Row to ROWS in "
        f"{__file__} (a break in tests/broken/ that must make one of its checks fail) or say "
        "in UNCOVERED why none can be written"
    )
    gone = {row.area for row in ROWS} - {p.stem[len("test_") :] for p in files}
    assert not gone, f"rows for areas that no longer exist: {sorted(gone)}"
    if missing:
        pytest.skip(
            f"not committed yet, and without a broken-behaviour row: {[p.name for p in missing]} "
            f"(add a Row to ROWS in {Path(__file__).name} before committing)"
        )


WITHOUT_ROWS = Path(__file__).parent / "data" / "checks_without_rows.txt"


def _check_functions(path: Path) -> list:
    """The check functions (module-level ``test_*``) defined in one conformance file."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    return [
        node.name
        for node in tree.body
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name.startswith("test_")
    ]


def test_every_check_has_a_row_or_is_listed():
    """Every check function (not only every area) has a row, or a line in data/checks_without_rows.txt (the
    older checks still without one); a listed check that got a row, or is gone, must leave the list. The
    area test above cannot see a new check in an area that already has a row for another check."""
    covered = {(f"test_{row.area}.py", check.split("[")[0]) for row in ROWS for check in row.fails}
    listed = {
        line.strip()
        for line in WITHOUT_ROWS.read_text(encoding="utf-8").splitlines()
        if line.strip() and not line.startswith("#")
    }
    files = [p for p in sorted(CHECKS.glob("test_*.py")) if p.stem[len("test_") :] not in UNCOVERED]
    untracked = _untracked(files)
    defined = {f"{p.name}::{name}" for p in files if p.resolve() not in untracked for name in _check_functions(p)}
    missing = sorted(c for c in defined if tuple(c.split("::")) not in covered and c not in listed)
    assert not missing, (
        f"checks without a broken-behaviour row: {missing}; add a Row to ROWS in {Path(__file__).name} "
        f"(a break that must make the check fail)"
    )
    stale = sorted(c for c in listed if c not in defined or tuple(c.split("::")) in covered)
    assert not stale, f"lines of {WITHOUT_ROWS.name} whose check has a row now or no longer exists: {stale}"


def test_rows_name_real_breaks_and_every_break_has_a_row():
    """Each row's break exists in its via's catalogue, and every catalogued break is exercised by a row."""
    for row in ROWS:
        assert row.via in VIAS and row.brk in CATALOGUES[row.via], row
        assert all("::" not in check for check in row.fails), row
    used = {(id(CATALOGUES[row.via]), row.brk) for row in ROWS}
    used |= {(id(CATALOGUES[name]), via.control) for name, via in VIAS.items()}  # a via's own control
    unused = sorted(
        name
        for catalogue in {id(c): c for c in CATALOGUES.values()}.values()
        for name in catalogue
        if (id(catalogue), name) not in used
    )
    assert not unused, f"breaks no row uses (dead code, or a row is missing): {unused}"
