"""Targets: one server started one way, parsed from the short strings users type.

Grammar (documented in README.md, "Targets")::

    SERVER[:INTERFACE[:HTTP]][?OPTION=VALUE[&OPTION=VALUE...]]

    granian:asgi                    granian, ASGI, the server's default HTTP mode
    granian:rsgi:h2                 HTTP/2 only (h2c with prior knowledge)
    granian:asgi:auto?runtime-threads=2&loop=uvloop
    uvicorn:asgi?loop=uvloop&impl=httptools
    gunicorn:wsgi?worker=gthread&threads=4
    command:asgi?cmd=myserver+--port+{port}+{app}

HTTP is one of ``h1`` (HTTP/1.1 only), ``h2`` (HTTP/2 only) or ``auto`` (both, as the server negotiates);
omitted means the adapter's default. Which options exist, and their values, is the adapter's business:
``Target`` only parses and prints, so a target always round-trips through ``str()``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field, replace
from typing import Mapping
from urllib.parse import parse_qsl, quote

from .errors import TargetError

__all__ = ["Target", "INTERFACES", "HTTP_MODES"]

INTERFACES = ("asgi", "rsgi", "wsgi")
HTTP_MODES = ("h1", "h2", "auto")

_NAME = re.compile(r"^[a-z][a-z0-9_.-]*$")
_OPTION = re.compile(r"^[a-z][a-z0-9_-]*$")

_FORMS = (
    "accepted forms: SERVER[:INTERFACE[:HTTP]][?OPTION=VALUE&...], e.g. 'granian:asgi', "
    "'granian:rsgi:h2', 'uvicorn:asgi?loop=uvloop'; INTERFACE is one of "
    + ", ".join(INTERFACES)
    + "; HTTP is one of "
    + ", ".join(HTTP_MODES)
)


@dataclass(frozen=True)
class Target:
    """A server name, an interface, an HTTP mode and adapter options."""

    server: str
    interface: str | None = None
    http: str | None = None
    options: tuple[tuple[str, str], ...] = field(default=())

    def __post_init__(self) -> None:
        if not _NAME.match(self.server or ""):
            raise TargetError(f"invalid server name {self.server!r}; {_FORMS}")
        if self.interface is not None and self.interface not in INTERFACES:
            raise TargetError(f"unknown interface {self.interface!r} in target {self.server!r}; {_FORMS}")
        if self.http is not None and self.http not in HTTP_MODES:
            raise TargetError(f"unknown HTTP mode {self.http!r}; {_FORMS}")
        if self.http is not None and self.interface is None:
            raise TargetError(f"an HTTP mode needs an interface before it; {_FORMS}")
        seen = set()
        for name, _value in self.options:
            if not _OPTION.match(name):
                raise TargetError(f"invalid option name {name!r}; options look like 'runtime-threads=2'")
            if name in seen:
                raise TargetError(f"option {name!r} given twice")
            seen.add(name)
        # Options are kept sorted so that equal targets compare and hash equal.
        object.__setattr__(self, "options", tuple(sorted(self.options)))

    @classmethod
    def parse(cls, text: str) -> Target:
        """Parse ``SERVER[:INTERFACE[:HTTP]][?OPTIONS]``; raise TargetError listing the accepted forms."""
        if not isinstance(text, str) or not text.strip():
            raise TargetError(f"empty target; {_FORMS}")
        head, _, query = text.strip().partition("?")
        parts = head.split(":")
        if len(parts) > 3 or any(p == "" for p in parts):
            raise TargetError(f"malformed target {text!r}; {_FORMS}")
        server = parts[0].lower()
        interface = parts[1].lower() if len(parts) > 1 else None
        http = parts[2].lower() if len(parts) > 2 else None
        try:
            pairs = parse_qsl(query, keep_blank_values=True, strict_parsing=bool(query))
        except ValueError:
            raise TargetError(f"malformed options {query!r} in target {text!r}; {_FORMS}") from None
        return cls(server, interface, http, tuple(pairs))

    @property
    def opts(self) -> Mapping[str, str]:
        """The options as a read-only mapping."""
        return dict(self.options)

    def option(self, name: str, default: str | None = None) -> str | None:
        return self.opts.get(name, default)

    def with_options(self, **options: object) -> Target:
        """A copy with options added or replaced (``runtime_threads=2`` means ``runtime-threads=2``)."""
        merged = dict(self.options)
        for key, value in options.items():
            merged[key.replace("_", "-")] = str(value)
        return replace(self, options=tuple(merged.items()))

    def without_options(self, *names: str) -> Target:
        return replace(self, options=tuple((k, v) for k, v in self.options if k not in names))

    def __str__(self) -> str:
        text = self.server
        if self.interface:
            text += f":{self.interface}"
        if self.http:
            text += f":{self.http}"
        if self.options:
            text += "?" + "&".join(f"{k}={quote(v, safe='{}/:,.-_=')}" for k, v in self.options)
        return text

    @property
    def name(self) -> str:
        """What reports call this target (pytest ids, results, the matrix column): its ``name=`` option; else
        the target as typed, except a command target, which is ``cmd-`` and its program's name (the command
        line itself is in ``str()``)."""
        given = self.option("name")
        if given:
            return given
        if self.server == "command":
            return "cmd-" + _program_name(self.option("cmd") or "")
        return str(self)

    @property
    def id(self) -> str:
        """The name as a short id for test names and file names (no characters that need quoting)."""
        return re.sub(r"[^A-Za-z0-9_.:=-]+", "_", self.name)


def _program_name(command: str) -> str:
    """``uvicorn --port {port} {app}`` -> uvicorn; ``{python} -m tests.hostile.server ...`` -> tests.hostile.server;
    ``{python} launch/run_werkzeug.py ...`` -> run_werkzeug (the script, not the interpreter)."""
    words = command.split()
    python = bool(words) and (words[0] == "{python}" or "python" in words[0].rsplit("/", 1)[-1])
    if python and len(words) >= 3 and words[1] == "-m":
        return words[2]
    if python and len(words) >= 2 and words[1].endswith(".py"):
        return words[1].rsplit("/", 1)[-1].removesuffix(".py")
    return words[0].rsplit("/", 1)[-1] if words else "command"
