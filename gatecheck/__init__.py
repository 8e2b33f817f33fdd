"""gatecheck: conformance and load test suite for Python gateway servers (RSGI, ASGI, WSGI).

Its four packages are ``gatecheck.servers`` and ``gatecheck.fixtures`` (below), ``gatecheck.conformance``
and ``gatecheck.load`` (above). In a wheel they sit inside this package; in a checkout of the repository
they are the repository's top-level folders, and this package reaches them through ``__path__``.
"""
from __future__ import annotations

import os

#: the directory that holds the ``gatecheck`` package: what a child process puts on ``PYTHONPATH``
IMPORT_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

_checkout = IMPORT_ROOT
if (os.path.isfile(os.path.join(_checkout, "pyproject.toml"))
        and os.path.isfile(os.path.join(_checkout, "servers", "__init__.py"))
        and not os.path.isdir(os.path.join(os.path.dirname(os.path.abspath(__file__)), "servers"))):
    __path__.append(_checkout)  # type: ignore[name-defined]  # a checkout: the folders beside this one
