"""Request framing mutations derived from RFC 9112's grammar, each read by the grammar itself.

A *message* is one request built from named pieces: its request-line, its field lines (``X-Pad`` stands for
any field, the framing field comes last), the empty line that ends the head, and a body carrying a complete
``GET /ping`` with a token of its own (the *hidden* request, so a server that reads body octets as a request
shows it in the app's log). Every CRLF the grammar puts in it is a *site*. The mutations are the valid form
and its neighbours, made by one edit each:

- every stray octet count 0-4 where a CRLF belongs: the CRLF replaced by that many octets (``replace-K``;
  ``replace-0`` drops it), or that many octets before it (``before-K``), at every CRLF site of the head and
  of the chunked coding, and a bare LF or CR in its place in the chunk lines (no robustness exception covers
  those; the trailer section is field lines, where a recipient MAY take a bare LF as a line end);
- every truncation point of a body at end of stream: each octet of the chunked coding's framing (inside
  chunk-size, extension, the CRLFs, the last-chunk, the trailer section, the final CRLF) and the first, second
  and last octet of each chunk-data, and the same points of a Content-Length body;
- methods: lower-case and mixed-case tokens, and a method with each class of non-token octet;
- Content-Length values around the body's length (equal, leading zeros, one more and one less, zero, a list,
  signs, hex, a decimal point, empty, past 2**64);
- a body with Content-Length and with chunked on HEAD, GET, OPTIONS, DELETE and TRACE.

What the grammar makes of each (``grammar.read_stream``) is the oracle: the requests it reads complete (with
their method and body), and whether the stream then ends, is invalid (answered 400 and closed, RFC 9112 §2.2),
or is incomplete. A mutation's ``refusable`` says the server may also refuse a complete request outright (a
method it does not implement, content on a method without content semantics, a list of identical lengths, a
length past its limit): those answers are the text's, not the grammar's. Pure data: no I/O.
"""

from __future__ import annotations

from dataclasses import dataclass

from gatecheck.conformance.spec.grammar import COMPLETE, INCOMPLETE, INVALID, Reading, read_stream

__all__ = [
    "Mutation",
    "MUTATIONS",
    "FAMILIES",
    "hidden_request",
    "HIDDEN_HOST",
    "build",
    "reading_of",
    "of_family",
    "INVALID_ONES",
    "declared_length",
    "COMPLETE",
    "INVALID",
    "INCOMPLETE",
]

CRLF = b"\r\n"
#: the Host of the hidden request (fixed, so every chunk-size is a constant)
HIDDEN_HOST = b"gatecheck.test"
_TOKEN_LEN = 18  # conformance.app.new_token(): "c-" and 16 hex digits
_STRAY = b"xyzw"  # stray octets: not HEXDIG, ";", CR, LF, SP or HTAB, so no reading makes them framing


def hidden_request(token: str) -> bytes:
    """The complete request a body carries: served only where the grammar reads body octets as a request."""
    return b"GET /ping HTTP/1.1\r\nHost: " + HIDDEN_HOST + b"\r\nx-gatecheck-token: " + token.encode() + b"\r\n\r\n"


_HIDDEN_LEN = len(hidden_request("c-" + "0" * 16))
_SPLIT = 16  # the hidden request goes in two chunks: 16 octets (with an extension), then the rest


def _head(method: bytes, framing: bytes | None) -> list:
    pieces = [
        ("request-line", method + b" {target} HTTP/1.1"),
        ("request-line-crlf", CRLF),
        ("host", b"Host: {host}"),
        ("host-crlf", CRLF),
        ("token", b"x-gatecheck-token: {token}"),
        ("token-crlf", CRLF),
        ("pad", b"X-Pad: p"),
        ("pad-crlf", CRLF),
    ]
    if framing is not None:
        pieces += [("framing", framing), ("framing-crlf", CRLF)]
    return pieces + [("head-end", CRLF)]


def _chunked_body(hidden: bytes) -> list:
    first, rest = hidden[:_SPLIT], hidden[_SPLIT:]
    return [
        ("size1", b"%x;e=v" % len(first)),
        ("size1-crlf", CRLF),
        ("data1", first),
        ("data1-crlf", CRLF),
        ("size2", b"%x" % len(rest)),
        ("size2-crlf", CRLF),
        ("data2", rest),
        ("data2-crlf", CRLF),
        ("last-chunk", b"0"),
        ("last-chunk-crlf", CRLF),
        ("trailer", b"X-Trailer: t"),
        ("trailer-crlf", CRLF),
        ("body-end", CRLF),
    ]


