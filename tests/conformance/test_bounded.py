"""conformance/client/bounded.py: every way a bounded read ends, over a real socket pair."""

import socket
import threading
import time

from gatecheck.conformance.client.bounded import CLOSED, DONE, OVERFLOW, RESET, TIMEOUT, read_until


def _pair():
    a, b = socket.socketpair()
    return a, b


def test_done_when_the_predicate_holds():
    a, b = _pair()
    with a, b:
        b.sendall(b"HTTP/1.1 200 OK\r\n\r\nrest")
        buf = bytearray()
        assert read_until(a, buf, lambda x: b"\r\n\r\n" in x, deadline=time.monotonic() + 2) == DONE
        assert buf.startswith(b"HTTP/1.1 200")


def test_timeout_on_silence_keeps_what_came():
    a, b = _pair()
    with a, b:
        b.sendall(b"HTTP/1.1")
        buf = bytearray()
        start = time.monotonic()
        assert read_until(a, buf, lambda x: False, deadline=start + 0.3) == TIMEOUT
        assert bytes(buf) == b"HTTP/1.1" and time.monotonic() - start < 2


def test_closed_on_eof():
    a, b = _pair()
    with a:
        b.sendall(b"x")
        b.close()
        buf = bytearray()
        assert read_until(a, buf, lambda x: False, deadline=time.monotonic() + 2) == CLOSED
        assert bytes(buf) == b"x"


def test_overflow_stops_at_the_cap_of_an_endless_sender():
    a, b = _pair()
    stop = threading.Event()

    def flood():
        try:
            while not stop.is_set():
                b.sendall(b"a" * 65536)
        except OSError:
            pass

    t = threading.Thread(target=flood, daemon=True)
    t.start()
    with a:
        buf = bytearray()
        assert read_until(a, buf, lambda x: False, deadline=time.monotonic() + 5, cap=100_000) == OVERFLOW
        assert len(buf) == 100_000
    stop.set()
    b.close()
    t.join(2)


def test_reset_is_its_own_end():
    srv = socket.create_server(("127.0.0.1", 0))
    with srv:
        c = socket.create_connection(srv.getsockname())
        s, _ = srv.accept()
        s.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, b"\x01\x00\x00\x00\x00\x00\x00\x00")
        s.close()
        with c:
            buf = bytearray()
            assert read_until(c, buf, lambda x: False, deadline=time.monotonic() + 2) == RESET
