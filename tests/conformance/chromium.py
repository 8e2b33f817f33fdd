"""Headless Chromium for the matrix's screenshot test: find the binary, take one screenshot of a page."""
from __future__ import annotations

import os
import shutil
import signal
import subprocess
from pathlib import Path

__all__ = ["find_chromium", "screenshot", "NAMES"]

#: Debian's package installs ``chromium``; other systems name it otherwise
NAMES = ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable", "chrome", "headless_shell")


def find_chromium() -> str | None:
    """``GATECHECK_CHROMIUM`` when set, else the first of ``NAMES`` on PATH."""
    chosen = os.environ.get("GATECHECK_CHROMIUM")
    if chosen:
        return shutil.which(chosen) or (chosen if Path(chosen).is_file() else None)
    return next((path for path in map(shutil.which, NAMES) if path), None)


def screenshot(binary: str, page: Path, png: Path, size=(1400, 900), timeout: float = 120.0) -> str:
    """Render ``page`` (a file) into ``png``; Chromium's output (stdout and stderr) for a failure message.
    A profile directory of its own, so parallel runs do not share one."""
    profile = png.parent / "chromium-profile"
    command = [binary, "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars", "--no-first-run",
               "--disable-extensions", f"--user-data-dir={profile}", f"--window-size={size[0]},{size[1]}",
               f"--screenshot={png}", page.resolve().as_uri()]
    # its own process group: on a timeout the whole tree (zygote, renderer, GPU process) is killed, not only the
    # browser process
    proc = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                            start_new_session=True)
    try:
        output, _ = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        output, _ = proc.communicate()
        output += f"\n(killed after {timeout:g} s)".encode()
    return output.decode("utf-8", "replace")[-2000:]
