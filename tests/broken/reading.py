"""The request side of ``tests/broken/server.py``: the request head, its parse and its body, strict by default.

Rules of this module: every wire decision about what a request is sits here, each break that bends one as a
single ``if`` naming it (``server.BREAKS``); answering (status line, framing of the response, Connection) is
``server.py``'s. Anything RFC 9112 lets a server reject raises :class:`HttpError` (answered, then closed).
"""

from __future__ import annotations

import re

from .gateway import CTL as _CTL
from .gateway import FIELD_NAME as _FIELD_NAME

__all__ = ["RequestReader", "Request", "HttpError", "Incomplete", "Skipped", "ABSOLUTE_TARGET"]

MAX_LINE = 16 * 1024  # request-line limit (414 beyond)
MAX_HEAD = 64 * 1024  # header section limit (431 beyond)
MAX_CHUNK_LINE = 4096  # chunk-size line incl. extensions (400 beyond)
MAX_BODY = 64 * 1024 * 1024  # request body limit (413 beyond)

_TOKEN = rb"[!#$%&'*+.^_`|~0-9A-Za-z-]+"
_REQUEST_LINE = re.compile(rb"(" + _TOKEN + rb") ([^\x00-\x20\x7f]+) HTTP/(\d)\.(\d)")
_HOST = re.compile(rb"(\[[0-9A-Fa-f:.]+\]|[A-Za-z0-9._~!$&'()*+,;=%-]*)(:[0-9]*)?")
_DIGITS = re.compile(rb"[0-9]+")
_QUOTED = rb'"(?:[^"\\\x00-\x08\x0a-\x1f\x7f]|\\.)*"'
_CHUNK_SIZE = re.compile(
    rb"([0-9A-Fa-f]+)((?:[ \t]*;[ \t]*" + _TOKEN + rb"(?:[ \t]*=[ \t]*(?:" + _TOKEN + rb"|" + _QUOTED + rb"))?)*)"
)
ABSOLUTE_TARGET = re.compile(rb"https?://([^/?#]*)(.*)", re.I)


class HttpError(Exception):
    """The request is answered with ``status`` and the connection closed."""

    def __init__(self, status: int):
        super().__init__(status)
        self.status = status


class Incomplete(Exception):
    """The client ended the connection before the request was complete: close without a response."""


class Skipped(Exception):
    """(garbage_skipped) this request is dropped without an answer; the next one is read."""


class Request:
    def __init__(self, method, target, version, fields, body=b""):
        self.method, self.target, self.version, self.fields, self.body = method, target, version, fields, body

    def values(self, name: bytes) -> list:
        return [v for n, v in self.fields if n == name]

    def tokens(self, name: bytes) -> set:
        return {t.strip().lower() for v in self.values(name) for t in v.split(b",") if t.strip()}


