"""The command templates of the fault tests' servers (real processes, started by gatecheck as --server-cmd)."""
from __future__ import annotations

from pathlib import Path

HERE = Path(__file__).resolve().parent


def stubborn(server: str = "uvicorn", start_delay: float = 0.0, term_delay: float = 0.0) -> str:
    """A template: ``server`` (uvicorn or granian, ASGI) as the worker of ``stubborn.py``, which is slow to
    start and to stop as asked."""
    real = {"uvicorn": "{python} -m uvicorn --host {host} --port {port} {app}",
            "granian": "{python} -m granian --interface {interface} --host {host} --port {port} --http auto "
                       "--workers 1 {app}"}[server]
    return (f"{{python}} {HERE / 'stubborn.py'} --start-delay {start_delay:g} --term-delay {term_delay:g} "
            f"-- {real}")


def stall() -> str:
    return f"{{python}} {HERE / 'stall.py'} --port {{port}}"
