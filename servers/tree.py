"""Which processes belong to one server, and killing them without ever touching anyone else's.

A server's processes are found four ways, because each alone can miss some:

1. **Its tree**: the leader and its descendants (``psutil`` children, recursive). A worker that
   double-forks and calls ``setsid`` leaves the tree within milliseconds (it is re-parented to init)
   and leaves the process group too, so neither the tree nor ``killpg`` reaches it.
2. **A sampled record**: a background thread samples the tree every ``SAMPLE_INTERVAL`` s while the
   server runs and records each member as ``pid -> create time``. A process that left the tree after it
   was seen is still known; the create time tells it apart from an unrelated process that got the PID
   later (PID reuse).
3. **An inherited token**: the server is started with ``GATECHECK_SERVER_TOKEN=<128 random bits>`` in
   its environment. Every descendant inherits it (whatever its session, group or parent), so a scan of
   ``/proc/*/environ`` finds a double-forked daemon that no sample saw. Only a process that clears its
   environment escapes this; 1 and 4 cover it while it is still in the tree or listens on our port.
4. **The port's listener**: whoever listens on the server's port, but only if it is provably ours: it
   carries the token, is in the record with the same create time, or has a recorded ancestor.

Rules: nothing is signalled unless it is ours by 2 or 3 (a listener by 4 must also pass 2 or 3, or
descend from a recorded process); every signal is preceded by a create-time check, so a reused PID is
never signalled. No cgroup is used: one would contain every process by construction, but needs a
delegated, writable cgroup tree, which unprivileged CI runners and containers often lack; these four
ways need nothing but ``/proc`` of our own processes.
"""

from __future__ import annotations

import ipaddress
import os
import secrets
import socket
import threading
import time

import psutil

__all__ = [
    "TOKEN_ENV",
    "ProcessTree",
    "descendants",
    "new_token",
    "kill_if_ours",
    "token_bearers",
    "wait_gone",
    "is_loopback",
    "SAMPLE_INTERVAL",
]

TOKEN_ENV = "GATECHECK_SERVER_TOKEN"
SAMPLE_INTERVAL = 0.5  # seconds between samples of a running server's tree (descendants(): its own /proc entries)


def descendants(root: psutil.Process) -> list:
    """``root``'s descendants, as ``root.children(recursive=True)`` finds them, from the kernel's per-thread
    ``/proc/<pid>/task/<tid>/children`` lists: a walk of the tree alone, where psutil reads the ``stat`` of
    every process on the host (~5 ms with 250 processes, for each sample of each running server). Where
    those lists are missing (a kernel without CONFIG_PROC_CHILDREN), psutil's walk. A child created before
    its parent is a reused PID and is left out, as psutil does."""
    if not os.path.exists(f"/proc/{root.pid}/task/{root.pid}/children"):
        if not os.path.exists(f"/proc/{root.pid}"):
            return []  # it ended
        return root.children(recursive=True)  # no per-task children lists on this kernel
    found: list = []
    todo = [root]
    while todo:
        parent = todo.pop()
        try:
            born = parent.create_time()
            tasks = os.listdir(f"/proc/{parent.pid}/task")
        except (OSError, psutil.Error):
            continue  # the parent ended meanwhile
        pids = set()
        for tid in tasks:
            try:
                with open(f"/proc/{parent.pid}/task/{tid}/children", encoding="ascii") as fh:
                    pids.update(int(pid) for pid in fh.read().split())
            except (OSError, ValueError):
                continue  # that thread ended meanwhile: its siblings' children still count
        for pid in sorted(pids):
            try:
                child = psutil.Process(pid)
                if child.create_time() < born:
                    continue
            except psutil.Error:
                continue
            found.append(child)
            todo.append(child)
    return found


def new_token() -> str:
    return secrets.token_hex(16)


def _create_time(pid: int) -> float | None:
    try:
        return psutil.Process(pid).create_time()
    except psutil.Error:
        return None


def kill_if_ours(pid: int, create_time: float) -> bool:
    """SIGKILL ``pid`` only if it is still the process we recorded (same create time) and not a zombie.

    Returns whether a signal was sent. A PID reused by an unrelated process has another create time."""
    try:
        proc = psutil.Process(pid)
        if proc.create_time() != create_time or proc.status() == psutil.STATUS_ZOMBIE:
            return False
        proc.kill()  # psutil checks the create time once more right before the signal
        return True
    except psutil.Error:
        return False


