"""Python environments for the gate: one per install of the server, built once and reused.

Rules of this module:

1. An *install spec* is what a user types for ``--base`` / ``--head``, in one of three forms
   (:func:`parse_spec`): a requirement (``granian==2.8.6``), a path to a wheel, sdist or source
   tree (``./dist/granian-2.9.0-cp311-...whl``, ``../granian``), or an existing interpreter or
   virtualenv (``/opt/venv``, ``/opt/venv/bin/python``). An existing interpreter is used as it is
   and never modified.
2. Built environments live in ``$GATECHECK_CACHE/envs/<key>/`` (default ``~/.cache/gatecheck``).
   The key hashes everything that decides the environment's contents: the spec, the content of a
   wheel or the files of a source tree, the extra packages, and the creating interpreter. Same key,
   same environment: it is reused without touching the network.
3. An environment counts as built only when its marker file ``gatecheck-env.json`` exists; it is
   written last, so an interrupted build is detected and redone. Builds of one key are serialised
   by an ``flock`` so two gates started at once do not build into the same directory.
4. Failures raise :class:`EnvError` with what was tried, the tail of pip's output and what to try
   next. Only ``venv`` and ``pip`` are run, each with a timeout; nothing else is installed.
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Iterable, Optional, Sequence, Tuple

from gatecheck.tools import cache_dir

__all__ = ["EnvError", "InstallSpec", "PythonEnv", "cache_dir", "ensure_env", "ensure_pair", "env_key", "parse_spec"]

MARKER = "gatecheck-env.json"
#: Bumped when the layout of a built environment changes, so old caches are not reused.
LAYOUT_VERSION = 1

_REQUIREMENT = re.compile(
    r"^[A-Za-z0-9](?:[A-Za-z0-9._-]*[A-Za-z0-9])?"  # project name (PEP 508)
    r"(?:\[[A-Za-z0-9._,\s-]*\])?"  # extras
    r"\s*(?:(?:===|==|!=|~=|>=|<=|<|>)\s*[A-Za-z0-9.*+!_-]+"
    r"(?:\s*,\s*(?:===|==|!=|~=|>=|<=|<|>)\s*[A-Za-z0-9.*+!_-]+)*)?$"
)
_ARCHIVES = (".whl", ".tar.gz", ".zip", ".tar.bz2", ".tgz")
# Directories of a source tree that do not change what gets installed (build outputs, VCS, caches).
_SKIP_DIRS = {
    ".git",
    ".hg",
    "target",
    "build",
    "dist",
    "__pycache__",
    ".tox",
    ".venv",
    "venv",
    ".mypy_cache",
    ".pytest_cache",
    "node_modules",
    ".benchmarks",
}

_FORMS = (
    "expected a requirement such as 'granian==2.8.6', a path to a wheel, sdist or source tree, "
    "or an existing interpreter or virtualenv such as '/opt/venv' or '/opt/venv/bin/python'"
)


class EnvError(RuntimeError):
    """An environment could not be parsed, built or used (a harness or install problem, not a slow server)."""


@dataclass(frozen=True)
class InstallSpec:
    """One parsed ``--base`` / ``--head`` value.

    ``kind`` is ``"requirement"``, ``"path"`` (wheel, sdist or source tree; ``value`` is absolute)
    or ``"interpreter"`` (``value`` is the absolute path of a python executable).
    """

    kind: str
    value: str
    text: str

    def __post_init__(self) -> None:
        if self.kind not in ("requirement", "path", "interpreter"):
            raise ValueError(f"unknown install spec kind {self.kind!r}")

    def __str__(self) -> str:
        return self.text


def _venv_python(directory: Path) -> Optional[Path]:
    for rel in ("bin/python", "bin/python3", "Scripts/python.exe"):
        p = directory / rel
        if p.exists() and os.access(p, os.X_OK):
            return p
    return None


def parse_spec(text: str) -> InstallSpec:
    """Parse what the user typed for ``--base`` or ``--head`` (see rule 1).

    Paths win over requirements: a file or directory that exists is a path, whatever its name.
    A string that looks like a path (contains a slash, starts with ``.`` or ``~``, or ends like an
    archive) but does not exist is an error rather than a requirement, to catch typos early.
    """
    raw = text.strip()
    if not raw:
        raise EnvError(f"empty install spec; {_FORMS}")
    path = Path(raw).expanduser()
    if path.exists():
        # Never resolve symlinks here: a venv's bin/python is a symlink to the base interpreter, and
        # resolving it would silently drop the venv's site-packages.
        path = path.absolute()
        if path.is_dir():
            py = _venv_python(path)
            if py is not None and ((path / "pyvenv.cfg").exists() or not _is_source_tree(path)):
                return InstallSpec("interpreter", str(py), raw)
            if _is_source_tree(path):
                return InstallSpec("path", str(path), raw)
            raise EnvError(
                f"{raw!r} is a directory but neither a virtualenv (no bin/python) nor a source tree "
                f"(no pyproject.toml or setup.py); {_FORMS}"
            )
        if raw.endswith(_ARCHIVES) or path.name.endswith(_ARCHIVES):
            return InstallSpec("path", str(path), raw)
        if os.access(path, os.X_OK):
            return InstallSpec("interpreter", str(path), raw)
        raise EnvError(f"{raw!r} is a file but neither an executable interpreter nor a wheel or sdist; {_FORMS}")
    if "/" in raw or os.sep in raw or raw.startswith((".", "~")) or raw.endswith(_ARCHIVES):
        raise EnvError(f"no such file or directory: {raw!r}; {_FORMS}")
    if not _REQUIREMENT.match(raw):
        raise EnvError(f"cannot read {raw!r} as an install spec; {_FORMS}")
    return InstallSpec("requirement", raw, raw)


def _is_source_tree(path: Path) -> bool:
    return (path / "pyproject.toml").exists() or (path / "setup.py").exists()


def _file_digest(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def _tree_digest(root: Path) -> str:
    """Digest of a source tree's file names, sizes and contents (build outputs and VCS skipped)."""
    h = hashlib.sha256()
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = sorted(d for d in dirnames if d not in _SKIP_DIRS and not d.endswith(".egg-info"))
        for name in sorted(filenames):
            p = Path(dirpath) / name
            if not p.is_file():
                continue
            h.update(str(p.relative_to(root)).encode() + b"\0")
            h.update(_file_digest(p).encode())
    return h.hexdigest()


