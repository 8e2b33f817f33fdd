"""Lifecycle: start, readiness, failures with log tails, stop by group, nothing left behind."""

from __future__ import annotations

import os
import socket
import sys
import time
from pathlib import Path

import psutil
import pytest

from gatecheck.servers import (
    PortInUse,
    PortTaken,
    ServerExited,
    ServerNotInstalled,
    ServerNotReady,
    ServerProcess,
    Target,
    live_pids,
    start_server,
)
from gatecheck.servers.adapters import Adapter
from gatecheck.servers.probe import probe_for

FAKE = Path(__file__).parent / "fake"


def command(script: str, *flags: str, features: str = "") -> Target:
    cmd = f"{sys.executable} {FAKE / script} " + ("{port} " if script == "http_server.py" else "") + " ".join(flags)
    options = [("cmd", cmd + (" {port}" if "{port}" not in cmd else ""))]
    if features:
        options.append(("features", features))
    return Target("command", "asgi", "h1", tuple(options))


def gone(pid: int, timeout: float = 5.0) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            if psutil.Process(pid).status() == psutil.STATUS_ZOMBIE:
                return True
        except psutil.NoSuchProcess:
            return True
        time.sleep(0.05)
    return False


def test_a_real_http_server_starts_answers_and_stops(tmp_path):
    with start_server(command("http_server.py"), app="x:y", log_dir=tmp_path) as srv:
        assert srv.alive() and srv.url.startswith("http://127.0.0.1:")
        with socket.create_connection(srv.process and (srv.host, srv.port), timeout=5) as sock:
            sock.sendall(b"GET / HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
            assert sock.recv(100).startswith(b"HTTP/1.")
        sample = srv.sample()
        assert sample.rss_bytes > 0 and sample.processes >= 1
        pid = srv.pid
    assert gone(pid)
    assert pid not in live_pids()
    assert "gatecheck: stopped" in srv.log_path.read_text()


def test_a_server_that_exits_at_once_reports_code_and_log_tail(tmp_path):
    with pytest.raises(ServerExited) as info:
        start_server(command("exits_at_once.py"), app="x:y", log_dir=tmp_path, ready_timeout=10)
    message = str(info.value)
    assert "exited with code 3" in message
    assert "cannot load application 'nope'" in message
    assert not live_pids()


def test_a_server_that_never_listens_hits_the_deadline_and_is_killed(tmp_path):
    started = time.monotonic()
    with pytest.raises(ServerNotReady) as info:
        start_server(command("never_listens.py"), app="x:y", log_dir=tmp_path, ready_timeout=1.5)
    assert time.monotonic() - started < 10
    message = str(info.value)
    assert "did not answer" in message and "--ready-timeout" in message
    assert "never listening" in message
    assert not live_pids()


def test_a_server_ignoring_sigterm_is_killed_after_the_grace_period(tmp_path):
    srv = start_server(command("http_server.py", "--ignore-sigterm"), app="x:y", log_dir=tmp_path)
    pid = srv.pid
    started = time.monotonic()
    code = srv.stop(grace=1.0)
    assert 0.9 < time.monotonic() - started < 8
    assert code == -9
    assert gone(pid)
    assert "sending SIGKILL" in srv.log_path.read_text()


def test_workers_left_behind_by_the_leader_are_killed(tmp_path):
    srv = start_server(command("http_server.py", "--fork-orphan"), app="x:y", log_dir=tmp_path)
    children = psutil.Process(srv.pid).children(recursive=True)
    assert children, "the fake server should have forked a child"
    srv.stop(grace=2.0)
    for child in children:
        assert gone(child.pid), f"child {child.pid} survived the stop"


def test_a_taken_port_is_refused_with_a_clear_message(tmp_path):
    with socket.socket() as holder:
        holder.bind(("127.0.0.1", 0))
        holder.listen()
        port = holder.getsockname()[1]
        with pytest.raises(PortInUse) as info:
            start_server(command("http_server.py"), app="x:y", log_dir=tmp_path, port=port)
    assert str(port) in str(info.value)


@pytest.fixture
def stranger():
    """An HTTP server in this test's process (not one gatecheck started), on a free loopback port."""
    import http.server
    import threading

    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), http.server.SimpleHTTPRequestHandler)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    yield httpd.server_address[1]
    httpd.shutdown()
    httpd.server_close()


def test_an_answer_from_a_process_not_of_the_server_is_not_readiness(tmp_path, stranger):
    # the race a port pick cannot close: another process listens on the port the server was given, and
    # answers the readiness probe while the server has not bound it (or never can)
    proc = ServerProcess([sys.executable, str(FAKE / "never_listens.py")], log_path=tmp_path / "s.log", port=stranger)
    try:
        with pytest.raises(PortTaken) as info:
            proc.wait_ready("127.0.0.1", stranger, probe_for(False), timeout=10)
    finally:
        proc.stop()
    assert f"pid {os.getpid()}" in str(info.value) and str(stranger) in str(info.value)