def token_bearers(token: str, since: float) -> dict:
    """``pid -> create time`` of every process (but this one) whose environment carries ``token`` and
    that was created at or after ``since`` (epoch seconds)."""
    found = {}
    me = os.getpid()
    for proc in psutil.process_iter():
        try:
            if proc.pid == me or proc.create_time() < since:
                continue
            if proc.environ().get(TOKEN_ENV) == token:
                found[proc.pid] = proc.create_time()
        except psutil.Error:
            continue
    return found


class ProcessTree:
    """The record of one server's processes: ``pid -> create time`` of every member ever seen."""

    def __init__(self, leader_pid: int, token: str, port: int | None = None) -> None:
        self.leader_pid = leader_pid
        self.token = token
        self.port = port
        created = _create_time(leader_pid)
        # A leader already gone (exec failed, exited at once) still bounds the token scan below.
        self.started = created if created is not None else psutil.boot_time()
        self.known: dict[int, float] = {leader_pid: created} if created is not None else {}
        self.leader_gone_at: float | None = None  # time.time() when a sample first found the leader gone
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._sampler = threading.Thread(target=self._sample_forever, name=f"tree-{leader_pid}", daemon=True)
        self._sampler.start()

    # -- recording ---------------------------------------------------------------------------------

    def record(self, pid: int, create_time: float) -> None:
        """Remember ``pid`` as ours, as the process created at ``create_time`` (a newer sighting wins)."""
        with self._lock:
            self.known[pid] = create_time

    def live(self, scan_tokens: bool = False) -> list:
        """The live members: the leader's current tree plus every recorded process still running (and,
        with ``scan_tokens``, every process carrying the token: a scan of all processes, ~20 ms)."""
        procs = {}
        try:
            root = psutil.Process(self.leader_pid)
            if self.known.get(self.leader_pid) == root.create_time():
                for proc in [root] + descendants(root):
                    procs[proc.pid] = proc
        except psutil.Error:
            pass
        if scan_tokens:
            for pid, created in token_bearers(self.token, self.started).items():
                self.record(pid, created)
        with self._lock:
            known = dict(self.known)
        for pid, created in known.items():
            if pid in procs:
                continue
            try:
                proc = psutil.Process(pid)
                if proc.create_time() == created:
                    procs[pid] = proc
            except psutil.Error:
                continue
        for proc in procs.values():
            try:
                self.record(proc.pid, proc.create_time())
            except psutil.Error:
                continue
        return list(procs.values())

    def _sample_forever(self) -> None:
        while not self._stop.wait(SAMPLE_INTERVAL):
            self.live()
            if self.leader_gone_at is None and not _still(self.leader_pid, self.known.get(self.leader_pid, -1.0)):
                self.leader_gone_at = time.time()  # when a server died, within a sample, whoever notices it later

    # -- ownership ---------------------------------------------------------------------------------

    def owns(self, proc) -> bool:
        """Whether ``proc`` is provably ours: recorded, carrying the token, or below a recorded process."""
        try:
            if self.known.get(proc.pid) == proc.create_time():
                return True
            if proc.create_time() >= self.started and proc.environ().get(TOKEN_ENV) == self.token:
                return True
            return any(self.known.get(p.pid) == p.create_time() for p in proc.parents())
        except psutil.Error:
            return False

    def listeners(self) -> list:
        """(pid, ip, port) of every listening TCP socket of the live members."""
        table = _listen_table()
        found = []
        for proc in self.live(scan_tokens=True):
            if table is not None:
                found += [(proc.pid, *table[i]) for i in _socket_inodes(proc.pid) if i in table]
                continue
            try:
                conns = proc.net_connections(kind="tcp")
            except psutil.Error:
                continue
            found += [(proc.pid, c.laddr.ip, c.laddr.port) for c in conns if c.status == psutil.CONN_LISTEN]
        return found

    def port_owners(self) -> list:
        """Processes (ours or not) listening on ``self.port``, on any address: every process holding one of
        the port's listening sockets (the kernel's table, then each process's socket descriptors; psutil's
        ``net_connections`` decodes every connection of the host, ~0.15-0.3 s with the thousands a run leaves
        in TIME_WAIT, at every start and stop)."""
        if self.port is None:
            return []
        inodes = _listen_inodes(self.port)
        if inodes is None:  # no kernel tables to read (not Linux): psutil's way
            return self._port_owners_by_psutil()
        if not inodes:
            return []
        owners = []
        for pid in _all_pids():
            if _socket_inodes(pid) & inodes:
                try:
                    owners.append(psutil.Process(pid))
                except psutil.Error:
                    continue
        return owners

    def _port_owners_by_psutil(self) -> list:
        pids = set()
        try:
            for conn in psutil.net_connections(kind="inet"):
                if conn.status == psutil.CONN_LISTEN and conn.laddr.port == self.port and conn.pid:
                    pids.add(conn.pid)
        except psutil.Error:  # unprivileged on some systems: only our own members can be asked
            pids = {pid for pid, _ip, port in self.listeners() if port == self.port}
        owners = []
        for pid in pids:
            try:
                owners.append(psutil.Process(pid))
            except psutil.Error:
                continue
        return owners

    # -- killing -----------------------------------------------------------------------------------

    def kill_all(self, rounds: int = 5) -> list:
        """SIGKILL every member found by any of the four ways, until none is left (a member may fork
        while we kill). Returns the listeners on our port that are not ours and were left alone."""
        strangers = []
        for _ in range(rounds):
            targets = {p.pid: p.create_time() for p in self.live() if _alive(p)}
            for pid, created in token_bearers(self.token, self.started).items():
                self.record(pid, created)
                targets[pid] = created
            strangers = []
            for proc in self.port_owners():
                if self.owns(proc):
                    try:
                        targets[proc.pid] = proc.create_time()
                    except psutil.Error:
                        continue
                else:
                    strangers.append(proc.pid)
            targets.pop(os.getpid(), None)
            if not any([kill_if_ours(pid, created) for pid, created in targets.items()]):
                break
            wait_gone(targets, timeout=2.0)
        return strangers

    def close(self) -> None:
        self._stop.set()
        if self._sampler is not threading.current_thread():
            self._sampler.join(timeout=2)


