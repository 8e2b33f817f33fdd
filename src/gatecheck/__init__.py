"""gatecheck: conformance and load test suite for Python gateway servers (RSGI, ASGI, WSGI).

Its four packages are ``gatecheck.servers`` and ``gatecheck.fixtures`` (below), ``gatecheck.conformance``
and ``gatecheck.load`` (above). The repository keeps them as top-level folders and this package in
``src/gatecheck``; only an install (``pip install .``, or ``pip install -e .`` to work on it) puts them
together, so what runs is always what pip installs.
"""

from __future__ import annotations

import os

#: the directory that holds the ``gatecheck`` package: what a child process puts on ``PYTHONPATH``
IMPORT_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
