"""Robyn: a Python framework with its own Rust HTTP server, for the ``json`` load profile only.

Why this adapter looks different from the others:

- Robyn is not a gateway server. It serves no RSGI, ASGI or WSGI app, so it cannot load the fixture apps
  and there is nothing of the route contract to check on it. Giving it an interface ("asgi") would be a lie
  the conformance session would believe, and adding a fourth interface to ``servers.target.INTERFACES``
  would leak a framework into every check's ``@interfaces`` marker. So its target is the bare name,
  ``robyn`` (with options: ``robyn?processes=2&workers=2``); ``Target`` already allows no interface, and
  its validation is unchanged. A target with an interface (``robyn:asgi``) is refused with the reason.
- What it serves is a *program*: a module that builds a Robyn app and calls ``app.start(host=, port=)``
  when run as ``python -m MODULE --host H --port P``, leaving every other flag to Robyn (which parses
  ``sys.argv`` itself). Its own is ``gatecheck.fixtures.apps.robyn_app`` (``own_app``), the JSON hello world. The
  ``app`` argument every adapter gets names that module (``module`` or ``module:attribute``); the
  attribute part is not used, since Robyn has no loader for an app object.
- Its capabilities list no interface and no feature beyond HTTP/1.1: conformance never selects it
  (``conformance/targets.py`` refuses a target without an interface, naming the reason), and
  ``python -m gatecheck.servers list`` shows what it runs instead.

Options map to Robyn 0.88's own flags. Unset, Robyn keeps its defaults: 1 process, 1 worker, log level
INFO (it logs at start-up, not per request), its OpenAPI routes on.

Stopping: with 1 process, Robyn 0.88 shuts its actix server down on SIGTERM but the Python process stays
alive, so a stop takes the launcher's grace period and ends with SIGKILL (the server log says so); with
``processes=2`` or more the parent kills its children and exits 0.
"""

from __future__ import annotations

from ..capabilities import Capabilities
from ..errors import TargetError
from ._base import COMMON_OPTIONS, Adapter, Launch, Option, flag


class RobynAdapter(Adapter):
    name = "robyn"
    package = "robyn"
    own_app = "gatecheck.fixtures.apps.robyn_app"  # the program it runs unless told another (see the module docstring)
    module = own_app
    tox_env = "load-json"
    description = (
        "Robyn: its own framework and Rust HTTP/1.1 server (no gateway interface); runs its own app, for load profiles"
    )
    default_interface = ""
    default_http = "h1"
    capabilities = Capabilities(interfaces=frozenset(), http1=True, workers=True, http_modes=("h1",))
    WORKERS_OPTION = "processes"
    OPTIONS = {
        "processes": flag("--processes", "worker processes (Robyn's --processes; default 1)", integer=True),
        "workers": flag("--workers", "worker threads per process (Robyn's --workers; default 1)", integer=True),
        "log-level": flag(
            "--log-level",
            "Robyn's log level (default INFO)",
            choices=("DEBUG", "INFO", "WARN", "WARNING", "ERROR", "CRITICAL"),
        ),
        "openapi": Option(
            "Robyn's OpenAPI routes /docs and /openapi.json (default on)",
            lambda v: [] if v == "on" else ["--disable-openapi"],
            ("on", "off"),
        ),
    }

    def resolve(self, target):
        if target.interface is not None:
            raise TargetError(
                f"robyn is a framework with its own server: it serves its own app ({self.own_app}), not an "
                f"{target.interface} one; use the bare target 'robyn' (options: robyn?processes=2)"
            )
        for name, value in target.options:
            if name in COMMON_OPTIONS:
                continue
            if name not in self.OPTIONS:
                known = ", ".join(sorted(set(self.OPTIONS) | set(COMMON_OPTIONS)))
                raise TargetError(f"robyn has no option {name!r}; options: {known}")
            self.OPTIONS[name].to_args(name, value)
        return target

    def target_capabilities(self, target):
        return self.capabilities

    def server_args(self, target, *, app, host, port):
        return ["--host", host, "--port", str(port)]

    def launch(self, target, *, app, host, port, python, tls=None):
        # tls: the launcher's certificate pair for tls=on targets; Robyn has no tls option, so it stays unused
        module = (app or self.own_app).partition(":")[0]
        argv = [python, "-m", module] + self.server_args(target, app=app, host=host, port=port)
        argv += self.option_args(target)
        return Launch(argv=argv, env=self.server_env(target), probe_http2=False)
