"""Parse-time validators for the command lines (argparse ``type=`` callables) of ``python -m gatecheck.load``,
``python -m gatecheck.load gate`` and the experiments.

Rules of this module: each takes the text as typed and returns the value, or raises
``argparse.ArgumentTypeError`` with a message that quotes the text and names an accepted form.
"""

from __future__ import annotations

import argparse
import math
from typing import Callable

from .cpulist import parse_cpu_list

__all__ = [
    "positive_int",
    "positive_float",
    "non_negative_float",
    "at_least",
    "percent",
    "cpu_list",
    "server_or_target",
]


def _number(text: str, kind: Callable[[str], float], ok: Callable[[float], bool], expected: str):
    try:
        value = kind(text)
    except ValueError:
        value = None
    if value is None or math.isinf(value) or not ok(value):
        raise argparse.ArgumentTypeError(f"expected {expected}, got {text!r}")
    return value


def positive_int(text: str) -> int:
    return _number(text, int, lambda v: v >= 1, "a positive integer")


def positive_float(text: str) -> float:
    return _number(text, float, lambda v: v > 0, "a positive number")


def non_negative_float(text: str) -> float:
    return _number(text, float, lambda v: v >= 0, "a number >= 0")


def at_least(minimum: int, what: str) -> Callable[[str], int]:
    """A whole number >= ``minimum``; ``what`` names the option in the message."""

    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            value = minimum - 1
        if value < minimum:
            raise argparse.ArgumentTypeError(f"{what} must be a whole number >= {minimum}, got {text!r}")
        return value

    return parse


def percent(text: str) -> float:
    """``"5%"`` -> 0.05 and ``"0.05"`` -> 0.05; a bare number >= 1 is refused as ambiguous."""
    raw = text.strip()
    try:
        value = float(raw[:-1]) / 100.0 if raw.endswith("%") else float(raw)
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"expected a percentage such as '5%' or a fraction such as 0.05, got {text!r}"
        ) from None
    if not raw.endswith("%") and value >= 1:
        raise argparse.ArgumentTypeError(
            f"{text!r} is ambiguous: write '{raw}%' for a percentage, or a fraction below 1"
        )
    if not 0 < value < 1:
        raise argparse.ArgumentTypeError(f"expected a change between 0% and 100%, got {text!r}")
    return value


def cpu_list(text: str) -> tuple:
    """``'0-3,6'`` -> (0, 1, 2, 3, 6), as :func:`load.plan.cpulist.parse_cpu_list` reads it."""
    try:
        return tuple(parse_cpu_list(text))
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def server_or_target(text: str):
    """A server name (``granian``) or a full target (``granian:asgi?loop=uvloop``), parsed once, here: a
    :class:`gatecheck.servers.Target` flows from argv to the run."""
    from gatecheck.servers import Target, TargetError

    try:
        return Target.parse(text)
    except TargetError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None
