"""Adapters turn targets into command lines; these pin the exact argv each server gets."""

from __future__ import annotations

import pytest

from gatecheck.servers import Target, TargetError, adapters, resolve

APP = "gatecheck.fixtures.apps.asgi:app"


def argv_of(text: str, app: str = APP) -> list:
    adapter, target = resolve(text)
    return adapter.launch(target, app=app, host="127.0.0.1", port=8123, python="/py").argv


def test_granian_argv_has_interface_http_mode_and_options():
    argv = argv_of("granian:asgi:h2?runtime-threads=2&loop=uvloop&ws=off&runtime-mode=st")
    assert argv[:3] == ["/py", "-m", "granian"]
    for pair in (
        ["--interface", "asgi"],
        ["--host", "127.0.0.1"],
        ["--port", "8123"],
        ["--http", "2"],
        ["--runtime-threads", "2"],
        ["--loop", "uvloop"],
        ["--runtime-mode", "st"],
    ):
        assert _has_pair(argv, pair), (pair, argv)
    assert "--no-ws" in argv and APP in argv


def test_granian_default_http_is_auto():
    assert _has_pair(argv_of("granian:wsgi", "gatecheck.fixtures.apps.wsgi:app"), ["--http", "auto"])


def test_uvicorn_argv_maps_impl_and_loop_and_keeps_its_lifespan_default():
    argv = argv_of("uvicorn:asgi?impl=httptools&loop=uvloop")
    assert argv[:3] == ["/py", "-m", "uvicorn"]
    assert _has_pair(argv, ["--http", "httptools"]) and _has_pair(argv, ["--loop", "uvloop"])
    assert "--lifespan" not in argv and "--no-access-log" in argv
    assert _has_pair(argv_of("uvicorn:asgi?lifespan=on"), ["--lifespan", "on"])


def test_hypercorn_argv_prefixes_the_interface():
    argv = argv_of("hypercorn:wsgi?workers=2", "gatecheck.fixtures.apps.wsgi:app")
    assert (
        argv[-3:] == ["wsgi:gatecheck.fixtures.apps.wsgi:app", "--workers", "2"]
        or "wsgi:gatecheck.fixtures.apps.wsgi:app" in argv
    )
    assert _has_pair(argv, ["--bind", "127.0.0.1:8123"])


def test_gunicorn_asgi_uses_its_asgi_worker():
    argv = argv_of("gunicorn:asgi")
    assert _has_pair(argv, ["--worker-class", "asgi"])
    argv = argv_of("gunicorn:wsgi?worker=gthread&threads=4", "gatecheck.fixtures.apps.wsgi:app")
    assert _has_pair(argv, ["--worker-class", "gthread"]) and _has_pair(argv, ["--threads", "4"])


def test_daphne_argv():
    assert argv_of("daphne:asgi")[3:] == ["--bind", "127.0.0.1", "--port", "8123", APP]


def test_args_option_appends_verbatim():
    argv = argv_of("granian:asgi?args=--backlog 256")
    assert argv[-2:] == ["--backlog", "256"]


def test_command_adapter_fills_the_template():
    argv = argv_of("command:asgi?cmd=myserver --bind {host}:{port} --iface {interface} {app}")
    assert argv == ["myserver", "--bind", "127.0.0.1:8123", "--iface", "asgi", APP]


@pytest.mark.parametrize(
    "cmd, name",
    [
        ("uvicorn --port {port} {app}", "cmd-uvicorn"),
        ("{python} -m tests.hostile.server --port {port}", "cmd-tests.hostile.server"),
        ("{python} /srv/launch/run_werkzeug.py {host} {port} {app}", "cmd-run_werkzeug"),
        ("/opt/venv/bin/python3 serve.py {port}", "cmd-serve"),
    ],
)
def test_a_command_target_is_named_after_its_program_or_script(cmd, name):
    assert Target(server="command", interface="wsgi", options=(("cmd", cmd),)).name == name


@pytest.mark.parametrize(
    "text, argv_has",
    [
        ("granian:wsgi", ["--workers", "2"]),
        ("uvicorn:asgi", ["--workers", "2"]),
        ("uwsgi:wsgi", ["--processes", "2"]),
        ("command:wsgi?cmd=srv --port {port} -w {workers} {app}&features=workers", ["-w", "2"]),
    ],
)
def test_a_target_asked_for_two_workers_says_so_with_its_own_option(text, argv_has):
    adapter, target = resolve(text)
    argv = adapter.launch(adapter.with_workers(target, 2), app=APP, host="127.0.0.1", port=8123, python="/py").argv
    assert any(argv[i : i + 2] == argv_has for i in range(len(argv)))


