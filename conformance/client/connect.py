"""One way to open a connection to a server under test: ``connect(server, alpn=..., tls=...)``, and TLS.

    sock = connect(server, nodelay=True)                  # a plain socket with a timeout on every operation
    sock = connect(server, tls=True, alpn=["h2"])         # TlsStream: the same, over TLS; sock.info says what
    info = handshake(server, ["h2", "http/1.1"])          # HandshakeInfo, or HandshakeInfo.refused

Every client of the checks (``http1.Connection``, ``h2.H2Client``, ``ws.WSConnection``) opens its socket here,
so each works over TLS by the same switch (``tls=True``: https, h2 by ALPN, wss).

Rules of this module:

1. The client trusts exactly the suite's test certificate (``fixtures.TLS_CERT``) and checks the name
   (127.0.0.1 is an IP subjectAltName of it): a server presenting another certificate fails loudly.
2. Every socket operation has the caller's timeout; a TLS read that ends without a
   close_notify counts as the peer closing, as a TCP FIN does in cleartext.
3. A refused handshake (an alert, or the connection closed during it) is an outcome, not an error: the
   checks about what a server must refuse look at it.
"""

from __future__ import annotations

import contextlib
import socket
import ssl
import warnings
from dataclasses import dataclass

from gatecheck import fixtures
from gatecheck.conformance.client import transcript

__all__ = [
    "connect",
    "TlsStream",
    "HandshakeInfo",
    "handshake",
    "tls_context",
    "tls_connect",
    "iana_cipher_id",
    "TLS_VERSIONS",
    "client_can_offer_old_tls",
]

#: ssl's version names -> the TLS wire versions the ASGI tls extension uses
TLS_VERSIONS = {"TLSv1": 0x0301, "TLSv1.1": 0x0302, "TLSv1.2": 0x0303, "TLSv1.3": 0x0304}


def tls_context(alpn=None, *, max_version: ssl.TLSVersion | None = None) -> ssl.SSLContext:
    """A client context trusting the test certificate; ``max_version`` below 1.2 also opens the floor."""
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    ctx.load_verify_locations(fixtures.TLS_CERT)
    if alpn:
        ctx.set_alpn_protocols(list(alpn))
    if max_version is not None:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", DeprecationWarning)
            if max_version < ssl.TLSVersion.TLSv1_2:
                ctx.minimum_version = ssl.TLSVersion.TLSv1
                ctx.set_ciphers("DEFAULT:@SECLEVEL=0")
            ctx.maximum_version = max_version
    return ctx


@dataclass
class HandshakeInfo:
    """What one handshake negotiated (``error`` set when the server refused it)."""

    alpn: str | None = None
    version: str | None = None
    cipher: str | None = None
    cipher_id: int | None = None
    peer_cert_der: bytes | None = None
    error: str = ""

    @property
    def refused(self) -> bool:
        return bool(self.error)

    def describe(self) -> str:
        if self.refused:
            return f"handshake refused ({self.error})"
        return f"{self.version}, cipher {self.cipher}, ALPN {self.alpn!r}"


def _info(sock: ssl.SSLSocket, ctx: ssl.SSLContext) -> HandshakeInfo:
    name, _proto, _bits = sock.cipher()
    return HandshakeInfo(
        alpn=sock.selected_alpn_protocol(),
        version=sock.version(),
        cipher=name,
        cipher_id=iana_cipher_id(ctx, name),
        peer_cert_der=sock.getpeercert(binary_form=True),
    )


def iana_cipher_id(ctx: ssl.SSLContext, name: str) -> int | None:
    """The 16-bit IANA value of an OpenSSL cipher name (OpenSSL's ids are 0x0300XXXX)."""
    for entry in ctx.get_ciphers():
        if entry.get("name") == name:
            return entry["id"] & 0xFFFF
    return None


@contextlib.contextmanager
def tls_connect(address: tuple, alpn=None, *, timeout: float = 5.0, max_version=None):
    """Yield (TLS socket, HandshakeInfo) for one connection; raises ssl.SSLError/OSError if refused."""
    sock = connect(address, alpn=alpn, tls=True, timeout=timeout, max_version=max_version)
    with contextlib.closing(sock):
        yield sock, sock.info


