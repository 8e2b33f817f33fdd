"""A small HTTP/1.1 server for the fixture WSGI app: correct by default, wrong in one way on request.

    python -m tests.broken.server --host 127.0.0.1 --port 8000 [--break NAME] [--app module:attr]

The wire checks (``conformance/test_http1_*.py``) need a server that gets one wire rule wrong; an app
wrapper cannot do that. Unbroken, this server passes the checks the harness runs against it (that is
the control); ``--break NAME`` violates exactly the rule ``BREAKS[NAME]`` describes.

Rules of this module:

1. Stdlib only (asyncio). Requests are read whole (``reading.py``: head, parse, body), the app runs in a
   thread (``gateway.py``: environ and the app call), its response is buffered and sent with a
   Content-Length: simple framing, so every wire decision is explicit.
2. Strict by default: anything RFC 9112 lets a server reject is rejected with 4xx and a close.
3. Each break is one ``if`` naming it, next to the rule it breaks.
"""

from __future__ import annotations

import argparse
import asyncio
import email.utils
import importlib
import os
import socket
import sys
import time

from . import gateway
from .reading import ABSOLUTE_TARGET, HttpError, Incomplete, Request, RequestReader, Skipped

__all__ = ["BREAKS", "VARIANTS", "main"]

#: break name -> the one rule it violates
BREAKS = {
    "cl_te_accepted": "a request with Content-Length and Transfer-Encoding is TE-framed and the connection kept open",
    "content_length_lenient": "Content-Length is parsed with int(), so '+5' is a valid length",
    "content_length_wraps": "Content-Length is taken modulo 2**64",
    "chunk_size_wraps": "a chunk-size is taken modulo 2**64",
    "app_headers_unchecked": "response headers from the app go out unchecked (CR LF and all)",
    "chunk_size_int": "a chunk-size is parsed with int(size, 16), so '0x5', '+5' and ' 5' are sizes",
    "chunk_bare_lf": "a bare LF ends a chunk line",
    "host_not_required": "an HTTP/1.1 request without Host is served",
    "space_before_colon": "whitespace between a field name and its colon is dropped",
    "headers_truncated": "a header section over the limit is cut to the limit and served (no 431)",
    "target_truncated": "a request-target is cut to 4 KiB and served (no 414)",
    "obs_fold_joined": "a folded field line is appended to the value before it, without a space",
    "bare_cr_splits_lines": "a bare CR inside the header section ends a field line",
    "trailers_merged": "trailer fields of a chunked request are merged into its header fields",
    "two_hosts_accepted": "a request with two Host lines is served",
    "method_case_folded": "the method is upper-cased, so 'get' is GET",
    "te_chunked_anywhere": "a Transfer-Encoding that merely contains chunked is read as chunked",
    "incomplete_body_kept_open": "a client that ends its side mid-body finds the connection still open 10 s later",
    "garbage_skipped": "an unparseable request-line is skipped and the next request read",
    "expect_ignored": "Expect: 100-continue gets no 100 (the server waits for the body)",
    "no_persistent_connections": "every response closes the connection, HTTP/1.1 included",
    "no_persistence_unannounced": "every response closes the connection, HTTP/1.1 included, without Connection: close",
    "app_date_duplicated": "Date is added even when the app sent its own",
    "request_line_bare_cr_kept": "a bare CR in the request-target is kept (percent-encoded) and the request served",
    "nul_in_values_kept": "a NUL in a field value reaches the app",
    "any_field_name": "a field name with non-token octets is accepted",
    "spaces_in_target": "a request-target with spaces in it is accepted (the last word is the version)",
    "host_required_for_http10": "an HTTP/1.0 request without Host is refused",
    "first_content_length_wins": "of differing Content-Length values the first is used",
    "unread_body_left_in_buffer": "body octets the app did not read are parsed as the next request",
    "head_length_zero": "a HEAD response says Content-Length: 0",
    "upgrade_honoured": "any Upgrade is answered 101 Switching Protocols (and then nothing)",
    "close_unannounced": "a response to Connection: close omits Connection: close",
    "http10_te_accepted": "an HTTP/1.0 request with Transfer-Encoding is read as chunked and kept alive",
    "incomplete_answered": "a request head that is not complete yet is answered 400 at once",
    "connection_close_ignored": "a request with Connection: close leaves the connection open",
    "http10_kept_open": "an HTTP/1.0 request without keep-alive leaves the connection open",
    "pipeline_reordered": "of two pipelined requests, the second is answered first",
    "head_body": "a HEAD response carries the body",
    "no_content_body": "a 204/304 response carries the app's body and framing",
    "no_date": "no Date header is sent",
    "status_without_reason": "the status-line is 'HTTP/1.1 200' with no SP and reason",
    "version_echoed": "the response's HTTP-version is the request's (HTTP/1.0 gets HTTP/1.0)",
    "continue_to_http10": "an HTTP/1.0 request with Expect: 100-continue gets a 100",
    "half_close_drops": "a request followed by the client's half-close (EOF) is dropped without an answer",
    "later_body_dropped": "a request with a body that is not the first on its connection is dropped: the "
    "connection closes without an answer",
    "multiprocess_false": "with --workers 2 or more, environ['wsgi.multiprocess'] still says False",
    "write_past_length_sent": "bytes the app writes past its own Content-Length are sent after the response",
    "chunk_crlf_skipped": "the two octets after chunk-data are skipped without being checked for CRLF",
    "head_body_ignored": "a HEAD request's Content-Length or chunked body is not read (its octets are the next "
    "request)",
    "truncated_chunked_completed": "the end of stream inside a chunked body ends the body: the request is served",
    "transfer_coding_prefix": "a Transfer-Encoding value that starts with 'chunked' is read as chunked",
    "error_kept_open": "a request answered with an error leaves the connection open",
    "query_kept": "the QUERY_STRING of a connection's first request is handed to every later one on it",
    "date_cached_per_connection": "Date is computed once per connection and repeated in every later response",
    "server_header_appended": "each response on a connection adds one more Server line (the 2nd has two)",
    "later_framed_twice": "from the 2nd response on a connection, Content-Length and chunked framing together",
    "keep_alive_cuts_pipeline": "the keep-alive timeout runs from the start of a request: a pipelined request "
    "waiting longer is dropped with the connection",
    "close_with_bytes_behind_400": "a Connection: close request with more bytes behind it is answered 400",
    "forwarded_verbatim": "X-Forwarded-Proto and X-Forwarded-For become wsgi.url_scheme and REMOTE_ADDR as sent, "
    "from any peer",
    "trusted_proxy_ignored": "forwarded fields from the trusted proxy change nothing",
}

