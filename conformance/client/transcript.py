"""What a check sent and received: the bytes of its last connections, for its failure report.

    transcript.begin()                  # the plugin, as a check's call starts: forget the previous check's
    sock = connect(server)              # every socket ``connect`` opens records what goes through it
    text = transcript.render()          # the last connections of this check, capped and escaped

Every socket of a check is opened by :func:`connect.connect`, so recording there sees every byte a check sends
or reads: a cleartext socket records its ``send``/``sendall``/``recv`` calls, a TLS one (``TlsStream``) the
plaintext on either side of its TLS layer. The field's clients of ``interop.py`` are recorded where they read
through a socket of ``connect`` (websockets over ``ws``); httpx opens its own.

Rules of this module:

1. Bounded: the last :data:`KEPT` connections of a check are kept, each with its first and last :data:`EDGE`
   runs of bytes (a run: what went one way before the other way spoke), each run's first :data:`RUN_KEEP`
   bytes (the rest are counted); rendering shows at most :data:`SHOWN` bytes per run, escaped, and the render
   is cut at :data:`RENDER_CAP` characters.
2. It judges nothing and knows no protocol: bytes out, bytes in, and how reads ended (the peer closed, reset,
   or a read's deadline passed).
3. Thread-safe: a check's connections may be used from several threads (one lock).
"""

from __future__ import annotations

import socket
import threading
import time
from collections import deque

__all__ = [
    "begin",
    "opened",
    "connected_since",
    "render",
    "escape",
    "recording",
    "recorded_recv",
    "RecordedSocket",
    "Connection",
    "SENT",
    "RECEIVED",
    "KEPT",
    "EDGE",
    "RUN_KEEP",
    "SHOWN",
    "RENDER_CAP",
]

KEPT = 8  # connections of one check kept (the last ones)
EDGE = 16  # runs kept at either end of a connection (a run: bytes in one direction, or a note)
RUN_KEEP = 4096  # bytes kept per run; the rest are counted
SHOWN = 1024  # bytes shown per run
RENDER_CAP = 6000  # characters of a rendered transcript
RENDERED = 2  # connections rendered: the last ones that carried bytes

SENT, RECEIVED = "→", "←"
_LOCK = threading.Lock()
_connections: deque = deque(maxlen=KEPT)
_opened = 0  # connections opened since begin(), kept or not
_PEERS_KEPT = 512  # peers whose last connection time is kept (the oldest forgotten first)
_last_connect: dict = {}  # port -> time.time() of the last connection opened to it (loopback; begin() keeps them)


class Connection:
    """One connection's record: runs of bytes by direction (``[direction, kept bytes, total]``) and notes
    (``["note", text, 0]``). The first :data:`EDGE` runs and the last :data:`EDGE` are kept, each with its
    first :data:`RUN_KEEP` bytes; the runs between them are counted."""

    def __init__(self, peer, tls: bool) -> None:
        self.peer, self.tls = peer, tls
        self.head: list = []
        self.tail: deque = deque(maxlen=EDGE)
        self.skipped = [0, 0]  # runs and bytes between the head and the tail

    def _last(self):
        return self.tail[-1] if self.tail else (self.head[-1] if self.head else None)

    def _start(self, run: list) -> None:
        if len(self.head) < EDGE:
            self.head.append(run)
            return
        if len(self.tail) == EDGE:
            dropped = self.tail[0]
            self.skipped[0] += 1
            self.skipped[1] += dropped[2]
        self.tail.append(run)

    def add(self, direction: str, data) -> None:
        if not data:
            return
        with _LOCK:
            run = self._last()
            if run is None or run[0] != direction:
                run = [direction, bytearray(), 0]
                self._start(run)
            room = RUN_KEEP - len(run[1])
            if room > 0:
                run[1] += bytes(data[:room])
            run[2] += len(data)

    def note(self, text: str) -> None:
        with _LOCK:
            run = self._last()
            if not (run is not None and run[0] == "note" and run[1] == text):
                self._start(["note", text, 0])

    @property
    def runs(self) -> list:
        with _LOCK:
            gap = [["gap", f"{self.skipped[0]} runs of {self.skipped[1]} bytes not kept", 0]] if self.skipped[0] else []
            return [list(run) for run in self.head] + gap + [list(run) for run in self.tail]

    @property
    def carried(self) -> bool:
        return any(run[0] in (SENT, RECEIVED) for run in self.head)


def begin() -> None:
    """Forget the connections recorded so far (a new check's call begins)."""
    global _opened
    with _LOCK:
        _connections.clear()
        _opened = 0


def opened(peer, tls: bool = False) -> Connection:
    """A new connection's record, kept among the check's last :data:`KEPT`."""
    global _opened
    record = Connection(peer, tls)
    with _LOCK:
        _connections.append(record)
        _opened += 1
        key = peer[1] if len(peer) > 1 else None
        _last_connect.pop(key, None)
        _last_connect[key] = time.time()
        if len(_last_connect) > _PEERS_KEPT:
            _last_connect.pop(next(iter(_last_connect)))
    return record


