"""The CI template for a server's repository (docs/server-ci.yml): one workflow, referenced from both docs, each
tool cached under its own key, the JUnit action and gatecheck pinned to real commits, and its steps followed end to
end with the pull request and its base replaced by two local wheels.

The end-to-end test runs the ``run:`` scripts of the template's steps as GitHub's runner does (``bash -eo
pipefail``, the workflow's ``env:`` with a few values replaced: gatecheck's repository is this checkout, the
targets one granian interface with ``-k``), in the layout the workflow makes: ``head/`` (the pull request's
repository, with its expectation file), ``wheels/head`` and ``wheels/base`` (both a wheel repacked from the granian
this environment has installed: an A/A gate). What only GitHub can run (checkout, caches, the JUnit action, uploads)
is checked by its inputs instead: the JUnit file it would read, the annotations' paths.
"""

from __future__ import annotations

import base64
import hashlib
import os
import re
import shutil
import subprocess
import sys
import xml.etree.ElementTree as ET
import zipfile
from importlib import metadata
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
TEMPLATE = ROOT / "docs" / "server-ci.yml"
SHA = re.compile(r"^[0-9a-f]{40}$")


@pytest.fixture(scope="module")
def workflow() -> dict:
    yaml = pytest.importorskip("yaml")
    return yaml.safe_load(TEMPLATE.read_text(encoding="utf-8"))


def _step(job: dict, name: str) -> dict:
    (step,) = [s for s in job["steps"] if s.get("name", "").startswith(name)]
    return step


def test_one_workflow_referenced_from_both_docs():
    for doc in ("server-ci.md", "gate.md"):
        text = (ROOT / "docs" / doc).read_text(encoding="utf-8")
        assert "server-ci.yml" in text, doc
        assert "runs-on:" not in text and "uses: actions/" not in text, f"{doc} holds a workflow of its own"
    assert [p.name for p in (ROOT / "docs").glob("*.y*ml")] == ["server-ci.yml"]


def test_each_tool_has_its_own_cache_and_the_actions_and_gatecheck_are_pinned(workflow):
    caches = {}
    for job in workflow["jobs"].values():
        for step in job["steps"]:
            if step.get("uses", "").startswith("actions/cache@"):
                caches[step["with"]["key"]] = step["with"]["path"]
    assert len(caches) == 2, caches
    (h2spec,) = [k for k in caches if "h2spec" in k]
    (oha,) = [k for k in caches if "oha" in k]
    assert caches[h2spec].endswith("/bin/h2spec") and caches[oha].endswith("/oha-1.16.0")
    junit = [s["uses"] for s in workflow["jobs"]["conformance"]["steps"] if "junit" in s.get("uses", "")]
    assert len(junit) == 1 and SHA.match(junit[0].split("@")[1]), junit
    commit = workflow["env"]["GATECHECK_COMMIT"]
    assert SHA.match(commit)
    if (ROOT / ".git").exists():
        assert subprocess.run(["git", "-C", str(ROOT), "cat-file", "-e", f"{commit}^{{commit}}"]).returncode == 0, (
            f"GATECHECK_COMMIT {commit} is no commit of this repository"
        )
        cli = subprocess.run(
            ["git", "-C", str(ROOT), "show", f"{commit}:src/gatecheck/cli.py"], capture_output=True, text=True
        ).stdout
        assert '"annotate"' in cli, "the pinned commit has no `gatecheck annotate`, which the template runs"


def repack(distribution: str, out: Path) -> Path:
    """A wheel of an installed distribution, from its RECORD (files outside site-packages, such as scripts, left
    out: the installer makes them again from entry_points.txt)."""
    dist = metadata.distribution(distribution)
    tags = [line.split(": ", 1)[1] for line in dist.read_text("WHEEL").splitlines() if line.startswith("Tag: ")]
    name = dist.metadata["Name"].replace("-", "_")
    wheel = out / f"{name}-{dist.version}-{tags[0]}.whl"
    out.mkdir(parents=True, exist_ok=True)
    record, rows = f"{name}-{dist.version}.dist-info/RECORD", []
    with zipfile.ZipFile(wheel, "w", zipfile.ZIP_DEFLATED) as zf:
        for file in dist.files:
            path = str(file)
            if path.startswith("..") or "__pycache__" in path or path == record or path.endswith("INSTALLER"):
                continue
            data = Path(dist.locate_file(file)).read_bytes()
            digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
            zf.writestr(path, data)
            rows.append(f"{path},sha256={digest},{len(data)}")
        zf.writestr(record, "\n".join(rows + [f"{record},,"]) + "\n")
    return wheel


def _bash(script: str, cwd: Path, env: dict, timeout: float = 900) -> subprocess.CompletedProcess:
    return subprocess.run(
        ["bash", "--noprofile", "--norc", "-eo", "pipefail", "-c", script],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
        stdin=subprocess.DEVNULL,
    )


