"""Deliberately broken behaviour, to prove that every conformance check can fail.

    asgi.py, rsgi.py, wsgi.py   the fixture apps behind wrappers/proxies that each break one interface rule,
                                loaded as ``tests.broken.<interface>:<break>`` (``:control`` breaks nothing)
    server.py                   a small stdlib HTTP/1.1 server for WSGI apps: correct by default,
                                ``--break NAME`` violates one wire rule
    pick.py                     pytest plugin: run only the (check, target) pairs a broken run needs
    runs.py                     batches of conformance subprocesses against broken targets and controls

``tests/conformance/test_checks_can_fail.py`` holds the table: area, break, checks that must fail.
"""
