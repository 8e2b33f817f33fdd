"""Issue 11's dimensions 5 and 6 as tables: every observable of a rule, and the letter of the spec.

**Every observable** (dimension 5): where a text names the *value* a rule produces (a WebSocket close code,
an HTTP status), the check reads that value, not only that the connection ended. Each row says what the
app does, on which interface and transport, what the check reads (``observable``), the answers the text
allows (``allowed``: ``None`` stands for "no value", e.g. a Close frame without a status code), and the
clause and level of the sentence that names the value. A check parametrized over the rows of its
``check`` gets each row as a parameter (``observable_params``), its ``@spec`` from the row; a check that
runs on several interfaces gets one parameter per ``name`` and picks the row of the server's interface
(``observable_row``). Only values a text names are rows: an app raising before it responds gets a 5xx by
the suite's POLICY (no text names a status), so those checks are not rows here.

**The letter** (dimension 6): behaviour that contradicts a sentence without breaking a must/should (the text
says a message "will be ignored" and the server raises instead). Such checks are level INFO: a failure is
*noted*, shown apart, and never fails a run (conformance/plugin/outcomes.py). Each row names the check,
what the app does, what the text says and what contradicts it.
"""

from __future__ import annotations

from dataclasses import dataclass

import pytest

from gatecheck.conformance.spec.markers import spec

__all__ = [
    "Observable",
    "OBSERVABLES",
    "observable_params",
    "observable_row",
    "observable_names",
    "EXC_INFO_STEPS",
    "LATE_MESSAGES",
    "Letter",
    "LETTERS",
    "letter_params",
    "SENDABLE",
]

#: close codes an endpoint may put in a Close frame (RFC 6455 §7.4.1, §7.4.2; 1012-1014 registered since)
SENDABLE = frozenset([1000, 1001, 1002, 1003, *range(1007, 1015), *range(3000, 5000)])


@dataclass(frozen=True)
class Observable:
    check: str  # "test_<file>.py::<function>" that reads it
    name: str  # the parameter id ("" for a check of one row)
    interface: str  # asgi | rsgi | wsgi
    over: str  # websocket | http1 | h2
    app: str  # what the app does, in words
    steps: tuple  # the fixture script steps that do it
    observable: str  # what the check reads
    allowed: tuple  # the answers the text allows (None: no value at all)
    clause: str
    level: str


_ASGI_CODE = "test_websocket_asgi.py::test_app_close_code_reaches_the_client"
_ASGI_403 = "test_websocket_asgi.py::test_close_before_accept_is_http_403"
_RSGI_CODE = "test_websocket_rsgi.py::test_close_after_accept_sends_that_close_code"
_RSGI_STATUS = "test_websocket_rsgi.py::test_close_before_accept_is_that_http_status"
_ENDED = "test_websocket_close.py::test_close_code_after_the_app_ended"
_EXC_INFO = "test_wsgi_response.py::test_exc_info_before_headers_replaces_status_and_headers"
_EXC_INFO_H2 = "test_h2_mapping.py::test_wsgi_exc_info_before_headers_replaces_status_and_headers"

#: WSGI: the first start_response, then the error handler's with exc_info, before any body
_OCTETS = ["Content-Type", "application/octet-stream"]
EXC_INFO_STEPS = (
    ["start_response", "200 OK", [_OCTETS, ["X-First", "1"]]],
    ["start_response_exc_info", "500 Internal Server Error", [_OCTETS, ["X-Second", "2"]]],
    ["yield", "error page"],
)

_A_CLOSE, _R_PROTO, _RFC_741 = "ASGI WWW §Close", "RSGI §Websocket protocol interface", "RFC 6455 §7.4.1"
_CLOSE_CODE, _STATUS = "the Close frame's status code", "the HTTP status of the handshake's answer"


def _asgi_close(code) -> Observable:
    step = ["close"] if code is None else ["close", code]
    return Observable(
        _ASGI_CODE,
        str(code),
        "asgi",
        "websocket",
        f"websocket.close {step[1:] or 'without code'} after accepting",
        (["receive"], ["accept"], step),
        _CLOSE_CODE,
        (code or 1000,),
        _A_CLOSE,
        "MUST",
    )


def _rsgi_close(code: int) -> Observable:
    return Observable(
        _RSGI_CODE,
        str(code),
        "rsgi",
        "websocket",
        f"protocol.close({code}) after accept()",
        (["accept"], ["close", code]),
        _CLOSE_CODE,
        (code,),
        _R_PROTO,
        "POLICY",
    )


def _rsgi_refuse(status: int) -> Observable:
    return Observable(
        _RSGI_STATUS,
        str(status),
        "rsgi",
        "websocket",
        f"protocol.close({status}) before accept()",
        (["close", status],),
        _STATUS,
        (status,),
        _R_PROTO,
        "POLICY",
    )


def _ended(interface: str, ending: str) -> Observable:
    accept = (["receive"], ["accept"]) if interface == "asgi" else (["accept"],)
    if ending == "raise":  # 1011: "an unexpected condition that prevented it from fulfilling the request"
        allowed, level = (None, 1011), "DEFINED"
    else:  # the app's purpose may be fulfilled or not: any code a Close frame may carry
        allowed, level = (None, *sorted(SENDABLE)), "MUST NOT"
    return Observable(
        _ENDED,
        ending,
        interface,
        "websocket",
        f"the app {ending}s after accepting, without closing",
        (*accept, [ending]),
        _CLOSE_CODE + " (if the server sends one)",
        allowed,
        _RFC_741,
        level,
    )


