"""load/argtypes.py: every validator returns the value or one message quoting what was typed."""

import argparse

import pytest

from gatecheck.load.plan import argtypes


@pytest.mark.parametrize(
    "fn, text, value",
    [
        (argtypes.positive_int, "3", 3),
        (argtypes.positive_float, "0.5", 0.5),
        (argtypes.non_negative_float, "0", 0.0),
        (argtypes.percent, "5%", 0.05),
        (argtypes.percent, "0.05", 0.05),
        (argtypes.at_least(8, "--pairs"), "8", 8),
        (argtypes.cpu_list, "0-2,5", (0, 1, 2, 5)),
    ],
)
def test_good_values_parse(fn, text, value):
    assert fn(text) == pytest.approx(value)


@pytest.mark.parametrize(
    "fn, text, message",
    [
        (argtypes.positive_int, "0", "expected a positive integer, got '0'"),
        (argtypes.positive_int, "x", "expected a positive integer, got 'x'"),
        (argtypes.positive_float, "inf", "expected a positive number, got 'inf'"),
        (argtypes.positive_float, "nan", "expected a positive number, got 'nan'"),
        (argtypes.non_negative_float, "-1", "expected a number >= 0, got '-1'"),
        (argtypes.percent, "5", "'5' is ambiguous: write '5%'"),
        (argtypes.percent, "150%", "between 0% and 100%"),
        (argtypes.at_least(8, "--pairs"), "7", "--pairs must be a whole number >= 8, got '7'"),
        (argtypes.cpu_list, "0-", "invalid CPU list: '0-'"),
    ],
)
def test_bad_values_are_refused_quoting_the_text(fn, text, message):
    with pytest.raises(argparse.ArgumentTypeError, match=message.replace("(", r"\(")):
        fn(text)
