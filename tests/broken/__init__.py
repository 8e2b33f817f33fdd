"""Deliberately broken behaviour, to prove that every conformance check can fail.

    asgi.py, rsgi.py, wsgi.py   the fixture apps behind wrappers/proxies that each break one interface rule,
                                loaded as ``tests.broken.<interface>:<break>`` (``:control`` breaks nothing)
    asgi_blocks.py, asgi_messages.py, asgi_letter.py, asgi_variants.py
                                the ASGI wrappers asgi.py names: building blocks and scope edits, message
                                breaks, the letter of the text (dimension 6), variants the texts allow
    server.py (+ gateway.py)    a small stdlib HTTP/1.1 server for WSGI apps: correct by default,
                                ``--break NAME`` violates one wire rule
    proxy.py                    a relay in front of a real server that corrupts one thing the server's own
                                protocol layer sends (WebSocket closing handshake, HTTP/2 preface)
    pick.py                     pytest plugin: run only the (check, target) pairs a broken run needs
    runs.py                     batches of conformance subprocesses against broken targets and controls
    chunks.py                   a helper the ASGI and RSGI breaks share

``tests/conformance/checks/test_checks_can_fail.py`` runs the table (``can_fail_rows.py``, ``can_fail_rows_more.py``;
the vias in ``can_fail_vias.py``): area, how it is served, break, checks that must fail (and pass on the
unbroken control).
"""
