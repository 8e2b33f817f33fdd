"""Tests of load/envs.py: parsing install specs, cache keys, building and reusing environments.

The build test makes a tiny wheel by hand and installs it into a fresh venv, so it needs no network.
"""

from __future__ import annotations

import json
import sys
import zipfile

import pytest

from gatecheck.load.run import envs
from gatecheck.load.run.envs import EnvError


def make_wheel(directory, name="gcfake", version="0.1", body="VALUE = 1\n"):
    """A minimal pure-Python wheel (no dependencies) that pip installs offline."""
    path = directory / f"{name}-{version}-py3-none-any.whl"
    info = f"{name}-{version}.dist-info"
    files = {
        f"{name}/__init__.py": body,
        f"{info}/METADATA": f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n",
        f"{info}/WHEEL": "Wheel-Version: 1.0\nGenerator: gatecheck-tests\nRoot-Is-Purelib: true\nTag: py3-none-any\n",
    }
    files[f"{info}/RECORD"] = "".join(f"{f},,\n" for f in files) + f"{info}/RECORD,,\n"
    with zipfile.ZipFile(path, "w") as z:
        for f, text in files.items():
            z.writestr(f, text)
    return path


@pytest.mark.parametrize("text", ["granian==2.8.6", "granian", "granian[uvloop]>=2.0,<3", "uvicorn ~= 0.30"])
def test_requirements_are_recognised(text):
    spec = envs.parse_spec(text)
    assert spec.kind == "requirement" and spec.value == text


@pytest.mark.parametrize("text", ["", "granian===", "gran ian", "granian==2.8.6; rm -rf /", "-e ."])
def test_unreadable_specs_list_the_accepted_forms(text):
    with pytest.raises(EnvError, match="expected a requirement"):
        envs.parse_spec(text)


def test_a_missing_path_is_an_error_not_a_requirement(tmp_path):
    with pytest.raises(EnvError, match="no such file"):
        envs.parse_spec(str(tmp_path / "granian-9.9-py3-none-any.whl"))
    with pytest.raises(EnvError, match="no such file"):
        envs.parse_spec("./nowhere")


def test_wheels_source_trees_and_interpreters_are_told_apart(tmp_path):
    wheel = make_wheel(tmp_path)
    assert envs.parse_spec(str(wheel)) == envs.InstallSpec("path", str(wheel), str(wheel))
    src = tmp_path / "src"
    src.mkdir()
    (src / "pyproject.toml").write_text("[project]\nname='x'\n")
    assert envs.parse_spec(str(src)).kind == "path"
    venv = tmp_path / "venv"
    (venv / "bin").mkdir(parents=True)
    (venv / "pyvenv.cfg").write_text("home = /usr/bin\n")
    py = venv / "bin" / "python"
    py.symlink_to(sys.executable)
    spec = envs.parse_spec(str(venv))
    assert spec.kind == "interpreter" and spec.value == str(py)  # the symlink, not the base interpreter
    assert envs.parse_spec(str(py)).value == str(py)
    empty = tmp_path / "empty"
    empty.mkdir()
    with pytest.raises(EnvError, match="neither a virtualenv"):
        envs.parse_spec(str(empty))


def test_cache_key_depends_on_spec_extras_and_wheel_content(tmp_path):
    a = envs.env_key(envs.parse_spec("granian==2.8.6"))
    assert a == envs.env_key(envs.parse_spec("granian==2.8.6"))
    assert a != envs.env_key(envs.parse_spec("granian==2.8.7"))
    assert a != envs.env_key(envs.parse_spec("granian==2.8.6"), extras=["uvloop"])
    w = make_wheel(tmp_path)
    k1 = envs.env_key(envs.parse_spec(str(w)))
    make_wheel(tmp_path, body="VALUE = 2\n")  # same file name, new content
    assert envs.env_key(envs.parse_spec(str(w))) != k1


def test_source_tree_key_ignores_build_outputs(tmp_path):
    (tmp_path / "pyproject.toml").write_text("[project]\nname='x'\n")
    spec = envs.parse_spec(str(tmp_path))
    k1 = envs.env_key(spec)
    (tmp_path / "target").mkdir()
    (tmp_path / "target" / "junk.o").write_bytes(b"\0")
    assert envs.env_key(spec) == k1
    (tmp_path / "lib.py").write_text("x = 1\n")
    assert envs.env_key(spec) != k1


def test_existing_interpreter_is_used_as_is_and_checked_for_the_module():
    env = envs.ensure_env(sys.executable, package="pytest", module="pytest", log=lambda s: None)
    assert env.python == sys.executable and env.key is None
    assert env.server_version
    with pytest.raises(EnvError, match="cannot import 'no_such_server_mod'"):
        envs.ensure_env(sys.executable, module="no_such_server_mod", log=lambda s: None)


def test_env_is_built_once_and_then_reused(tmp_path, monkeypatch):
    wheel = make_wheel(tmp_path)
    cache = tmp_path / "cache"
    messages = []
    first = envs.ensure_env(str(wheel), package="gcfake", module="gcfake", cache=cache, log=messages.append)
    assert not first.reused and first.server_version == "0.1"
    marker = json.loads((cache / "envs" / first.key / envs.MARKER).read_text())
    assert marker["spec"] == str(wheel) and marker["server_version"] == "0.1"

    def no_pip(*args, **kwargs):
        raise AssertionError("a cached env must not run venv or pip again")

    monkeypatch.setattr(envs, "_run", no_pip)
    again = envs.ensure_env(str(wheel), package="gcfake", module="gcfake", cache=cache, log=messages.append)
    assert again.reused and again.python == first.python
    b, h = envs.ensure_pair(str(wheel), str(wheel), package="gcfake", module="gcfake", cache=cache, log=messages.append)
    assert b is h


def test_an_interrupted_build_is_redone(tmp_path):
    wheel = make_wheel(tmp_path)
    cache = tmp_path / "cache"
    key = envs.env_key(envs.parse_spec(str(wheel)))
    half = cache / "envs" / key
    half.mkdir(parents=True)
    (half / "leftover").write_text("from a killed build")
    env = envs.ensure_env(str(wheel), module="gcfake", cache=cache, log=lambda s: None)
    assert not env.reused and not (half / "leftover").exists()


def test_a_failing_pip_install_shows_pips_tail_and_no_marker(tmp_path):
    bad = tmp_path / "broken-0.1-py3-none-any.whl"
    bad.write_bytes(b"this is not a zip file")
    cache = tmp_path / "cache"
    with pytest.raises(EnvError) as info:
        envs.ensure_env(str(bad), module="broken", cache=cache, log=lambda s: None)
    text = str(info.value)
    assert "pip install of" in text and "last lines" in text and "full log" in text
    assert not list((cache / "envs").glob(f"*/{envs.MARKER}"))