EXPECTATIONS = """server = "granian"

[[deviation]]
check = "test_http1_framing.py::test_invalid_chunk_size_is_rejected[hex-prefix]"
evidence = "chunk-size '0x5' read as a size"

[[deviation]]
check = "test_http1_framing.py::test_invalid_chunk_size_is_rejected[plus]"
versions = "<2"
evidence = "chunk-size '+5' read as a size"

[[deviation]]
check = "test_http1_framing.py::test_no_such_check"
evidence = "an entry whose check is gone"
"""


def _layout(tmp_path: Path) -> tuple:
    """The workflow's working directory, and the environment of its steps."""
    pytest.importorskip("granian")
    work = tmp_path / "work"
    (work / "head" / ".github").mkdir(parents=True)
    (work / "head" / ".github" / "gatecheck-expectations.toml").write_text(EXPECTATIONS, encoding="utf-8")
    wheel = repack("granian", work / "wheels" / "head")
    (work / "wheels" / "base").mkdir(parents=True)
    shutil.copy(wheel, work / "wheels" / "base" / wheel.name)
    bin_dir = tmp_path / "bin"  # `python` as the runner's setup-python provides it
    bin_dir.mkdir()
    (bin_dir / "python").symlink_to(sys.executable)
    cache = tmp_path / "cache"
    cache.mkdir()
    real = Path(os.environ.get("GATECHECK_CACHE", Path.home() / ".cache" / "gatecheck"))
    if (real / "oha-1.16.0").exists():
        (cache / "oha-1.16.0").symlink_to(real / "oha-1.16.0")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTHON", "VIRTUAL_ENV", "PYTEST", "GATECHECK"))}
    env.update(
        PATH=f"{bin_dir}{os.pathsep}{env['PATH']}",
        GATECHECK_CACHE=str(cache),
        GITHUB_STEP_SUMMARY=str(tmp_path / "summary.md"),
        PIP_DISABLE_PIP_VERSION_CHECK="1",
    )
    return work, env


def test_the_templates_steps_run_end_to_end_on_two_local_wheels(tmp_path, workflow):
    if not (ROOT / ".git").exists():
        pytest.skip("the pinned commit is installed from this checkout's git repository; this tree has none")
    work, env = _layout(tmp_path)
    env.update({k: str(v) for k, v in workflow["env"].items() if "${{" not in str(v)})
    env.update(
        GATECHECK_REPOSITORY=f"file://localhost{ROOT}",
        TARGETS="granian:asgi",
        CONFORMANCE_OPTIONS="-k test_invalid_chunk_size_is_rejected",
    )
    conformance, gate = workflow["jobs"]["conformance"], workflow["jobs"]["gate"]
    install = _bash(_step(conformance, "Install gatecheck and the wheel")["run"], work, env)
    assert install.returncode == 0, install.stdout[-3000:] + install.stderr[-3000:]
    run = _bash(_step(conformance, "Conformance")["run"], work, env)
    assert run.returncode == 1, run.stdout[-4000:] + run.stderr[-3000:]  # the out-of-range entry's check fails
    assert "recorded for granian <2 at head/.github/gatecheck-expectations.toml:7" in run.stdout, run.stdout[-4000:]
    assert "rerun:" in run.stdout
    annotate = _bash(_step(conformance, "Annotations")["run"], work, env)
    assert annotate.returncode == 1  # a stale entry fails the job
    lines = annotate.stdout.splitlines()
    assert any(ln.startswith("::warning file=.github/gatecheck-expectations.toml,line=12,title=stale") for ln in lines)
    assert any(
        ln.startswith("::warning file=.github/gatecheck-expectations.toml,line=7,title=expectation out of")
        for ln in lines
    ), lines
    junit = ET.parse(work / "results" / "conformance.xml").getroot()  # what the JUnit action reads
    failures = [f.text or "" for f in junit.iter("failure")]  # granian's other chunk-size deviations fail too
    (plus,) = [f for f in failures if "test_invalid_chunk_size_is_rejected[plus]" in f]
    assert "rerun:" in plus and "+5\\r\\n" in plus and "recorded for granian <2" in plus, plus
    matrix = _bash(_step(conformance, "The compliance matrix")["run"], work, env)
    assert matrix.returncode == 0 and (work / "matrix" / "index.html").exists(), matrix.stderr[-2000:]
    if not (Path(env["GATECHECK_CACHE"]) / "oha-1.16.0").exists():
        pytest.skip("oha is not in gatecheck's cache (tox -e load builds it): the gate's steps are left out")
    shutil.rmtree(work / ".venv")
    for name in ("Install gatecheck", "Regression gate"):
        done = _bash(_step(gate, name)["run"], work, env, timeout=1200)
        assert done.returncode in (0, 1), done.stdout[-3000:] + done.stderr[-3000:]
    assert (work / "gate" / "summary.md").exists()
    summary = _bash(_step(gate, "The gate's summary")["run"], work, env)
    assert summary.returncode == 0 and Path(env["GITHUB_STEP_SUMMARY"]).read_text().strip()
