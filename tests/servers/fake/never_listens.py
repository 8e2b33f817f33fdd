"""A 'server' that starts, prints, and never opens its port."""

import sys
import time

print("fake server: starting, but never listening", flush=True)
time.sleep(600)
sys.exit(0)
