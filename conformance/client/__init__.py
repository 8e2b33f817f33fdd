"""The checks' clients: every byte a check sends to a server or reads from it goes through this package.

    connect.py   ``connect(server, alpn=..., tls=...)``: the one way to open a socket (TLS by wrapping it)
    bounded.py   the one bounded read (a deadline and a cap on every ``recv``)
    transcript.py  the bytes of a check's last connections, recorded by every socket ``connect`` opens
    http1.py     HTTP/1.x: requests from parts, a strict response parser, ``Connection``
    h2.py        HTTP/2: ``H2Client`` (h2frames.py: frame records, stream state, the inbound and raw path;
                 h2waits.py: the waits for a stream's outcome)
    ws.py        WebSocket: ``WSConnection`` (wsframes.py: handshake and frames from fields)
    interop.py   the field's own clients, httpx and websockets, bounded, for the well-formed exchanges only

Each client opens its socket with :func:`connect.connect` and reads through :mod:`bounded`, so each works
over TLS the same way (``tls=True``) and none can hang or buffer without limit; the exception is
``interop.py``, where httpx and websockets read through their own code, bounded by the timeouts and caps it
sets. Nothing here knows the fixture app (``conformance/app/view.py``) or judges a result (the checks,
``conformance/verdicts.py``).
"""
