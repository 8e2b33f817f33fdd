"""What may stop a check from the outside: its deadline, the session's deadline, Ctrl-C and SIGTERM.

Rules of this module:

1. A check's call runs under a SIGALRM timer (``setitimer``): at its deadline the handler raises
   ``CheckTimeout`` in the main thread, which interrupts the blocking socket call, sleep or wait the check
   is in (PEP 475: a handler that raises ends the retried system call). The timer is armed only around
   the call and disarmed in ``finally``, so setup, teardown and the session's own work never see it.
   ``CheckTimeout`` is a BaseException: a check's ``except Exception`` cannot swallow it, while its
   ``finally`` and ``with`` blocks still close sockets and stop private servers.
2. The deadline of a call is the smaller of ``--check-timeout`` and what remains of ``--session-timeout``.
3. SIGINT and SIGTERM get explicit handlers (even when the process started with SIGINT ignored, as a
   script's background job does): the first one tells the pool to stop starting servers and raises
   KeyboardInterrupt, so pytest ends the session through its normal path (exit status 2). Signals after
   the first, or once the session is finishing, are ignored so the clean-up can finish.
"""

from __future__ import annotations

import contextlib
import os
import signal
import sys
import threading
import time

from gatecheck.conformance.plugin.outcomes import CheckTimeout

__all__ = ["Deadlines", "Interrupts"]


def _main_thread() -> bool:
    return threading.current_thread() is threading.main_thread()


class Deadlines:
    def __init__(self, check_timeout: float, session_timeout: float) -> None:
        self.check_timeout = check_timeout
        self.session_timeout = session_timeout
        self.session_end = time.monotonic() + session_timeout
        self._why: str | None = None

    def session_over(self) -> bool:
        return time.monotonic() >= self.session_end

    def session_message(self) -> str:
        return f"gatecheck: the session deadline of {self.session_timeout:g} s passed (--session-timeout)"

    @contextlib.contextmanager
    def around_call(self):
        """Raise CheckTimeout into the body when its deadline passes."""
        remaining = self.session_end - time.monotonic()
        if remaining < self.check_timeout:
            seconds, why = max(remaining, 0.001), self.session_message() + " during this check"
        else:
            seconds = self.check_timeout
            why = f"timeout: the check ran past its deadline of {seconds:g} s (--check-timeout)"
        if not _main_thread():  # pragma: no cover - pytest runs checks in the main thread
            yield
            return
        previous = signal.signal(signal.SIGALRM, self._alarm)
        self._why = why
        signal.setitimer(signal.ITIMER_REAL, seconds)
        try:
            yield
        finally:
            signal.setitimer(signal.ITIMER_REAL, 0)
            self._why = None
            signal.signal(signal.SIGALRM, previous)

    def _alarm(self, signum, frame) -> None:
        why, self._why = self._why, None
        if why:
            raise CheckTimeout(why + _other_threads())


def _other_threads(limit: int = 4) -> str:
    """Where the check's other threads were when its deadline passed (a client's reader thread the check
    waits for, say): "; other threads: name at file:line in function, ...", or ""."""
    frames = sys._current_frames()
    where = []
    for thread in threading.enumerate():
        frame = frames.get(thread.ident)
        if thread is threading.current_thread() or frame is None:
            continue
        where.append(
            f"{thread.name} at {os.path.basename(frame.f_code.co_filename)}:{frame.f_lineno} in {frame.f_code.co_name}"
        )
    if not where:
        return ""
    more = f" and {len(where) - limit} more" if len(where) > limit else ""
    return "; other threads: " + ", ".join(where[:limit]) + more


class Interrupts:
    """Ctrl-C and SIGTERM end the session once, through pytest's own interrupted path."""

    SIGNALS = (signal.SIGINT, signal.SIGTERM)

    def __init__(self, on_first) -> None:
        self.received: str | None = None
        self._on_first = on_first
        self._previous: dict = {}

    def install(self) -> None:
        if not _main_thread():  # pragma: no cover
            return
        for sig in self.SIGNALS:
            self._previous[sig] = signal.signal(sig, self._handle)

    def restore(self) -> None:
        for sig, handler in self._previous.items():
            signal.signal(sig, handler)
        self._previous.clear()

    def finishing(self) -> None:
        """The session is finishing: a signal now must not break its clean-up."""
        if self.received is None:
            self.received = "finishing"

    def _handle(self, signum, frame) -> None:
        if self.received is not None:
            return
        self.received = signal.Signals(signum).name
        self._on_first()
        raise KeyboardInterrupt(self.received)