OBSERVABLES = (
    # ASGI: "the server must close the socket with the close code passed in the message (or 1000 if none
    # is specified)"
    *(_asgi_close(code) for code in (None, 1000, 3000, 4001)),
    # ASGI: "If this is sent before the socket is accepted, the server must close the connection with a
    # HTTP 403 error code (Forbidden), and not complete the WebSocket handshake."
    Observable(
        _ASGI_403,
        "",
        "asgi",
        "websocket",
        "websocket.close before accepting",
        (["receive"], ["close", 1000]),
        _STATUS,
        (403,),
        _A_CLOSE,
        "MUST",
    ),
    # RSGI names only ``close(status)``: the suite's reading, a close code after accept(), a status before
    *(_rsgi_close(code) for code in (1000, 3000, 4001)),
    *(_rsgi_refuse(status) for status in (403, 401, 404)),
    # RFC 6455 §7.4.1 defines 1011 for a server's unexpected condition; 1005, 1006 and 1015 "MUST NOT be set
    # as a status code in a Close control frame by an endpoint"
    *(_ended(interface, ending) for ending in ("raise", "return") for interface in ("asgi", "rsgi")),
    # PEP 3333: the error handler's start_response(status, headers, exc_info) before anything was sent
    # replaces the stored status ("should"), over HTTP/1.1 and HTTP/2
    *(
        Observable(
            check,
            "",
            "wsgi",
            over,
            "start_response('200 OK', X-First), then start_response('500 ...', X-Second, exc_info) before any body",
            EXC_INFO_STEPS,
            "the response status and headers",
            (500,),
            "PEP 3333 §The start_response() Callable",
            "SHOULD",
        )
        for check, over in ((_EXC_INFO, "http1"), (_EXC_INFO_H2, "h2"))
    ),
)


def observable_params(check: str, interface: str | None = None) -> list:
    """One ``pytest.param`` per row of ``check`` (of ``interface``, when given): id = the row's name, marked
    with its clause and level."""
    rows = [r for r in OBSERVABLES if r.check == check and interface in (None, r.interface)]
    assert rows, f"no row of the observables table for {check}"
    return [pytest.param(r, id=r.name, marks=spec(r.clause, r.level)) for r in rows]


def observable_names(check: str) -> list:
    """One ``pytest.param`` per distinct name of ``check``'s rows (a check running on several interfaces
    reads the row of the server's own with ``observable_row``); the rows of one name share clause and level."""
    params, seen = [], set()
    for r in OBSERVABLES:
        if r.check == check and r.name not in seen:
            seen.add(r.name)
            params.append(pytest.param(r.name, id=r.name, marks=spec(r.clause, r.level)))
    return params


def observable_row(check: str, name: str = "", interface: str | None = None) -> Observable:
    for r in OBSERVABLES:
        if r.check == check and r.name == name and interface in (None, r.interface):
            return r
    raise LookupError(f"no row {name!r} of {check} for {interface}")


# -- dimension 6: the letter -----------------------------------------------------------------------------

_B4 = [["start", 200, [["content-length", "4"]]], ["body", "done"]]
_CHUNKED = [["start", 200], ["body", "done"]]

#: ASGI messages an app sends after its response completed: (response steps, the late message)
LATE_MESSAGES = {
    "body-after-length": (_B4, ["body", "extra"]),
    "body-after-chunked": (_CHUNKED, ["body", "extra"]),
    "start-after-chunked": (_CHUNKED, ["start", 500, [["x-late", "1"]]]),
    "more-body-after-length": (_B4, ["body", "extra", True]),
}


@dataclass(frozen=True)
class Letter:
    check: str  # "test_<file>.py::<function>"
    interface: str  # asgi | rsgi | wsgi | http
    app: str  # what the app (or client) does
    text: str  # what the text says, quoted
    contradiction: str  # what a server does instead (the noted outcome)
    clause: str
    cases: tuple = ("",)  # the check's parameter ids ("": none)
    level: str = "INFO"


_IGNORED = (
    "If ``False``, and the server is not expecting *Response Trailers* response will be taken as complete "
    "and closed, and any further messages on the channel will be ignored."
)

LETTERS = (
    Letter(
        "test_asgi_messages.py::test_send_after_completion_returns_normally",
        "asgi",
        "sends a message after the response completed",
        _IGNORED,
        "send() raises",
        "ASGI WWW §Response Body",
        tuple(LATE_MESSAGES),
    ),
    Letter(
        "test_asgi_messages.py::test_connection_survives_messages_after_completion",
        "asgi",
        "sends a message after the response completed",
        _IGNORED,
        "the connection is dropped (the request pipelined behind it goes unanswered)",
        "ASGI WWW §Response Body",
        tuple(LATE_MESSAGES),
    ),
    Letter(
        "test_asgi_messages.py::test_receive_after_disconnect_keeps_returning_disconnect",
        "asgi",
        "calls receive() again after it returned http.disconnect once the response was sent",
        "Sent to the application if receive is called after a response has been sent or after the HTTP "
        "connection has been closed.",
        "a later receive() raises, waits, or returns another message",
        "ASGI WWW §Disconnect",
    ),
    Letter(
        "test_http1_fields.py::test_unsupported_major_version_is_505_or_served",
        "http",
        "(the client) sends a request line with HTTP/9.9",
        "A server can send a 505 (HTTP Version Not Supported) response if it wishes, for any reason, to "
        "refuse service of the client's major protocol version.",
        "neither a 505 nor the request served",
        "RFC 9110 §6.2",
    ),
)


def letter_params(check: str) -> list:
    """One ``pytest.param`` per case of the letter row of ``check``, marked INFO with the row's clause."""
    (row,) = [r for r in LETTERS if r.check == check]
    return [pytest.param(case, id=case, marks=spec(row.clause, row.level)) for case in row.cases]
