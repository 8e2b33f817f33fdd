"""An HTTP/1.1 server that stops answering in the middle of a streamed response, for the fault tests.

    python -m tests.faults.stall --port PORT [--answer-delay S] [--app APP --vanish-app TEXT]

``GET /ping`` (the readiness probe) gets ``200 ok`` (after ``--answer-delay`` seconds: a server slower than the
probe's first wait); any other request gets a chunked ``200`` head and one chunk of what it read of the body,
then nothing more: the connection stays open and unread. Serving an ``APP`` that holds ``TEXT``, it closes its
listener and exits right after its first ``200 ok``: a server found dead before anyone but its probe used it.
"""

from __future__ import annotations

import argparse
import os
import socket
import sys
import threading
import time


def _serve(conn: socket.socket, delay: float, vanish=None) -> None:
    data = b""
    while b"\r\n\r\n" not in data:
        chunk = conn.recv(65536)
        if not chunk:
            conn.close()
            return
        data += chunk
    head, _, body = data.partition(b"\r\n\r\n")
    if head.split(b" ")[1:2] == [b"/ping"]:
        time.sleep(delay)
        if vanish is not None:  # nothing listens any more once the probe has its answer
            vanish.close()
        conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\nConnection: close\r\n\r\nok")
        conn.close()
        if vanish is not None:
            print("stall: answered the readiness probe, exiting", flush=True)
            os._exit(0)
        return
    print(f"stall: {head.split(b' ')[1].decode(errors='replace')} answered in part, then silence", flush=True)
    first = body[:64] or b"x"
    conn.sendall(b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n%x\r\n%s\r\n" % (len(first), first))
    time.sleep(600)  # silence, the connection open: a server that stopped answering mid-stream


def main(argv: list) -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--answer-delay", type=float, default=0.0)
    parser.add_argument("--app", default="")
    parser.add_argument("--vanish-app", default=None)
    args = parser.parse_args(argv)
    listener = socket.create_server(("127.0.0.1", args.port))
    vanish = listener if args.vanish_app and args.vanish_app in args.app else None
    while True:
        try:
            conn, _ = listener.accept()
        except OSError:  # closed by a vanishing server's probe answer: its thread exits the process
            time.sleep(60)
            continue
        threading.Thread(target=_serve, args=(conn, args.answer_delay, vanish), daemon=True).start()


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
