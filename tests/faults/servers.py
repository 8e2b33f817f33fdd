"""The command templates of the fault tests' servers (real processes, started by gatecheck as --server-cmd)."""

from __future__ import annotations

from pathlib import Path

HERE = Path(__file__).resolve().parent


def stubborn(server: str = "uvicorn", start_delay: float = 0.0, term_delay: float = 0.0) -> str:
    """A template: ``server`` (uvicorn or granian, ASGI) as the worker of ``stubborn.py``, which is slow to
    start and to stop as asked."""
    real = {
        "uvicorn": "{python} -m uvicorn --host {host} --port {port} {app}",
        "granian": "{python} -m granian --interface {interface} --host {host} --port {port} --http auto "
        "--workers 1 {app}",
    }[server]
    return f"{{python}} {HERE / 'stubborn.py'} --start-delay {start_delay:g} --term-delay {term_delay:g} -- {real}"


def stall(answer_delay: float = 0.0, vanish_app: str = "") -> str:
    """A template: ``stall.py`` (answers its readiness probe after ``answer_delay`` s, stalls mid-stream; serving
    an app whose name holds ``vanish_app``, it exits once its readiness probe is answered)."""
    vanish = f" --app {{app}} --vanish-app {vanish_app}" if vanish_app else ""
    return f"{{python}} {HERE / 'stall.py'} --port {{port}} --answer-delay {answer_delay:g}{vanish}"


def hostile(mode: str) -> str:
    """A template: the hostile server of ``tests/hostile`` in ``mode`` (e.g. ``die``: it exits on a request)."""
    return f"{{python}} {HERE.parent / 'hostile' / 'server.py'} --port {{port}} --mode {mode}"
