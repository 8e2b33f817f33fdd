"""The fixture app as the checks see it: tokens, scripts, one way to run a script, event waits, probe decoders
(``view``, with the event log in ``events`` and probe requests in ``probing``); a started server with its event
directory (``started``) and a private server for one check (``private``).

Rules of this package: it talks to servers only through ``conformance.client``; it never imports the plugin.
``from gatecheck.conformance.app import run_script`` is the checks' spelling: this module re-exports ``view``.
"""

from .view import *  # noqa: F401,F403
from .view import __all__  # noqa: F401
