"""Stopping on Ctrl-C and SIGTERM, even when started with SIGINT ignored.

A shell starts a script's background job (``cmd &``) with SIGINT ignored, and Python then installs no
handler of its own: such a run would ignore Ctrl-C and ``kill -INT``. :func:`stop_on_signals` installs
explicit handlers for SIGINT and SIGTERM that raise ``KeyboardInterrupt`` in the main thread, so every
``finally`` stops its servers and oha and the command reports what it measured. The first signal
interrupts; later ones are ignored, so a second Ctrl-C cannot break the cleanup half way (it is
bounded: each server stop waits out its own grace period, then kills).
"""

from __future__ import annotations

import signal

__all__ = ["stop_on_signals", "INTERRUPTED"]

#: Exit status of an interrupted ``python -m gatecheck.load run`` or gate (128 + SIGINT, as a shell reports it).
INTERRUPTED = 130


def _interrupt(signum, frame):
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    raise KeyboardInterrupt(signal.Signals(signum).name)


def stop_on_signals() -> None:
    """Make SIGINT and SIGTERM raise ``KeyboardInterrupt`` (call once, from the main thread)."""
    signal.signal(signal.SIGINT, _interrupt)
    signal.signal(signal.SIGTERM, _interrupt)
