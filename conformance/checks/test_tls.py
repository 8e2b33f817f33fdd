"""TLS listeners: ALPN, protocol versions, and what the application is told about the secure connection.

Targets with ``tls=on`` serve the suite's test certificate (fixtures/tls). On such a target the
capabilities ``http1`` and ``h2c`` say which HTTP versions its TLS listener serves (``h2c`` = HTTP/2 is
on), so ``@needs("tls", "h2c")`` reads "a TLS listener with HTTP/2".

Clauses: RFC 9113 §3.2 (h2 via ALPN; "h2c" never over TLS), §9.2 (TLS 1.2 or later for HTTP/2),
RFC 7301 §3.2 (the server selects one of the client's protocols, or none), RFC 8996 §2–§3 (TLS 1.0/1.1
MUST NOT be negotiated), ASGI WWW scope ``scheme`` and the TLS extension 0.2, PEP 3333
``wsgi.url_scheme`` (and the Apache-style ``HTTPS=on``), RSGI ``scheme``.

Evidence: where refusing the handshake satisfies a rule, a refusal counts only when a control handshake
to the same server (TLS 1.2 or later, ALPN "http/1.1" and "h2") succeeds just before it: a server that
refuses every handshake, or does not speak TLS at all, shows nothing.
"""

from __future__ import annotations

import json
import ssl

import pytest

from gatecheck.conformance.app import asgi_scope, decode_probe, rsgi_attrs, wsgi_environ
from gatecheck.conformance.client.connect import TLS_VERSIONS, client_can_offer_old_tls, handshake
from gatecheck.conformance.client.h2 import H2Client
from gatecheck.conformance.client.http1 import Connection, build_request
from gatecheck.conformance.spec.markers import interfaces, needs, spec

pytestmark = needs("tls")

_ALPN = "RFC 9113 §3.2"
_ASGI = "ASGI WWW §HTTP Connection Scope"
_ASGI_TLS = "ASGI TLS 0.2 §TLS Connection Scope"
_RSGI = "RSGI §HTTP connection scope"
_WSGI = "PEP 3333 §environ Variables"


def tls_probe(server, target: str = "/probe") -> tuple:
    """GET ``target`` over HTTP/1.1 on TLS; (probe document, HandshakeInfo)."""
    data = build_request("GET", target, host=server.authority)
    with Connection(server.address, 5.0, tls=True) as conn:
        conn.send(data)
        resp, info = conn.read_responses(1, methods=["GET"]).first, conn.info
    assert resp.status == 200, f"TLS probe GET {target} answered {resp.status}: {resp.body[:300]!r}"
    return decode_probe(resp.body), info


def h2_tls_probe(server, target: str = "/probe") -> tuple:
    """GET ``target`` over HTTP/2 on TLS; (probe document, HandshakeInfo)."""
    with H2Client(server.address, authority=server.authority, tls=True) as client:
        sid = client.request("GET", target)
        resp = client.response(sid)
        assert resp.status == 200, f"h2 TLS probe GET {target}: {resp.describe()} {resp.body[:300]!r}"
        return json.loads(resp.body), client.info


def _control_handshake(server) -> None:
    """Fail unless an ordinary handshake (TLS >= 1.2, offering "h2" and "http/1.1") to ``server`` succeeds."""
    control = handshake(server, ["h2", "http/1.1"])
    assert not control.refused, (
        f"an ordinary control handshake failed too, so a refusal shows nothing: {control.describe()}"
    )


@pytest.fixture(scope="module")
def old_tls_client():
    if not client_can_offer_old_tls():
        pytest.skip("this client's OpenSSL cannot negotiate TLS 1.1, so a refusal would prove nothing")


# -- ALPN ---------------------------------------------------------------------------------------


@spec(_ALPN, "DEFINED")
def test_alpn_selects_h2_exactly_when_the_listener_serves_http2(server):
    """Offered "h2" and "http/1.1", a TLS listener with HTTP/2 selects "h2"; one without it never does."""
    info = handshake(server, ["h2", "http/1.1"])
    assert not info.refused, info.describe()
    if server.capabilities.h2c:
        assert info.alpn == "h2", f"HTTP/2 is on; offered h2, http/1.1: {info.describe()}"
    else:
        assert info.alpn in ("http/1.1", None), f"HTTP/1.1 only; offered h2, http/1.1: {info.describe()}"


@spec(_ALPN, "MUST NOT")
@pytest.mark.parametrize("offer", [["h2c"], ["h2c", "http/1.1"]], ids=["h2c", "h2c-http11"])
def test_h2c_is_never_selected_over_tls(server, offer):
    """ "h2c" names HTTP/2 over cleartext TCP: a TLS handshake never selects it (refusing is fine)."""
    _control_handshake(server)
    info = handshake(server, offer)
    assert info.refused or info.alpn != "h2c", f"offered {offer}: {info.describe()}"


@spec("RFC 7301 §3.2", "DEFINED")
def test_alpn_never_selects_a_protocol_the_client_did_not_offer(server):
    """Offered only "http/1.1", the server selects it, selects nothing, or refuses: never "h2"."""
    _control_handshake(server)
    info = handshake(server, ["http/1.1"])
    assert info.refused or info.alpn in ("http/1.1", None), info.describe()


# -- versions -----------------------------------------------------------------------------------


