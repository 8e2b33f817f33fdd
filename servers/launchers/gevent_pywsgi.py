"""Serve a WSGI app with gevent.pywsgi.WSGIServer (run by path: see ``__init__.py``).

    python gevent_pywsgi.py --host 127.0.0.1 --port 8000 --app pkg.module:app [--monkey off] [--spawn N]
                            [--certfile CERT --keyfile KEY]

``--monkey on`` (the default) calls ``gevent.monkey.patch_all()`` before the app is imported, as gevent
deployments do (without it a blocking call in the app stops every connection). ``--spawn N`` serves at most N
requests at once (a gevent pool; default: a greenlet per connection, unbounded).
"""

import argparse
import importlib
import sys


def main(argv=None):
    parser = argparse.ArgumentParser(prog="gevent_pywsgi")
    parser.add_argument("--host", required=True)
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--app", required=True, help="module:attribute")
    parser.add_argument("--monkey", choices=("on", "off"), default="on")
    parser.add_argument("--spawn", type=int, default=None)
    parser.add_argument("--certfile")
    parser.add_argument("--keyfile")
    args = parser.parse_args(argv)
    if args.monkey == "on":
        from gevent import monkey

        monkey.patch_all()
    from gevent.pywsgi import WSGIServer

    module, _, attribute = args.app.partition(":")
    app = getattr(importlib.import_module(module), attribute or "application")
    tls = {"certfile": args.certfile, "keyfile": args.keyfile} if args.certfile else {}
    server = WSGIServer((args.host, args.port), app, spawn=args.spawn or "default", log=None, **tls)
    print(f"gevent.pywsgi serving {args.app} on {args.host}:{args.port}", file=sys.stderr, flush=True)
    server.serve_forever()


if __name__ == "__main__":
    main()
