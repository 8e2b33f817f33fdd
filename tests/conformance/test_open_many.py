"""``open_many`` (conformance/helpers/usage.py) fails within its bound against a listener that never accepts.

uWSGI's http-socket and cheroot stop accepting once their worker is busy: the backlog fills and every further
connect() waits. Opening 500 connections one 5 s connect timeout at a time ran the idle-connections check past
its 60 s deadline (a timeout, never "known"); one bound for the whole set makes it fail with a message instead.
A real listening socket that never calls accept() plays that server.
"""

from __future__ import annotations

import socket
import time
from types import SimpleNamespace

import pytest

from gatecheck.conformance.helpers.usage import open_many


def test_open_many_fails_within_its_bound_when_the_backlog_is_full():
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(0)  # never accepted: the kernel's backlog fills after a connection or two
    server = SimpleNamespace(address=listener.getsockname())
    started = time.monotonic()
    try:
        with pytest.raises(AssertionError, match="took over|timed out"):
            open_many(server, 500, within=3.0)
    finally:
        listener.close()
    assert time.monotonic() - started < 6.0


def test_open_many_opens_them_all_on_a_listener_with_room():
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(64)
    server = SimpleNamespace(address=listener.getsockname())
    try:
        socks = open_many(server, 20, within=3.0)
        assert len(socks) == 20
        for sock in socks:
            sock.close()
    finally:
        listener.close()
