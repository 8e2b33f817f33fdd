"""conformance/plugin/outcomes.py: the verdict of a phase, from recorded report fields."""
from types import SimpleNamespace

from gatecheck.conformance.plugin.outcomes import FAILING, decide


def _failed_call():
    return SimpleNamespace(passed=False, skipped=False, failed=True, longrepr="E   assert 400 in (505, 200)",
                           longreprtext="E   assert 400 in (505, 200)")


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
    race = SimpleNamespace(intermittent="failed 2 of 14 loaded runs", check="t.py::x", where="f.toml:3",
                           reason=lambda: "known intermittent deviation: e; intermittent: failed 2 of 14 loaded runs")
    assert decide("call", _passed_call(), None, plain, False, "SHOULD").outcome == "fixed"
    held = decide("call", _passed_call(), None, race, False, "SHOULD")
    assert held.outcome == "known" and held.message.startswith("held this run; known intermittent deviation")
    assert decide("call", _failed_call(), None, race, False, "SHOULD").outcome == "known"


def test_an_intermittent_entry_never_makes_an_error_known():
    race = SimpleNamespace(intermittent="failed 2 of 14 loaded runs", reason=lambda: "known intermittent deviation: e")
    assert decide("setup", _failed_call(), None, race, False, "SHOULD").outcome == "error"
