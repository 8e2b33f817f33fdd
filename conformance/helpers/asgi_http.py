"""What test_asgi_messages.py's checks send and how they read it: uploads to /probe and requests without a body,
the scripts of responses that leave keys to their defaults or carry a Transfer-Encoding, and a counter of body bytes
in a response still arriving (with when its first chunk arrived). Moved out of the check module to keep it small;
the checks stay there."""

from __future__ import annotations

import base64
import json
import socket
import struct
import time

from gatecheck.conformance.app import new_token, script_request, value_of, wait_steps
from gatecheck.conformance.client.http1 import Connection, build_request, parse_responses, read_raw
from gatecheck.conformance.helpers.support import body_not_read

__all__ = [
    "assert_ping",
    "b64",
    "upload",
    "message_records",
    "close_as",
    "DEFAULTS",
    "DEFAULT_BODY",
    "TE_CASES",
    "body_bytes_so_far",
    "bodiless_request_messages",
    "te_response",
    "first_chunk_arrival",
    "events_of_kept_alive",
]


def b64(data: bytes) -> dict:
    return {"b64": base64.b64encode(data).decode("ascii")}


def assert_ping(resp) -> None:
    """The ``GET /ping`` pipelined behind a scripted response was answered as the fixture answers it."""
    assert resp.status == 200 and resp.body == b"ok", (
        f"the request pipelined after the scripted one got {resp.status} {resp.body[:80]!r}: "
        "the scripted response left stray bytes or broken framing on the connection"
    )


def upload(server, how: str, chunks: list) -> dict:
    """POST the chunks to /probe ("content-length", "chunked-one-write" or "chunked-separate-writes") and
    return the probe document (request messages and body digest)."""
    body = b"".join(chunks)
    if how == "content-length":
        data = build_request("POST", "/probe", [("Content-Length", str(len(body)))], body, host=server.authority)
        parts = [data]
    else:
        head = build_request("POST", "/probe", [("Transfer-Encoding", "chunked")], host=server.authority)
        framed = [f"{len(c):x}\r\n".encode() + c + b"\r\n" for c in chunks] + [b"0\r\n\r\n"]
        parts = [head + b"".join(framed)] if how == "chunked-one-write" else [head] + framed
    with Connection(server.address, 10) as conn:
        for n, part in enumerate(parts):
            if n:
                time.sleep(0.05)  # separate writes reach the server as separate reads
            conn.send(part)
        resp = conn.read_responses(1, methods=["POST"]).first
    if how != "content-length":
        body_not_read(server, resp, None)  # a 411 to a body without Content-Length: not supported
    assert resp.status == 200, resp.body[:200]
    return json.loads(resp.body)


def message_records(server, how: str, chunks: list) -> list:
    """The typed records of the http.request messages the app received for one upload."""
    records = upload(server, how, chunks)["request_messages"]["items"]
    for record in records:
        assert record["type"] == "dict", f"an http.request message is a {record['type']}, not a dict"
    return records


def close_as(conn: Connection, how: str) -> None:
    """Close the client's connection with a FIN ("fin") or a reset ("rst": SO_LINGER 0)."""
    if how == "rst":
        conn.sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    conn.close()


#: responses whose messages leave an optional key out, and the body each makes
DEFAULTS = {
    "start-without-headers": [["send", {"type": "http.response.start", "status": 200}], ["body", "abc"]],
    "body-without-body": [["start", 200], ["send", {"type": "http.response.body"}]],
    "body-without-more-body": [["start", 200], ["send", {"type": "http.response.body", "body": b64(b"abc")}]],
}
DEFAULT_BODY = {"start-without-headers": b"abc", "body-without-body": b"", "body-without-more-body": b"abc"}

