"""A hostile HTTP/1.1 server: it answers the readiness probe like a server, then misbehaves.

    python -m tests.hostile.server --port PORT --mode MODE [--ready-requests N] [--double-fork] [--ignore-sigterm]
                                   [--start-once PATH] [--tls-cert CERT --tls-key KEY] [--record PATH]

Started like any ``--server-cmd`` target (``--server-cmd "{python} -m tests.hostile.server --port {port}
--mode silent" --interface asgi``), it lets the harness's tests prove that no check passes on silence,
garbage, a closed socket or a canned answer (no app runs here: every ``canned-*`` answer is made without
one), that reads are bounded in time and size, that the client sends no request on a connection a response
or its own request ended (the ``drain-*`` modes record any, ``--record``), and that nothing outlives a run.

Rules of this module:

1. Stdlib only, one thread per connection, loopback only.
2. The first ``--ready-requests`` requests (default 1: the readiness probe) get a well-formed
   ``200 ok`` answer; every request after that meets ``MODES[mode]``. ``ok`` stays well-formed forever
   (the control).
3. A request is read up to the end of its head (a body is not read); a connection is served until
   the client closes it.
"""

from __future__ import annotations

import argparse
import base64
import hashlib
import json
import os
import re
import signal
import socket
import ssl
import sys
import threading
import time

__all__ = ["MODES", "main"]

#: mode -> what every request after readiness meets
MODES = {
    "ok": "a well-formed 200 with body 'ok' (the control)",
    "silent": "the request is read and never answered; the connection stays open",
    "garbage": "bytes that are not HTTP, then a close",
    "close": "the connection is closed at once, without a byte",
    "reset": "the connection is reset (RST) at once",
    "bad-header": "a 200 status line followed by a header line that is not a field line, then a body",
    "slow": "a well-formed 200 sent one byte per second",
    "huge-header": "a 200 status line, then an endless header line",
    "endless-body": "a 200 head without Content-Length, then body bytes forever",
    "die": "the process exits (code 3) on the request",
    "die-0": "the process exits with code 0 on the request (with --fork-worker: the worker; the leader forks another)",
    "segfault": "the process dies of SIGSEGV on the request",
    "one-per-connection": "the first request of a connection gets a well-formed 200 'ok' (no close), every later "
    "one on it is read and never answered (a server that does not serve pipelined requests)",
    # canned answers: well-formed, made without running any app (a pass on them is a vacuous pass)
    "canned-close": "a well-formed 200 'ok' with Connection: close, then the connection is closed",
    "canned-10": "a well-formed HTTP/1.0 200 'ok' (no Connection field: not persistent), then the connection is closed",
    # the client's rules (RFC 9112 §9.3, §9.6): every response ends the connection, which the server then keeps
    # open, reading; a request that arrives after it is recorded (--record)
    "drain-close": "a well-formed 200 'ok' with Connection: close; the connection stays open and any later request "
    "on it is recorded",
    "drain-10": "a well-formed HTTP/1.0 200 'ok' without keep-alive; the connection stays open and any later request "
    "on it is recorded",
    # WebSocket: a handshake (a request with Upgrade: websocket) gets a valid 101, then the mode;
    # any other request is read and never answered
    "ws-garbage": "a WebSocket handshake gets a valid 101, then bytes that are not frames, then a close",
    "ws-close": "a WebSocket handshake gets a valid 101, then the connection is closed",
    "ws-endless-frame": "a WebSocket handshake gets a valid 101, then a binary frame declaring 2^62 bytes, "
    "then bytes forever",
    "ws-endless-message": "a WebSocket handshake gets a valid 101, then a text message whose continuation "
    "frames never end",
    "ws-partial-tls-record": "(with --tls-cert) a WebSocket handshake gets a valid 101, then the first bytes of "
    "a TLS record, written under the TLS layer, then silence; the connection stays open",
    # HTTP/2 with prior knowledge: a connection preface gets a SETTINGS frame, then the mode;
    # any other request is read and never answered
    "h2-garbage": "an HTTP/2 connection preface is answered with bytes that are not frames, then a close",
    "h2-endless-data": "an HTTP/2 connection gets SETTINGS and an ACK, then a 200 HEADERS on stream 1 and DATA "
    "frames forever (flow control ignored)",
    "h2-endless-headers": "an HTTP/2 connection gets SETTINGS and an ACK, then a HEADERS frame on stream 1 "
    "without END_HEADERS and CONTINUATION frames forever",
}

