"""Finding the hostile servers (and other servers) a test's pytest run started: its descendants by command line."""

from __future__ import annotations

import psutil


def descendants_running(pid: int, marker: str) -> list:
    """The live descendants of ``pid`` whose command line contains ``marker`` (a child that exits between
    the listing and the read of its command line is left out, not an error)."""
    found = []
    for proc in psutil.Process(pid).children(recursive=True):
        try:
            if marker in " ".join(proc.cmdline()):
                found.append(proc)
        except psutil.Error:
            continue
    return found
