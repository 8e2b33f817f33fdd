"""python -m gatecheck.servers: list adapters, or serve a fixture app in the foreground for manual poking.

python -m gatecheck.servers                  # adapters, capabilities, installed versions, options
python -m gatecheck.servers list
python -m gatecheck.servers run granian:asgi [--port 8000]
python -m gatecheck.servers run "granian:asgi?tls=on" [--cert CERT --key KEY]   # default: the suite's test certificate
"""

from __future__ import annotations

import argparse
import signal
import sys
import time

from .adapters._base import COMMON_OPTIONS
from .capabilities import FEATURES
from .errors import ServerError
from .registry import adapters
from .target import Target


def cmd_list(args: argparse.Namespace) -> int:
    for name, adapter in adapters().items():
        version = adapter.version() if adapter.package else None
        installed = f"installed {version}" if version else ("-" if not adapter.package else "not installed")
        caps = adapter.capabilities
        print(f"{name:<10} {installed:<18} {adapter.description}")
        own = getattr(adapter, "own_app", "")
        serves = f"its own app {own}" if own and not caps.interfaces else ", ".join(sorted(caps.interfaces))
        print(
            f"{'':<10} interfaces: {serves}; "
            f"http: {', '.join(caps.http_modes)} (default {adapter.default_http}); "
            f"features: {', '.join(caps.features()) or '-'}"
        )
        if args.verbose:
            for opt, spec in adapter.OPTIONS.items():
                choices = f" ({'|'.join(spec.choices)})" if spec.choices else (" (N)" if spec.integer else "")
                print(f"{'':<12}{opt}{choices}: {spec.help}")
    if args.verbose:
        print("\noptions every target takes:")
        for opt, meaning in COMMON_OPTIONS.items():
            print(f"  {opt}: {meaning}")
        print("\nfeatures:")
        for feature, meaning in FEATURES.items():
            print(f"  {feature:<12} {meaning}")
    return 0


def cmd_run(args: argparse.Namespace) -> int:
    from .launcher import app_for, resolve, start_server

    adapter, target = resolve(args.target)
    app = app_for(adapter, target, args.app)
    if bool(args.cert) != bool(args.key):
        print(
            "error: give both --cert and --key, or neither (a tls=on target then uses the suite's test certificate)",
            file=sys.stderr,
        )
        return 2
    tls = (args.cert, args.key) if args.cert else None
    if tls is None and adapter.target_capabilities(target).tls:
        from gatecheck import (
            fixtures,
        )  # the same test certificate the conformance suite serves (fixtures/tls/README.md)

        tls = (fixtures.TLS_CERT, fixtures.TLS_KEY)
    # The handlers go in before the server starts and before the "press Ctrl-C" line: a signal that
    # arrives at any moment after that line (or during the start) stops the server, even if a parent
    # left SIGINT ignored.
    signal.signal(signal.SIGINT, _interrupt)
    signal.signal(signal.SIGTERM, _interrupt)
    srv = None
    try:
        srv = start_server(
            target, app=app, port=args.port, log_dir=args.log_dir, ready_timeout=args.ready_timeout, tls=tls
        )
        print(f"serving {target} ({app}) at {srv.url}  pid {srv.pid}  log {srv.log_path}", flush=True)
        print("press Ctrl-C to stop", flush=True)
        while srv.alive():
            time.sleep(0.5)
        print(f"server exited by itself with code {srv.process.popen.returncode}\n{srv.log_tail()}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        return 0
    finally:
        if srv is not None:
            srv.stop()


def _interrupt(signum, frame):
    """SIGINT and SIGTERM both stop the server."""
    raise KeyboardInterrupt


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m gatecheck.servers", description="gatecheck server adapters")
    sub = parser.add_subparsers(dest="command")
    p_list = sub.add_parser("list", help="list adapters, their capabilities and installed versions")
    p_list.add_argument("-v", "--verbose", action="store_true", help="also list each adapter's options")
    p_run = sub.add_parser("run", help="serve the fixture app in the foreground")
    p_run.add_argument("target", type=_target, help="target, e.g. granian:asgi or uvicorn:asgi?loop=uvloop")
    p_run.add_argument("--port", type=_port, default=None, help="port on 127.0.0.1 (default: a free one)")
    p_run.add_argument("--app", default=None, help="module:attribute to serve instead of the fixture app")
    p_run.add_argument("--log-dir", default=None, help="directory for the server log (default: a temp dir)")
    p_run.add_argument("--ready-timeout", type=_seconds, default=30.0, help="seconds to wait for the first answer")
    p_run.add_argument(
        "--cert", metavar="PEM", help="certificate for a tls=on target (default: the suite's test certificate)"
    )
    p_run.add_argument("--key", metavar="PEM", help="private key (PKCS#8 PEM) for --cert")
    return parser


def _number(convert, ok, what: str):
    """An argparse type: ``convert(text)`` when ``ok`` of it holds, else one line saying what is wanted."""

    def parse(text: str):
        try:
            value = convert(text)
        except ValueError:
            value = None
        if value is None or not ok(value):
            raise argparse.ArgumentTypeError(f"{text!r} is not {what}")
        return value

    return parse


_port = _number(int, lambda p: 1 <= p <= 65535, "a TCP port (1-65535); omit --port to get a free one")
_seconds = _number(float, lambda s: 0 < s < float("inf"), "a number of seconds greater than 0")


def _target(text: str) -> Target:
    try:
        return Target.parse(text)
    except ServerError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


COMMANDS = {"list": cmd_list, "run": cmd_run}


def main(argv: list | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.command is None:
        args = parser.parse_args(["list"] + list(argv or []))
    # SIGTERM becomes SystemExit so that every started server is stopped on the way out.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    try:
        return COMMANDS[args.command](args)
    except ServerError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
