"""gevent.pywsgi, wsgiref, Twisted Web, mod_wsgi-express, uvicorn-worker and gunicorn's gevent worker: the argv each
target gets, what each refuses, and a real start of each that serves the fixture app and logs its event.

The real starts skip, naming what to install, where the server is not installed for this interpreter (wsgiref
never: it is the stdlib's). mod_wsgi runs only where its children's user can run the interpreter (see
servers/adapters/modwsgi.py); elsewhere its refusal is the test.
"""

from __future__ import annotations

import os
import stat

import httpx
import psutil
import pytest

from gatecheck import fixtures
from gatecheck.servers import TargetError, resolve, start_server
from gatecheck.servers.adapters import modwsgi
from gatecheck.servers.launchers import script

WSGI_APP = fixtures.APPS["wsgi"]
ASGI_APP = fixtures.APPS["asgi"]


def argv_of(text: str, app: str = WSGI_APP, python: str = "/venv/bin/python", tls=None) -> list:
    adapter, target = resolve(text)
    return adapter.launch(target, app=app, host="127.0.0.1", port=8123, python=python, tls=tls).argv


def test_gevent_runs_its_launcher_by_path_with_options_and_tls():
    argv = argv_of("gevent:wsgi")
    assert argv == [
        "/venv/bin/python",
        script("gevent_pywsgi"),
        "--host",
        "127.0.0.1",
        "--port",
        "8123",
        "--app",
        WSGI_APP,
    ]
    assert os.path.isfile(argv[1]) and argv[1].endswith("launchers/gevent_pywsgi.py")
    argv = argv_of("gevent:wsgi?monkey=off&spawn=50&tls=on", tls=("/c.pem", "/k.pem"))
    assert argv[8:] == ["--certfile", "/c.pem", "--keyfile", "/k.pem", "--monkey", "off", "--spawn", "50"]


def test_wsgiref_runs_its_launcher_single_threaded_unless_asked():
    assert argv_of("wsgiref:wsgi") == [
        "/venv/bin/python",
        script("wsgiref_server"),
        "--host",
        "127.0.0.1",
        "--port",
        "8123",
        "--app",
        WSGI_APP,
    ]
    assert argv_of("wsgiref:wsgi?threading=on")[-2:] == ["--threading", "on"]


def test_twisted_serves_the_app_by_dotted_name_on_a_loopback_tcp_listener():
    assert argv_of("twisted:wsgi") == [
        "/venv/bin/python",
        "-m",
        "twisted",
        "--log-format",
        "text",
        "--log-level",
        "warn",
        "web",
        "--listen",
        "tcp:port=8123:interface=127.0.0.1",
        "--wsgi",
        "gatecheck.fixtures.apps.wsgi.app",
    ]
    adapter, target = resolve("twisted:wsgi")
    argv = adapter.launch(target, app=WSGI_APP, host="::1", port=8123, python="/py").argv
    assert "tcp:port=8123:interface=\\:\\:1" in argv


def test_mod_wsgi_express_loads_the_app_as_a_module_from_the_staged_apps(monkeypatch):
    monkeypatch.setattr(os, "geteuid", lambda: 1000)  # not root: Apache's children stay this user
    argv = argv_of("mod_wsgi:wsgi?processes=2&threads=3")
    assert argv[:3] == ["/venv/bin/python", "-c", modwsgi._MAIN]
    assert argv[3:9] == [
        "start-server",
        "--application-type",
        "module",
        "gatecheck.fixtures.apps.wsgi",
        "--callable-object",
        "app",
    ]
    for pair in (["--host", "127.0.0.1"], ["--port", "8123"], ["--processes", "2"], ["--threads", "3"]):
        assert any(argv[i : i + 2] == pair for i in range(len(argv))), (pair, argv)
    root = argv[argv.index("--server-root") + 1]
    assert stat.S_IMODE(os.stat(root).st_mode) == 0o755 and "--user" not in argv


def test_mod_wsgi_as_root_drops_to_a_user_that_must_run_the_interpreter(monkeypatch):
    monkeypatch.setattr(os, "geteuid", lambda: 0)
    monkeypatch.setattr(modwsgi, "_check_user_can_run", lambda python, user: "nogroup")
    adapter, target = resolve("mod_wsgi:wsgi")
    launch = adapter.launch(target, app=WSGI_APP, host="127.0.0.1", port=8123, python="/py")
    assert launch.run_as == "nobody" and launch.argv[-4:] == ["--user", "nobody", "--group", "nogroup"]
    monkeypatch.undo()
    if os.geteuid() == 0:
        with pytest.raises(TargetError, match="nobody cannot run the interpreter /nonexistent/python"):
            modwsgi._check_user_can_run("/nonexistent/python", "nobody")


