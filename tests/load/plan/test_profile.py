"""Profiles are data: every shipped profile loads, and planning skips cases with a reason."""

from __future__ import annotations

import pytest

from gatecheck.load.plan.profile import ProfileError, cores_needed, list_profiles, load_profile, plan
from gatecheck.load.plan.routes import ROUTES
from gatecheck.servers import Target

SEED_PROFILES = {
    "rsgi_types",
    "interfaces",
    "http2",
    "files",
    "concurrency",
    "event_loops",
    "task_impl",
    "pyver",
    "vs",
    "json",
}


def test_every_seed_section_has_a_profile():
    assert SEED_PROFILES <= set(list_profiles())


@pytest.mark.parametrize("name", list_profiles())
def test_every_shipped_profile_loads_and_names_known_routes(name):
    profile = load_profile(name)
    assert profile.title and profile.cases
    for case in profile.cases:
        assert case.route in ROUTES
        assert case.cells == () or len(case.cells) == len(profile.columns)


def test_unknown_profile_lists_the_known_ones():
    with pytest.raises(ProfileError, match="known profiles: .*interfaces"):
        load_profile("nope")


@pytest.mark.parametrize(
    "body, message",
    [
        ('[[case]]\nlabel = "x"\ntarget = "a:rsgi"\nroute = "nope"\nconcurrency = [1]\n', "unknown route 'nope'"),
        ('[[case]]\nlabel = "x"\ntarget = "a:rsgi"\nroute = "b1k"\nconcurrency = [0]\n', "concurrency must be"),
        ('[[case]]\nlabel = "x"\ntarget = "a:rsgi"\nroute = "b1k"\n', "missing 'concurrency'"),
        (
            '[[case]]\nlabel = "x"\ntarget = "a:rsgi"\nroute = "b1k"\nconcurrency = 1\ncolour = 1\n',
            "unknown keys \\['colour'\\]",
        ),
        (
            '[[case]]\nlabel = "x"\ntarget = "{server}:xsgi"\nroute = "b1k"\nconcurrency = 1\n',
            "unknown interface 'xsgi'",
        ),
        ('title = "t"\n', "no \\[\\[case\\]\\] rows"),
        ("title = \n", "not valid TOML"),
    ],
)
def test_malformed_profiles_are_refused_naming_file_and_case(tmp_path, body, message):
    path = tmp_path / "bad.toml"
    path.write_text(body)
    with pytest.raises(ProfileError, match=message):
        load_profile(path)


def test_cores_needed_is_workers_times_runtime_threads():
    assert cores_needed(Target.parse("granian:rsgi")) == 1
    assert cores_needed(Target.parse("granian:rsgi?workers=2&runtime-threads=2")) == 4
    assert cores_needed(Target.parse("granian:rsgi?runtime-threads=2")) == 2


def test_configurations_above_the_host_cores_are_skipped_unless_full():
    profile = load_profile("concurrency")
    skipped = [p for p in plan(profile, "granian", host_cores=2) if p.skip]
    assert skipped and all("needs 4 cores, host has 2" in p.skip for p in skipped)
    assert not [p for p in plan(profile, "granian", host_cores=2, full=True) if p.skip]


def test_server_fills_the_placeholder_and_filters_fixed_targets():
    interfaces = plan(load_profile("interfaces"), "uvicorn", host_cores=2)
    assert str(interfaces[0].target).startswith("uvicorn:rsgi")
    vs = plan(load_profile("vs"), "uvicorn", host_cores=2)
    assert vs and all(p.target.server == "uvicorn" for p in vs)
    assert len(plan(load_profile("vs"), None, host_cores=2)) == len(load_profile("vs").cases)


def test_interface_and_select_filter_cases():
    items = plan(load_profile("interfaces"), "granian", host_cores=2, interface="wsgi")
    assert items and all(p.target.interface == "wsgi" for p in items)
    items = plan(load_profile("interfaces"), "granian", host_cores=2, select="echo 1kb")
    assert [p.case.label for p in items] == ["RSGI echo 1KB", "ASGI echo 1KB", "WSGI echo 1KB"]


def test_python_version_and_missing_modules_skip_with_reasons():
    items = plan(load_profile("task_impl"), "granian", host_cores=2, python_version=(3, 12))
    assert {p.skip for p in items if "rust" in p.case.label} == {"needs Python < 3.12"}
    items = plan(load_profile("json"), None, host_cores=2, importable=lambda m: False)
    assert any(p.skip == "needs fastapi (not installed)" for p in items)


def test_json_profile_runs_the_framework_apps_on_their_servers():
    items = {p.case.label: p for p in plan(load_profile("json"), None, host_cores=2, importable=lambda m: True)}
    assert not any(p.skip for p in items.values())
    assert (str(items["Robyn"].target), items["Robyn"].case.app) == ("robyn", "gatecheck.fixtures.apps.robyn_app")
    for label, loop in (("FastAPI on uvicorn", "asyncio"), ("FastAPI on uvicorn + uvloop", "uvloop")):
        assert str(items[label].target) == f"uvicorn:asgi?loop={loop}"
        assert items[label].case.app == "gatecheck.fixtures.apps.fastapi_app:app"
    assert {p.case.requests for p in items.values()} == {1_000_000}
    assert {p.case.concurrency for p in items.values()} == {(100,)}


def test_every_profile_target_is_recorded_as_written():
    """A case's target is parsed once into a Target and recorded as ``str(target)``: each row is written in
    that form (options sorted), so the results name the row's own text."""
    from gatecheck.load.plan.profile import list_profiles

    for name in list_profiles():
        profile = load_profile(name)
        for case in profile.cases:
            assert str(case.target_for("granian", profile.default_server)) == case.target.replace("{server}", "granian")