def connected_since(address, since: float) -> bool:
    """Whether a connection to ``address`` (host, port; loopback) was opened at or after ``since`` (a
    ``time.time()``)."""
    with _LOCK:
        return _last_connect.get(address[1], 0.0) >= since


def escape(data: bytes, limit: int = SHOWN, total: int | None = None) -> list:
    """``data`` as lines of escaped text: printable ASCII as it is, CR and LF as ``\\r`` ``\\n`` (a line ends
    after each LF), every other byte ``\\xNN``; at most ``limit`` bytes, then how many more there were (of
    ``total``, when ``data`` is the start of more)."""
    shown = data[:limit]
    rest = (len(data) if total is None else total) - len(shown)
    lines, line = [], []
    for byte in shown:
        if byte == 0x0A:
            line.append("\\n")
            lines.append("".join(line))
            line = []
        elif byte == 0x0D:
            line.append("\\r")
        elif byte == 0x5C:
            line.append("\\\\")
        elif 0x20 <= byte < 0x7F:
            line.append(chr(byte))
        elif byte == 0x09:
            line.append("\\t")
        else:
            line.append(f"\\x{byte:02x}")
        if len(line) >= 100:
            lines.append("".join(line))
            line = []
    if line:
        lines.append("".join(line))
    if rest > 0:
        lines.append(f"... ({rest} more bytes)")
    return lines


def _render_one(record: Connection, number: int) -> list:
    host, port = (record.peer + (None, None))[:2] if isinstance(record.peer, tuple) else (record.peer, None)
    where = f"{host}:{port}" if port is not None else str(host)
    out = [f"connection {number} ({where}{', TLS' if record.tls else ''}):"]
    for direction, data, total in record.runs:
        if direction == "note":
            out.append(f"  {RECEIVED} ({data})")
            continue
        if direction == "gap":
            out.append(f"  ... ({data})")
            continue
        word = "sent" if direction == SENT else "received"
        out.append(f"  {direction} {word} {total} bytes:")
        out += [f"    {line}" for line in escape(bytes(data), SHOWN, total)]
    return out


def render() -> str:
    """The check's last connections that carried bytes (at most :data:`RENDERED`), older first; "" when none."""
    with _LOCK:
        records, count = list(_connections), _opened
    carried = [(i, r) for i, r in enumerate(records, count - len(records) + 1) if r.carried]
    if not carried:
        return ""
    shown = carried[-RENDERED:]
    out = []
    if count > len(shown):
        out.append(f"(the check opened {count} connections; the last {len(shown)} that carried bytes:)")
    for number, record in shown:
        out += _render_one(record, number)
    text = "\n".join(out)
    return text if len(text) <= RENDER_CAP else text[:RENDER_CAP] + "\n... (cut)"


class RecordedSocket(socket.socket):
    """A cleartext socket that records what it sends and receives (``connect`` makes every socket one)."""

    transcript: Connection

    def send(self, data, flags: int = 0) -> int:
        try:
            sent = super().send(data, flags)
        except OSError as exc:
            self.transcript.note(f"send failed: {type(exc).__name__}")
            raise
        self.transcript.add(SENT, memoryview(data)[:sent])
        return sent

    def sendall(self, data, flags: int = 0) -> None:
        self.transcript.add(SENT, data)
        try:
            super().sendall(data, flags)
        except OSError as exc:
            self.transcript.note(f"send failed: {type(exc).__name__}")
            raise

    def recv(self, size: int, flags: int = 0) -> bytes:
        return recorded_recv(self.transcript, super().recv, size, flags)


def recorded_recv(record: Connection, recv, size: int, flags: int = 0) -> bytes:
    try:
        data = recv(size, flags) if flags else recv(size)
    except socket.timeout:
        record.note("no byte before the read's deadline")
        raise
    except (ConnectionResetError, ConnectionAbortedError) as exc:
        record.note(f"the server reset the connection ({type(exc).__name__})")
        raise
    except OSError as exc:  # ssl.SSLError included
        record.note(f"the read failed: {type(exc).__name__}: {exc}"[:200])
        raise
    if data:
        record.add(RECEIVED, data)
    else:
        record.note("the server closed the connection")
    return data


def recording(raw: socket.socket) -> RecordedSocket:
    """``raw`` as a :class:`RecordedSocket` (the same file descriptor and timeout), recorded from now on."""
    timeout = raw.gettimeout()
    sock = RecordedSocket(raw.family, raw.type, raw.proto, fileno=raw.detach())
    sock.settimeout(timeout)
    try:
        peer = sock.getpeername()
    except OSError:
        peer = ("?", None)
    sock.transcript = opened(peer)
    return sock
