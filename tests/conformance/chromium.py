"""Headless Chromium for the matrix's screenshot test: find the binary, take one screenshot of a page, measure a
page's width as the browser lays it out."""

from __future__ import annotations

import os
import re
import shutil
import signal
import subprocess
from pathlib import Path

__all__ = ["find_chromium", "screenshot", "page_widths", "evaluate", "NAMES"]

#: Debian's package installs ``chromium``; other systems name it otherwise
NAMES = ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable", "chrome", "headless_shell")


def find_chromium() -> str | None:
    """``GATECHECK_CHROMIUM`` when set, else the first of ``NAMES`` on PATH."""
    chosen = os.environ.get("GATECHECK_CHROMIUM")
    if chosen:
        return shutil.which(chosen) or (chosen if Path(chosen).is_file() else None)
    return next((path for path in map(shutil.which, NAMES) if path), None)


def _run(command: list, timeout: float) -> str:
    # its own process group: on a timeout the whole tree (zygote, renderer, GPU process) is killed, not only the
    # browser process
    proc = subprocess.Popen(
        command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, start_new_session=True
    )
    try:
        output, _ = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        output, _ = proc.communicate()
        output += f"\n(killed after {timeout:g} s)".encode()
    return output.decode("utf-8", "replace")


def evaluate(binary: str, page: Path, expression: str, width: int, workdir: Path, timeout: float = 120.0) -> str:
    """What the JavaScript ``expression`` gives once Chromium has laid ``page`` out in a window ``width`` pixels
    wide: a copy of the page with one line of script that writes it into the DOM, which ``--dump-dom`` prints
    (the page itself has no script). None when Chromium printed no such DOM."""
    copy = workdir / f"evaluate-{page.name}"
    script = (
        f"<script>addEventListener('load',()=>{{document.body.setAttribute('data-out',String({expression}))}})</script>"
    )
    copy.write_text(page.read_text(encoding="utf-8") + script, encoding="utf-8")
    command = [
        binary,
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--no-first-run",
        "--disable-extensions",
        f"--user-data-dir={workdir / 'chromium-evaluate'}",
        f"--window-size={width},900",
        "--dump-dom",
        copy.resolve().as_uri(),
    ]
    found = re.search(r'data-out="([^"]*)"', _run(command, timeout))
    return found.group(1) if found else None


def page_widths(binary: str, page: Path, width: int, workdir: Path, timeout: float = 120.0) -> tuple:
    """(the page's scroll width, the window's client width) in a window ``width`` pixels wide: a scroll width
    above the client width is a horizontal scroll; (None, None) when Chromium could not tell."""
    out = evaluate(
        binary,
        page,
        "document.documentElement.scrollWidth+' '+document.documentElement.clientWidth",
        width,
        workdir,
        timeout,
    )
    return tuple(int(x) for x in out.split()) if out else (None, None)


def screenshot(binary: str, page: Path, png: Path, size=(1280, 900), timeout: float = 120.0) -> str:
    """Render ``page`` (a file) into ``png``; Chromium's output (stdout and stderr) for a failure message.
    A profile directory of its own, so parallel runs do not share one."""
    profile = png.parent / "chromium-profile"
    command = [
        binary,
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--hide-scrollbars",
        "--no-first-run",
        "--disable-extensions",
        f"--user-data-dir={profile}",
        f"--window-size={size[0]},{size[1]}",
        f"--screenshot={png}",
        page.resolve().as_uri(),
    ]
    return _run(command, timeout)[-2000:]
