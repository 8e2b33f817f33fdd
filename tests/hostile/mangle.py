"""The fixture apps behind a server that mangles the query string: it keeps the "?" (``?s=...`` instead of
``s=...``), as one server was found to do. Served by a real server through ``--server-cmd``:

    --server-cmd "{python} -m uvicorn tests.hostile.mangle:asgi --host {host} --port {port}" --interface asgi
    --server-cmd "{python} -m granian --interface wsgi --host {host} --port {port} tests.hostile.mangle:wsgi" \\
        --interface wsgi

Everything else is the fixture app as is (its event log included), so the harness's tests can show that a
check whose script the app cannot read errs naming the query string the app was handed, and never passes.
"""

from __future__ import annotations

from gatecheck.fixtures.apps.asgi import app as _asgi_app
from gatecheck.fixtures.apps.wsgi import app as _wsgi_app

__all__ = ["asgi", "wsgi"]


async def asgi(scope, receive, send):
    if scope["type"] in ("http", "websocket") and scope.get("query_string"):
        scope = dict(scope, query_string=b"?" + scope["query_string"])
    await _asgi_app(scope, receive, send)


def wsgi(environ, start_response):
    if environ.get("QUERY_STRING"):
        environ["QUERY_STRING"] = "?" + environ["QUERY_STRING"]
    return _wsgi_app(environ, start_response)
