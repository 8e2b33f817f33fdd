"""Built-in adapters. Third-party adapters register under the ``gatecheck.adapters`` entry-point group."""
from __future__ import annotations

from ._base import Adapter, Launch, Option, flag, switch, tls_option
from .cheroot import CherootAdapter
from .command import CommandAdapter
from .daphne import DaphneAdapter
from .granian import GranianAdapter
from .gunicorn import GunicornAdapter
from .hypercorn import HypercornAdapter
from .robyn import RobynAdapter
from .uvicorn import UvicornAdapter
from .uwsgi import UwsgiAdapter
from .waitress import WaitressAdapter

__all__ = [
    "Adapter", "Launch", "Option", "flag", "switch", "tls_option", "BUILTIN",
    "GranianAdapter", "UvicornAdapter", "HypercornAdapter", "GunicornAdapter", "DaphneAdapter", "CommandAdapter",
    "RobynAdapter", "WaitressAdapter", "CherootAdapter", "UwsgiAdapter",
]

BUILTIN = (GranianAdapter, UvicornAdapter, HypercornAdapter, GunicornAdapter, DaphneAdapter, CommandAdapter,
           RobynAdapter, WaitressAdapter, CherootAdapter, UwsgiAdapter)