OK = b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\nContent-Type: text/plain\r\n\r\nok"
OK_CLOSE = b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\nContent-Type: text/plain\r\nConnection: close\r\n\r\nok"
OK_10 = b"HTTP/1.0 200 OK\r\nContent-Length: 2\r\nContent-Type: text/plain\r\n\r\nok"
_RECORD: list = []  # the --record path, when given

_served = 0
_lock = threading.Lock()
_REFORKED: list = []  # set in a worker forked after another died: no request of it is a readiness probe


def _read_head(conn: socket.socket) -> bytes | None:
    """Read one request head (up to CRLF CRLF); None when the client closed first."""
    data = b""
    while b"\r\n\r\n" not in data:
        try:
            chunk = conn.recv(65536)
        except OSError:
            return None
        if not chunk:
            return None
        data += chunk
        if len(data) > 1 << 20:
            return None
    return data


def _send(conn: socket.socket, data: bytes) -> bool:
    try:
        conn.sendall(data)
        return True
    except OSError:
        return False


GARBAGE = b"\x00\x17garbage \xff\xfe not http at all\r\n\r\n\x01\x02\x03"
H2_PREFACE_HEAD = b"PRI * HTTP/2.0\r\n\r\n"
_GUID = b"258EAFA5-E914-47DA-95CA-C5AB0DC85B11"


def _ws_101(head: bytes) -> bytes | None:
    """A valid 101 for a WebSocket handshake head (RFC 6455 §4.2.2); None for any other request."""
    fields = {}
    for line in head.split(b"\r\n")[1:]:
        name, _, value = line.partition(b":")
        fields[name.strip().lower()] = value.strip()
    if fields.get(b"upgrade", b"").lower() != b"websocket" or b"sec-websocket-key" not in fields:
        return None
    accept = base64.b64encode(hashlib.sha1(fields[b"sec-websocket-key"] + _GUID).digest())
    return (
        b"HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
        b"Sec-WebSocket-Accept: " + accept + b"\r\n\r\n"
    )


def _frame(ftype: int, flags: int, stream: int, payload: bytes) -> bytes:
    return len(payload).to_bytes(3, "big") + bytes([ftype, flags]) + stream.to_bytes(4, "big") + payload


def _forever(conn: socket.socket, data: bytes) -> bool:
    """Send ``data`` until the client goes; its input is drained meanwhile, so it never blocks on us."""
    threading.Thread(target=_drain, args=(conn,), daemon=True).start()
    while _send(conn, data):
        pass
    return False


def _drain(conn: socket.socket) -> None:
    try:
        while conn.recv(65536):
            pass
    except OSError:
        pass


def _ws_mode(conn: socket.socket, mode: str, head: bytes) -> bool:
    reply = _ws_101(head)
    if reply is None or not _send(conn, reply):
        return _hostile(conn, "silent")
    if mode == "ws-garbage":
        _send(conn, GARBAGE)
        return False
    if mode == "ws-endless-frame":
        return _send(conn, b"\x82\x7f" + (1 << 62).to_bytes(8, "big")) and _forever(conn, b"w" * 65536)
    if mode == "ws-endless-message":
        return _send(conn, b"\x01\x05start") and _forever(conn, b"\x00\x7e\xff\xff" + b"m" * 65535)
    if mode == "ws-partial-tls-record":  # an application-data record's header, cut short: a TLS read waits
        os.write(conn.fileno(), b"\x17\x03")
        return _hostile(conn, "silent")
    return False  # ws-close


