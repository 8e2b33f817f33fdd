"""The command adapter: any server, from a command template, without writing Python.

    --server-cmd "myserver --port {port} {app}" --interface asgi

Placeholders: ``{app}`` (``module:attribute`` of the fixture app), ``{host}``, ``{port}``, ``{interface}``,
``{python}`` (the interpreter), ``{tls_cert}``/``{tls_key}`` (the launcher's certificate and key) and
``{workers}`` (the ``workers=`` option, default 1: checks that need several worker processes set it, so a
template with ``--workers {workers}`` can be asked for two; one without it cannot, and those checks report
*not supported*); ``{keep_alive_timeout}`` and ``{trusted_proxies}`` alike, for the checks that ask for a
low keep-alive timeout or for trusted proxies. The template is split like a shell command line (no shell runs it).
Capabilities beyond HTTP/1.1 are declared with ``features=h2c,websockets,lifespan`` because a command
line says nothing about them; ``features=tls`` means the command listens with TLS (its readiness probe
speaks TLS, and the template should pass ``{tls_cert}``/``{tls_key}`` to the server).
"""

from __future__ import annotations

from dataclasses import replace

from ..capabilities import FEATURES, Capabilities
from ..errors import TargetError
from ..target import INTERFACES
from ._base import Adapter, Launch, Option
from ._base import split_command_line as _split

_PLACEHOLDERS = (
    "app",
    "host",
    "port",
    "interface",
    "python",
    "tls_cert",
    "tls_key",
    "workers",
    "keep_alive_timeout",
    "trusted_proxies",
)


class CommandAdapter(Adapter):
    name = "command"
    package = ""
    module = ""
    description = "any server, from a command template (--server-cmd)"
    default_interface = ""
    default_http = "h1"
    capabilities = Capabilities(
        interfaces=frozenset(INTERFACES),
        http1=True,
        h2c=True,
        h2c_upgrade=True,
        tls=False,
        websockets=True,
        lifespan=True,
        pathsend=True,
        workers=True,
        threads=True,
        http_modes=("h1", "h2", "auto"),
    )
    OPTIONS = {
        "cmd": Option("command template with {app} {host} {port}", lambda v: []),
        "features": Option("comma-separated features the server has beyond HTTP/1.1", lambda v: []),
        "workers": Option("the number {workers} stands for in the template (default 1)", lambda v: [], integer=True),
        "keep-alive-timeout": Option("what {keep_alive_timeout} stands for (default 5)", lambda v: [], integer=True),
        "trusted-proxies": Option("what {trusted_proxies} stands for (default 127.0.0.1)", lambda v: []),
    }
    ROLES = {"keep-alive-timeout": "keep-alive-timeout", "trusted-proxies": "trusted-proxies"}

    def resolve(self, target):
        if not target.interface:
            raise TargetError("the command adapter needs the interface: --interface asgi|rsgi|wsgi")
        template = target.option("cmd")
        if not template:
            raise TargetError("the command adapter needs a template: --server-cmd 'myserver --port {port} {app}'")
        _split(template, "the command template")
        if "{port}" not in template:
            raise TargetError(f"the command template must contain {{port}}: {template!r}")
        try:
            template.format(**{k: "" for k in _PLACEHOLDERS})
        except (KeyError, IndexError, ValueError) as exc:
            raise TargetError(
                f"bad placeholder in command template {template!r} ({exc}); "
                f"known: {', '.join('{' + p + '}' for p in _PLACEHOLDERS)}"
            ) from None
        for feature in self._features(target):
            if feature not in FEATURES:
                raise TargetError(f"unknown feature {feature!r} in features=; known: {', '.join(FEATURES)}")
        return super().resolve(target)

    def with_workers(self, target, count):
        """Only a template that says ``{workers}`` can be asked for a number of worker processes."""
        if "{workers}" not in (target.option("cmd") or ""):
            return None
        return super().with_workers(target, count)

    def with_role(self, target, role, value):
        """Only a template that has the role's placeholder can be asked for it."""
        if "{" + role.replace("-", "_") + "}" not in (target.option("cmd") or ""):
            return None
        return super().with_role(target, role, value)

    @staticmethod
    def _features(target) -> list:
        return [f.strip() for f in (target.option("features") or "").split(",") if f.strip()]

    def target_capabilities(self, target):
        declared = set(self._features(target))
        http = target.http
        return replace(
            Capabilities(interfaces=frozenset({target.interface}), http_modes=(http,)),
            http1=http in ("h1", "auto"),
            **{f: True for f in declared if f != "http1"},
        )

    def uses_tls(self, target):
        return "tls" in self._features(target)

    def launch(self, target, *, app, host, port, python, tls=None):
        uses_tls = self.uses_tls(target)
        if uses_tls and not (tls and len(tls) == 2 and all(tls)):
            raise TargetError(f"{target} declares tls: launch it with tls=(certificate path, key path)")
        cert, key = (str(tls[0]), str(tls[1])) if uses_tls else ("", "")
        values = {
            "app": app,
            "host": host,
            "port": port,
            "interface": target.interface,
            "python": python,
            "tls_cert": cert,
            "tls_key": key,
            "workers": target.option("workers") or "1",
            "keep_alive_timeout": target.option("keep-alive-timeout") or "5",
            "trusted_proxies": target.option("trusted-proxies") or "127.0.0.1",
        }
        argv = [part.format(**values) for part in _split(target.option("cmd"), "the command template")]
        extra = target.option("args")
        if extra:
            argv += _split(extra, "args=")
        return Launch(argv=argv, env={}, probe_http2=(target.http == "h2"), tls=uses_tls)

    def version(self, python=None):
        return None

    def ensure_installed(self, python=None):
        return "unknown"
