"""Peak resident memory and CPU time of a server's process tree while something runs (a load run, a check).

with proc.track_peak() as peak:       # ServerProcess.track_peak
    ...
peak.peak_rss_bytes, peak.cpu_seconds
"""

from __future__ import annotations

import threading

__all__ = ["PeakTracker"]


class PeakTracker:
    """Samples a ServerProcess in a background thread; gives peak RSS and CPU seconds used."""

    def __init__(self, proc, interval: float) -> None:
        self._proc = proc
        self._interval = interval
        self._stop = threading.Event()
        self.peak_rss_bytes = 0
        self.cpu_seconds = 0.0
        self._cpu_start = 0.0
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        while not self._stop.wait(self._interval):
            self._take()

    def _take(self) -> object:
        sample = self._proc.sample()
        self.peak_rss_bytes = max(self.peak_rss_bytes, sample.rss_bytes)
        self.cpu_seconds = max(self.cpu_seconds, sample.cpu_seconds - self._cpu_start)
        return sample

    def __enter__(self) -> PeakTracker:
        first = self._proc.sample()
        self._cpu_start = first.cpu_seconds
        self.peak_rss_bytes = first.rss_bytes
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join(timeout=5)
        self._take()