def _length(template: bytes) -> bytes:
    n = _HIDDEN_LEN
    return (
        template.replace(b"{n+1}", b"%d" % (n + 1))
        .replace(b"{n-1}", b"%d" % (n - 1))
        .replace(b"{n}", b"%d" % n)
        .replace(b"{hex}", b"%x" % n)
        .replace(b"{2**64+n}", b"%d" % (2**64 + n))
    )


@dataclass(frozen=True)
class Mutation:
    """One request (or a request and what follows it) made from the valid form by one edit."""

    name: str
    family: str
    method: bytes = b"POST"
    framing: str = "chunked"  # "chunked", "length" (Content-Length: ``length``) or "none"
    length: bytes = b"{n}"  # the Content-Length value's template
    edit: tuple = ()  # ("crlf", site, octets) | ("truncate", body octets kept)
    eof: bool = False  # the client ends its side after sending
    refusable: bool = False  # a complete request the server may also refuse (see the module docstring)

    def pieces(self, hidden: bytes) -> list:
        if self.framing == "chunked":
            return _head(self.method, b"Transfer-Encoding: chunked") + _chunked_body(hidden)
        if self.framing == "length":
            return _head(self.method, b"Content-Length: " + _length(self.length)) + [("body", hidden)]
        return _head(self.method, None)

    def data(self, target: bytes, host: bytes, token: str, hidden_token: str) -> bytes:
        """The bytes on the wire, for this server's request target and Host, and the two tokens."""
        pieces = self.pieces(hidden_request(hidden_token))
        if self.edit and self.edit[0] == "crlf":
            _, site, octets = self.edit
            pieces = [(name, octets if name == site else value) for name, value in pieces]
        head_end = [name for name, _ in pieces].index("head-end") + 1
        head = b"".join(v for _, v in pieces[:head_end])
        head = head.replace(b"{target}", target).replace(b"{host}", host).replace(b"{token}", token.encode())
        body = b"".join(v for _, v in pieces[head_end:])
        if self.edit and self.edit[0] == "truncate":
            body = body[: self.edit[1]]
        return head + body


def declared_length(mutation: Mutation) -> int | None:
    """The Content-Length a length-framed mutation declares (None: not 1*DIGIT, or not length-framed)."""
    value = _length(mutation.length)
    return int(value) if mutation.framing == "length" and value.isdigit() else None


def build(mutation: Mutation, target: bytes, host: bytes, token: str, hidden_token: str) -> bytes:
    return mutation.data(target, host, token, hidden_token)


_PLACEHOLDER = ("c-" + "0" * 16, "c-" + "1" * 16)


def reading_of(mutation: Mutation) -> Reading:
    """What the grammar reads in the mutation's bytes (the same for every server: the tokens have a fixed
    length and the head's variable parts do not change the reading)."""
    return read_stream(build(mutation, b"/script", b"127.0.0.1:8000", *_PLACEHOLDER), mutation.eof)


# -- the mutations ----------------------------------------------------------------------------------


def _crlf_edits(site: str) -> list:
    """(id part, octets) for every stray octet count 0-4 at a CRLF site. Stray octets before the CRLF that ends
    the trailer section make a trailer line of their own, so the section's end follows them: a server may read
    the whole section before judging its lines, as it may the head."""
    edits = [(f"replace-{k}", _STRAY[:k]) for k in range(5)]
    end = CRLF + CRLF if site == "body-end" else CRLF
    return edits + [(f"before-{k}", _STRAY[:k] + end) for k in range(1, 5)]


_HEAD_SITES = ("pad-crlf", "framing-crlf", "head-end")
_CHUNK_SITES = ("size1-crlf", "data1-crlf", "size2-crlf", "data2-crlf", "last-chunk-crlf", "trailer-crlf", "body-end")
_TRAILER_SITES = ("trailer-crlf", "body-end")
_FRAMINGS = {"chunked": "chunked", "length": "length"}