def _h2_mode(conn: socket.socket, mode: str, head: bytes) -> bool:
    if not head.startswith(H2_PREFACE_HEAD):
        return _hostile(conn, "silent")
    if mode == "h2-garbage":
        _send(conn, GARBAGE)
        return False
    if not _send(conn, _frame(4, 0, 0, b"") + _frame(4, 1, 0, b"")):  # SETTINGS, and an ACK of the client's
        return False
    time.sleep(0.2)  # the client's request is on its way
    if mode == "h2-endless-data":
        return _send(conn, _frame(1, 4, 1, b"\x88")) and _forever(conn, _frame(0, 0, 1, b"d" * 16384) * 4)
    return _send(conn, _frame(1, 0, 1, b"\x88")) and _forever(conn, _frame(9, 0, 1, b"\x40" * 16384) * 4)


def _client_ended(head: bytes) -> bool:
    """The request's own head ends its connection: the "close" option, or HTTP/1.0 without keep-alive."""
    lines = head.split(b"\r\n")
    fields = b",".join(ln.partition(b":")[2] for ln in lines[1:] if ln.lower().startswith(b"connection:")).lower()
    options = [o.strip() for o in fields.split(b",")]
    return b"close" in options or (lines[0].endswith(b" HTTP/1.0") and b"keep-alive" not in options)


def _record(why: str, head: bytes) -> None:
    """A request that arrived on a connection already ended (``why``), appended to --record as one JSON line."""
    line = head.split(b"\r\n", 1)[0].decode("latin-1")
    token = next(
        (
            ln.partition(b":")[2].strip().decode("latin-1")
            for ln in head.split(b"\r\n")
            if ln.lower().startswith(b"x-gatecheck-token:")
        ),
        None,
    )
    if _RECORD:
        with open(_RECORD[0], "a", encoding="utf-8") as fh:
            fh.write(json.dumps({"after": why, "request": line[:200], "token": token}) + "\n")


_CLIENT_CLOSE = "the client's own close"


def _drain_mode(conn: socket.socket, mode: str, head: bytes, ended: list) -> bool:
    """drain-*: record a request sent after the connection ended, answer every one, never close."""
    if ended:
        _record(ended[0], head)
    if not ended and _client_ended(head):
        ended.append(_CLIENT_CLOSE)
    if not _send(conn, OK_CLOSE if mode == "drain-close" else OK_10):
        return False
    if not ended:
        ended.append("a response saying close" if mode == "drain-close" else "an HTTP/1.0 response without keep-alive")
        _discard_pipelined(conn)
    return True


def _discard_pipelined(conn: socket.socket) -> None:
    """Drop what the client sent before it could read the response that ended the connection (pipelined
    requests: allowed, RFC 9112 §9.3.2); only what comes later is recorded."""
    conn.settimeout(0.05)
    try:
        while conn.recv(65536):
            pass
    except OSError:
        pass
    finally:
        conn.settimeout(None)


