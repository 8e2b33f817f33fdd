"""Launchers: tiny scripts that serve an app with a server that has no command line of its own.

``gevent_pywsgi.py`` (``gevent.pywsgi.WSGIServer``) and ``wsgiref_server.py`` (the stdlib's
``wsgiref.simple_server``) are run *by path* with the target's interpreter (``python .../launchers/x.py
--host H --port P --app module:attribute``): a started server sees only its own environment and the staged
fixture apps (``servers/staging.py``), never this package, so each script imports nothing but the stdlib,
its server and the app. They bind to loopback and serve as a user's own five lines would: no access log,
errors to stderr, SIGTERM ends them.
"""

from __future__ import annotations

from pathlib import Path

__all__ = ["script"]


def script(name: str) -> str:
    """The path of launcher ``name`` (``gevent_pywsgi``, ``wsgiref_server``)."""
    return str(Path(__file__).resolve().parent / f"{name}.py")
