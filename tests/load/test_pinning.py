"""Splitting CPUs between the server and oha."""
from __future__ import annotations

import pytest

from load.pinning import Pinning, format_cpu_list, parse_cpu_list, split_cpus


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
