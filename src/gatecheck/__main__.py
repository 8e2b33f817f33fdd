"""``python -m gatecheck ...`` is the ``gatecheck`` command."""

import sys

from gatecheck.cli import main

sys.exit(main())