#: variant name -> a behaviour the texts allow, unlike the default (not a break: for checks that must accept it)
VARIANTS = {
    "any_major_served": "a request with an unknown major version (HTTP/9.9) is served as HTTP/1.1 instead of "
    "505 (RFC 9110 §6.2: a server *can* send 505)",
    "unknown_coding_501": "a request whose Transfer-Encoding is not exactly chunked gets 501 and a close, before "
    "any other framing rule (RFC 9112 §6.1: a server SHOULD answer 501 to a coding it does "
    "not understand)",
    "write_past_length_raises_after_sending": "a write() past the app's Content-Length raises ValueError, but "
    "its bytes are sent (PEP 3333: the server should raise; what is "
    "sent is another rule)",
    "request_line_bare_cr_as_space": "a bare CR in the request-line is replaced by SP before the line is parsed "
    "(RFC 9112 §2.2: consider it invalid or replace it with SP)",
    "chunked_body_unterminated": "a chunked request's environ has neither CONTENT_LENGTH nor wsgi.input_terminated "
    "(PEP 3333 asks for neither; its app has no portable way to read that body)",
    "chunked_length_required": "a chunked request gets 411 and a close (RFC 9112 §6.3: a server MAY reject a "
    "body without Content-Length with 411)",
}

DRAIN_SECONDS = 2.0  # how long an error's close waits for the client to finish sending
_REASONS = {
    100: "Continue",
    400: "Bad Request",
    413: "Content Too Large",
    414: "URI Too Long",
    411: "Length Required",
    417: "Expectation Failed",
    431: "Request Header Fields Too Large",
    500: "Internal Server Error",
    501: "Not Implemented",
    505: "HTTP Version Not Supported",
}


