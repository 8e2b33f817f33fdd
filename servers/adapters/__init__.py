"""Built-in adapters. Third-party adapters register under the ``gatecheck.adapters`` entry-point group."""

from __future__ import annotations

from ._base import Adapter, Launch, Option, flag, switch, tls_option
from .cheroot import CherootAdapter
from .command import CommandAdapter
from .daphne import DaphneAdapter
from .gevent_pywsgi import GeventAdapter
from .granian import GranianAdapter
from .gunicorn import GunicornAdapter
from .hypercorn import HypercornAdapter
from .modwsgi import ModWsgiAdapter
from .robyn import RobynAdapter
from .twisted_web import TwistedAdapter
from .uvicorn import UvicornAdapter
from .uvicorn_worker import UvicornWorkerAdapter
from .uwsgi import UwsgiAdapter
from .waitress import WaitressAdapter
from .wsgiref import WsgirefAdapter

__all__ = [
    "Adapter",
    "Launch",
    "Option",
    "flag",
    "switch",
    "tls_option",
    "BUILTIN",
    "GranianAdapter",
    "UvicornAdapter",
    "HypercornAdapter",
    "GunicornAdapter",
    "DaphneAdapter",
    "CommandAdapter",
    "RobynAdapter",
    "WaitressAdapter",
    "CherootAdapter",
    "UwsgiAdapter",
    "GeventAdapter",
    "TwistedAdapter",
    "WsgirefAdapter",
    "ModWsgiAdapter",
    "UvicornWorkerAdapter",
]

BUILTIN = (
    GranianAdapter,
    UvicornAdapter,
    HypercornAdapter,
    GunicornAdapter,
    DaphneAdapter,
    CommandAdapter,
    RobynAdapter,
    WaitressAdapter,
    CherootAdapter,
    UwsgiAdapter,
    GeventAdapter,
    TwistedAdapter,
    WsgirefAdapter,
    ModWsgiAdapter,
    UvicornWorkerAdapter,
)
