"""Waitress, cheroot and uWSGI: the argv each gets, their option tables, and a real start/stop of each.

The start/stop tests run the installed server against the fixture WSGI app (skipped, naming the tox env,
where the server is not installed for this interpreter): ready means one HTTP round trip answered, and the
stop must end the whole tree with SIGTERM alone (uWSGI only does with --die-on-term).
"""

from __future__ import annotations

import psutil
import pytest

from gatecheck.servers import TargetError, resolve, start_server
from gatecheck.servers.adapters.uwsgi import uwsgi_executable

WSGI_APP = "gatecheck.fixtures.apps.wsgi:app"


def argv_of(text: str, python: str = "/venv/bin/python") -> list:
    adapter, target = resolve(text)
    return adapter.launch(target, app=WSGI_APP, host="127.0.0.1", port=8123, python=python).argv


def test_waitress_puts_every_flag_before_the_app():
    """waitress-serve stops reading flags at the app and prints usage (exit 0) when one follows it."""
    assert argv_of("waitress:wsgi") == ["/venv/bin/python", "-m", "waitress", "--listen=127.0.0.1:8123", WSGI_APP]
    argv = argv_of("waitress:wsgi?threads=8&connection-limit=50&channel-timeout=5&backlog=64&args=--ident=x")
    assert argv[-1] == WSGI_APP and argv[-2] == "--ident=x"  # args= too, still before the app
    assert _pairs(argv[4:-2]) == {
        ("--threads", "8"),
        ("--connection-limit", "50"),
        ("--channel-timeout", "5"),
        ("--backlog", "64"),
    }


def test_cheroot_binds_host_port_and_takes_module_colon_app():
    assert argv_of("cheroot:wsgi") == ["/venv/bin/python", "-m", "cheroot", "--bind", "127.0.0.1:8123", WSGI_APP]
    argv = argv_of("cheroot:wsgi?threads=4&max-threads=8&timeout=5&request-queue-size=64")
    assert argv[:6] == argv_of("cheroot:wsgi")
    assert _pairs(argv[6:]) == {
        ("--threads", "4"),
        ("--max-threads", "8"),
        ("--timeout", "5"),
        ("--request-queue-size", "64"),
    }


_UWSGI_FIXED = ["--master", "--die-on-term", "--need-app", "--lazy-apps", "--enable-threads", "--disable-logging"]


@pytest.mark.parametrize(
    "text,listener",
    [
        ("uwsgi:wsgi", ["--http"]),
        ("uwsgi:wsgi?mode=router&keep-alive=on", ["--http-keepalive", "--http"]),
        ("uwsgi:wsgi?mode=socket", ["--http-socket"]),
        ("uwsgi:wsgi?mode=socket&keep-alive=on", ["--http11-socket"]),
    ],
)
def test_uwsgi_runs_its_executable_beside_the_interpreter_in_the_chosen_mode(text, listener):
    argv = argv_of(text, python="/opt/py/bin/python3")
    assert argv == ["/opt/py/bin/uwsgi"] + listener + ["127.0.0.1:8123", "--module", WSGI_APP] + _UWSGI_FIXED


def test_uwsgi_points_the_embedded_python_at_the_interpreters_virtualenv(tmp_path):
    (tmp_path / "bin").mkdir()
    (tmp_path / "pyvenv.cfg").write_text("home = /usr/bin\n")
    argv = argv_of("uwsgi:wsgi?processes=2&threads=4", python=str(tmp_path / "bin" / "python"))
    assert argv[0] == str(tmp_path / "bin" / "uwsgi")
    assert argv[-6:-4] == ["--virtualenv", str(tmp_path)]
    assert _pairs(argv[-4:]) == {("--processes", "2"), ("--threads", "4")}


@pytest.mark.parametrize(
    "text,fragment",
    [
        ("waitress:asgi", "does not serve 'asgi'"),
        ("waitress:wsgi?tls=on", "cannot listen with TLS"),
        ("cheroot:wsgi?workers=2", "no option 'workers'"),
        ("uwsgi:wsgi?mode=fastcgi", "choose one of router, socket"),
        ("uwsgi:wsgi:h2", "no HTTP mode 'h2'"),
        ("uwsgi:wsgi?threads=0", ">= 1"),
    ],
)
def test_new_adapters_refuse_what_they_cannot_do(text, fragment):
    with pytest.raises(TargetError) as info:
        resolve(text)
    assert fragment in str(info.value), info.value


@pytest.mark.parametrize("text", ["waitress:wsgi", "cheroot:wsgi", "uwsgi:wsgi", "uwsgi:wsgi?mode=socket"])
def test_new_adapters_declare_http11_wsgi_only(text):
    adapter, target = resolve(text)
    caps = adapter.target_capabilities(target)
    assert caps.interfaces == {"wsgi"} and caps.http1
    assert not (caps.h2c or caps.tls or caps.websockets or caps.lifespan or caps.pathsend)


def _pairs(flags: list) -> set:
    """``[a, 1, b, 2]`` as {(a, 1), (b, 2)}: options come in the target's (sorted) order, not the typed one."""
    return set(zip(flags[::2], flags[1::2]))


def _installed(name: str) -> None:
    adapter, _ = resolve(f"{name}:wsgi")
    if adapter.version() is None:
        pytest.skip(f"{name} is not installed for this interpreter (tox -e {adapter.tox_env} installs it)")
    if name == "uwsgi" and not uwsgi_executable(__import__("sys").executable).exists():
        pytest.skip("uwsgi's executable is not beside this interpreter (tox -e uwsgi builds it)")


@pytest.mark.parametrize(
    "text",
    [
        "waitress:wsgi?threads=2",  # an option before the app: waitress would exit 0 with usage otherwise
        "cheroot:wsgi?threads=2",
        "uwsgi:wsgi",
        "uwsgi:wsgi?mode=socket",
        "uwsgi:wsgi?keep-alive=on&processes=2",
    ],
)
def test_each_new_server_starts_serves_the_fixture_and_stops_on_sigterm(text, tmp_path):
    import httpx

    _installed(text.partition(":")[0])
    srv = start_server(text, app=WSGI_APP, log_dir=tmp_path)
    try:
        answer = httpx.get(srv.url + "/ping", timeout=10)
        assert (answer.status_code, answer.text) == (200, "ok"), srv.log_tail()
        tree = [srv.pid] + [p.pid for p in psutil.Process(srv.pid).children(recursive=True)]
    finally:
        code = srv.stop()
    log = srv.log_path.read_text()
    assert "sending SIGKILL" not in log, log  # SIGTERM alone stopped it, within the grace period
    assert code is not None, log  # (its exit status is the server's own business)
    assert not [pid for pid in tree if psutil.pid_exists(pid) and psutil.Process(pid).status() != "zombie"]