def _interpreter_identity(python: str) -> str:
    """The creating interpreter's resolved path and version (a venv depends on both)."""
    real = os.path.realpath(python)
    if os.path.realpath(sys.executable) == real:
        version = ".".join(map(str, sys.version_info[:3]))
    else:
        try:
            version = subprocess.run(
                [python, "-c", "import sys; print('.'.join(map(str, sys.version_info[:3])))"],
                capture_output=True,
                text=True,
                timeout=60,
                check=True,
            ).stdout.strip()
        except (OSError, subprocess.SubprocessError) as exc:
            raise EnvError(
                f"cannot run the interpreter {python!r} to create environments with: {exc}; "
                "pass a working one with --python"
            ) from exc
    return f"{real} {version}"


def env_key(spec: InstallSpec, extras: Sequence[str] = (), python: str = sys.executable) -> str:
    """The cache key of the environment ``spec`` + ``extras`` would build with ``python`` (rule 2).

    Returns 16 hex digits. Interpreter specs have no key (they are never built).
    """
    if spec.kind == "interpreter":
        raise ValueError("an existing interpreter is used as is and has no cache key")
    if spec.kind == "path":
        p = Path(spec.value)
        content = _tree_digest(p) if p.is_dir() else _file_digest(p)
    else:
        content = ""
    ident = json.dumps(
        {
            "layout": LAYOUT_VERSION,
            "kind": spec.kind,
            "value": spec.value,
            "content": content,
            "extras": sorted(extras),
            "python": _interpreter_identity(python),
        },
        sort_keys=True,
    )
    return hashlib.sha256(ident.encode()).hexdigest()[:16]


