"""Serve a WSGI app with the stdlib's reference server, wsgiref.simple_server (run by path: see ``__init__.py``).

    python wsgiref_server.py --host 127.0.0.1 --port 8000 --app pkg.module:app [--threading on]

As ``make_server(host, port, app).serve_forever()`` does: one request at a time, on one thread, unless
``--threading on`` (a thread per connection, ``socketserver.ThreadingMixIn``). No access log (the request
lines ``log_request`` prints); the errors wsgiref reports still go to stderr.
"""

import argparse
import importlib
import socketserver
import sys
from wsgiref.simple_server import WSGIRequestHandler, WSGIServer, make_server


class QuietHandler(WSGIRequestHandler):
    def log_request(self, code="-", size="-"):
        pass


class ThreadingWSGIServer(socketserver.ThreadingMixIn, WSGIServer):
    daemon_threads = True


def main(argv=None):
    parser = argparse.ArgumentParser(prog="wsgiref_server")
    parser.add_argument("--host", required=True)
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--app", required=True, help="module:attribute")
    parser.add_argument("--threading", choices=("on", "off"), default="off")
    args = parser.parse_args(argv)
    module, _, attribute = args.app.partition(":")
    app = getattr(importlib.import_module(module), attribute or "application")
    server_class = ThreadingWSGIServer if args.threading == "on" else WSGIServer
    server = make_server(args.host, args.port, app, server_class=server_class, handler_class=QuietHandler)
    print(f"wsgiref serving {args.app} on {args.host}:{args.port}", file=sys.stderr, flush=True)
    server.serve_forever()


if __name__ == "__main__":
    main()
