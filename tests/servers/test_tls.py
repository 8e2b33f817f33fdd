"""``tls=on`` targets: the certificate flags each adapter renders, who refuses TLS, and the TLS probe."""

from __future__ import annotations

import socket
import ssl
import threading
from pathlib import Path

import pytest

from gatecheck.servers import TargetError, resolve
from gatecheck.servers.launcher import ServerHandle
from gatecheck.servers.probe import probe_for

REPO = Path(__file__).resolve().parents[2]
CERT = str(REPO / "fixtures" / "tls" / "cert.pem")
KEY = str(REPO / "fixtures" / "tls" / "key.pem")
APPS = {
    "asgi": "gatecheck.fixtures.apps.asgi:app",
    "rsgi": "gatecheck.fixtures.apps.rsgi:app",
    "wsgi": "gatecheck.fixtures.apps.wsgi:app",
}


def launch_of(text: str, tls=(CERT, KEY)):
    adapter, target = resolve(text)
    return adapter.launch(target, app=APPS[target.interface], host="127.0.0.1", port=8123, python="/py", tls=tls)


def _has_pair(argv: list, pair: list) -> bool:
    return any(argv[i : i + 2] == pair for i in range(len(argv) - 1))


@pytest.mark.parametrize(
    "text, cert_flag, key_flag",
    [
        ("granian:asgi?tls=on", "--ssl-certificate", "--ssl-keyfile"),
        ("granian:rsgi:h2?tls=on", "--ssl-certificate", "--ssl-keyfile"),
        ("hypercorn:asgi?tls=on", "--certfile", "--keyfile"),
        ("uvicorn:asgi?tls=on", "--ssl-certfile", "--ssl-keyfile"),
        ("gunicorn:wsgi?tls=on", "--certfile", "--keyfile"),
        ("gunicorn:asgi?tls=on", "--certfile", "--keyfile"),
    ],
)
def test_tls_on_renders_the_servers_certificate_and_key_flags(text, cert_flag, key_flag):
    launch = launch_of(text)
    assert _has_pair(launch.argv, [cert_flag, CERT]) and _has_pair(launch.argv, [key_flag, KEY]), launch.argv
    assert launch.tls is True
    assert launch.probe_http2 == (":h2" in text)


@pytest.mark.parametrize("text", ["granian:asgi", "granian:asgi?tls=off", "hypercorn:asgi", "uvicorn:asgi?tls=off"])
def test_without_tls_on_no_certificate_flag_and_no_tls(text):
    launch = launch_of(text)
    assert not any("cert" in a or "keyfile" in a for a in launch.argv), launch.argv
    assert launch.tls is False


def test_tls_on_without_certificate_paths_is_refused():
    with pytest.raises(TargetError, match="tls=\\(certificate path, key path\\)"):
        launch_of("granian:asgi?tls=on", tls=None)


@pytest.mark.parametrize("text", ["daphne:asgi?tls=on", "command:asgi?cmd=x+{port}+{app}&tls=on"])
def test_adapters_without_tls_refuse_tls_on(text):
    with pytest.raises(TargetError, match="cannot listen with TLS"):
        resolve(text)


@pytest.mark.parametrize(
    "text, tls",
    [
        ("granian:asgi?tls=on", True),
        ("granian:asgi", False),
        ("granian:asgi?tls=off", False),
        ("hypercorn:wsgi?tls=on", True),
        ("uvicorn:asgi", False),
        ("gunicorn:wsgi?tls=on", True),
        ("daphne:asgi", False),
    ],
)
def test_tls_capability_only_when_tls_is_on(text, tls):
    adapter, target = resolve(text)
    assert adapter.target_capabilities(target).tls is tls


def test_handle_url_is_https_for_a_tls_listener():
    adapter, target = resolve("granian:asgi?tls=on")
    plain = ServerHandle(target, adapter.target_capabilities(target), "127.0.0.1", 9, process=None, python="/py")
    assert plain.url == "http://127.0.0.1:9"
    assert (
        ServerHandle(target, plain.capabilities, "127.0.0.1", 9, process=None, python="/py", tls=(CERT, KEY)).url
        == "https://127.0.0.1:9"
    )


class _TlsHttpServer:
    """A one-thread TLS server answering every connection with a fixed HTTP/1.1 response."""

    def __init__(self) -> None:
        self.ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        self.ctx.load_cert_chain(CERT, KEY)
        self.ctx.set_alpn_protocols(["http/1.1"])
        self.sock = socket.create_server(("127.0.0.1", 0))
        self.sock.settimeout(5)
        self.port = self.sock.getsockname()[1]
        self.alpn: list = []
        self.thread = threading.Thread(target=self._serve, daemon=True)
        self.thread.start()

    def _serve(self) -> None:
        try:
            conn, _ = self.sock.accept()
        except OSError:
            return
        conn.settimeout(5)
        try:
            with self.ctx.wrap_socket(conn, server_side=True) as tls:
                self.alpn.append(tls.selected_alpn_protocol())
                tls.recv(4096)
                tls.sendall(b"HTTP/1.1 200 OK\r\ncontent-length: 0\r\nconnection: close\r\n\r\n")
        except OSError:
            pass

    def close(self) -> None:
        self.sock.close()
        self.thread.join(5)


def test_http1_probe_speaks_tls_with_alpn_http11():
    srv = _TlsHttpServer()
    try:
        assert probe_for(False, tls=True)("127.0.0.1", srv.port, 5.0) is True
        srv.thread.join(5)
        assert srv.alpn == ["http/1.1"]
    finally:
        srv.close()


def test_cleartext_probe_does_not_pass_a_tls_listener():
    srv = _TlsHttpServer()
    try:
        try:
            ok = probe_for(False, tls=False)("127.0.0.1", srv.port, 2.0)
        except OSError:
            ok = False
        assert ok is False
    finally:
        srv.close()


def test_command_adapter_with_feature_tls_fills_the_certificate_placeholders():
    launch = launch_of("command:wsgi?cmd=srv+--port+{port}+--cert+{tls_cert}+--key+{tls_key}+{app}&features=tls")
    assert launch.argv == ["srv", "--port", "8123", "--cert", CERT, "--key", KEY, APPS["wsgi"]]
    assert launch.tls is True
    adapter, target = resolve("command:wsgi?cmd=srv+--port+{port}+{app}&features=tls")
    assert adapter.target_capabilities(target).tls is True
    with pytest.raises(TargetError, match="tls=\\(certificate path, key path\\)"):
        launch_of("command:wsgi?cmd=srv+--port+{port}+{app}&features=tls", tls=None)
    assert launch_of("command:wsgi?cmd=srv+--port+{port}+{app}").tls is False
