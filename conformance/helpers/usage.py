"""What a robustness scenario leaves behind: the server tree's RSS and open file descriptors, before and after.

Rules of this module:

1. Resources are measured, not guessed: the server tree's RSS and open file descriptors are sampled before
   and after each scenario (settling for up to :data:`SETTLE` seconds) and recorded as properties of the
   check. Growth is reported; a check fails on it only when it is a clear leak — more than
   :data:`RSS_MARGIN` of resident memory or :data:`FD_MARGIN` descriptors that do not come back — so
   allocator noise never cries wolf.
2. Clients here vanish the rude way (:func:`abort`: a reset, no FIN), and every socket is closed on the
   way out, whatever happened.

The ``usage`` fixture (conformance/conftest.py) hands a :class:`Usage` to the checks of
``test_robustness.py`` and ``test_vanishing_clients.py``.
"""

from __future__ import annotations

import socket
import struct
import time

import psutil

from gatecheck.conformance.client.connect import connect
from gatecheck.conformance.helpers.wire import deliver, describe, request
from gatecheck.servers.tree import descendants

__all__ = ["MiB", "RSS_MARGIN", "FD_MARGIN", "SETTLE", "Usage", "open_fds", "abort", "open_many", "served_promptly"]

MiB = 1 << 20
RSS_MARGIN = 128 * MiB  # resident growth that stays after settling and counts as a leak
FD_MARGIN = 16  # descriptors that stay open after every client left
SETTLE = 5.0  # seconds the server gets to release what the clients held


def open_fds(server) -> int:
    total = 0
    try:
        root = psutil.Process(server.handle.pid)
        procs = [root] + descendants(root)
    except psutil.Error:
        return 0
    for proc in procs:
        try:
            total += proc.num_fds()
        except psutil.Error:
            pass
    return total


class Usage:
    """RSS and fds before a scenario; ``check()`` settles, records and judges what remains after it."""

    def __init__(self, server, record_property) -> None:
        self.server, self.record = server, record_property
        self.rss0, self.fds0 = server.handle.sample().rss_bytes, open_fds(server)
        self.peak = self.rss0

    def sample_peak(self) -> None:
        self.peak = max(self.peak, self.server.handle.sample().rss_bytes)

    def check(self, judge_rss: bool = True) -> None:
        """Settle, record, and fail on descriptors that stay open or (with ``judge_rss``) resident memory
        that stays grown; a scenario that moves far more data than the margin records RSS only, since an
        allocator's high-water mark is not a leak."""
        deadline = time.monotonic() + SETTLE
        while True:
            rss, fds = self.server.handle.sample().rss_bytes, open_fds(self.server)
            settled = (rss - self.rss0 <= RSS_MARGIN or not judge_rss) and fds - self.fds0 <= FD_MARGIN
            if settled or time.monotonic() >= deadline:
                break
            time.sleep(0.2)
        self.record("rss_before_mib", round(self.rss0 / MiB, 1))
        self.record("rss_peak_mib", round(max(self.peak, rss) / MiB, 1))
        self.record("rss_after_mib", round(rss / MiB, 1))
        self.record("fds_before", self.fds0)
        self.record("fds_after", fds)
        assert rss - self.rss0 <= RSS_MARGIN or not judge_rss, (
            f"server RSS grew {self.rss0 / MiB:.0f} → {rss / MiB:.0f} MiB and did not come back within {SETTLE}s"
        )
        assert fds - self.fds0 <= FD_MARGIN, (
            f"server holds {fds - self.fds0} more file descriptors ({self.fds0} → {fds}) {SETTLE}s after "
            f"every client left"
        )


def abort(sock: socket.socket) -> None:
    """Close with a reset (SO_LINGER 0): the client vanishes without a FIN."""
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    except OSError:
        pass
    sock.close()


def open_many(server, count: int, first: bytes | list = b"", within: float = 30.0) -> list:
    """``count`` connections, each sent ``first`` (a list: connection n is sent ``first[n % len(first)]``). One bound
    for the whole set, never ``count`` × the connect timeout: a server that stops accepting fills its backlog, each
    connect() then waits, and the check would run past its deadline instead of failing; taking over ``within`` seconds
    fails (AssertionError)."""
    socks = []
    deadline = time.monotonic() + within
    try:
        for n in range(count):
            remaining = deadline - time.monotonic()
            assert remaining > 0, f"opening {count} connections took over {within:.0f} s ({n} were open)"
            try:
                sock = connect(server, timeout=min(5.0, remaining))
            except socket.timeout:
                raise AssertionError(
                    f"connect() {n + 1} of {count} timed out after {min(5.0, remaining):.1f} s ({n} were open)"
                ) from None
            socks.append(sock)
            fragment = first[n % len(first)] if isinstance(first, list) else first
            if fragment:
                sock.sendall(fragment)
    except BaseException:
        for sock in socks:
            abort(sock)  # a reset, as every client here vanishes: a FIN can be lost (test_robustness.py)
        raise
    return socks


def served_promptly(server, within: float = 5.0) -> None:
    started = time.monotonic()
    ex = deliver(server, request(server), timeout=within)
    took = time.monotonic() - started
    assert ex.final and ex.final[0].body == b"ok" and took < within, (
        f"a normal GET /ping took {took:.1f}s: {describe(ex)}"
    )