class Connection(RequestReader):
    """One client's connection: requests read by :class:`RequestReader`, answered here."""

    def __init__(self, server, reader, writer):
        super().__init__(reader, writer, server.breaks)
        self.server = server
        self.answered = 0  # responses sent on this connection
        self.first_query = None  # (query_kept) the first request's QUERY_STRING
        self.date = None  # (date_cached_per_connection) the connection's one Date
        self.began = time.monotonic()  # when the last request was read

    # -- answering ------------------------------------------------------------------------------

    def keep_alive(self, req: Request) -> bool:
        options = req.tokens(b"connection")
        if req.version == "HTTP/1.0":
            te_kept = "http10_te_accepted" in self.breaks and bool(req.values(b"transfer-encoding"))
            return "http10_kept_open" in self.breaks or te_kept
        if "no_persistent_connections" in self.breaks:
            return False
        if "no_persistence_unannounced" in self.breaks:
            return False
        return b"close" not in options or "connection_close_ignored" in self.breaks

    async def respond(self, req: Request) -> tuple:
        """(response bytes, keep the connection open?)"""
        if req.tokens(b"upgrade") and "upgrade_honoured" in self.breaks:
            return b"HTTP/1.1 101 Switching Protocols\r\nConnection: Upgrade\r\n\r\n", True
        loop = asyncio.get_running_loop()
        env = self.environ(req)
        status, headers, body = await loop.run_in_executor(None, self.server.call_app, env)
        if "unread_body_left_in_buffer" in self.breaks:
            self.buf[:0] = req.body[env["wsgi.input"].tell() :]
        code = int(status[:3])
        keep = self.keep_alive(req)
        version = req.version if "version_echoed" in self.breaks else "HTTP/1.1"
        line = f"{version} {code}" if "status_without_reason" in self.breaks else f"{version} {status}"
        names = {n.lower() for n, _ in headers}
        no_content = code in (204, 304) and "no_content_body" not in self.breaks
        if no_content:
            headers = [(n, v) for n, v in headers if n.lower() not in ("content-length", "transfer-encoding")]
            body = b""
        elif "content-length" in names:
            declared = int(next(v for n, v in headers if n.lower() == "content-length"))
            keep = keep and len(body) >= declared  # a short body is followed by a close
            if not {"write_past_length_raises_after_sending", "write_past_length_sent"} & self.breaks:
                body = body[:declared]
        elif code != 304:
            headers = headers + [("Content-Length", str(len(body)))]
        if req.method == "HEAD" and "head_body" not in self.breaks:
            body = b""
        if req.method == "HEAD" and "head_length_zero" in self.breaks:
            headers = [(n, "0" if n.lower() == "content-length" else v) for n, v in headers]
        announce = not keep and not {"close_unannounced", "no_persistence_unannounced"} & self.breaks
        extra = self.standard_headers(names) + ([("Connection", "close")] if announce else [])
        if "later_framed_twice" in self.breaks and self.answered:
            extra.append(("Transfer-Encoding", "chunked"))
            body = (b"%x\r\n%s\r\n" % (len(body), body) if body else b"") + b"0\r\n\r\n"
        self.answered += 1
        head = "\r\n".join([line] + [f"{n}: {v}" for n, v in headers + extra]) + "\r\n\r\n"
        return head.encode("latin-1") + body, keep

    def standard_headers(self, present: set) -> list:
        extra = []
        if ("date" not in present or "app_date_duplicated" in self.breaks) and "no_date" not in self.breaks:
            if self.date is None or "date_cached_per_connection" not in self.breaks:
                self.date = email.utils.formatdate(usegmt=True)
            extra.append(("Date", self.date))
        if "server" not in present:
            repeats = self.answered + 1 if "server_header_appended" in self.breaks else 1
            extra += [("Server", "gatecheck-broken")] * repeats
        return extra

    def environ(self, req: Request) -> dict:
        absolute = ABSOLUTE_TARGET.fullmatch(req.target)
        target = (absolute[2] or b"/") if absolute else req.target
        env = gateway.environ(
            req.method,
            target,
            req.version,
            req.fields,
            req.body,
            self.writer.get_extra_info("sockname"),
            self.writer.get_extra_info("peername"),
        )
        env["wsgi.multiprocess"] = self.server.workers > 1 and "multiprocess_false" not in self.breaks
        self.forwarded(req, env)
        if "chunked_body_unterminated" in self.breaks and req.values(b"transfer-encoding"):
            env.pop("CONTENT_LENGTH", None)
            env.pop("wsgi.input_terminated", None)
        if "query_kept" in self.breaks:
            self.first_query = env["QUERY_STRING"] if self.first_query is None else self.first_query
            env["QUERY_STRING"] = self.first_query
        return env

    def forwarded(self, req: Request, env: dict) -> None:
        """X-Forwarded-Proto and -For from the trusted proxy (``--trusted-proxy``) set the scheme and the
        client: the first address of the list, a scheme only when http or https."""
        trusted = env["REMOTE_ADDR"] in self.server.trusted and "trusted_proxy_ignored" not in self.breaks
        if not (trusted or "forwarded_verbatim" in self.breaks):
            return
        proto, peers = req.values(b"x-forwarded-proto"), req.values(b"x-forwarded-for")
        if proto and (proto[0] in (b"http", b"https") or "forwarded_verbatim" in self.breaks):
            env["wsgi.url_scheme"] = proto[0].decode("latin-1")
        if peers:
            first = peers[0] if "forwarded_verbatim" in self.breaks else peers[0].split(b",")[0].strip()
            env["REMOTE_ADDR"] = first.decode("latin-1")

    async def error(self, status: int, head: bool = False) -> None:
        """Answer ``status`` (its content left out for a HEAD request, RFC 9110 §9.3.2), end our side, read what
        the client still sends (so it sees the answer, not a reset), then close."""
        reason = _REASONS.get(status, "Error")
        headers = self.standard_headers(set()) + [
            ("Content-Type", "text/plain"),
            ("Content-Length", str(len(reason))),
            ("Connection", "close"),
        ]
        lines = "\r\n".join([f"HTTP/1.1 {status} {reason}"] + [f"{n}: {v}" for n, v in headers])
        self.writer.write(f"{lines}\r\n\r\n{'' if head else reason}".encode("latin-1"))
        if "error_kept_open" in self.breaks:
            await asyncio.sleep(10.0)
        try:
            await self.writer.drain()
            self.writer.write_eof()
            await asyncio.wait_for(self._drain_input(), DRAIN_SECONDS)
        except (OSError, asyncio.TimeoutError):
            pass

    async def _client_ended(self) -> bool:
        """(half_close_drops) whether the client's EOF follows the request within 0.3 s."""
        try:
            data = await asyncio.wait_for(self.reader.read(65536), 0.3)
        except asyncio.TimeoutError:
            return False
        self.buf += data
        return not data

    async def _next_head(self, served: int):
        """The next request head; None at EOF, or when a kept-alive connection stays idle past the timeout."""
        if not served or self.buf:
            return await self.read_head()
        try:
            return await asyncio.wait_for(self.read_head(), self.server.keep_alive)
        except asyncio.TimeoutError:
            return None

    def _cut_by_timer(self, served: int) -> bool:
        """(keep_alive_cuts_pipeline) a request read more than the keep-alive timeout after the previous one
        began is dropped, and the connection with it."""
        now, began = time.monotonic(), self.began
        self.began = now
        return "keep_alive_cuts_pipeline" in self.breaks and served and now - began > self.server.keep_alive

    def _close_with_bytes_behind(self, req: Request) -> bool:
        if "close_with_bytes_behind_400" in self.breaks and b"close" in req.tokens(b"connection") and self.buf:
            raise HttpError(400)
        return False

    async def _drain_input(self) -> None:
        while await self.reader.read(65536):
            pass

    # -- the connection -------------------------------------------------------------------------

    async def run(self) -> None:
        served, req = 0, None
        try:
            while True:
                head = await self._next_head(served)
                if head is None:
                    return
                req = None
                try:
                    req = self.parse(*head)
                except Skipped:
                    continue
                await self.read_body(req)
                if self._cut_by_timer(served) or self._close_with_bytes_behind(req):
                    return
                if "half_close_drops" in self.breaks and await self._client_ended():
                    return
                if "later_body_dropped" in self.breaks and req.body and served:
                    return
                served += 1
                answers = [await self.respond(req)]
                if "pipeline_reordered" in self.breaks and answers[0][1] and b"\r\n\r\n" in self.buf:
                    second = self.parse(*await self.read_head())
                    await self.read_body(second)
                    answers.insert(0, await self.respond(second))
                for data, _ in answers:
                    self.writer.write(data)
                await self.writer.drain()
                if not all(keep for _, keep in answers):
                    return
        except HttpError as exc:
            await self.error(exc.status, head=req is not None and req.method == "HEAD")
        except Incomplete:
            if "incomplete_body_kept_open" in self.breaks:
                await asyncio.sleep(10.0)
        except ConnectionError:
            pass
        finally:
            self.writer.close()


