"""``python -m gatecheck.load.gate ...``: the gate without the ``load`` command line around it."""

import sys

from ..run import stop_on_signals
from .cli import main

stop_on_signals()
sys.exit(main())