def _request_line() -> list:
    out = [
        Mutation(
            f"request-line-crlf-{edit}", "request-line", framing="none", edit=("crlf", "request-line-crlf", octets)
        )
        for edit, octets in _crlf_edits("request-line-crlf")
    ]
    for method in (b"get", b"Get", b"gEt", b"post"):
        out.append(Mutation(f"method-{method.decode()}", "request-line", method=method, framing="none", refusable=True))
    # every delimiter, a C0 control, NUL, DEL and obs-text: none is a tchar (SP and HTAB split words instead)
    for octet in b'"(),/:;<=>?@[\\]{}' + b"\x00\x01\x7f\x80\xff":
        out.append(
            Mutation(
                f"method-non-token-0x{octet:02x}", "request-line", method=b"G" + bytes([octet]) + b"T", framing="none"
            )
        )
    return out


def _fields() -> list:
    return [
        Mutation(f"fields-{framing}-{site}-{edit}", "fields", framing=framing, edit=("crlf", site, octets))
        for framing in _FRAMINGS
        for site in _HEAD_SITES
        for edit, octets in _crlf_edits(site)
    ]


def _chunked() -> list:
    out = [Mutation("chunked-valid", "chunked")]
    for site in _CHUNK_SITES:
        out += [
            Mutation(f"chunked-{site}-{edit}", "chunked", edit=("crlf", site, octets))
            for edit, octets in _crlf_edits(site)
        ]
        if site not in _TRAILER_SITES:  # a field line (a trailer's too) MAY end in a bare LF (RFC 9112 §2.2)
            out += [
                Mutation(f"chunked-{site}-bare-{name}", "chunked", edit=("crlf", site, octets))
                for name, octets in (("lf", b"\n"), ("cr", b"\r"))
            ]
    return out


#: Content-Length values (templates over the body's length n): (id, value, refusable)
_CL_VALUES = (
    ("equal", b"{n}", False),
    ("leading-zeros", b"000{n}", False),
    ("one-more", b"{n+1}", False),
    ("one-less", b"{n-1}", False),
    ("zero", b"0", False),
    ("identical-list", b"{n}, {n}", True),
    ("differing-list", b"{n}, {n+1}", False),
    ("plus", b"+{n}", False),
    ("minus", b"-{n}", False),
    ("hex", b"0x{hex}", False),
    ("decimal", b"{n}.0", False),
    ("empty", b"", False),
    ("inner-space", b"{n} {n}", False),
    ("past-2-64", b"{2**64+n}", True),
)


def _content_length() -> list:
    return [
        Mutation(f"content-length-{name}", "content-length", framing="length", length=value, refusable=refusable)
        for name, value, refusable in _CL_VALUES
    ]


def _truncation_points() -> list:
    """(id part, octets of the chunked body kept): every framing octet, and three octets of each chunk-data."""
    points, offset = [], 0
    for name, value in _chunked_body(hidden_request(_PLACEHOLDER[1])):
        inside = range(len(value)) if not name.startswith("data") else sorted({0, 1, len(value) - 1})
        points += [(f"{name}-{i}", offset + i) for i in inside]
        offset += len(value)
    return points


def _truncated() -> list:
    out = [
        Mutation(f"truncated-chunked-{where}", "truncated", edit=("truncate", kept), eof=True)
        for where, kept in _truncation_points()
    ]
    return out + [
        Mutation(f"truncated-length-{kept}", "truncated", framing="length", edit=("truncate", kept), eof=True)
        for kept in sorted({0, 1, _HIDDEN_LEN // 2, _HIDDEN_LEN - 1})
    ]


def _method_bodies() -> list:
    """Content on methods whose semantics define none (RFC 9110 §9.3): framed all the same; a server may refuse."""
    return [
        Mutation(
            f"body-{method.decode().lower()}-{framing}", "method-body", method=method, framing=framing, refusable=True
        )
        for method in (b"HEAD", b"GET", b"OPTIONS", b"DELETE", b"TRACE")
        for framing in _FRAMINGS
    ]


#: every mutation, by family
FAMILIES = {
    "request-line": _request_line(),
    "fields": _fields(),
    "content-length": _content_length(),
    "chunked": _chunked(),
    "truncated": _truncated(),
    "method-body": _method_bodies(),
}
MUTATIONS = tuple(m for family in FAMILIES.values() for m in family)
assert len({m.name for m in MUTATIONS}) == len(MUTATIONS), "mutation names must be unique"


def of_family(family: str) -> tuple:
    return tuple(FAMILIES[family])


#: the mutations whose first invalid octets come before any end of stream: answered 400 and closed (§2.2)
INVALID_ONES = tuple(m for m in MUTATIONS if reading_of(m).end == INVALID)