class Server:
    def __init__(self, app, breaks: set, workers: int = 1, keep_alive: float = 5.0, trusted=()):
        self.app, self.breaks, self.workers = app, breaks, workers
        self.keep_alive, self.trusted = keep_alive, set(trusted)

    def call_app(self, environ: dict) -> tuple:
        return gateway.call_app(
            self.app,
            environ,
            check_headers="app_headers_unchecked" not in self.breaks,
            write_past_raises="write_past_length_raises_after_sending" in self.breaks,
        )

    async def handle(self, reader, writer) -> None:
        await Connection(self, reader, writer).run()


def _load(spec: str):
    module, _, attr = spec.partition(":")
    return getattr(importlib.import_module(module), attr)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tests.broken.server", description=__doc__.split("\n")[0])
    parser.add_argument("--host", default="127.0.0.1", help="address to listen on (loopback)")
    parser.add_argument("--port", type=int, required=True, help="port to listen on")
    parser.add_argument("--app", default="gatecheck.fixtures.apps.wsgi:app", help="the WSGI app, module:attribute")
    parser.add_argument(
        "--break",
        dest="breaks",
        action="append",
        default=[],
        choices=["none"] + sorted(BREAKS),
        metavar="NAME",
        help="violate one wire rule ('none': break nothing): " + ", ".join(sorted(BREAKS)),
    )
    parser.add_argument(
        "--variant",
        dest="variants",
        action="append",
        default=[],
        choices=sorted(VARIANTS),
        metavar="NAME",
        help="behave another way the texts allow: " + ", ".join(sorted(VARIANTS)),
    )
    parser.add_argument(
        "--workers",
        type=int,
        default=1,
        choices=range(1, 9),
        metavar="N",
        help="worker processes sharing the listening socket (forked after bind; default 1)",
    )
    parser.add_argument(
        "--keep-alive-timeout",
        type=float,
        default=5.0,
        metavar="SECONDS",
        help="seconds an idle kept-alive connection stays open (default 5)",
    )
    parser.add_argument(
        "--trusted-proxy",
        action="append",
        default=[],
        metavar="ADDRESS",
        help="a peer whose X-Forwarded-Proto and X-Forwarded-For are believed (repeat)",
    )
    args = parser.parse_args(argv)
    # a variant is looked up like a break (one name in one set), but it breaks nothing
    server = Server(
        _load(args.app),
        (set(args.breaks) - {"none"}) | set(args.variants),
        args.workers,
        args.keep_alive_timeout,
        args.trusted_proxy,
    )
    sock = socket.create_server((args.host, args.port))
    for _ in range(args.workers - 1):  # pre-fork: the workers share the process group the harness stops
        if os.fork() == 0:
            break

    async def serve():
        listener = await asyncio.start_server(server.handle, sock=sock)
        print(
            f"gatecheck-broken listening on {args.host}:{args.port} breaks={sorted(server.breaks)} pid={os.getpid()}",
            flush=True,
        )
        async with listener:
            await listener.serve_forever()

    try:
        asyncio.run(serve())
    except KeyboardInterrupt:
        pass
    return 0


if __name__ == "__main__":
    sys.exit(main())
