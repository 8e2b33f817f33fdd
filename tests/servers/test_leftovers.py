"""Nothing a server started is left running, and nothing that is not ours is ever signalled.

Every test here drives the hostile server (``tests/hostile/server.py``) as a real process. Each started
process carries ``GATECHECK_TEST_MARK=<random>`` in its environment (set by the test, inherited by every
descendant, whatever its session), so the test can find all of them afterwards with psutil, independently
of how ``servers`` tracks them.
"""

from __future__ import annotations

import os
import secrets
import socket
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import psutil
import pytest

from gatecheck.servers import ServerStartError, Target, live_pids, start_server

ROOT = Path(__file__).resolve().parents[2]
MARK = "GATECHECK_TEST_MARK"


def hostile(*flags: str, args: str = "") -> Target:
    cmd = "{python} -m tests.hostile.server --port {port} " + " ".join(flags)
    options = (("cmd", cmd),) + ((("args", args),) if args else ())
    return Target("command", "asgi", "h1", options)


def marked(mark: str) -> list:
    """Live (non-zombie) processes whose environment carries ``mark``."""
    found = []
    for proc in psutil.process_iter():
        try:
            if proc.environ().get(MARK) == mark and proc.status() != psutil.STATUS_ZOMBIE:
                found.append(proc)
        except psutil.Error:
            continue
    return found


def wait_none_marked(mark: str, timeout: float) -> list:
    """Poll until no process carries ``mark``; return what is left at the deadline (then killed here)."""
    deadline = time.monotonic() + timeout
    while True:
        left = marked(mark)
        if not left or time.monotonic() >= deadline:
            break
        time.sleep(0.05)
    for proc in left:  # never leak into the next test, whatever the outcome
        try:
            proc.kill()
        except psutil.Error:
            pass
    return [(p.pid, " ".join(p.cmdline()[-6:])) for p in left if p.is_running()]


class Bystander:
    """A process that is not the server's, listening on the server's port at another loopback address;
    it writes every catchable signal it receives to a file, and a SIGKILL shows as its death."""

    SCRIPT = textwrap.dedent("""
        import signal, socket, sys, time
        log = open(sys.argv[2], "a")
        def note(signum, frame):
            log.write(f"{signum}\\n"); log.flush()
        for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP, signal.SIGQUIT, signal.SIGUSR1):
            signal.signal(sig, note)
        sock = socket.socket()
        sock.bind(("127.0.0.3", int(sys.argv[1])))
        sock.listen()
        print("listening", flush=True)
        while True:
            time.sleep(1)
    """)

    def __init__(self, port: int, tmp_path: Path) -> None:
        self.signals = tmp_path / "bystander-signals"
        self.signals.write_text("")
        self.proc = subprocess.Popen(
            [sys.executable, "-c", self.SCRIPT, str(port), str(self.signals)],
            stdout=subprocess.PIPE,
            stdin=subprocess.DEVNULL,
        )
        assert self.proc.stdout.readline() == b"listening\n"

    def untouched(self) -> bool:
        return self.proc.poll() is None and self.signals.read_text() == ""

    def close(self) -> None:
        self.proc.kill()
        self.proc.wait(timeout=10)
        self.proc.stdout.close()


def test_a_double_forked_server_leaves_nothing_and_a_stranger_on_its_port_is_untouched(tmp_path):
    """The issue's "Done when": against a server that double-forks (setsid, new session), nothing is left."""
    mark = secrets.token_hex(8)
    srv = start_server(hostile("--double-fork", "--ignore-sigterm"), app="x:y", log_dir=tmp_path, env={MARK: mark})
    bystander = Bystander(srv.port, tmp_path)
    try:
        daemons = [p for p in marked(mark) if p.pid != srv.pid and os.getsid(p.pid) != os.getsid(srv.pid)]
        assert daemons, "the hostile server should serve from a daemon in its own session"
        srv.stop(grace=1.0)
        assert wait_none_marked(mark, timeout=5.0) == []
        assert bystander.untouched(), "a process that is not the server's was signalled"
    finally:
        bystander.close()
    assert srv.pid not in live_pids()


HARNESS = textwrap.dedent("""
    import sys
    from gatecheck.servers import Target, start_server
    cmd = "{python} -m tests.hostile.server --port {port} " + sys.argv[1]
    srv = start_server(Target("command", "asgi", "h1", (("cmd", cmd),)), app="x:y", log_dir=sys.argv[2])
    print("ready", srv.pid, flush=True)
    sys.stdin.read()  # until the test kills us
""")


