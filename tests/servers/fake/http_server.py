"""A tiny real HTTP/1.1 server answering every request with 200 'ok'.

    python http_server.py PORT [--ignore-sigterm] [--fork-orphan]

--ignore-sigterm: SIGTERM is ignored (the harness must SIGKILL after its grace period).
--fork-orphan: a child process in the same group outlives the parent's exit on SIGTERM.
"""

import http.server
import os
import signal
import sys
import time

port = int(sys.argv[1])
flags = set(sys.argv[2:])
if "--ignore-sigterm" in flags:
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
if "--fork-orphan" in flags:
    if os.fork() == 0:
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        print(f"orphan child {os.getpid()}", flush=True)
        time.sleep(600)
        os._exit(0)


class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def do_GET(self):
        self.send_response(200)
        self.send_header("Content-Length", "2")
        self.end_headers()
        self.wfile.write(b"ok")

    def log_message(self, *args):
        pass


print(f"fake server listening on {port}", flush=True)
http.server.ThreadingHTTPServer(("127.0.0.1", port), Handler).serve_forever()