def _hostile(conn: socket.socket, mode: str, head: bytes = b"", nth: int = 1) -> bool:
    """Meet one request (``head``, the ``nth`` on its connection) with ``mode``; return whether to keep
    reading this connection."""
    if mode.startswith("ws-"):
        return _ws_mode(conn, mode, head)
    if mode.startswith("h2-"):
        return _h2_mode(conn, mode, head)
    if mode == "ok":
        return _send(conn, OK)
    if mode in ("canned-close", "canned-10"):
        _send(conn, OK_CLOSE if mode == "canned-close" else OK_10)
        return False
    if mode == "one-per-connection":
        if nth == 1:
            return _send(conn, OK)
        mode = "silent"
    if mode == "silent":
        while True:  # read (and drop) whatever comes, answer nothing, until the client leaves
            try:
                if not conn.recv(65536):
                    return False
            except OSError:
                return False
    if mode == "garbage":
        _send(conn, GARBAGE)
        return False
    if mode == "close":
        return False
    if mode == "reset":
        conn.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, b"\x01\x00\x00\x00\x00\x00\x00\x00")
        return False
    if mode == "bad-header":
        _send(conn, b"HTTP/1.1 200 OK\r\nthis is not a field line\r\nContent-Length: 2\r\n\r\nok")
        return True
    if mode == "slow":
        for byte in OK:
            if not _send(conn, bytes([byte])):
                return False
            time.sleep(1.0)
        return True
    if mode == "huge-header":
        if not _send(conn, b"HTTP/1.1 200 OK\r\nX-Huge: "):
            return False
        while _send(conn, b"a" * 65536):
            pass
        return False
    if mode == "endless-body":
        if not _send(conn, b"HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\n\r\n"):
            return False
        while _send(conn, b"b" * 65536):
            pass
        return False
    if mode == "die":
        os._exit(3)
    if mode == "die-0":
        os._exit(0)
    if mode == "segfault":
        os.kill(os.getpid(), signal.SIGSEGV)
        time.sleep(5)
    raise ValueError(mode)


def _serve(conn: socket.socket, mode: str, ready_requests: int, tls: ssl.SSLContext | None = None) -> None:
    global _served
    if tls is not None:
        try:
            conn.settimeout(10)
            conn = tls.wrap_socket(conn, server_side=True)
            conn.settimeout(None)
        except OSError:
            conn.close()
            return
    if mode.startswith("drain-"):
        return _serve_drain(conn, mode, ready_requests)
    with conn:
        nth = 0
        while True:
            head = _read_head(conn)
            if head is None:
                return
            nth += 1
            with _lock:
                _served += 1
                ready = _served <= ready_requests and not _REFORKED
            keep = _send(conn, OK) if ready else _hostile(conn, mode, head, nth)
            if not keep:
                return


_REQUEST_LINE = re.compile(rb"[A-Z]+ [^ ]+ HTTP/\d\.\d")


def _serve_drain(conn: socket.socket, mode: str, ready_requests: int) -> None:
    """drain-*: request by request, each body skipped (Content-Length, or up to a last chunk), so only a request
    line that begins a new request on the connection counts (``_drain_mode``)."""
    global _served
    buffer, ended = b"", []
    with conn:
        while True:
            while b"\r\n\r\n" not in buffer:
                chunk = _recv(conn)
                if not chunk:
                    return
                buffer += chunk
            head, _, buffer = buffer.partition(b"\r\n\r\n")
            head = head.lstrip(b"\r\n")
            buffer = _skip_body(conn, head, buffer)
            if buffer is None:
                return
            if not _REQUEST_LINE.fullmatch(head.split(b"\r\n", 1)[0]):
                continue  # not a request: nothing to record, nothing to answer
            with _lock:
                _served += 1
                ready = _served <= ready_requests
            if ready:
                if not _send(conn, OK):
                    return
                continue
            closed_before = bool(ended)
            if not _drain_mode(conn, mode, head, ended):
                return
            if not closed_before and ended and ended[0] != _CLIENT_CLOSE:
                buffer = b""  # sent before the client could read the response that ended it: pipelined


def _recv(conn: socket.socket) -> bytes:
    try:
        return conn.recv(65536)
    except OSError:
        return b""


def _skip_body(conn: socket.socket, head: bytes, buffer: bytes):
    """What follows the request's body in ``buffer`` (reading more as needed); None when the client left."""
    fields = {ln.partition(b":")[0].strip().lower(): ln.partition(b":")[2].strip() for ln in head.split(b"\r\n")[1:]}
    if b"chunked" in fields.get(b"transfer-encoding", b"").lower():
        while b"0\r\n\r\n" not in buffer:
            chunk = _recv(conn)
            if not chunk:
                return None
            buffer += chunk
        return buffer.partition(b"0\r\n\r\n")[2]
    try:
        need = int(fields.get(b"content-length", b"0"))
    except ValueError:
        need = 0
    while len(buffer) < need:
        chunk = _recv(conn)
        if not chunk:
            return None
        buffer += chunk
    return buffer[need:]


