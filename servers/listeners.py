"""What a started server listens on: loopback only, at the address it was given, on a port no stranger shares.

``ListenerChecks`` is a part of ``process.ServerProcess`` (it reads the process's ``tree``, ``argv`` and
``log_tail``); ``ServerProcess.wait_ready`` calls both checks before and after the server answers.
"""

from __future__ import annotations

import socket

import psutil

from .errors import PortTaken, ServerStartError
from .tree import is_loopback

__all__ = ["ListenerChecks"]


class ListenerChecks:
    """The listener checks of a server process (a mixin of ``process.ServerProcess``)."""

    def check_listeners(self, host: str, port: int, *, ready: bool, loopback_only: bool = True) -> None:
        """Refuse a server whose tree listens anywhere but loopback (an option such as ``args=--host
        0.0.0.0`` overrides the host gatecheck passed), or, once it had time to bind, only on
        ``port`` at another address than ``host`` (then the probe can never reach it)."""
        listening = self.tree.listeners()
        remote = sorted({f"{ip}:{p}" for _pid, ip, p in listening if loopback_only and not is_loopback(ip)})
        if remote:
            raise ServerStartError(
                f"refusing a server that listens on {', '.join(remote)}: gatecheck serves on loopback only; "
                f"an option (args=, or the command template) overrides the host {host} it was given "
                f"(command: {' '.join(self.argv)})",
                self.log_tail(),
            )
        on_port = sorted({ip for _pid, ip, p in listening if p == port})
        if on_port and not ready and not any(_covers(ip, host) for ip in on_port):
            raise ServerStartError(
                f"the server listens on {', '.join(on_port)} port {port}, not on {host} where gatecheck "
                f"asked it to and probes it; an option (args=, or the command template) overrides the host "
                f"(command: {' '.join(self.argv)})",
                self.log_tail(),
            )

    def check_port_is_ours(self, port: int) -> None:
        """Refuse a port that a process not of this server's also listens on: the answer that made the
        server look ready, and every later one, may come from that process (two harness runs that picked
        the same free port, or a server with SO_REUSEPORT sharing it with a stranger)."""
        strangers = [proc for proc in self.tree.port_owners() if not self.tree.owns(proc)]
        if not strangers:
            return
        described = []
        for proc in strangers:
            try:
                described.append(f"pid {proc.pid} ({' '.join(proc.cmdline())[:120]})")
            except psutil.Error:
                described.append(f"pid {proc.pid}")
        raise PortTaken(
            f"port {port} is also listened on by {', '.join(described)}, which gatecheck did not "
            f"start as part of this server: an answer there may not be the server's; omit the "
            f"port to get another free one (command: {' '.join(self.argv)})",
            self.log_tail(),
        )


def _covers(ip: str, host: str) -> bool:
    """Whether a socket listening on ``ip`` accepts connections made to ``host``."""
    if ip in ("0.0.0.0", "::"):
        return True
    try:
        return ip in {info[4][0] for info in socket.getaddrinfo(host, None, type=socket.SOCK_STREAM)}
    except OSError:
        return ip == host
