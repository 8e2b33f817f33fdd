"""The adapter contract: how one server turns a Target into a command line.

An adapter is a class with data, not logic, wherever it can be: its capabilities, its interfaces, and a
table of options (``OPTIONS``) mapping what users type (``runtime-threads=2``) to command-line flags.
Adding an option means adding a row. ``argv()`` assembles the command; nothing here starts processes.

TLS: an adapter whose server can listen with TLS names its two flags in ``TLS_FLAGS`` (certificate, key)
and lists ``"tls": tls_option()`` in ``OPTIONS``. A target with ``tls=on`` then needs the certificate and
key paths from whoever launches it (``start_server(..., tls=(cert, key))``): servers knows no files of its
own, and the suite passes its test certificate (``fixtures.TLS_CERT``/``TLS_KEY``).
"""

from __future__ import annotations

import shlex
import subprocess
import sys
from dataclasses import dataclass, replace
from functools import lru_cache
from typing import Callable, ClassVar, Sequence

from ..capabilities import Capabilities
from ..errors import ServerNotInstalled, TargetError
from ..staging import child_env, child_root
from ..target import Target

__all__ = ["Adapter", "Option", "flag", "switch", "tls_option", "Launch", "split_command_line"]


@dataclass(frozen=True)
class Option:
    """One user-facing option: its help text, accepted values and how it becomes flags."""

    help: str
    render: Callable[[str], list]
    choices: tuple = ()
    integer: bool = False

    def to_args(self, name: str, value: str) -> list:
        if self.choices and value not in self.choices:
            raise TargetError(f"option {name}={value!r} not accepted; choose one of {', '.join(self.choices)}")
        if self.integer and not (value.isdigit() and int(value) >= 1):
            raise TargetError(f"option {name}={value!r} must be a whole number >= 1")
        return self.render(value)


def flag(name: str, help: str, *, choices: Sequence[str] = (), integer: bool = False) -> Option:
    """An option rendered as ``name value``."""
    return Option(help, lambda v: [name, v], tuple(choices), integer)


def switch(on: str, off: str, help: str) -> Option:
    """An on/off option rendered as one of two flags."""
    return Option(help, lambda v: [on] if v == "on" else [off], ("on", "off"))


def tls_option() -> Option:
    """``tls=on|off``: listen with TLS (the certificate and key come from the launcher, not the option)."""
    return Option(
        "listen with TLS (ALPN h2 where HTTP/2 is on); cert and key come from the launcher", lambda v: [], ("on", "off")
    )


def split_command_line(text: str, what: str) -> list:
    """``shlex.split``, with a TargetError (not a traceback) for an unbalanced quote or a lone backslash."""
    try:
        return shlex.split(text)
    except ValueError as exc:
        raise TargetError(f"{what} {text!r} cannot be split like a command line ({exc}); balance its quotes") from None


# Options every adapter accepts; handled by the launcher, not rendered into the server's argv.
COMMON_OPTIONS = {
    "python": "interpreter or virtualenv that runs the server (default: the harness's own Python)",
    "args": "extra command-line arguments appended verbatim (shell-quoted string)",
    "name": "what reports call the target: pytest ids, results and the matrix column "
    "(default: the target as typed; a command target: cmd-PROGRAM)",
    "memory": "bound on the resident memory of the server's whole process tree, e.g. 8G or 512M, or off; past it "
    "the server is killed and its log says so (default 4G, or what --server-memory says)",
}


@dataclass(frozen=True)
class Launch:
    """Everything needed to start one target: the command, environment additions and readiness protocol."""

    argv: list
    env: dict
    probe_http2: bool
    tls: bool = False  # the listener speaks TLS: the readiness probe must too
    run_as: str | None = None  # the user the server's processes drop to (Apache's User): it gets the event log


