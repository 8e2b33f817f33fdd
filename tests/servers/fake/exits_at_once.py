"""A 'server' that fails at start-up with a message and exit code 3."""

import sys

print("fake server: cannot load application 'nope'", flush=True)
sys.exit(3)
