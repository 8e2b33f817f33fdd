"""How test_checks_can_fail.py serves each broken behaviour (``VIAS``: an app wrapper under uvicorn or granian,
the stdlib server of tests/broken/server.py, or the relay of tests/broken/proxy.py in front of a real server),
and where each via's breaks are catalogued (``CATALOGUES``). Data only; the rows and the test are beside it."""

from __future__ import annotations

from tests.broken import asgi, proxy, rsgi, server, wsgi
from tests.broken.runs import Via

__all__ = ["VIAS", "CATALOGUES"]


def _granian(interface: str, http: str = "1") -> str:
    # kept short: the harness names each server's log file after the whole command
    return (
        f"{{python}} -m granian --interface {interface} --host {{host}} --port {{port}} --http {http} "
        f"tests.broken.{interface}:{{break}}"
    )


VIAS = {
    "asgi": Via(
        "asgi",
        "{python} -m uvicorn --host {host} --port {port} --no-access-log tests.broken.asgi:{break}",
        features="websockets,lifespan",
    ),
    "asgi-granian": Via("asgi", _granian("asgi"), features="websockets,lifespan,pathsend"),
    # uvicorn raises from send() after the response completed: the control ignores those messages (the letter)
    "asgi-late": Via(
        "asgi",
        "{python} -m uvicorn --host {host} --port {port} --no-access-log tests.broken.asgi:{break}",
        features="websockets,lifespan",
        control="late_messages_ignored",
    ),
    "asgi-h2": Via("asgi", _granian("asgi", "2"), http="h2", features="h2c,lifespan"),
    "rsgi": Via("rsgi", _granian("rsgi"), features="websockets"),
    "rsgi-h2": Via("rsgi", _granian("rsgi", "2"), http="h2", features="h2c"),
    "wsgi": Via("wsgi", _granian("wsgi")),
    "wsgi-h2": Via("wsgi", _granian("wsgi", "2"), http="h2", features="h2c"),
    # the stdlib server of tests/broken/server.py: unbroken, serving a broken WSGI app (WSGI rules granian
    # itself deviates from), or broken, serving the fixture app (the HTTP/1.1 wire rules)
    "wsgi-stdlib": Via(
        "wsgi", "{python} -m tests.broken.server --host {host} --port {port} --app tests.broken.wsgi:{break}"
    ),
    "wire": Via("wsgi", "{python} -m tests.broken.server --host {host} --port {port} --break {break}", control="none"),
    # the same, asked for {workers} processes (checks that start a private server with two workers)
    "wire-workers": Via(
        "wsgi",
        "{python} -m tests.broken.server --host {host} --port {port} --workers {workers} --break {break}",
        features="workers",
        control="none",
    ),
    # the same, with the options checks ask for by role (a keep-alive timeout, the trusted proxies)
    "wire-options": Via(
        "wsgi",
        "{python} -m tests.broken.server --host {host} --port {port} --keep-alive-timeout "
        "{keep_alive_timeout} --trusted-proxy {trusted_proxies} --break {break}",
        control="none",
    ),
    # the same, its control a server without persistent connections that says "close" (RFC 9112 §9.3's rule; on
    # a server that keeps connections open that check is not applicable, never a pass)
    "wire-closing": Via(
        "wsgi",
        "{python} -m tests.broken.server --host {host} --port {port} --break {break}",
        control="no_persistent_connections",
    ),
    # granian with the suite's test certificate (tls=on's command line), serving a broken WSGI app over TLS
    "wsgi-tls": Via(
        "wsgi",
        "{python} -m granian --interface wsgi --host {host} --port {port} --http 1 "
        "--ssl-certificate {tls_cert} --ssl-keyfile {tls_key} tests.broken.wsgi:{break}",
        features="tls",
    ),
    "asgi-tls": Via(
        "asgi",
        "{python} -m uvicorn --host {host} --port {port} --no-access-log "
        "--ssl-certfile {tls_cert} --ssl-keyfile {tls_key} tests.broken.asgi:{break}",
        features="tls",
    ),
    "rsgi-tls": Via(
        "rsgi",
        "{python} -m granian --interface rsgi --host {host} --port {port} --http 1 "
        "--ssl-certificate {tls_cert} --ssl-keyfile {tls_key} tests.broken.rsgi:{break}",
        features="tls",
    ),
    # a relay in front of a real server, corrupting what the server's own protocol layer sends
    "ws-proxy": Via(
        "asgi",
        "{python} -m tests.broken.proxy --port {port} --break {break} -- "
        "{python} -m uvicorn --port @PORT@ gatecheck.fixtures.apps.asgi:app",
        features="websockets",
        control="none",
    ),
    # the same relay in front of granian, which answers an app's exception after accept with a Close frame
    # (uvicorn just closes the TCP connection)
    "ws-proxy-granian": Via(
        "asgi",
        "{python} -m tests.broken.proxy --port {port} --break {break} -- {python} -m "
        "granian --interface asgi --http 1 --port @PORT@ gatecheck.fixtures.apps.asgi:app",
        features="websockets",
        control="none",
    ),
    # HTTP/1 readiness (http auto): the harness's h2 readiness probe refuses a server whose SETTINGS are invalid
    "h2-proxy": Via(
        "asgi",
        "{python} -m tests.broken.proxy --port {port} --break {break} -- "
        "{python} -m granian --interface asgi --port @PORT@ gatecheck.fixtures.apps.asgi:app",
        http="auto",
        features="h2c",
        control="none",
    ),
}

#: where each via's breaks are defined
CATALOGUES = {
    "asgi": asgi.BREAKS,
    "asgi-late": asgi.BREAKS,
    "asgi-granian": asgi.BREAKS,
    "asgi-h2": asgi.BREAKS,
    "rsgi": rsgi.BREAKS,
    "rsgi-h2": rsgi.BREAKS,
    "wsgi": wsgi.BREAKS,
    "wsgi-h2": wsgi.BREAKS,
    "wsgi-stdlib": wsgi.BREAKS,
    "wire": server.BREAKS,
    "wire-workers": server.BREAKS,
    "wire-closing": server.BREAKS,
    "wire-options": server.BREAKS,
    "wsgi-tls": wsgi.BREAKS,
    "asgi-tls": asgi.BREAKS,
    "rsgi-tls": rsgi.BREAKS,
    "ws-proxy": proxy.BREAKS,
    "ws-proxy-granian": proxy.BREAKS,
    "h2-proxy": proxy.BREAKS,
}


# interoperability through the field's own clients (httpx, websockets): the same breaks, seen by those clients;
# over TLS and HTTP/2 on TLS through granian and uvicorn with the test certificate
VIAS.update(
    {
        "asgi-h2-tls": Via(
            "asgi",
            "{python} -m granian --interface asgi --host {host} --port {port} --http 2 "
            "--ssl-certificate {tls_cert} --ssl-keyfile {tls_key} tests.broken.asgi:{break}",
            http="h2",
            features="tls,h2c",
        ),
        "asgi-tls-ws": Via(
            "asgi",
            "{python} -m uvicorn --host {host} --port {port} --no-access-log "
            "--ssl-certfile {tls_cert} --ssl-keyfile {tls_key} tests.broken.asgi:{break}",
            features="tls,websockets",
        ),
    }
)
CATALOGUES.update({"asgi-h2-tls": asgi.BREAKS, "asgi-tls-ws": asgi.BREAKS})
