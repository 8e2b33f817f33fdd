"""The memory bound on a server's process tree, and the folders a server that drops privileges must reach.

A real server that grows past its bound is killed, and its log says why in one line (the check in flight shows
that line in its log excerpt); sizes parse as users write them; the staged fixture apps are readable by every
user, and the event log folder is handed to the user a server drops to.
"""

from __future__ import annotations

import os
import stat
import sys
import tempfile
import textwrap
import time

import httpx
import pytest

from gatecheck.servers import TargetError, resolve, start_server
from gatecheck.servers.memory import DEFAULT_BOUND, describe, parse_size
from gatecheck.servers.staging import child_root, hand_over

# Answers every request with 200 "ok"; after the first GET /grow (not the readiness probe's /ping), a thread grows
# the process by 8 MiB (touched) every 10 ms, up to 2 GiB: as a server that buffers without limit does.
GROWER = textwrap.dedent("""
    import socket, sys, threading, time
    def grow():
        hoard = []
        for _ in range(256):
            hoard.append(bytearray(8 << 20))
            time.sleep(0.01)
        time.sleep(60)
    listener = socket.create_server(("127.0.0.1", int(sys.argv[1])))
    started = False
    while True:
        conn, _ = listener.accept()
        head = conn.recv(65536)
        conn.sendall(b"HTTP/1.1 200 OK\\r\\nContent-Length: 2\\r\\nConnection: close\\r\\n\\r\\nok")
        conn.close()
        if head.startswith(b"GET /grow ") and not started:
            started = True
            threading.Thread(target=grow, daemon=True).start()
""")


@pytest.mark.parametrize(
    "text, size",
    [
        ("4G", 4 << 30),
        ("512M", 512 << 20),
        ("1.5g", 3 << 29),
        ("2147483648", 2 << 30),
        ("64MiB", 64 << 20),
        ("off", None),
    ],
)
def test_sizes_read_as_users_write_them(text, size):
    assert parse_size(text) == size


@pytest.mark.parametrize("text", ["lots", "4X", "-1G", "1M", ""])
def test_a_size_that_is_no_bound_is_refused_with_what_to_give(text):
    with pytest.raises(ValueError, match="give a size such as 4G"):
        parse_size(text)


def test_the_default_is_a_few_gib_and_a_target_option_is_checked_at_resolve():
    assert 2 << 30 <= DEFAULT_BOUND <= 8 << 30 and describe(DEFAULT_BOUND) == "4.0 GiB"
    resolve("granian:asgi?memory=8G")
    resolve("granian:asgi?memory=off")
    with pytest.raises(TargetError, match="option memory='huge'"):
        resolve("granian:asgi?memory=huge")


def _grower(tmp_path) -> str:
    path = tmp_path / "grower.py"
    path.write_text(GROWER)
    return f"command:wsgi?cmd={{python}} {path} {{port}}"


@pytest.mark.parametrize("how", ["option", "argument"])
def test_a_server_past_its_bound_is_killed_and_its_log_says_so(tmp_path, how):
    target = _grower(tmp_path) + ("&memory=96M" if how == "option" else "")
    srv = start_server(target, app="unused:app", log_dir=tmp_path, memory=None if how == "option" else "96M")
    try:
        assert httpx.get(srv.url + "/grow", timeout=5).text == "ok"
        deadline = time.monotonic() + 20
        while srv.alive() and time.monotonic() < deadline:
            time.sleep(0.1)
        assert not srv.alive(), "the growing server was not stopped at its bound"
    finally:
        srv.stop()
    log = srv.log_path.read_text()
    assert srv.memory_exceeded and srv.memory_exceeded in log, log
    assert "over its bound of 96.0 MiB" in log and "killed (SIGKILL)" in log and "--server-memory" in log


def test_a_server_within_its_bound_is_left_alone(tmp_path):
    srv = start_server(_grower(tmp_path), app="unused:app", log_dir=tmp_path, memory="4G")
    try:
        time.sleep(1.0)  # no GET /grow: it does not grow
        assert srv.alive() and srv.memory_exceeded is None
    finally:
        srv.stop()


def test_the_staged_fixture_apps_are_readable_by_every_user():
    root = child_root()
    for folder, _dirs, files in os.walk(root):
        assert stat.S_IMODE(os.stat(folder).st_mode) & 0o005 == 0o005, folder
        for name in files:
            assert stat.S_IMODE(os.stat(os.path.join(folder, name)).st_mode) & 0o004, name


@pytest.mark.skipif(not hasattr(os, "geteuid") or os.geteuid() != 0, reason="only root gives a folder away")
def test_the_event_folder_is_handed_to_the_user_a_server_drops_to():
    import pwd

    top = tempfile.mkdtemp(prefix="gatecheck-test-")
    try:
        events = os.path.join(top, "events")
        os.mkdir(events, 0o700)
        hand_over(events, "nobody")
        assert os.stat(events).st_uid == pwd.getpwnam("nobody").pw_uid
        assert stat.S_IMODE(os.stat(top).st_mode) == 0o701  # searchable, still not listable
    finally:
        import shutil

        shutil.rmtree(top)


def test_the_server_memory_option_is_read_by_the_plugin():
    import subprocess

    out = subprocess.run(
        [sys.executable, "-m", "gatecheck", "conformance", "--help"], capture_output=True, text=True, timeout=60
    )
    assert "--server-memory=SIZE" in out.stdout or "--server-memory SIZE" in out.stdout, out.stdout[-2000:]
