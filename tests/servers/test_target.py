"""Target strings: parsing, defaults, round trips and the errors users see."""

from __future__ import annotations

import pytest

from gatecheck.servers import Target, TargetError, UnknownServer, resolve


@pytest.mark.parametrize(
    "text",
    [
        "granian",
        "granian:asgi",
        "granian:rsgi:h2",
        "granian:asgi:auto?runtime-threads=2&loop=uvloop",
        "uvicorn:asgi?impl=httptools&loop=uvloop",
        "gunicorn:wsgi?threads=4&worker=gthread",
        "command:asgi?cmd=myserver+--port+{port}+{app}",
    ],
)
def test_target_round_trips_through_str(text):
    target = Target.parse(text)
    assert Target.parse(str(target)) == target


def test_options_are_sorted_so_equal_targets_compare_equal():
    assert Target.parse("granian:asgi?b=1&a=2") == Target.parse("granian:asgi?a=2&b=1")
    assert hash(Target.parse("granian:asgi?b=1&a=2")) == hash(Target.parse("granian:asgi?a=2&b=1"))


def test_parse_splits_server_interface_http_and_options():
    target = Target.parse("Granian:ASGI:H2?runtime-threads=2")
    assert (target.server, target.interface, target.http) == ("granian", "asgi", "h2")
    assert target.option("runtime-threads") == "2"
    assert target.option("missing", "x") == "x"


@pytest.mark.parametrize(
    "text,fragment",
    [
        ("", "empty target"),
        ("granian:xsgi", "unknown interface"),
        ("granian:asgi:h3", "unknown HTTP mode"),
        ("granian::h2", "malformed target"),
        ("a:b:c:d", "malformed target"),
        ("granian:asgi?=1", "invalid option name"),
        ("granian:asgi?a=1&a=2", "given twice"),
        ("9lives", "invalid server name"),
    ],
)
def test_malformed_targets_say_what_is_accepted(text, fragment):
    with pytest.raises(TargetError) as info:
        Target.parse(text)
    assert fragment in str(info.value)


def test_with_options_adds_and_replaces():
    target = Target.parse("granian:asgi?workers=1").with_options(workers=2, runtime_threads=4)
    assert target.opts == {"workers": "2", "runtime-threads": "4"}
    assert target.without_options("workers").opts == {"runtime-threads": "4"}


def test_resolve_fills_defaults_from_the_adapter():
    _, target = resolve("granian")
    assert (target.interface, target.http) == ("rsgi", "auto")
    _, target = resolve("uvicorn")
    assert (target.interface, target.http) == ("asgi", "h1")


def test_unknown_server_lists_the_known_ones():
    with pytest.raises(UnknownServer) as info:
        resolve("nginx:asgi")
    assert "granian" in str(info.value) and "uvicorn" in str(info.value)


@pytest.mark.parametrize(
    "text,fragment",
    [
        ("uvicorn:wsgi", "does not serve 'wsgi'"),
        ("uvicorn:asgi:h2", "no HTTP mode 'h2'"),
        ("granian:asgi?threads=2", "has no option 'threads'"),
        ("granian:asgi?runtime-mode=xx", "choose one of"),
        ("granian:asgi?workers=0", "whole number"),
        ("gunicorn:wsgi?worker=asgi", "use gunicorn:asgi"),
        ("gunicorn:asgi?worker=sync", "only with worker=asgi"),
    ],
)
def test_adapters_reject_what_their_server_cannot_do(text, fragment):
    with pytest.raises(TargetError) as info:
        resolve(text)
    assert fragment in str(info.value)


def test_id_is_safe_for_file_names():
    target = Target.parse("command:asgi?cmd=my server --port {port} {app}")
    assert " " not in target.id and "/" not in target.id
