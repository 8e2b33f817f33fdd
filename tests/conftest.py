"""The harness's own test session ends on SIGTERM as on Ctrl-C, and passes the signal on first.

Many harness tests run a conformance session or a tool in a child process (``subprocess.run``). Killed by the
default SIGTERM action, this session left those children running to their own deadlines, with their servers.
Here a SIGTERM is sent on to every child process this session started (by PID, read from ``/proc``), then
raises KeyboardInterrupt: pytest's interrupted path runs the fixtures' teardown (servers stopped by their
owners), and ``subprocess.run`` kills a child that has not ended yet. A conformance child handles the SIGTERM
itself (it stops its servers and finishes its results); what a killed child still owned, its reaper stops.
"""
from __future__ import annotations

import os
import signal
import threading


def child_pids(parent: int) -> list:
    """The PIDs of the processes whose parent is ``parent`` (Linux ``/proc``; none where it is missing)."""
    found = []
    try:
        names = os.listdir("/proc")
    except OSError:
        return found
    for name in names:
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/stat", encoding="ascii", errors="replace") as fh:
                stat = fh.read()
        except OSError:
            continue
        # "pid (comm) state ppid ...": comm may hold spaces and parentheses, so split after the last ")"
        fields = stat[stat.rfind(")") + 2:].split()
        if len(fields) > 1 and fields[1] == str(parent):
            found.append(int(name))
    return found


def _on_sigterm(signum, frame) -> None:
    signal.signal(signal.SIGTERM, signal.SIG_IGN)   # once: a second SIGTERM must not cut the teardown short
    for pid in child_pids(os.getpid()):
        try:
            os.kill(pid, signal.SIGTERM)
        except (ProcessLookupError, PermissionError):
            pass
    raise KeyboardInterrupt("SIGTERM")


def pytest_configure(config) -> None:
    if threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGTERM, _on_sigterm)
