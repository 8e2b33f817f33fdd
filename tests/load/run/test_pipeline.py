"""Tests of load/pipeline.py: a target is resolved once into a ServerSetup whose app is chosen in one place,
and the Pipeline hands the runner's and the gate's servers to the same start, check and measure seams.

Nothing is started here: the seams are recorders (the real pipeline is driven by tests/load/test_smoke.py
and the before/after runs of the load CLI).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from gatecheck import fixtures
from gatecheck.load.plan.routes import route as lookup_route
from gatecheck.load.run.pipeline import Pipeline, ServerSetup, setup_for
from gatecheck.servers import ServerError, Target, TargetError, app_for, get_adapter


def test_the_app_is_the_cases_own_else_the_adapters_own_else_the_fixture_app_of_the_interface():
    granian, robyn = get_adapter("granian"), get_adapter("robyn")
    assert app_for(granian, Target("granian", "wsgi"), "my.app:app") == "my.app:app"
    assert app_for(robyn, Target("robyn")) == robyn.own_app
    for interface, app in fixtures.APPS.items():
        assert app_for(granian, Target("granian", interface)) == app
    with pytest.raises(TargetError, match="names no interface"):
        app_for(granian, Target("granian"))


def test_setup_for_resolves_the_target_once_and_keeps_its_app_and_env():
    setup = setup_for(Target.parse("granian:asgi?loop=asyncio"), env={"B": "2", "A": "1"})
    assert setup.target.interface == "asgi" and setup.target.http  # defaults filled by the adapter
    assert setup.target.option("loop") == "asyncio"
    assert setup.app == fixtures.APPS["asgi"]
    assert setup.env == (("A", "1"), ("B", "2"))
    assert setup_for(Target.parse("granian:rsgi:h2")).http2
    assert setup_for(Target("robyn")).app == get_adapter("robyn").own_app


def test_a_target_that_does_not_resolve_is_a_server_error_naming_the_option():
    with pytest.raises(ServerError, match="workers='abc'"):
        setup_for(Target.parse("granian:asgi?workers=abc"))


class Recorder:
    def __init__(self):
        self.calls = []

    def __call__(self, *args, **kwargs):
        self.calls.append((args, kwargs))
        return "handle"


def test_the_pipeline_starts_checks_and_measures_through_its_seams(tmp_path):
    start, check, measure = Recorder(), Recorder(), Recorder()
    pipeline = Pipeline(
        tmp_path,
        server_cpus=(0,),
        oha_cpus=(1,),
        oha=Path("/bin/oha"),
        python="/py",
        request_timeout=3.0,
        start_fn=start,
        check_fn=check,
        measure_fn=measure,
    )
    setup = ServerSetup(Target("granian", "rsgi", "h2"), "app:app", (("X", "1"),))
    assert pipeline.start(setup, env={"Y": "2"}) == "handle"
    assert start.calls == [
        (
            (setup.target,),
            dict(app="app:app", log_dir=tmp_path / "logs", env={"X": "1", "Y": "2"}, cpus=[0], python="/py"),
        )
    ]
    pipeline.start(setup, python="/other")
    assert start.calls[1][1]["python"] == "/other" and start.calls[1][1]["env"] == {"X": "1"}
    http_route, ws_route = lookup_route("b1k"), lookup_route("ws_broadcast")
    pipeline.check("srv", http_route, http2=True)
    assert check.calls == [(("srv", http_route), dict(http2=True, oha=Path("/bin/oha"), workdir=tmp_path / "bodies"))]
    pipeline.check_ws_fn = check_ws = Recorder()
    pipeline.check("srv", ws_route, http2=False)
    assert check_ws.calls == [(("srv", ws_route), {})] and len(check.calls) == 1
    pipeline.broadcast_fn = broadcast = Recorder()
    assert pipeline.broadcast("srv", ws_route, 8, 100) == "handle"
    assert broadcast.calls == [(("srv", ws_route, 8, 100), dict(client_cpus=(1,), server_cpus=(0,)))]
    pipeline.measure("srv", "route", 64, 2.0, http2=True, h2_parallel=4)
    assert measure.calls == [
        (
            ("srv", "route", 64, 2.0),
            dict(
                requests=None,
                http2=True,
                h2_parallel=4,
                oha_cpus=(1,),
                server_cpus=(0,),
                oha=Path("/bin/oha"),
                request_timeout=3.0,
                workdir=tmp_path / "bodies",
            ),
        )
    ]


def test_the_command_line_target_reaches_the_run_as_the_object_parsed_at_argv(monkeypatch, tmp_path):
    from gatecheck.load import __main__ as cli
    from gatecheck.load import run

    seen = {}

    def fake_run_profile(opts):
        seen["target"] = opts.target
        return run.RunSummary(results=tmp_path / "r.jsonl")

    monkeypatch.setattr(run, "run_profile", fake_run_profile)
    cli.main(
        ["run", "granian:asgi:h1?loop=uvloop", "--profile", "smoke", "--out", str(tmp_path), "--no-report", "--no-pin"]
    )
    assert seen["target"] == Target("granian", "asgi", "h1", (("loop", "uvloop"),))