def handshake(server, alpn=None, *, timeout: float = 5.0, max_version=None) -> HandshakeInfo:
    """One handshake offering ``alpn``; what it negotiated, or why it was refused.

    A certificate the client cannot verify is a harness/server setup fault and raises."""
    try:
        with tls_connect(server.address, alpn, timeout=timeout, max_version=max_version) as (_sock, info):
            return info
    except ssl.SSLCertVerificationError:
        raise
    except (ssl.SSLError, ConnectionError) as exc:
        return HandshakeInfo(error=f"{type(exc).__name__}: {exc}")


class TlsStream:
    """An SSL socket whose reads return b"" when the peer ends TLS, with or without close_notify; ``info``
    is what its handshake negotiated. What goes through it is recorded as plaintext (``transcript``)."""

    def __init__(self, sock: ssl.SSLSocket, info: HandshakeInfo) -> None:
        self._sock, self.info = sock, info
        self.transcript = transcript.opened(sock.getpeername(), tls=True)

    def recv(self, size: int) -> bytes:
        return transcript.recorded_recv(self.transcript, self._recv, size)

    def _recv(self, size: int) -> bytes:
        try:
            return self._sock.recv(size)
        except (ssl.SSLEOFError, ssl.SSLZeroReturnError):
            return b""

    def send(self, data, flags: int = 0) -> int:
        sent = self._sock.send(data, flags)
        self.transcript.add(transcript.SENT, memoryview(data)[:sent])
        return sent

    def sendall(self, data, flags: int = 0) -> None:
        self.transcript.add(transcript.SENT, data)
        self._sock.sendall(data, flags)

    def __getattr__(self, name):
        return getattr(self._sock, name)


def connect(server, *, alpn=None, tls: bool = False, timeout: float = 5.0, nodelay: bool = False, max_version=None):
    """A connected socket to ``server`` (a served target, or an ``(host, port)`` address) with ``timeout``
    on every operation. ``tls=True`` wraps it in TLS offering ``alpn`` (a :class:`TlsStream` whose
    ``info`` says what was negotiated); a refused handshake raises ssl.SSLError/OSError. ``nodelay`` turns
    Nagle's algorithm off (small frames and byte-by-byte writes go out at once). Either way the bytes it
    carries are recorded for the check's failure report (``transcript``)."""
    address = getattr(server, "address", server)
    raw = socket.create_connection(address, timeout=timeout)
    raw.settimeout(timeout)
    if nodelay:
        raw.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    if not tls:
        return transcript.recording(raw)
    ctx = tls_context(alpn, max_version=max_version)
    try:
        sock = ctx.wrap_socket(raw, server_hostname=address[0])
    except BaseException:
        raw.close()
        raise
    sock.settimeout(timeout)
    return TlsStream(sock, _info(sock, ctx))


def client_can_offer_old_tls(timeout: float = 5.0) -> bool:
    """Whether this client can negotiate TLS 1.1 at all (against a local stdlib server that allows it);
    a check that a server refuses TLS 1.1 means nothing if the client never offers it."""
    import threading

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        server_ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        server_ctx.load_cert_chain(fixtures.TLS_CERT, fixtures.TLS_KEY)
        server_ctx.minimum_version = ssl.TLSVersion.TLSv1
        server_ctx.maximum_version = ssl.TLSVersion.TLSv1_1
        server_ctx.set_ciphers("DEFAULT:@SECLEVEL=0")
    listener = socket.create_server(("127.0.0.1", 0))
    listener.settimeout(timeout)

    def serve() -> None:
        try:
            conn, _ = listener.accept()
        except OSError:
            return
        conn.settimeout(timeout)
        try:
            with server_ctx.wrap_socket(conn, server_side=True):
                pass
        except OSError:
            conn.close()

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    try:
        with tls_connect(listener.getsockname(), timeout=timeout, max_version=ssl.TLSVersion.TLSv1_1) as (_s, info):
            return info.version == "TLSv1.1"
    except OSError:
        return False
    finally:
        listener.close()
        thread.join(timeout)
