"""servers: start real gateway servers on loopback with the suite's apps, and stop them cleanly.

This package knows nothing of tests: ``conformance`` and ``load`` build on it.
"""

from __future__ import annotations

from .adapters import Adapter, Launch, Option, flag, switch
from .capabilities import FEATURES, Capabilities
from .errors import (
    PortInUse,
    PortTaken,
    ServerError,
    ServerExited,
    ServerNotInstalled,
    ServerNotReady,
    ServerStartError,
    TargetError,
    UnknownServer,
)
from .launcher import ServerHandle, app_for, python_for, resolve, start_server
from .process import ResourceSample, ServerProcess, available_cpus, live_pids, stop_all
from .registry import ENTRY_POINT_GROUP, adapters, get_adapter
from .target import HTTP_MODES, INTERFACES, Target

__all__ = [
    "Adapter",
    "Launch",
    "Option",
    "flag",
    "switch",
    "FEATURES",
    "Capabilities",
    "ServerError",
    "TargetError",
    "UnknownServer",
    "ServerNotInstalled",
    "PortInUse",
    "ServerStartError",
    "ServerExited",
    "ServerNotReady",
    "PortTaken",
    "ServerHandle",
    "app_for",
    "python_for",
    "resolve",
    "start_server",
    "ResourceSample",
    "ServerProcess",
    "available_cpus",
    "live_pids",
    "stop_all",
    "ENTRY_POINT_GROUP",
    "adapters",
    "get_adapter",
    "HTTP_MODES",
    "INTERFACES",
    "Target",
]
