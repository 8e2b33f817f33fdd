import sys

from gatecheck.conformance.matrix.cli import main

sys.exit(main())