@spec("RFC 8996 §2-§3", "MUST NOT")
def test_tls_1_1_is_refused(server, old_tls_client):
    """A client offering at most TLS 1.1 is refused: TLS 1.0 and 1.1 are not negotiated."""
    _control_handshake(server)
    info = handshake(server, ["http/1.1"], max_version=ssl.TLSVersion.TLSv1_1)
    assert info.refused, f"offered TLS <= 1.1: {info.describe()}"


@needs("h2c")
@spec("RFC 9113 §9.2", "MUST")
def test_h2_is_negotiated_over_tls_1_2_or_later(server):
    """A connection that negotiated h2 runs TLS 1.2 or later."""
    info = handshake(server, ["h2"])
    assert not info.refused and info.alpn == "h2", info.describe()
    assert TLS_VERSIONS.get(info.version, 0) >= 0x0303, info.describe()


@needs("h2c")
@spec("RFC 9113 §9.2", "MUST")
def test_h2_is_not_negotiated_below_tls_1_2(server, old_tls_client):
    """Offered h2 with at most TLS 1.1, the server does not run HTTP/2 over that connection."""
    _control_handshake(server)
    info = handshake(server, ["h2"], max_version=ssl.TLSVersion.TLSv1_1)
    assert info.refused or info.alpn != "h2", info.describe()


# -- what the application sees (HTTP/1.1 over TLS) -------------------------------------------------


@needs("http1")
@interfaces("asgi")
@spec(_ASGI, "DEFINED")
def test_asgi_scheme_is_https(server):
    """Over TLS the http scope's scheme is "https" (absent means the default "http", which is wrong here)."""
    doc, _info = tls_probe(server)
    assert asgi_scope(doc).get("scheme", "http") == "https"


@needs("http1")
@interfaces("asgi")
@spec(_ASGI_TLS, "DEFINED")
def test_asgi_tls_extension_describes_the_negotiated_session(server):
    """When scope["extensions"]["tls"] is present, server_cert is the served certificate's PEM (or None),
    tls_version the negotiated version and cipher_suite the negotiated 16-bit suite (or None)."""
    doc, info = tls_probe(server)
    ext = (asgi_scope(doc).get("extensions") or {}).get("tls")
    if ext is None:
        pytest.skip("the server does not provide the optional tls extension")
    for key in ("server_cert", "tls_version", "cipher_suite"):
        assert key in ext, f"mandatory key {key!r} missing from the tls extension: {sorted(ext)}"
    cert = ext["server_cert"]
    assert cert is None or (isinstance(cert, str) and ssl.PEM_cert_to_DER_cert(cert) == info.peer_cert_der), (
        f"server_cert is not the served certificate's PEM: {cert!r:.200}"
    )
    version = ext["tls_version"]
    assert version is None or (type(version) is int and version == TLS_VERSIONS[info.version]), (
        f"tls_version {version!r}; negotiated {info.version} ({TLS_VERSIONS[info.version]:#06x})"
    )
    suite = ext["cipher_suite"]
    assert suite is None or (type(suite) is int and 0 <= suite <= 0xFFFF and suite == info.cipher_id), (
        f"cipher_suite {suite!r}; negotiated {info.cipher} ({info.cipher_id!r:})"
    )


@needs("http1")
@interfaces("wsgi")
@spec(_WSGI, "MUST")
def test_wsgi_url_scheme_is_https(server):
    """Over TLS wsgi.url_scheme is "https"."""
    doc, _info = tls_probe(server)
    assert wsgi_environ(doc)["wsgi.url_scheme"] == "https"


@needs("http1")
@interfaces("wsgi")
@spec("PEP 3333 §environ Variables (SSL variables)", "SHOULD")
def test_wsgi_https_is_on(server):
    """Over TLS the environ carries the Apache-style HTTPS=on."""
    doc, _info = tls_probe(server)
    value = wsgi_environ(doc).get("HTTPS")
    assert str(value).lower() in ("on", "1"), f"environ HTTPS = {value!r}"


@needs("http1")
@interfaces("rsgi")
@spec(_RSGI, "DEFINED")
def test_rsgi_scheme_is_https(server):
    """Over TLS scope.scheme is "https"."""
    doc, _info = tls_probe(server)
    assert rsgi_attrs(doc)["scheme"] == "https"


# -- HTTP/2 over TLS ------------------------------------------------------------------------------


@needs("h2c")
@interfaces("asgi")
@spec(_ASGI, "DEFINED")
def test_asgi_h2_over_tls_is_http_2_with_scheme_https(server):
    """An h2 request over TLS reaches the app as http_version "2" with scheme "https"."""
    scope = asgi_scope(h2_tls_probe(server)[0])
    assert (scope["http_version"], scope.get("scheme", "http")) == ("2", "https")


@needs("h2c")
@interfaces("rsgi")
@spec(_RSGI, "DEFINED")
def test_rsgi_h2_over_tls_is_http_2_with_scheme_https(server):
    """An h2 request over TLS reaches the app as http_version "2" with scheme "https"."""
    attrs = rsgi_attrs(h2_tls_probe(server)[0])
    assert (attrs["http_version"], attrs["scheme"]) == ("2", "https")


@needs("h2c")
@interfaces("wsgi")
@spec(_WSGI, "MUST")
def test_wsgi_h2_over_tls_has_url_scheme_https(server):
    """An h2 request over TLS reaches the app with wsgi.url_scheme "https"."""
    assert wsgi_environ(h2_tls_probe(server)[0])["wsgi.url_scheme"] == "https"