def test_the_control_a_port_only_the_server_listens_on_is_readiness(tmp_path):
    with start_server(command("http_server.py"), app="x:y", log_dir=tmp_path) as srv:
        srv.process.check_port_is_ours(srv.port)  # raises nothing


def test_a_picked_port_that_a_stranger_answers_on_is_given_up_for_another(tmp_path, stranger, monkeypatch):
    from gatecheck.servers import launcher, process

    picks = iter([stranger])
    monkeypatch.setattr(launcher, "free_port", lambda host: next(picks, None) or process.free_port(host))
    with start_server(command("http_server.py"), app="x:y", log_dir=tmp_path) as srv:
        assert srv.port != stranger
    with socket.create_connection(("127.0.0.1", stranger), timeout=5):
        pass  # the stranger was left alone


def test_non_loopback_hosts_are_refused(tmp_path):
    from gatecheck.servers import TargetError

    with pytest.raises(TargetError) as info:
        start_server(command("http_server.py"), app="x:y", log_dir=tmp_path, host="0.0.0.0")
    assert "loopback" in str(info.value)


def test_a_missing_server_package_names_the_fix():
    class Missing(Adapter):
        name = "missing"
        package = "gatecheck-no-such-package"
        tox_env = "missing"

    with pytest.raises(ServerNotInstalled) as info:
        Missing().ensure_installed()
    assert "pip install gatecheck-no-such-package" in str(info.value) and "tox -e missing" in str(info.value)


def test_cpu_pinning_applies_to_the_server(tmp_path):
    import os

    cpus = sorted(os.sched_getaffinity(0))[:1]
    with start_server(command("http_server.py"), app="x:y", log_dir=tmp_path, cpus=cpus) as srv:
        assert sorted(os.sched_getaffinity(srv.pid)) == cpus


def test_peak_tracker_sees_memory_and_cpu(tmp_path):
    with start_server(command("http_server.py"), app="x:y", log_dir=tmp_path) as srv:
        with srv.track_peak(interval=0.05) as tracker:
            time.sleep(0.2)
        assert tracker.peak_rss_bytes > 0 and tracker.cpu_seconds >= 0


def test_a_server_runs_from_another_environment_given_as_a_venv_dir(tmp_path):
    """python=<venv dir> runs the server with that environment's interpreter (used by the gate)."""
    from gatecheck.servers import python_for

    venv = Path(sys.prefix)
    if not (venv / "bin" / "python").exists():
        pytest.skip("the test interpreter is not inside a virtualenv")
    target = command("http_server.py").with_options(python=str(venv))
    assert python_for(target) == str(venv / "bin" / "python")
    with start_server(
        Target.parse("granian:asgi").with_options(python=str(venv)),
        app="gatecheck.fixtures.apps.asgi:app",
        log_dir=tmp_path,
    ) as srv:
        assert srv.python == str(venv / "bin" / "python")
        assert srv.process.argv[0] == str(venv / "bin" / "python")
        assert srv.versions["granian"]


def test_a_missing_interpreter_is_a_clear_target_error():
    from gatecheck.servers import TargetError, python_for

    with pytest.raises(TargetError) as info:
        python_for(Target.parse("granian:asgi?python=/no/such/python"))
    assert "/no/such/python" in str(info.value)


def test_a_long_command_template_gets_a_short_log_file_name(tmp_path):
    long_flag = "--" + "x" * 300
    target = command("http_server.py").with_options(args=long_flag)
    with start_server(
        Target(
            target.server,
            target.interface,
            target.http,
            tuple((k, v) for k, v in target.options if k != "args") + (("name", "y" * 250),),
        ),
        app="x:y",
        log_dir=tmp_path,
    ) as srv:
        assert len(srv.log_path.name) < 120


def test_the_h2_probe_reads_raw_frames_so_a_rule_breaking_server_still_counts_as_up():
    """A server whose SETTINGS the h2 library would reject (ENABLE_PUSH=1 from a server) is still ready."""
    import threading

    from gatecheck.servers.probe import h2_probe

    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen()
    port = listener.getsockname()[1]

    def serve():
        conn, _ = listener.accept()
        with conn:
            conn.settimeout(5)
            conn.recv(65536)
            settings = (
                (6).to_bytes(3, "big") + b"\x04\x00" + (0).to_bytes(4, "big") + b"\x00\x02" + (1).to_bytes(4, "big")
            )
            headers_block = b"\x88"  # :status 200 (static table index 8)
            headers = len(headers_block).to_bytes(3, "big") + b"\x01\x05" + (1).to_bytes(4, "big") + headers_block
            conn.sendall(settings + headers)

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    try:
        assert h2_probe("127.0.0.1", port, 5.0) is True
    finally:
        thread.join(timeout=5)
        listener.close()
