"""mod_wsgi-express: Apache httpd with mod_wsgi in daemon mode, WSGI over HTTP/1.1.

``pip install mod_wsgi`` builds the module against the Apache found by ``apxs`` (Debian: ``apache2-dev``, with
``apache2`` itself); the command is ``mod_wsgi-express start-server`` run with the target's interpreter, the app
loaded as a module (``--application-type module``), its server root (the generated ``httpd.conf``) in a fresh
directory, logs to the terminal.

Apache refuses to serve as root: started by root, its children run as another user (``user=``, default
``nobody``, with that user's group). That user must be able to read the interpreter, the staged fixture apps and
write the event log: the launcher hands the event folder to it (``Launch.run_as``), and a target whose
interpreter it cannot run (one under ``/root``, such as a pyenv build) is refused before Apache starts, with the
way out. No TLS and no HTTP/2 through this command line.
"""

from __future__ import annotations

import atexit
import os
import shutil
import subprocess
import tempfile
from functools import lru_cache

from ..capabilities import Capabilities
from ..errors import TargetError
from ..staging import child_env, child_root
from ._base import Adapter, Launch, Option, flag

_MAIN = "import sys; from mod_wsgi.express.cli import main; sys.argv[0] = 'mod_wsgi-express'; sys.exit(main())"
_ROOTS: list = []  # the server roots this process made, removed at exit


class ModWsgiAdapter(Adapter):
    name = "mod_wsgi"
    package = "mod_wsgi"
    module = "mod_wsgi"
    tox_env = "mod_wsgi"
    description = "mod_wsgi-express (Apache httpd + mod_wsgi daemon mode): WSGI, HTTP/1.1"
    default_interface = "wsgi"
    default_http = "h1"
    WORKER_FAULT = r"child pid {pid} exit signal"  # Apache's AH00052 (idle children are stopped by design)
    WORKERS_OPTION = "processes"
    capabilities = Capabilities(
        interfaces=frozenset({"wsgi"}), http1=True, workers=True, threads=True, http_modes=("h1",)
    )
    OPTIONS = {
        "processes": flag("--processes", "daemon processes (default 1)", integer=True),
        "threads": flag("--threads", "threads per daemon process (default 5)", integer=True),
        "user": Option("the user Apache's children run as when gatecheck runs as root (default nobody)", lambda v: []),
    }

    def server_args(self, target, *, app, host, port):
        module, _, attribute = app.partition(":")
        root = tempfile.mkdtemp(prefix="gatecheck-mod_wsgi-")
        os.chmod(root, 0o755)  # the children (another user) read the handler script it holds
        _ROOTS.append(root)
        return [
            "start-server",
            "--application-type",
            "module",
            module,
            "--callable-object",
            attribute or "application",
            "--host",
            host,
            "--port",
            str(port),
            "--server-root",
            root,
            "--log-to-terminal",
            "--python-path",
            child_root(),
            "--working-directory",
            child_root(),
            "--locale",
            "C.UTF-8",
        ]

    def launch(self, target, *, app, host, port, python, tls=None):
        # tls: unused, no tls option here (resolve() refuses tls=on)
        argv = [python, "-c", _MAIN] + self.server_args(target, app=app, host=host, port=port)
        run_as = None
        if os.geteuid() == 0:
            run_as = target.option("user") or "nobody"
            group = _check_user_can_run(python, run_as)
            argv += ["--user", run_as, "--group", group]
        return Launch(
            argv=argv + self.option_args(target), env=self.server_env(target), probe_http2=False, run_as=run_as
        )


@lru_cache(maxsize=None)
def _check_user_can_run(python: str, user: str) -> str:
    """The group of ``user``, once ``python`` ran as that user; a TargetError naming the way out otherwise."""
    import grp
    import pwd

    try:
        entry = pwd.getpwnam(user)
    except KeyError:
        raise TargetError(f"mod_wsgi: no user {user!r} on this host for Apache's children (user=)") from None
    group = grp.getgrgid(entry.pw_gid).gr_name
    try:
        out = subprocess.run(
            [python, "-c", "import encodings, wsgiref"],
            capture_output=True,
            text=True,
            timeout=30,
            stdin=subprocess.DEVNULL,
            env=child_env(),
            cwd="/",
            user=entry.pw_uid,
            group=entry.pw_gid,
            extra_groups=[],
        )
        ok, why = out.returncode == 0, (out.stderr.strip().splitlines() or [""])[-1]
    except (OSError, subprocess.TimeoutExpired) as exc:
        ok, why = False, str(exc)
    if not ok:
        raise TargetError(
            f"mod_wsgi: Apache runs its children as {user} (it refuses root), and {user} cannot run the interpreter "
            f"{python} ({why[:160]}): give python= an interpreter or virtualenv that {user} can read (e.g. one made "
            f"from /usr/bin/python3 outside /root), or user= another account"
        )
    return group


@atexit.register
def _remove_roots() -> None:
    for root in _ROOTS:
        shutil.rmtree(root, ignore_errors=True)