@pytest.mark.parametrize("flags", ["--ignore-sigterm", "--double-fork --ignore-sigterm"])
def test_nothing_outlives_a_harness_killed_with_sigkill(tmp_path, flags):
    """A harness killed with SIGKILL runs no cleanup: the leader's death signal and the reaper must do it."""
    mark = secrets.token_hex(8)
    env = {**os.environ, MARK: mark, "PYTHONPATH": str(ROOT)}
    harness = subprocess.Popen(
        [sys.executable, "-c", HARNESS, flags, str(tmp_path)],
        cwd=ROOT,
        env=env,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
    )
    try:
        line = harness.stdout.readline().decode()
        assert line.startswith("ready"), line
        assert len(marked(mark)) >= 2  # the harness and its server (and the daemon, if any)
        harness.kill()
        harness.wait(timeout=10)
        assert wait_none_marked(mark, timeout=10.0) == []
    finally:
        if harness.poll() is None:
            harness.kill()
            harness.wait(timeout=10)
        harness.stdin.close()
        harness.stdout.close()


def test_a_reused_pid_is_never_signalled(tmp_path):
    """A descendant seen earlier whose PID now belongs to an unrelated process (another create time)."""
    srv = start_server(hostile(), app="x:y", log_dir=tmp_path)
    stranger = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        created = psutil.Process(stranger.pid).create_time()
        srv.process.tree.record(stranger.pid, created - 100.0)  # "seen" as ours, long before this process
        srv.stop(grace=1.0)
        assert stranger.poll() is None, "a process whose PID was reused got signalled"
    finally:
        stranger.kill()
        stranger.wait(timeout=10)


@pytest.mark.parametrize("args", ["--host 0.0.0.0", "--host ::"])
def test_a_server_listening_beyond_loopback_is_refused_and_stopped(tmp_path, args):
    if args == "--host ::" and not socket.has_ipv6:
        pytest.skip("no IPv6")
    mark = secrets.token_hex(8)
    with pytest.raises(ServerStartError) as info:
        start_server(hostile(args=args), app="x:y", log_dir=tmp_path, env={MARK: mark})
    message = str(info.value)
    assert "refusing a server that listens on" in message and "loopback only" in message
    assert args.split()[1] in message
    assert wait_none_marked(mark, timeout=5.0) == []


def test_an_option_moving_the_listener_to_another_loopback_address_is_one_clear_error(tmp_path):
    pytest.importorskip("granian")
    mark = secrets.token_hex(8)
    started = time.monotonic()
    with pytest.raises(ServerStartError) as info:
        start_server(
            Target.parse("granian:asgi").with_options(args="--host 127.0.0.2"),
            app="gatecheck.fixtures.apps.asgi:app",
            log_dir=tmp_path,
            env={MARK: mark},
            ready_timeout=120,
        )
    assert "listens on 127.0.0.2" in str(info.value) and "not on 127.0.0.1" in str(info.value)
    assert time.monotonic() - started < 110  # not the ready deadline: the cause is seen, not waited out
    assert wait_none_marked(mark, timeout=5.0) == []


def test_descendants_are_the_tree_psutil_walks_without_reading_every_process(monkeypatch):
    """servers.tree.descendants finds what psutil's children(recursive=True) finds (children, grandchildren,
    a thread's child), reading only the tree's own /proc entries; on a kernel without the per-task children
    lists it falls back to psutil's walk."""
    from gatecheck.servers import tree

    script = textwrap.dedent("""
        import subprocess, sys, threading, time
        kids = [subprocess.Popen([sys.executable, "-c", "import subprocess, sys, time; "
                                  "subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(60)']); "
                                  "time.sleep(60)"])]
        threading.Thread(target=lambda: kids.append(subprocess.Popen(["sleep", "60"]))).start()
        print("ready", flush=True)
        time.sleep(60)
    """)
    leader = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, text=True)
    try:
        assert leader.stdout.readline().strip() == "ready"
        root = psutil.Process(leader.pid)
        deadline = time.monotonic() + 10
        while len(root.children(recursive=True)) < 3 and time.monotonic() < deadline:
            time.sleep(0.05)
        expected = sorted(p.pid for p in root.children(recursive=True))
        assert len(expected) == 3
        assert sorted(p.pid for p in tree.descendants(root)) == expected
        leaves = [p for p in root.children(recursive=True) if not p.children()]
        assert len(leaves) == 2 and all(tree.descendants(p) == [] for p in leaves)
        real_exists = os.path.exists
        monkeypatch.setattr(tree.os.path, "exists", lambda p: False if str(p).endswith("/children") else real_exists(p))
        real_listdir = os.listdir
        monkeypatch.setattr(
            tree.os,
            "listdir",
            lambda p: (_ for _ in ()).throw(FileNotFoundError(p)) if str(p).endswith("/task") else real_listdir(p),
        )
        assert sorted(p.pid for p in tree.descendants(root)) == expected  # psutil's walk
    finally:
        for proc in psutil.Process(leader.pid).children(recursive=True):
            proc.kill()
        leader.kill()
        leader.wait(10)
