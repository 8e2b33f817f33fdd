"""``python -m gatecheck.conformance.h2spec --write-cases``."""
import sys

from .tool import main

sys.exit(main())