def test_a_command_template_without_workers_cannot_be_asked_for_more_and_defaults_to_one():
    adapter, target = resolve("command:wsgi?cmd=srv --port {port} {app}&features=workers")
    assert adapter.with_workers(target, 2) is None
    adapter, target = resolve("command:wsgi?cmd=srv --port {port} -w {workers} {app}")
    assert adapter.launch(target, app=APP, host="127.0.0.1", port=8123, python="/py").argv[3:5] == ["-w", "1"]


@pytest.mark.parametrize(
    "text,fragment",
    [
        ("command:asgi", "needs a template"),
        ("command:asgi?cmd=myserver {app}", "must contain {port}"),
        ("command:asgi?cmd=myserver {port} {nope}", "bad placeholder"),
        ("command:asgi?cmd=s {port}&features=warp", "unknown feature"),
    ],
)
def test_command_adapter_errors(text, fragment):
    with pytest.raises(TargetError) as info:
        resolve(text)
    assert fragment in str(info.value)


def test_command_adapter_needs_an_interface():
    with pytest.raises(TargetError):
        resolve(Target("command", None, None, (("cmd", "x {port}"),)))


def test_command_capabilities_are_only_what_is_declared():
    adapter, target = resolve("command:asgi?cmd=s {port}&features=websockets,lifespan")
    caps = adapter.target_capabilities(target)
    assert caps.websockets and caps.lifespan and caps.http1
    assert not caps.h2c and not caps.pathsend


@pytest.mark.parametrize(
    "text,features,absent",
    [
        ("granian:asgi:h1", {"http1", "websockets", "lifespan", "pathsend"}, {"h2c"}),
        ("granian:rsgi:h2", {"h2c", "websockets"}, {"http1", "lifespan", "pathsend"}),
        ("granian:wsgi", {"http1", "h2c"}, {"websockets", "lifespan"}),
        ("granian:asgi?ws=off", {"http1"}, {"websockets"}),
        ("daphne:asgi", {"http1", "websockets"}, {"lifespan", "h2c"}),
        ("uvicorn:asgi?lifespan=off", {"http1"}, {"lifespan"}),
    ],
)
def test_target_capabilities_narrow_the_server_capabilities(text, features, absent):
    adapter, target = resolve(text)
    caps = adapter.target_capabilities(target)
    assert features <= set(caps.features()), caps
    assert not (absent & set(caps.features())), caps


def test_every_adapter_declares_what_the_listing_needs():
    for name, adapter in adapters().items():
        assert adapter.name == name and adapter.description
        own_app = getattr(adapter, "own_app", "")  # a framework with its own server (robyn): no interface
        assert adapter.capabilities.interfaces or own_app
        if name != "command" and not own_app:
            assert adapter.default_interface in adapter.capabilities.interfaces
            assert adapter.default_http in adapter.capabilities.http_modes
            assert adapter.module and adapter.package and adapter.tox_env


def test_robyn_runs_its_own_app_module_with_host_port_and_robyn_flags():
    assert argv_of("robyn", "gatecheck.fixtures.apps.robyn_app") == [
        "/py",
        "-m",
        "gatecheck.fixtures.apps.robyn_app",
        "--host",
        "127.0.0.1",
        "--port",
        "8123",
    ]
    argv = argv_of("robyn?processes=2&workers=3&log-level=WARN&openapi=off", "gatecheck.fixtures.apps.robyn_app:app")
    assert argv[:3] == ["/py", "-m", "gatecheck.fixtures.apps.robyn_app"]
    for pair in (["--processes", "2"], ["--workers", "3"], ["--log-level", "WARN"]):
        assert _has_pair(argv, pair), (pair, argv)
    assert "--disable-openapi" in argv


def test_robyn_has_no_interface_and_refuses_one():
    adapter, target = resolve("robyn")
    assert target.interface is None and adapter.own_app == "gatecheck.fixtures.apps.robyn_app"
    assert not adapter.target_capabilities(target).interfaces
    for text, fragment in (
        ("robyn:asgi", "its own server"),
        ("robyn?loop=uvloop", "no option"),
        ("robyn?processes=0", ">= 1"),
    ):
        with pytest.raises(TargetError) as info:
            resolve(text)
        assert fragment in str(info.value), (text, info.value)


def test_conformance_refuses_a_target_without_an_interface():
    from gatecheck.conformance.plugin.targets import targets_from_options

    with pytest.raises(TargetError) as info:
        targets_from_options(["robyn"], None, None, None, None)
    assert "no check applies" in str(info.value)


def _has_pair(argv: list, pair: list) -> bool:
    return any(argv[i : i + 2] == pair for i in range(len(argv) - 1))
