"""A server wrapper that is slow to start and slow to stop, for the fault tests.

    python -m tests.faults.stubborn [--start-delay S] [--term-delay S] -- SERVER ARGV...

It runs the real server as its child (a worker, in its process group, with its environment) and prints what
it does, one line each, to its stdout (the server's log): ``stubborn: child PID``, ``stubborn: SIGTERM``.
On SIGTERM it waits ``--term-delay`` seconds, then SIGTERMs the child and exits when the child has. A worker
left behind by a harness that forgot this server's tree keeps listening: the leak the fault tests look for.
"""

from __future__ import annotations

import argparse
import signal
import subprocess
import sys
import time


def main(argv: list) -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--start-delay", type=float, default=0.0)
    parser.add_argument("--term-delay", type=float, default=0.0)
    parser.add_argument("server", nargs=argparse.REMAINDER)
    args = parser.parse_args(argv)
    command = args.server[1:] if args.server[:1] == ["--"] else args.server
    terms: list = []
    signal.signal(signal.SIGTERM, lambda *_: terms.append(time.monotonic()))
    print(f"stubborn: starting in {args.start_delay:g} s", flush=True)
    time.sleep(args.start_delay)
    child = subprocess.Popen(command)
    print(f"stubborn: child {child.pid}", flush=True)
    while child.poll() is None:
        if terms:
            print(f"stubborn: SIGTERM, stopping the child in {args.term_delay:g} s", flush=True)
            time.sleep(args.term_delay)
            child.terminate()
            child.wait()
            break
        time.sleep(0.05)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
