"""conformance/plugin/outcomes.py: the verdict of a phase, from recorded report fields."""

from types import SimpleNamespace

import pytest

from gatecheck.conformance.plugin.outcomes import FAILING, CheckTimeout, decide
from gatecheck.conformance.plugin.reports import brief_if_known


def _failed_call():
    return SimpleNamespace(
        passed=False,
        skipped=False,
        failed=True,
        longrepr="E   assert 400 in (505, 200)",
        longreprtext="E   assert 400 in (505, 200)",
    )


def test_a_failed_info_check_is_noted_and_never_fails_the_run():
    verdict = decide("call", _failed_call(), None, None, False, "INFO")
    assert verdict.outcome == "noted" and "noted" not in FAILING
    assert "INFO" in verdict.message


def test_a_failed_check_of_any_other_level_is_failed():
    for level in ("MUST", "SHOULD", "POLICY", "DEFINED", ""):
        assert decide("call", _failed_call(), None, None, False, level).outcome == "failed"


def test_a_listed_info_check_that_fails_stays_known():
    deviation = SimpleNamespace(reason=lambda: "known deviation [RFC 9110 §6.2]: 400 for HTTP/9.9")
    assert decide("call", _failed_call(), None, deviation, False, "INFO").outcome == "known"


def _passed_call():
    return SimpleNamespace(passed=True, skipped=False, failed=False, longrepr=None, longreprtext="")


def test_a_listed_check_that_passes_is_fixed_unless_its_entry_is_intermittent():
    plain = SimpleNamespace(intermittent="", check="t.py::x", where="f.toml:3", reason=lambda: "known deviation: e")
    race = SimpleNamespace(
        intermittent="failed 2 of 14 loaded runs",
        check="t.py::x",
        where="f.toml:3",
        reason=lambda: "known intermittent deviation: e; intermittent: failed 2 of 14 loaded runs",
    )
    assert decide("call", _passed_call(), None, plain, False, "SHOULD").outcome == "fixed"
    held = decide("call", _passed_call(), None, race, False, "SHOULD")
    assert held.outcome == "known" and held.message.startswith("held this run; known intermittent deviation")
    assert decide("call", _failed_call(), None, race, False, "SHOULD").outcome == "known"


def test_an_intermittent_entry_never_makes_an_error_known():
    race = SimpleNamespace(intermittent="failed 2 of 14 loaded runs", reason=lambda: "known intermittent deviation: e")
    assert decide("setup", _failed_call(), None, race, False, "SHOULD").outcome == "error"


def _call(fn):
    return pytest.CallInfo.from_call(fn, when="call")


def _failing():
    assert 400 in (505, 200), "status 400"


def test_a_known_failure_gets_a_one_line_text_instead_of_pytest_traceback():
    """brief_if_known: the long traceback of a call that will be "known" is never shown; its text is one line."""
    item, call = SimpleNamespace(), _call(_failing)
    brief_if_known(item, call, SimpleNamespace(reason=lambda: "known deviation: e"))
    text = item.repr_failure(call.excinfo)
    assert text.startswith(f"{__file__}:") and text.endswith("AssertionError: status 400\nassert 400 in (505, 200)")


def test_every_other_call_keeps_pytest_own_failure_text():
    def skipped():
        pytest.skip("unsupported")

    def timed_out():
        raise CheckTimeout("over its deadline")

    listed = SimpleNamespace(reason=lambda: "known deviation: e")
    for call, known in (
        (_call(_failing), None),
        (_call(skipped), listed),
        (_call(timed_out), listed),
        (_call(lambda: None), listed),
    ):
        item = SimpleNamespace()
        brief_if_known(item, call, known)
        assert "repr_failure" not in vars(item)


def test_a_timeout_says_where_the_check_was_and_what_led_there():
    from gatecheck.conformance.plugin.outcomes import _where

    def library_wait():
        raise CheckTimeout("over its deadline")

    def client_call():
        library_wait()

    def check():
        client_call()

    where = _where(_call(check).excinfo)
    inner, *callers = where.split(" <- ")
    assert inner.startswith(f"{__file__}:"), where
    assert len(callers) == 2 and all(c.startswith("test_outcomes.py:") for c in callers), where


# -- issue 28: a MAY never fails a run; a crash is a finding; a fixture refusal is an error ------------------


def test_a_failed_may_check_is_noted_never_failed_nor_counted_with_must_and_should():
    from gatecheck.conformance.plugin.outcomes import SPEC_GROUP, level_group

    verdict = decide("call", _failed_call(), None, None, False, "MAY")
    assert verdict.outcome == "noted" and "MAY" in verdict.message
    assert level_group("MAY") != SPEC_GROUP and level_group("MUST NOT") == SPEC_GROUP


def test_a_crash_is_crashed_in_any_phase_even_on_a_listed_check():
    from gatecheck.conformance.spec.results import ServerCrashed

    deviation = SimpleNamespace(reason=lambda: "known deviation: e", intermittent="")
    for when in ("call", "teardown"):
        excinfo = _call(lambda: (_ for _ in ()).throw(ServerCrashed("crashed: exit code -11"))).excinfo
        verdict = decide(when, _failed_call(), excinfo, deviation, False, "MUST")
        assert verdict.outcome == "crashed" and "exit code -11" in verdict.message
    assert "crashed" in FAILING


def test_a_fixture_refusal_is_an_error_never_known():
    from gatecheck.conformance.spec.results import CheckError

    deviation = SimpleNamespace(reason=lambda: "known deviation: e", intermittent="")
    excinfo = _call(lambda: (_ for _ in ()).throw(CheckError("the fixture app could not run ..."))).excinfo
    assert decide("call", _failed_call(), excinfo, deviation, False, "MUST").outcome == "error"


def test_crashes_are_counted_by_level_in_the_results(tmp_path):
    from gatecheck.conformance.plugin.resultsfile import Results

    results = Results(tmp_path / "r.json")
    for n, (level, outcome) in enumerate(
        [("MUST", "crashed"), ("SHOULD", "failed"), ("MAY", "noted"), ("POLICY", "crashed"), ("MUST NOT", "crashed")]
    ):
        results.records[(f"t.py::c{n}", "s")] = {
            "check": f"t.py::c{n}",
            "target": "s",
            "level": level,
            "outcome": outcome,
        }
    assert results.findings_by_level() == {"MUST/SHOULD (spec)": {"crashed": 2, "failed": 1}, "POLICY": {"crashed": 1}}
    assert results.failures_by_level() == {"MUST/SHOULD (spec)": 3, "POLICY": 1}
