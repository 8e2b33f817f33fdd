"""The harness's own test session ends on SIGTERM as on Ctrl-C, and passes the signal on first.

Many harness tests run a conformance session or a tool in a child process (``subprocess.run``). Killed by the
default SIGTERM action, this session left those children running to their own deadlines, with their servers.
Here a SIGTERM is sent on to every child process this session started (by PID, psutil's ``children()``), then
raises KeyboardInterrupt: pytest's interrupted path runs the fixtures' teardown (servers stopped by their
owners), and ``subprocess.run`` kills a child that has not ended yet. A conformance child handles the SIGTERM
itself (it stops its servers and finishes its results); what a killed child still owned, its reaper stops.
"""

from __future__ import annotations

import os
import signal
import threading
from pathlib import Path

import psutil

#: the checkout: its ``tests`` package (broken and hostile servers, pick plugins) is what child processes import
#: by name, e.g. ``--server-cmd "{python} -m tests.broken.server ..."``; it holds no ``gatecheck``, so the
#: children still import the installed package
ROOT = Path(__file__).resolve().parents[1]


def _on_sigterm(signum, frame) -> None:
    signal.signal(signal.SIGTERM, signal.SIG_IGN)  # once: a second SIGTERM must not cut the teardown short
    for child in psutil.Process().children():
        try:
            child.send_signal(signal.SIGTERM)  # psutil checks the PID still names that child
        except psutil.Error:
            pass
    raise KeyboardInterrupt("SIGTERM")


def pytest_configure(config) -> None:
    paths = [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]
    if str(ROOT) not in paths:
        os.environ["PYTHONPATH"] = os.pathsep.join([str(ROOT), *paths])
    if threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGTERM, _on_sigterm)
