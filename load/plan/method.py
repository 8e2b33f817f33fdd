"""The seed benchmarks' method as data: how long each phase of a case lasts.

Rules of this module:
- The HTTP method is the seeds': a primer at c8 for 4 s, a warm-up at the case's highest concurrency for 3 s,
  then 10 s per concurrency with short pauses between; ``--quick`` scales every duration (:meth:`Method.scaled`).
- The WebSocket method (the ``ws_broadcast`` route) has no primer or warm-up: its clients wait :data:`SETTLE`
  seconds once all are open, as the seed's clients do.
- Data only: no clock, no machine. The runner applies it; the report describes it from the records.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

__all__ = ["Method", "DEFAULT_QUICK", "SETTLE"]

DEFAULT_QUICK = 0.2

SETTLE = 3.0  # seconds between the last connection opening and the first message, as the seed's clients wait


@dataclass(frozen=True)
class Method:
    """Durations in seconds; ``scaled`` gives the --quick variant."""

    primer_concurrency: int = 8
    primer: float = 4.0
    warmup: float = 3.0
    duration: float = 10.0
    pause: float = 1.0
    request_timeout: float = 10.0

    def scaled(self, factor: float) -> Method:
        return replace(
            self,
            primer=self.primer * factor,
            warmup=self.warmup * factor,
            duration=self.duration * factor,
            pause=self.pause * factor,
        )

    def describe(self) -> str:
        return (
            f"primer at c{self.primer_concurrency} for {self.primer:g} s, warm-up at the highest concurrency "
            f"for {self.warmup:g} s, then {self.duration:g} s per concurrency with {self.pause:g} s pauses"
        )