def _fork_workers() -> None:
    """Return in a forked worker; the leader stays here, forking a new worker whenever one exits (so a worker
    that dies leaves the server running, as a pre-forking server's master does)."""
    while True:
        pid = os.fork()
        if pid == 0:
            return
        _, status = os.waitpid(pid, 0)
        print(f"hostile: worker {pid} exited ({status}); forking another", flush=True)
        _REFORKED.append(pid)


def _double_fork() -> None:
    """Leave the server's process group and session: the listener lives on in a grandchild."""
    if os.fork() > 0:
        signal.pause()  # the leader stays, so the harness sees a running server
        os._exit(0)
    os.setsid()
    if os.fork() > 0:
        os._exit(0)
    print(f"hostile: daemon pid {os.getpid()} in session {os.getsid(0)}", flush=True)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tests.hostile.server", description=__doc__.splitlines()[0])
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument(
        "--mode", choices=sorted(MODES), default="ok", help="; ".join(f"{k}: {v}" for k, v in MODES.items())
    )
    parser.add_argument(
        "--ready-requests",
        type=int,
        default=1,
        help="requests answered well before the mode applies (default 1: the readiness probe)",
    )
    parser.add_argument(
        "--double-fork",
        action="store_true",
        help="serve from a grandchild in a new session (escapes the process group)",
    )
    parser.add_argument("--ignore-sigterm", action="store_true", help="ignore SIGTERM")
    parser.add_argument(
        "--start-once",
        metavar="PATH",
        help="start only when PATH does not exist (and create it): a restart fails, exit code 4",
    )
    parser.add_argument("--tls-cert", metavar="CERT", help="serve TLS with this certificate (and --tls-key)")
    parser.add_argument("--tls-key", metavar="KEY", help="the certificate's private key")
    parser.add_argument("--record", metavar="PATH", help="drain-*: append each request sent after a close here")
    parser.add_argument(
        "--fork-worker",
        action="store_true",
        help="serve from a forked worker process; the leader forks another when it dies",
    )
    parser.add_argument("--workers", type=int, default=1, help="accepted and ignored (a template's {workers})")
    args = parser.parse_args(argv)
    if args.record:
        _RECORD.append(args.record)
    if bool(args.tls_cert) != bool(args.tls_key):
        parser.error("--tls-cert and --tls-key go together")
    if args.mode == "ws-partial-tls-record" and not args.tls_cert:
        parser.error("--mode ws-partial-tls-record needs --tls-cert and --tls-key")
    tls = None
    if args.tls_cert:
        tls = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        tls.load_cert_chain(args.tls_cert, args.tls_key)
    if args.start_once:
        try:
            open(args.start_once, "x").close()
        except FileExistsError:
            print(f"hostile: refusing to start again ({args.start_once} exists)", flush=True)
            return 4
    if args.ignore_sigterm:
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
    listener = socket.socket(socket.AF_INET6 if ":" in args.host else socket.AF_INET, socket.SOCK_STREAM)
    listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    listener.bind((args.host, args.port))
    listener.listen(128)
    if args.double_fork:
        _double_fork()
        if args.ignore_sigterm:
            signal.signal(signal.SIGTERM, signal.SIG_IGN)
    if args.fork_worker:
        _fork_workers()
    print(f"hostile server ({args.mode}) on {args.host}:{args.port}, pid {os.getpid()}", flush=True)
    while True:
        conn, _ = listener.accept()
        threading.Thread(target=_serve, args=(conn, args.mode, args.ready_requests, tls), daemon=True).start()


if __name__ == "__main__":
    sys.exit(main())
