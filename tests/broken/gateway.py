"""The WSGI side of ``tests/broken/server.py``: the environ of a parsed request, and one app call.

Rules of this module: PEP 3333 as plainly as possible — native str environ values, ``wsgi.input`` a
BytesIO over the whole (already de-chunked) body with ``wsgi.input_terminated``, ``start_response``
checking what it is given and raising at once, ``close()`` always called. The response is collected
whole: the server sends it with a Content-Length (no streaming, by design).
"""

from __future__ import annotations

import io
import re
import sys
from urllib.parse import unquote_to_bytes

__all__ = ["FIELD_NAME", "CTL", "environ", "call_app"]

FIELD_NAME = re.compile(rb"[!#$%&'*+.^_`|~0-9A-Za-z-]+")
CTL = re.compile(rb"[\x00-\x08\x0a-\x1f\x7f]")
_HOP_BY_HOP = {
    "connection",
    "keep-alive",
    "transfer-encoding",
    "upgrade",
    "te",
    "trailer",
    "proxy-authenticate",
    "proxy-authorization",
}


def environ(method: str, target: bytes, version: str, fields: list, body: bytes, sockname, peername) -> dict:
    """The environ of one request (``target`` in origin form, ``fields`` as (lower-case name, value) bytes)."""
    path, _, query = target.partition(b"?")
    peer = peername or ("", 0)
    env = {
        "REQUEST_METHOD": method,
        "SCRIPT_NAME": "",
        "PATH_INFO": unquote_to_bytes(path).decode("latin-1"),
        "QUERY_STRING": query.decode("latin-1"),
        "SERVER_NAME": sockname[0],
        "SERVER_PORT": str(sockname[1]),
        "SERVER_PROTOCOL": version,
        "REMOTE_ADDR": peer[0],
        "REMOTE_PORT": str(peer[1]),
        "wsgi.version": (1, 0),
        "wsgi.url_scheme": "http",
        "wsgi.input": io.BytesIO(body),
        "wsgi.errors": sys.stderr,
        "wsgi.multithread": True,
        "wsgi.multiprocess": False,
        "wsgi.run_once": False,
        "wsgi.input_terminated": True,
    }
    if body or any(name == b"content-length" for name, _ in fields):
        env["CONTENT_LENGTH"] = str(len(body))
    for name, value in fields:
        key = name.decode("latin-1").upper().replace("-", "_")
        if key in ("CONTENT_LENGTH", "CONTENT_TYPE"):
            if key == "CONTENT_TYPE":
                env[key] = value.decode("latin-1")
            continue
        key = "HTTP_" + key
        env[key] = f"{env[key]},{value.decode('latin-1')}" if key in env else value.decode("latin-1")
    return env


def call_app(app, env: dict, check_headers: bool = True, write_past_raises: bool = False) -> tuple:
    """Run the WSGI app to completion: (status, headers, body); a failing app gets a 500.
    ``check_headers=False`` lets any header through (the ``app_headers_unchecked`` break);
    ``write_past_raises``: a write() that goes past the app's Content-Length raises ValueError, after its bytes
    were queued (the ``write_past_length_raises_after_sending`` variant)."""
    state: dict = {}
    chunks: list = []

    def write(data):
        chunks.append(data)  # nothing is sent before the app is done, so it simply comes first
        declared = [v for n, v in state.get("headers", []) if n.lower() == "content-length"]
        if write_past_raises and declared and sum(map(len, chunks)) > int(declared[0]):
            raise ValueError("write() past the declared Content-Length")

    def start_response(status, headers, exc_info=None):
        if exc_info is None and "status" in state:
            raise RuntimeError("start_response called a second time without exc_info")
        if any(not isinstance(x, str) for x in [status] + [p for h in headers for p in h]):
            raise TypeError("status and headers must be str")
        for name, value in headers if check_headers else []:
            if not FIELD_NAME.fullmatch(name.encode("latin-1")) or CTL.search(value.encode("latin-1")):
                raise ValueError(f"invalid response header {name!r}: {value!r}")
            if name.lower() in _HOP_BY_HOP:
                raise ValueError(f"hop-by-hop response header {name!r}")
        status.encode("latin-1")
        state["status"], state["headers"] = status, list(headers)
        return write

    try:
        result = app(env, start_response)
        try:
            for block in result:
                if not isinstance(block, bytes):
                    raise TypeError(f"the app yielded {type(block).__name__}, not bytes")
                chunks.append(block)
        finally:
            close = getattr(result, "close", None)
            if close is not None:
                close()
        return state["status"], state["headers"], b"".join(chunks)
    except Exception as exc:
        print(f"gatecheck-broken: app error: {exc!r}", file=sys.stderr)
        return "500 Internal Server Error", [("Content-Type", "text/plain")], b"app error"
