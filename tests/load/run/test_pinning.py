"""Splitting CPUs between the server and oha."""

from __future__ import annotations

import pytest

from gatecheck.load.plan.cpulist import format_cpu_list, parse_cpu_list
from gatecheck.load.run.pinning import Pinning, split_cpus


@pytest.mark.parametrize(
    "cpus, server, oha",
    [
        ([0, 1], (0,), (1,)),
        ([0, 1, 2, 3], (0, 1), (2, 3)),
        ([3, 1, 2], (1, 2), (3,)),
        ([4, 5, 6, 7, 8], (4, 5, 6), (7, 8)),
    ],
)
def test_server_takes_the_first_half_rounded_up_and_oha_the_rest(cpus, server, oha):
    pin = split_cpus(cpus)
    assert (pin.server, pin.oha) == (server, oha)
    assert pin.pinned and pin.oha_threads() == len(oha)


def test_one_cpu_is_not_pinned_and_says_so():
    pin = split_cpus([0])
    assert not pin.pinned and pin.server is None and pin.oha is None
    assert "not pinned" in pin.describe()


def test_overlapping_sets_are_refused():
    with pytest.raises(ValueError, match="overlap on 1"):
        Pinning((0, 1), (1, 2))


def test_pinning_is_recorded_as_lists():
    assert split_cpus([0, 1]).to_dict() == {"server": [0], "oha": [1]}
    assert Pinning(None, None).to_dict() == {"server": None, "oha": None}


@pytest.mark.parametrize("text, cpus", [("0", (0,)), ("0-3", (0, 1, 2, 3)), ("0,2-3", (0, 2, 3)), (" 1 , 0 ", (0, 1))])
def test_cpu_lists_parse(text, cpus):
    assert parse_cpu_list(text) == cpus


@pytest.mark.parametrize("text", ["", "a", "3-1", "-1", "0,,1", "1-"])
def test_bad_cpu_lists_are_rejected_quoting_the_input(text):
    with pytest.raises(ValueError, match="invalid CPU list"):
        parse_cpu_list(text)


@pytest.mark.parametrize("cpus, text", [((0, 1, 2, 5), "0-2,5"), ((3,), "3"), ((), "-"), ((0, 2, 4), "0,2,4")])
def test_cpu_lists_format_compactly(cpus, text):
    assert format_cpu_list(cpus) == text


PROC_STAT = """cpu  900 10 300 5000 20 0 5 7 0 0
cpu0 500 0 200 2000 10 0 3 4 0 0
cpu1 400 10 100 3000 10 0 2 3 0 0
intr 12345
"""


def test_proc_stat_busy_is_user_nice_system_irq_softirq_and_steal_apart():
    from gatecheck.load.run.pinning import CpuTimes, parse_proc_stat

    assert parse_proc_stat(PROC_STAT, [0], 100) == CpuTimes(busy=7.03, steal=0.04)
    both = parse_proc_stat(PROC_STAT, [0, 1], 100)
    assert both.busy == pytest.approx(7.03 + 5.12) and both.steal == pytest.approx(0.07)
    assert parse_proc_stat(PROC_STAT, [2], 100) is None  # a CPU that is not there
    assert (both - parse_proc_stat(PROC_STAT, [0], 100)).busy == pytest.approx(5.12)


def test_cpu_times_reads_this_machine():
    from gatecheck.load.run.pinning import available_cpus, cpu_times

    t = cpu_times(available_cpus()[:1])
    assert t is None or (t.busy > 0 and t.steal >= 0)