@pytest.mark.parametrize(
    "text, worker_class",
    [
        ("gunicorn:wsgi?worker=gevent&worker-connections=100", "gevent"),
        ("uvicorn-worker:asgi?workers=2", "uvicorn_worker.UvicornWorker"),
        ("gunicorn:asgi", "asgi"),
    ],
)
def test_gunicorn_workers_name_their_class(text, worker_class):
    argv = argv_of(text)
    assert any(argv[i : i + 2] == ["--worker-class", worker_class] for i in range(len(argv))), argv
    assert argv.count("--worker-class") == 1


@pytest.mark.parametrize(
    "role, value, flag",
    [("keep-alive-timeout", "2", "--keep-alive"), ("trusted-proxies", "127.0.0.1", "--forwarded-allow-ips")],
)
def test_uvicorn_worker_takes_the_roles_gunicorn_hands_to_uvicorn(role, value, flag):
    adapter, target = resolve("uvicorn-worker:asgi")
    argv = adapter.launch(
        adapter.with_role(target, role, value), app=ASGI_APP, host="127.0.0.1", port=8123, python="/venv/bin/python"
    ).argv
    assert any(argv[i : i + 2] == [flag, value] for i in range(len(argv))), argv


@pytest.mark.parametrize(
    "text, fragment",
    [
        ("gunicorn:wsgi?worker=asgi", "use gunicorn:asgi"),
        ("gunicorn:asgi?worker=gevent", "the uvicorn-worker target"),
        ("uvicorn-worker:wsgi", "does not serve 'wsgi'"),
        ("uvicorn-worker:asgi?worker=sync", "no option 'worker'"),
        ("gevent:asgi", "does not serve 'asgi'"),
        ("wsgiref:wsgi?tls=on", "cannot listen with TLS"),
        ("twisted:wsgi?workers=2", "no option 'workers'"),
        ("mod_wsgi:wsgi:h2", "no HTTP mode 'h2'"),
        ("wsgiref:wsgi?threading=yes", "choose one of on, off"),
    ],
)
def test_what_the_new_targets_refuse(text, fragment):
    with pytest.raises(TargetError) as info:
        resolve(text)
    assert fragment in str(info.value), info.value


def _importable(module: str, hint: str) -> None:
    import importlib.util

    if importlib.util.find_spec(module) is None:
        pytest.skip(f"{module} is not installed for this interpreter ({hint})")


@pytest.mark.parametrize(
    "text, needs",
    [
        ("wsgiref:wsgi", None),
        ("wsgiref:wsgi?threading=on", None),
        ("gevent:wsgi", "gevent"),
        ("twisted:wsgi", "twisted"),
        ("gunicorn:wsgi?worker=gevent", "gevent"),
        ("uvicorn-worker:asgi", "uvicorn_worker"),
    ],
)
def test_each_new_target_serves_the_fixture_app_and_its_event_log(text, needs, tmp_path):
    if needs:
        _importable(needs, f"tox -e {needs.split('_')[0]} installs it")
    if text.startswith(("gunicorn", "uvicorn-worker")):
        _importable("gunicorn", "tox -e gunicorn installs it")
    events = tmp_path / "events"
    events.mkdir()
    app = ASGI_APP if ":asgi" in text else WSGI_APP
    srv = start_server(text, app=app, log_dir=tmp_path, env={fixtures.EVENT_DIR_ENV: str(events)})
    try:
        answer = httpx.get(srv.url + "/ping", headers={fixtures.TOKEN_HEADER: "t-new"}, timeout=10)
        assert (answer.status_code, answer.text) == (200, "ok"), srv.log_tail()
        assert [e["event"] for e in fixtures.read_events(events, "t-new", timeout=5)][:1] == ["request.start"]
        tree = [srv.pid] + [p.pid for p in psutil.Process(srv.pid).children(recursive=True)]
    finally:
        srv.stop()
    assert "sending SIGKILL" not in srv.log_path.read_text()
    assert not [pid for pid in tree if psutil.pid_exists(pid) and psutil.Process(pid).status() != "zombie"]
