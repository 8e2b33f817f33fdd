"""The runner's pure parts: the method's --quick scaling, grouping by server start, the server's interpreter."""

from __future__ import annotations

import sys

import pytest

from gatecheck.load.plan.method import Method
from gatecheck.load.plan.profile import Case, PlannedCase, load_profile
from gatecheck.load.run.options import RunOptions, interpreter, requests_for
from gatecheck.load.run.runner import _group
from gatecheck.servers import Target


def test_quick_scales_every_duration_but_not_the_primer_concurrency():
    quick = Method().scaled(0.2)
    assert (quick.primer, quick.warmup, quick.duration, quick.pause) == pytest.approx((0.8, 0.6, 2.0, 0.2))
    assert quick.primer_concurrency == 8 and quick.request_timeout == 10.0
    assert "primer at c8 for 4 s" in Method().describe()


def test_fixed_count_cases_use_quick_requests_in_quick_mode():
    case = Case("json", "granian:rsgi", "json", (100,), requests=1_000_000, quick_requests=20_000)
    profile = load_profile("json")
    assert requests_for(case, RunOptions(profile=profile)) == 1_000_000
    assert requests_for(case, RunOptions(profile=profile, quick=0.2)) == 20_000
    assert requests_for(Case("x", "a:rsgi", "b1k", (1,)), RunOptions(profile=profile, quick=0.2)) is None


def test_cases_sharing_a_server_start_are_grouped_in_first_seen_order_and_skips_left_out():
    def item(label, target, env=None, skip=""):
        return PlannedCase(Case(label, target, "b1k", (1,), env=env or {}), Target.parse(target), skip)

    groups = _group(
        [
            item("a", "g:rsgi"),
            item("b", "g:asgi"),
            item("c", "g:rsgi"),
            item("d", "g:rsgi", {"X": "1"}),
            item("e", "g:wsgi", skip="no"),
        ]
    )
    assert [[p.case.label for p in items] for _key, items in groups] == [["a", "c"], ["b"], ["d"]]


def test_the_servers_interpreter_decides_version_limits_and_needs():
    version, importable = interpreter(sys.executable)
    assert version == sys.version_info[:2]
    assert importable("json") and not importable("no_such_module_gatecheck")
    assert interpreter(None) == (sys.version_info[:2], None)


def test_a_full_target_customises_every_case():
    opts = RunOptions(profile=load_profile("interfaces"), target=Target.parse("granian:asgi:h1?loop=uvloop"))
    targets = {str(p.target) for p in opts.planned(host_cores=2)}
    # the 1KB rows keep their one runtime blocking thread, the 100KB iterated echo Granian's default (as the seed)
    assert targets == {
        "granian:asgi:h1?loop=uvloop&runtime-blocking-threads=1&ws=off",
        "granian:asgi:h1?loop=uvloop&ws=off",
    }


def test_versions_of_the_packages_a_case_needs_are_recorded():
    from gatecheck.load.run.runner import _needed_versions

    case = Case(
        label="x", target="uvicorn:asgi", route="json", concurrency=(100,), needs=("pytest", "no_such_dist_gatecheck")
    )
    found = _needed_versions(case, sys.executable)
    assert set(found) == {"pytest"} and found["pytest"] == pytest.__version__


def test_the_warm_up_runs_at_the_cases_own_highest_concurrency():
    """As the seed's benchmark() does (max of that test's concurrencies), not the profile's highest: in
    ``vs`` the c64 WSGI rows must not be warmed at the Long I/O rows' c512."""
    from gatecheck.load.plan.method import Method
    from gatecheck.load.run.runner import _ProfileRun

    calls = []

    class FakePipeline:
        def measure(self, srv, spec, concurrency, duration, **kw):
            calls.append(concurrency)

    run = object.__new__(_ProfileRun)
    run.method, run.pipeline = Method(), FakePipeline()
    run.warm(None, None, False, 1, (64,))
    assert calls == [8, 64]