#: an app-supplied Transfer-Encoding: (the start's headers, the request's version)
TE_CASES = {
    "chunked-streamed": ([["transfer-encoding", "chunked"]], "HTTP/1.1"),
    "chunked-with-length": ([["transfer-encoding", "chunked"], ["content-length", "11"]], "HTTP/1.1"),
    "chunked-to-http-1.0": ([["transfer-encoding", "chunked"]], "HTTP/1.0"),
}


def body_bytes_so_far(data: bytes) -> int:
    """How many body bytes of a (possibly incomplete) response have arrived, framing removed."""
    head_end = data.find(b"\r\n\r\n")
    if head_end < 0:
        return 0
    head, body = data[:head_end].lower(), data[head_end + 4 :]
    if b"\ntransfer-encoding:" not in head:
        return len(body)
    total, pos = 0, 0
    while True:
        eol = body.find(b"\r\n", pos)
        if eol < 0:
            return total
        size = int(body[pos:eol].split(b";")[0].strip() or b"0", 16)
        available = len(body) - (eol + 2)
        if size == 0 or available < size:
            return total + max(0, min(size, available))
        total += size
        pos = eol + 2 + size + 2


def bodiless_request_messages(server, how: str) -> list:
    """The http.request messages the app received for a request without a body: "GET", "POST-content-length-0"
    or "POST-chunked-empty" (a chunked body of the last chunk only)."""
    if how == "GET":
        data = build_request("GET", "/probe", host=server.authority)
    elif how == "POST-content-length-0":
        data = build_request("POST", "/probe", [("Content-Length", "0")], host=server.authority)
    else:
        data = build_request(
            "POST",
            "/probe",
            [("Transfer-Encoding", "chunked")],
            b"0\r\n\r\n",
            host=server.authority,
            content_length=False,
        )
    with Connection(server.address, 5) as conn:
        conn.send(data)
        resp = conn.read_responses(1, methods=["POST"]).first
    return value_of(json.loads(resp.body)["request_messages"])


def te_response(server, case: str):
    """The response to a script whose start carries TE_CASES[case]'s Transfer-Encoding (read to the connection's
    close for HTTP/1.0), parsed."""
    headers, version = TE_CASES[case]
    if case == "chunked-with-length":
        steps = [["start", 200, headers], ["body", "hello world"]]
    else:
        steps = [["start", 200, headers], ["body", "hello", True], ["body", " world"]]
    data = script_request(server, steps, token=new_token(), version=version)
    with Connection(server.address, 5) as conn:
        conn.send(data)
        ex = conn.read_responses(1)
        if version == "HTTP/1.0":
            conn.wait_closed(2)
        raw = conn.buffer if not ex.raw else ex.raw + conn.buffer
    responses, _ = parse_responses(raw, closed=True)
    assert responses, f"no parseable response: {raw[:300]!r}"
    return responses[0]


def first_chunk_arrival(server, steps: list, token: str, size: int) -> tuple:
    """Send the script and read its response: (when the first ``size`` body bytes had all arrived, or None;
    the bytes read). The response ends 3 bytes after that first chunk."""
    seen_at = None

    def complete(data) -> bool:  # called after every read: note when the first chunk was all there
        nonlocal seen_at
        if seen_at is None and body_bytes_so_far(data) >= size:
            seen_at = time.time()
        return body_bytes_so_far(data) >= size + 3

    with Connection(server.address, 8) as conn:
        conn.send(script_request(server, steps, token=token))
        data, _ = read_raw(conn.sock, complete, timeout=6)
    return seen_at, data


def events_of_kept_alive(server, steps: list, *, timeout: float, steps_timeout: float) -> list:
    """Run a script whose response body is ``done`` on a connection the client keeps open, and return the app's
    events once every step logged (or at ``steps_timeout``)."""
    token = new_token()
    with Connection(server.address, timeout) as conn:
        conn.send(script_request(server, steps, token=token))
        assert conn.read_responses(1).first.body == b"done"
        return wait_steps(server, token, len(steps), timeout=steps_timeout)