def _listen_table() -> dict | None:
    """``socket inode -> (ip, port)`` of every listening TCP socket, from the kernel's tables (one cheap
    read; psutil's per-process ``net_connections`` re-reads them per process, ~50 ms each on a host with
    thousands of sockets). None when the tables cannot be read (not Linux)."""
    table, seen_a_table = {}, False
    for name, family in (("/proc/net/tcp", socket.AF_INET), ("/proc/net/tcp6", socket.AF_INET6)):
        try:
            with open(name, encoding="ascii") as f:
                rows = f.read().splitlines()[1:]
        except OSError:
            continue
        seen_a_table = True
        for row in rows:
            if " 0A " not in row:  # only listeners (the state column; no other column can read "0A")
                continue
            fields = row.split()
            if len(fields) > 9 and fields[3] == "0A":  # TCP_LISTEN
                address, port = fields[1].rsplit(":", 1)
                raw = bytes.fromhex(address)
                raw = b"".join(raw[k : k + 4][::-1] for k in range(0, len(raw), 4))  # host-order words
                table[int(fields[9])] = (socket.inet_ntop(family, raw), int(port, 16))
    return table if seen_a_table else None


def _socket_inodes(pid: int) -> set:
    inodes = set()
    try:
        fds = os.listdir(f"/proc/{pid}/fd")
    except OSError:
        return inodes
    for fd in fds:
        try:
            link = os.readlink(f"/proc/{pid}/fd/{fd}")
        except OSError:
            continue
        if link.startswith("socket:["):
            inodes.add(int(link[8:-1]))
    return inodes


def _listen_inodes(port: int) -> set | None:
    """The socket inodes of every TCP listener on ``port`` (any address), from the kernel's tables; None
    when the tables cannot be read (not Linux)."""
    table = _listen_table()
    return None if table is None else {inode for inode, (_ip, p) in table.items() if p == port}


def _all_pids() -> list:
    try:
        return [int(name) for name in os.listdir("/proc") if name.isdigit()]
    except OSError:
        return []


def wait_gone(members: dict, timeout: float) -> bool:
    """Poll until every ``pid -> create time`` in ``members`` has exited (or is a zombie); never reaps,
    so a ``Popen`` still gets its child's exit code."""
    deadline = time.monotonic() + timeout
    while True:
        left = [pid for pid, created in members.items() if _still(pid, created)]
        if not left or time.monotonic() >= deadline:
            return not left
        time.sleep(0.02)


def _still(pid: int, created: float) -> bool:
    try:
        proc = psutil.Process(pid)
        return proc.create_time() == created and proc.status() != psutil.STATUS_ZOMBIE
    except psutil.Error:
        return False


def _alive(proc) -> bool:
    try:
        return proc.status() != psutil.STATUS_ZOMBIE
    except psutil.Error:
        return False


def is_loopback(ip: str) -> bool:
    try:
        addr = ipaddress.ip_address(ip.split("%")[0])
    except ValueError:
        return False
    if isinstance(addr, ipaddress.IPv6Address) and addr.ipv4_mapped:
        addr = addr.ipv4_mapped
    return addr.is_loopback
