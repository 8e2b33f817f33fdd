"""``python -m gatecheck.conformance.h2spec --write-cases``."""

import sys

from .caselist import main

sys.exit(main())