@dataclass(frozen=True)
class PythonEnv:
    """A usable environment: its interpreter, what it was made from and the server's version in it."""

    python: str
    spec: InstallSpec
    key: Optional[str]
    reused: bool
    server_version: Optional[str]

    def describe(self) -> str:
        where = "existing interpreter" if self.key is None else ("cached env" if self.reused else "new env")
        version = f", {self.server_version}" if self.server_version else ""
        return f"{self.spec.text} ({where} {self.python}{version})"


def _tail(text: str, lines: int = 25) -> str:
    return "\n".join(text.rstrip().splitlines()[-lines:])


def _run(argv: Sequence[str], timeout: float, what: str, log_path: Optional[Path]) -> str:
    try:
        proc = subprocess.run(list(argv), stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired as exc:
        out = (exc.stdout or "") if isinstance(exc.stdout, str) else (exc.stdout or b"").decode(errors="replace")
        raise EnvError(
            f"{what} did not finish within {timeout:.0f} s: {' '.join(argv)}\n"
            f"--- last lines ---\n{_tail(out)}\n"
            "a source build can take long; raise --env-timeout, or install a wheel instead"
        ) from exc
    except OSError as exc:
        raise EnvError(f"{what} could not start: {' '.join(argv)}: {exc}") from exc
    out = proc.stdout + proc.stderr
    if log_path is not None:
        with open(log_path, "a", encoding="utf-8") as f:
            f.write(f"$ {' '.join(argv)}\n{out}\n")
    if proc.returncode != 0:
        raise EnvError(
            f"{what} failed (exit {proc.returncode}): {' '.join(argv)}\n--- last lines ---\n{_tail(out)}"
            + (f"\nfull log: {log_path}" if log_path else "")
        )
    return out


def _server_version(python: str, package: str, module: str, timeout: float = 60.0) -> Optional[str]:
    """Import ``module`` in ``python`` and return ``package``'s version; raise EnvError if it does not import."""
    if not module:
        return None
    code = (
        "import importlib, importlib.metadata as m, sys\n"
        f"importlib.import_module({module!r})\n"
        f"try:\n    print(m.version({package or module!r}))\n"
        "except Exception:\n    print('')\n"
    )
    try:
        proc = subprocess.run(
            [python, "-c", code], stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=timeout
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise EnvError(f"cannot run {python!r} to check that it has {module!r}: {exc}") from exc
    if proc.returncode != 0:
        raise EnvError(
            f"{python} cannot import {module!r}:\n{_tail(proc.stderr, 8)}\n"
            f"install {package or module} into that environment, or pass a requirement "
            f"such as '{package or module}==X.Y.Z' so the gate builds one"
        )
    return proc.stdout.strip() or None


def ensure_env(
    text_or_spec,
    *,
    package: str = "",
    module: str = "",
    extras: Iterable[str] = (),
    python: str = sys.executable,
    cache: Optional[Path] = None,
    rebuild: bool = False,
    timeout: float = 1800.0,
    log: Optional[Callable[[str], None]] = None,
) -> PythonEnv:
    """Return an environment for one install spec, building it on first use (rules 2-3).

    Args:
        text_or_spec: what the user typed, or an :class:`InstallSpec`.
        package, module: the server's distribution and importable module (``granian``); the
            environment must import ``module``, and ``package``'s version is recorded.
        extras: more requirements installed alongside (e.g. ``uvloop``), part of the cache key.
        python: interpreter that creates the venv (its version is the venv's version).
        cache: cache root (default :func:`cache_dir`).
        rebuild: build again even when a finished environment with the same key exists.
        timeout: seconds allowed for ``venv`` and for ``pip install`` each.
        log: progress messages (default: stderr).
    """
    say = log or (lambda line: print(line, file=sys.stderr, flush=True))
    spec = text_or_spec if isinstance(text_or_spec, InstallSpec) else parse_spec(text_or_spec)
    extras = tuple(extras)
    if spec.kind == "interpreter":
        if extras:
            say(f"note: {spec.text} is an existing interpreter; extras {', '.join(extras)} are not installed into it")
        return PythonEnv(spec.value, spec, None, True, _server_version(spec.value, package, module))
    root = (cache or cache_dir()) / "envs"
    root.mkdir(parents=True, exist_ok=True)
    key = env_key(spec, extras, python)
    with open(root / f"{key}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        found = None if rebuild else _reuse(root / key, spec, key, package, module, say)
        return found or _build(root, spec, key, extras, python, package, module, timeout, say)


def _reuse(
    directory: Path, spec: InstallSpec, key: str, package: str, module: str, say: Callable[[str], None]
) -> Optional[PythonEnv]:
    """The finished environment in ``directory`` (rule 3), or None when there is none or it is broken."""
    py = _venv_python(directory) if (directory / MARKER).exists() else None
    if py is None:
        return None
    try:
        version = _server_version(str(py), package, module)
    except EnvError:
        say(f"cached env {directory} for {spec.text} is broken; rebuilding it")
        return None
    return PythonEnv(str(py), spec, key, True, version)


def _build(
    root: Path,
    spec: InstallSpec,
    key: str,
    extras: Sequence[str],
    python: str,
    package: str,
    module: str,
    timeout: float,
    say: Callable[[str], None],
) -> PythonEnv:
    """Build ``root/key`` from scratch: venv, pip install, then the marker file last (rule 3)."""
    directory = root / key
    if directory.exists():
        shutil.rmtree(directory)
    log_path = root / f"{key}.log"
    log_path.write_text(f"# gatecheck env for {spec.text!r} (key {key})\n", encoding="utf-8")
    started = time.monotonic()
    say(f"building env for {spec.text} in {directory} (once; reused after) ...")
    _run([python, "-m", "venv", str(directory)], timeout, "creating the virtualenv", log_path)
    py = _venv_python(directory)
    if py is None:
        raise EnvError(
            f"'{python} -m venv {directory}' made no bin/python; is the venv module complete "
            "(Debian: apt-get install python3-venv)?"
        )
    _run(
        [str(py), "-m", "pip", "install", "--disable-pip-version-check", "--no-input", spec.value, *extras],
        timeout,
        f"pip install of {spec.text}",
        log_path,
    )
    version = _server_version(str(py), package, module)
    info = {
        "spec": spec.text,
        "kind": spec.kind,
        "value": spec.value,
        "extras": list(extras),
        "key": key,
        "python": _interpreter_identity(python),
        "server_version": version,
        "built_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "layout": LAYOUT_VERSION,
    }
    (directory / MARKER).write_text(json.dumps(info, sort_keys=True, indent=1) + "\n", encoding="utf-8")
    say(f"built env for {spec.text} in {time.monotonic() - started:.0f} s ({package or module} {version or '?'})")
    return PythonEnv(str(py), spec, key, False, version)


def ensure_pair(base: str, head: str, **kwargs) -> Tuple[PythonEnv, PythonEnv]:
    """Both sides' environments; an identical spec on both sides shares one environment (an A/A gate).

    Both specs are parsed before anything is built, so a typo in HEAD fails in a second, not after
    BASE's build.
    """
    base_spec, head_spec = parse_spec(base), parse_spec(head)
    b = ensure_env(base_spec, **kwargs)
    h = b if head_spec == base_spec else ensure_env(head_spec, **kwargs)
    return b, h
