"""What a started server may import from gatecheck: the fixture apps, and nothing else.

A server runs in its own interpreter (``python=`` another virtualenv, or the harness's own). Putting the
directory that holds gatecheck on its ``PYTHONPATH`` would put, for an installed gatecheck, the harness's whole
site-packages in front of the server's own packages (a harness's waitress 3.0.2 served while the other venv's
2.1.2 was recorded). So each harness process stages a copy of the ``gatecheck.fixtures`` package (stdlib only:
it imports nothing from servers, conformance or load) into a temporary directory that holds just

    gatecheck/__init__.py      empty: no path tricks
    gatecheck/fixtures/...     the fixture apps, routes, static files, TLS files

and the child gets that directory on ``PYTHONPATH`` and as its working directory (``child_root``). The
directory is removed when the harness process exits, or by the server reaper when it is killed. It is readable
by every user (0755 folders, 0644 files: it holds nothing but the fixture apps), so a server that drops
privileges (Apache's ``User``, ``gunicorn --user``) still loads the app; ``hand_over`` gives such a server's user
the event log folder it writes.
"""

from __future__ import annotations

import atexit
import os
import shutil
import stat
import tempfile
import threading

__all__ = ["child_root", "child_env", "hand_over"]

_lock = threading.Lock()
_staged: dict = {}  # pid -> staged directory: a forked harness stages its own


def _fixtures_source() -> str:
    import gatecheck.fixtures

    return os.path.dirname(os.path.abspath(gatecheck.fixtures.__file__))


def child_root() -> str:
    """The directory a started server sees gatecheck through (created on first use in this process)."""
    with _lock:
        me = os.getpid()
        if me not in _staged:
            _staged[me] = _stage(_fixtures_source())
        return _staged[me]


def child_env(base: dict | None = None) -> dict:
    """``base`` (default: this environment) with ``PYTHONPATH`` = the staged directory and nothing else:
    the harness's own PYTHONPATH (in tox, the checkout) is not the server's business."""
    env = dict(os.environ if base is None else base)
    env["PYTHONPATH"] = child_root()
    return env


def _stage(source: str) -> str:
    from . import reaper

    root = tempfile.mkdtemp(prefix="gatecheck-apps-")
    reaper.remove_after_death(root)
    package = os.path.join(root, "gatecheck")
    os.mkdir(package)
    with open(os.path.join(package, "__init__.py"), "w", encoding="utf-8"):
        pass
    shutil.copytree(source, os.path.join(package, "fixtures"), ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
    os.chmod(root, 0o755)  # mkdtemp makes it 0700
    for folder, _dirs, files in os.walk(root):
        os.chmod(folder, 0o755)
        for name in files:
            path = os.path.join(folder, name)
            os.chmod(path, stat.S_IMODE(os.stat(path).st_mode) | 0o644)
    return root


def hand_over(directory: str | None, user: str) -> None:
    """Let ``user`` write ``directory`` (the event log folder of a server whose processes drop to ``user``): it
    becomes the folder's owner, and each folder above it inside the temporary directory gets the search bit for
    others (mkdtemp makes them 0700). Only root can give a folder away; anyone else runs servers as themselves."""
    if not directory or os.geteuid() != 0:
        return
    import pwd

    entry = pwd.getpwnam(user)
    os.chown(directory, entry.pw_uid, entry.pw_gid)
    top = os.path.realpath(tempfile.gettempdir())
    parent = os.path.dirname(os.path.realpath(directory))
    while parent.startswith(top + os.sep):
        mode = stat.S_IMODE(os.stat(parent).st_mode)
        if not mode & 0o001:
            os.chmod(parent, mode | 0o001)
        parent = os.path.dirname(parent)


def _remove() -> None:
    root = _staged.pop(os.getpid(), None)
    if root:
        shutil.rmtree(root, ignore_errors=True)
        from . import reaper

        reaper.removed(root)


atexit.register(_remove)  # process.py imports this module first: this runs after its stop_all