class RequestReader:
    """Reads requests from one connection's ``reader`` into :class:`Request` objects; ``writer`` only gets
    the interim 100 (Continue)."""

    def __init__(self, reader, writer, breaks: set):
        self.reader, self.writer, self.breaks = reader, writer, breaks
        self.buf = bytearray()

    async def _fill(self) -> bool:
        data = await self.reader.read(65536)
        self.buf += data
        return bool(data)

    # -- reading --------------------------------------------------------------------------------

    async def _line(self, limit: int) -> bytes:
        while True:
            i = self.buf.find(b"\n")
            if i >= 0:
                if (i == 0 or self.buf[i - 1] != 0x0D) and "chunk_bare_lf" not in self.breaks:
                    raise HttpError(400)  # a bare LF in chunked framing does not match the grammar
                line = bytes(self.buf[:i]).rstrip(b"\r")
                del self.buf[: i + 1]
                return line
            if len(self.buf) > limit:
                raise HttpError(400)
            if not await self._fill():
                raise Incomplete

    async def read_head(self):
        """The next request head as (request-line, field lines), None at a clean EOF."""
        while True:
            while self.buf[:2] == b"\r\n":
                del self.buf[:2]  # empty lines before a request-line are ignored (RFC 9112 §2.2)
            end = self.buf.find(b"\r\n\r\n")
            if end >= 0:
                break
            line_end = self.buf.find(b"\r\n")
            long_line = (line_end < 0 and len(self.buf) > MAX_LINE) or line_end > MAX_LINE
            if long_line and "target_truncated" not in self.breaks:
                raise HttpError(414)
            if len(self.buf) > MAX_HEAD and not (long_line and "target_truncated" in self.breaks):
                if "headers_truncated" not in self.breaks:
                    raise HttpError(431)
                cut = self.buf.rfind(b"\r\n", 0, MAX_HEAD)
                self.buf[cut:] = b"\r\n\r\n"  # cut the header section at the limit and carry on
                continue
            if self.buf and "incomplete_answered" in self.breaks:
                raise HttpError(400)
            if not await self._fill():
                if self.buf.strip(b"\r\n"):
                    raise Incomplete
                return None
        head = bytes(self.buf[:end])
        del self.buf[: end + 4]
        lines = head.split(b"\r\n")
        if len(lines[0]) > MAX_LINE and "target_truncated" not in self.breaks:
            raise HttpError(414)
        fields, size = [], 0
        for line in lines[1:]:
            size += len(line) + 2
            if size > MAX_HEAD:
                if "headers_truncated" not in self.breaks:
                    raise HttpError(431)
                break  # the rest of the header section is dropped without a word
            fields.append(line)
        return lines[0], fields

    def parse(self, line: bytes, field_lines: list) -> Request:
        if "request_line_bare_cr_as_space" in self.breaks:
            line = line.replace(b"\r", b" ")
        if "request_line_bare_cr_kept" in self.breaks:
            line = line.replace(b"\r", b"%0D")
        if b"\r" in line or b"\n" in line:
            raise HttpError(400)
        if "spaces_in_target" in self.breaks and line.count(b" ") > 2:
            method, rest = line.split(b" ", 1)
            line = method + b" " + rest.rsplit(b" ", 1)[0].replace(b" ", b"%20") + b" " + rest.rsplit(b" ", 1)[1]
        match = _REQUEST_LINE.fullmatch(line)
        if not match and "garbage_skipped" in self.breaks:
            raise Skipped
        if not match:
            raise HttpError(400)
        method, target, major, minor = match.groups()
        if major != b"1" and "any_major_served" not in self.breaks:
            raise HttpError(505)
        version = "HTTP/1.0" if minor == b"0" else "HTTP/1.1"
        if "target_truncated" in self.breaks:
            target = target[:4096]  # and the request goes on as if that were all of it
        if "bare_cr_splits_lines" in self.breaks:
            field_lines = [part for raw in field_lines for part in raw.split(b"\r")]
        fields = []
        for raw in field_lines:
            if raw[:1] in (b" ", b"\t") and fields and "obs_fold_joined" in self.breaks:
                fields[-1] = (fields[-1][0], fields[-1][1] + raw.strip(b" \t"))
                continue
            if raw[:1] in (b" ", b"\t") or b"\r" in raw or b"\n" in raw:
                raise HttpError(400)  # obs-fold, a whitespace-prefixed line, bare CR or LF
            name, sep, value = raw.partition(b":")
            if "space_before_colon" in self.breaks:
                name = name.rstrip(b" \t")
            if not sep or not (_FIELD_NAME.fullmatch(name) or (name and "any_field_name" in self.breaks)):
                raise HttpError(400)
            value = value.strip(b" \t")
            if _CTL.search(value.replace(b"\0", b"") if "nul_in_values_kept" in self.breaks else value):
                raise HttpError(400)
            fields.append((name.lower(), value))
        if "method_case_folded" in self.breaks:
            method = method.upper()
        req = Request(method.decode("ascii"), target, version, fields)
        hosts = req.values(b"host")
        missing = version == "HTTP/1.1" and not hosts and "host_not_required" not in self.breaks
        missing = missing or (not hosts and "host_required_for_http10" in self.breaks)
        if len(hosts) > 1 and "two_hosts_accepted" in self.breaks:
            hosts = hosts[:1]
        if missing or len(hosts) > 1 or (hosts and not _HOST.fullmatch(hosts[0])):
            raise HttpError(400)
        if not (
            target.startswith(b"/") or ABSOLUTE_TARGET.fullmatch(target) or (target == b"*" and method == b"OPTIONS")
        ):
            raise HttpError(400)
        return req

    async def read_body(self, req: Request) -> None:
        te, cl = req.values(b"transfer-encoding"), req.values(b"content-length")
        if req.method == "HEAD" and "head_body_ignored" in self.breaks:
            return
        if te:
            codings = [c.strip().lower() for c in b",".join(te).split(b",") if c.strip()]
            if "transfer_coding_prefix" in self.breaks and codings and codings[-1].startswith(b"chunked"):
                codings[-1] = b"chunked"
            if "unknown_coding_501" in self.breaks and codings != [b"chunked"]:
                raise HttpError(501)
            http10 = req.version == "HTTP/1.0" and "http10_te_accepted" not in self.breaks
            if http10 or (cl and "cl_te_accepted" not in self.breaks):
                raise HttpError(400)  # faulty framing (RFC 9112 §6.1): rejected, then closed
            if codings != [b"chunked"] and not ("te_chunked_anywhere" in self.breaks and b"chunked" in codings):
                raise HttpError(400)
            if "chunked_length_required" in self.breaks:
                raise HttpError(411)  # a valid chunked request, refused for its want of a Content-Length
            await self._expect_continue(req)
            req.body = await self._chunked(req)
            return
        length = 0
        if cl:
            values = [v.strip() for line in cl for v in line.split(b",")]
            if "content_length_lenient" in self.breaks:
                try:
                    lengths = {int(v) for v in values}
                except ValueError:
                    raise HttpError(400) from None
            elif not all(_DIGITS.fullmatch(v) for v in values):
                raise HttpError(400)
            else:
                lengths = {int(v) for v in values}
            if "content_length_wraps" in self.breaks:
                lengths = {n % 2**64 for n in lengths}
            if "first_content_length_wins" in self.breaks:
                lengths = {int(values[0])}
            if len(lengths) != 1:
                raise HttpError(400)
            length = lengths.pop()
            if length > MAX_BODY:
                raise HttpError(413)
        if length:
            await self._expect_continue(req)
        while len(self.buf) < length:
            if not await self._fill():
                raise Incomplete
        req.body = bytes(self.buf[:length])
        del self.buf[:length]

    async def _expect_continue(self, req: Request) -> None:
        expect = req.tokens(b"expect")
        if not expect or (req.version == "HTTP/1.0" and "continue_to_http10" not in self.breaks):
            return  # an HTTP/1.0 client's Expect is ignored (RFC 9110 §10.1.1)
        if expect != {b"100-continue"}:
            raise HttpError(417)
        if not self.buf and "expect_ignored" not in self.breaks:
            self.writer.write(b"HTTP/1.1 100 Continue\r\n\r\n")
            await self.writer.drain()

    async def _chunked(self, req: Request) -> bytes:
        body = bytearray()
        while True:
            line = await self._line(MAX_CHUNK_LINE)
            if "chunk_size_int" in self.breaks:
                try:
                    size = int(line.split(b";", 1)[0], 16)
                except ValueError:
                    raise HttpError(400) from None
            else:
                match = _CHUNK_SIZE.fullmatch(line)
                if not match:
                    raise HttpError(400)
                size = int(match[1], 16)
                if "chunk_size_wraps" in self.breaks:
                    size %= 2**64
                elif len(match[1].lstrip(b"0")) > 16:
                    raise HttpError(400)  # more than 64 bits: refused, never truncated
            if size == 0:
                break
            while len(self.buf) < size + 2:
                if not await self._fill():
                    if "truncated_chunked_completed" in self.breaks:
                        return bytes(body + self.buf[:size])
                    raise Incomplete
            if self.buf[size : size + 2] != b"\r\n" and "chunk_crlf_skipped" not in self.breaks:
                raise HttpError(400)
            body += self.buf[:size]
            del self.buf[: size + 2]
            if len(body) > MAX_BODY:
                raise HttpError(413)
        while True:  # trailer section: checked, never merged into the headers (RFC 9112 §7.1.2)
            try:
                line = await self._line(MAX_HEAD)
            except Incomplete:
                if "truncated_chunked_completed" in self.breaks:
                    return bytes(body)
                raise
            if not line:
                return bytes(body)
            name, sep, value = line.partition(b":")
            if not sep or not _FIELD_NAME.fullmatch(name):
                raise HttpError(400)
            if "trailers_merged" in self.breaks:
                req.fields.append((name.lower(), value.strip(b" \t")))