class Adapter:
    """Base class. Subclasses set the class attributes and implement ``server_args``."""

    name: ClassVar[str] = ""
    package: ClassVar[str] = ""  # distribution name, for versions and install hints
    module: ClassVar[str] = ""  # run as ``python -m module``
    description: ClassVar[str] = ""
    capabilities: ClassVar[Capabilities] = Capabilities()
    default_interface: ClassVar[str] = ""
    default_http: ClassVar[str] = "h1"
    OPTIONS: ClassVar[dict] = {}
    tox_env: ClassVar[str] = ""
    TLS_FLAGS: ClassVar[tuple] = ()  # (certificate flag, key flag) when the server can listen with TLS
    WORKERS_OPTION: ClassVar[str] = "workers"  # the option that sets the number of worker processes ("" none)
    #: options a check may ask for by what they do: "keep-alive-timeout" (seconds an idle kept-alive connection
    #: stays open) and "trusted-proxies" (the addresses whose forwarded fields the server believes) -> option name
    ROLES: ClassVar[dict] = {}
    #: a master that stops idle workers on purpose (Apache's MPM): a worker that vanished died only when the log
    #: says so with this pattern ("{pid}" is the worker's pid); "" for a master that never stops one unasked
    WORKER_FAULT: ClassVar[str] = ""

    # -- target handling -----------------------------------------------------------------------------

    def resolve(self, target: Target) -> Target:
        """Fill in defaults and validate the target against this adapter; raise TargetError if it does not fit."""
        interface = target.interface or self.default_interface
        if interface not in self.capabilities.interfaces:
            raise TargetError(
                f"{self.name} does not serve {interface!r}; it serves {', '.join(sorted(self.capabilities.interfaces))}"
            )
        http = target.http or self.default_http
        if http not in self.capabilities.http_modes:
            raise TargetError(
                f"{self.name} has no HTTP mode {http!r}; modes: {', '.join(self.capabilities.http_modes)}"
            )
        for name, value in target.options:
            if name == "args":
                split_command_line(value, "args=")
            if name == "memory":
                _memory_bound(value)
            if name in COMMON_OPTIONS:
                continue
            if name == "tls" and not self.TLS_FLAGS:
                raise TargetError(f"{self.name} cannot listen with TLS in gatecheck (no tls option)")
            if name not in self.OPTIONS:
                known = ", ".join(sorted(set(self.OPTIONS) | set(COMMON_OPTIONS)))
                raise TargetError(f"{self.name} has no option {name!r}; options: {known}")
            self.OPTIONS[name].to_args(name, value)
        resolved = replace(target, interface=interface, http=http)
        self.check_combination(resolved)
        return resolved

    def with_workers(self, target: Target, count: int) -> Target | None:
        """``target`` asked for ``count`` worker processes, or None when this adapter has no option for it."""
        if not self.capabilities.workers or not self.WORKERS_OPTION:
            return None
        return target.with_options(**{self.WORKERS_OPTION: str(count)})

    def with_role(self, target: Target, role: str, value: str) -> Target | None:
        """``target`` with the option that plays ``role`` (see ``ROLES``) set to ``value``; None without one."""
        name = self.ROLES.get(role)  # a subclass that offers fewer options has no option for the role
        return target.with_options(**{name: value}) if name and name in self.OPTIONS else None

    def check_combination(self, target: Target) -> None:
        """Hook for rules between options (e.g. a worker class that serves only one interface)."""

    def target_capabilities(self, target: Target) -> Capabilities:
        """Capabilities of one resolved target; the default narrows HTTP by the target's mode."""
        caps = self.capabilities
        return replace(
            caps,
            interfaces=frozenset({target.interface}),
            http1=caps.http1 and target.http in ("h1", "auto"),
            h2c=caps.h2c and target.http in ("h2", "auto"),
            h2c_upgrade=caps.h2c_upgrade and target.http == "auto",
            websockets=caps.websockets and target.interface in ("asgi", "rsgi"),
            lifespan=caps.lifespan and target.interface == "asgi",
            pathsend=caps.pathsend and target.interface == "asgi",
            tls=caps.tls and self.uses_tls(target),
        )

    def uses_tls(self, target: Target) -> bool:
        """Whether this target's listener speaks TLS (``tls=on``)."""
        return bool(self.TLS_FLAGS) and target.option("tls") == "on"

    def tls_args(self, target: Target, tls: tuple | None) -> list:
        """The certificate/key flags for a ``tls=on`` target; [] otherwise."""
        if not self.uses_tls(target):
            return []
        if not tls or len(tls) != 2 or not all(tls):
            raise TargetError(f"{target} listens with TLS: launch it with tls=(certificate path, key path)")
        cert_flag, key_flag = self.TLS_FLAGS
        return [cert_flag, str(tls[0]), key_flag, str(tls[1])]

    def option_args(self, target: Target) -> list:
        args: list = []
        for name, value in target.options:
            if name in self.OPTIONS:
                args += self.OPTIONS[name].to_args(name, value)
        extra = target.option("args")
        if extra:
            args += split_command_line(extra, "args=")
        return args

    def launch(
        self, target: Target, *, app: str, host: str, port: int, python: str, tls: tuple | None = None
    ) -> Launch:
        """The command for ``target``; ``tls`` is (certificate path, key path), needed when ``tls=on``."""
        argv = [python, "-m", self.module] + self.server_args(target, app=app, host=host, port=port)
        argv += self.tls_args(target, tls) + self.option_args(target)
        return Launch(
            argv=argv, env=self.server_env(target), probe_http2=(target.http == "h2"), tls=self.uses_tls(target)
        )

    def server_args(self, target: Target, *, app: str, host: str, port: int) -> list:
        raise NotImplementedError

    def server_env(self, target: Target) -> dict:
        return {}

    # -- installation --------------------------------------------------------------------------------

    def install_hint(self) -> str:
        env = f"`tox -e {self.tox_env}`" if self.tox_env else "its tox environment"
        return f"run {env}, or `pip install {self.package}` into the interpreter that runs it"

    def version(self, python: str | None = None) -> str | None:
        """Installed version of the server's package for ``python`` (None when not installed)."""
        return _distribution_version(python or sys.executable, self.package)

    def ensure_installed(self, python: str | None = None) -> str:
        version = self.version(python)
        if version is None:
            where = python or sys.executable
            raise ServerNotInstalled(f"{self.name} is not installed for {where}: {self.install_hint()}")
        return version


def _memory_bound(value: str) -> int | None:
    from ..memory import parse_size

    try:
        return parse_size(value)
    except ValueError as exc:
        raise TargetError(f"option memory={value!r}: {exc}") from None


@lru_cache(maxsize=None)
def _distribution_version(python: str, package: str) -> str | None:
    if not package:
        return None
    if python == sys.executable:
        from importlib import metadata

        try:
            return metadata.version(package)
        except metadata.PackageNotFoundError:
            return None
    code = (
        "import sys\nfrom importlib import metadata\n"
        "try: print(metadata.version(sys.argv[1]))\n"
        "except metadata.PackageNotFoundError: sys.exit(3)\n"
    )
    try:
        out = subprocess.run(
            [python, "-c", code, package],
            capture_output=True,
            text=True,
            timeout=30,
            stdin=subprocess.DEVNULL,
            env=child_env(),
            cwd=child_root(),  # what the server itself will see (servers/staging.py)
        )
    except (OSError, subprocess.TimeoutExpired):
        return None
    return out.stdout.strip() if out.returncode == 0 else None
