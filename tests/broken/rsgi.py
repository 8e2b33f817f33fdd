"""Deliberately broken RSGI behaviour: the fixture app behind proxies that break exactly one rule.

Load ``tests.broken.rsgi:<name>`` with an RSGI server (``tests.broken.rsgi:control`` breaks nothing). RSGI
hands the app server objects (the scope, its headers, the protocol, the stream transport), so each entry
of ``BREAKS`` wraps one of them in a proxy that forwards everything except the one thing it gets wrong.

Rules of this module: one entry, one broken rule; the ``x-gatecheck-token`` header always reads as sent,
so the harness can still watch the app.
"""

from __future__ import annotations

from gatecheck.fixtures.apps.rsgi import app as fixture_app

from .chunks import reordered

__all__ = ["BREAKS", "control"]


class _Proxy:
    """Forwards every attribute to the wrapped server object; subclasses override what they break."""

    def __init__(self, inner):
        self._inner = inner

    def __getattr__(self, name):
        return getattr(self._inner, name)


# -- the scope and its headers ----------------------------------------------------------------------


class _Missing(Exception):
    pass


def _scope_with(**edits):
    """A scope proxy whose attribute ``name`` is ``edit(original, scope)``; an edit raising _Missing
    removes it."""

    class Scope(_Proxy):
        def __getattr__(self, name):
            value = getattr(self._inner, name)
            if name in edits:
                try:
                    return edits[name](value, self._inner)
                except _Missing:
                    raise AttributeError(name) from None
            return value

    return Scope


def _missing(value, scope):
    raise _Missing


def _port_plus_one(value, scope):
    host, _, port = value.rpartition(":")
    return f"{host}:{int(port) + 1}"


def _path_with_query(value, scope):
    return f"{value}?{scope.query_string}"


class _Headers(_Proxy):
    def get(self, *args):
        return self._inner.get(*args)

    def get_all(self, name):
        return self._inner.get_all(name)

    def keys(self):
        return self._inner.keys()

    def values(self):
        return self._inner.values()

    def items(self):
        return self._inner.items()

    def __getitem__(self, name):
        return self._inner[name]

    def __contains__(self, name):
        return name in self._inner

    def __len__(self):
        return len(self._inner)

    def __iter__(self):
        return iter(self._inner)


class _UpperKeys(_Headers):
    def keys(self):
        return [k if k == "x-gatecheck-token" else k.upper() for k in self._inner.keys()]


class _GetAllReversed(_Headers):
    def get_all(self, name):
        return list(reversed(self._inner.get_all(name)))


class _MissingIsNone(_Headers):
    def __getitem__(self, name):
        return self._inner.get(name)


def _headers_as(cls):
    return _scope_with(headers=lambda headers, scope: cls(headers))


# -- the HTTP protocol and the stream transport -------------------------------------------------------


class _Protocol(_Proxy):
    async def __call__(self):
        return await self._inner()

    def __aiter__(self):
        return self._inner.__aiter__()


class _BodyShortByOne(_Protocol):
    async def __call__(self):
        return (await self._inner())[:-1]


class _IterReordered(_Protocol):
    """The body chunks are collected and handed out of order (``chunks.reordered``)."""

    async def _reordered(self):
        chunks = [chunk async for chunk in self._inner]
        for chunk in reordered(chunks):
            yield chunk

    def __aiter__(self):
        return self._reordered()


def _with_length(headers, length: int) -> list:
    return [(k, str(length) if k.lower() == "content-length" else v) for k, v in headers]


class _FileShortByOne(_Protocol):
    def response_file(self, status, headers, file):
        with open(file, "rb") as fh:
            body = fh.read()[:-1]
        self._inner.response_bytes(status, _with_length(headers, len(body)), body)


class _FileRangeShortByOne(_Protocol):
    def response_file_range(self, status, headers, file, start, end):
        self._inner.response_file_range(status, _with_length(headers, end - 1 - start), file, start, end - 1)


class _StatusAlways200(_Protocol):
    """Every response method sends 200, whatever status the app passed."""

    def response_empty(self, status, headers):
        self._inner.response_empty(200, headers)

    def response_bytes(self, status, headers, body):
        self._inner.response_bytes(200, headers, body)

    def response_str(self, status, headers, body):
        self._inner.response_str(200, headers, body)

    def response_file(self, status, headers, file):
        self._inner.response_file(200, headers, file)

    def response_file_range(self, status, headers, file, start, end):
        self._inner.response_file_range(200, headers, file, start, end)

    def response_stream(self, status, headers):
        return self._inner.response_stream(200, headers)


def _merged(headers) -> list:
    return list(dict(headers).items())


class _RepeatsMerged(_Protocol):
    """Response headers go out as a dict would keep them, the last value of each name, through every
    response method."""

    def response_empty(self, status, headers):
        self._inner.response_empty(status, _merged(headers))

    def response_bytes(self, status, headers, body):
        self._inner.response_bytes(status, _merged(headers), body)

    def response_str(self, status, headers, body):
        self._inner.response_str(status, _merged(headers), body)

    def response_file(self, status, headers, file):
        self._inner.response_file(status, _merged(headers), file)

    def response_file_range(self, status, headers, file, start, end):
        self._inner.response_file_range(status, _merged(headers), file, start, end)

    def response_stream(self, status, headers):
        return self._inner.response_stream(status, _merged(headers))


class _CrLfNormalised(_Protocol):
    def response_bytes(self, status, headers, body):
        body = bytes(body).replace(b"\r\n", b"\n")
        self._inner.response_bytes(status, _with_length(headers, len(body)), body)


class _ReorderedTransport(_Proxy):
    """The first two chunks go out swapped."""

    def __init__(self, inner):
        super().__init__(inner)
        self.held = []

    async def send_bytes(self, data):
        if not self.held:
            self.held.append(bytes(data))
            return
        await self._inner.send_bytes(data)
        while self.held:
            await self._inner.send_bytes(self.held.pop())

    async def send_str(self, data):
        await self.send_bytes(data.encode("utf-8"))


class _StreamReordered(_Protocol):
    transport = None

    def response_stream(self, status, headers):
        self.transport = _ReorderedTransport(self._inner.response_stream(status, headers))
        return self.transport

    async def finish(self):
        if self.transport is not None and self.transport.held:
            await self.transport._inner.send_bytes(self.transport.held.pop())


class _StrAsLatin1(_Protocol):
    def response_str(self, status, headers, body):
        self._inner.response_bytes(status, headers, body.encode("latin-1", "replace"))


class _BufferedTransport(_Proxy):
    def __init__(self, inner):
        super().__init__(inner)
        self.pending = []

    async def send_bytes(self, data):
        self.pending.append(bytes(data))

    async def send_str(self, data):
        self.pending.append(data.encode("utf-8"))


class _StreamBuffered(_Protocol):
    """Stream chunks are held until the app returns: nothing is flushed while the app streams."""

    transport = None

    def response_stream(self, status, headers):
        self.transport = _BufferedTransport(self._inner.response_stream(status, headers))
        return self.transport

    async def finish(self):
        if self.transport is not None and self.transport.pending:
            await self.transport._inner.send_bytes(b"".join(self.transport.pending))


# -- the WebSocket protocol -------------------------------------------------------------------------


class _TextAsBytesTransport(_Proxy):
    async def send_str(self, data):
        await self._inner.send_bytes(data.encode("utf-8"))


class _TextDataAsBytes(_Proxy):
    async def receive(self):
        message = await self._inner.receive()
        return _Message(message) if message.kind == 2 else message


class _Message(_Proxy):
    @property
    def data(self):
        return self._inner.data.encode("utf-8")


class _WSReceiveTextAsBytes(_Proxy):
    async def accept(self):
        return _TextDataAsBytes(await self._inner.accept())


class _WSTextAsBytes(_Proxy):
    async def accept(self):
        return _TextAsBytesTransport(await self._inner.accept())


# -- the application ----------------------------------------------------------------------------------


class Broken:
    """The fixture app with the server's scope and protocol objects wrapped (``None``: left as they are)."""

    def __init__(self, scope=None, http=None, ws=None, entry="__rsgi__"):
        self.scope, self.http, self.ws, self.entry = scope, http, ws, entry

    def __rsgi_init__(self, loop):
        fixture_app.__rsgi_init__(loop)

    def __rsgi_del__(self, loop):
        fixture_app.__rsgi_del__(loop)

    async def __rsgi__(self, scope, protocol):
        proxy = self.ws if scope.proto == "ws" else self.http
        wrapped = proxy(protocol) if proxy else protocol
        await getattr(fixture_app, self.entry)(self.scope(scope) if self.scope else scope, wrapped)
        finish = getattr(type(wrapped), "finish", None)
        if finish is not None:
            await wrapped.finish()

    __call__ = __rsgi__


#: name -> the broken app; each breaks the one rule its name says
BREAKS = {
    # scope
    "proto_upper": Broken(scope=_scope_with(proto=lambda v, s: v.upper() if v == "http" else v)),
    "rsgi_version_missing": Broken(scope=_scope_with(rsgi_version=_missing)),
    "http_version_1_0": Broken(scope=_scope_with(http_version=lambda v, s: "1.0" if v == "1" else v)),
    "http_version_2_as_1_1": Broken(scope=_scope_with(http_version=lambda v, s: "1.1" if v == "2" else v)),
    "scheme_https": Broken(scope=_scope_with(scheme=lambda v, s: "https")),
    "scheme_http": Broken(scope=_scope_with(scheme=lambda v, s: "http")),
    "path_with_query": Broken(scope=_scope_with(path=_path_with_query)),
    "server_port_off_by_one": Broken(scope=_scope_with(server=_port_plus_one)),
    "method_lower": Broken(scope=_scope_with(method=lambda v, s: v.lower())),
    "client_port_dropped": Broken(scope=_scope_with(client=lambda v, s: v.rpartition(":")[0])),
    "header_keys_upper": Broken(scope=_headers_as(_UpperKeys)),
    "get_all_reversed": Broken(scope=_headers_as(_GetAllReversed)),
    "missing_header_is_none": Broken(scope=_headers_as(_MissingIsNone)),
    # HTTP protocol
    "body_loses_a_byte": Broken(http=_BodyShortByOne),
    "echo_iter_reordered": Broken(http=_IterReordered),
    "file_short_by_one": Broken(http=_FileShortByOne),
    "file_range_short_by_one": Broken(http=_FileRangeShortByOne),
    "stream_buffered": Broken(http=_StreamBuffered),
    "status_always_200": Broken(http=_StatusAlways200),
    "str_as_latin1": Broken(http=_StrAsLatin1),
    "response_repeats_merged": Broken(http=_RepeatsMerged),
    "body_crlf_normalised": Broken(http=_CrLfNormalised),
    "stream_reordered": Broken(http=_StreamReordered),
    "entry_is_call": Broken(entry="__call__"),
    # WebSocket protocol
    "ws_text_as_bytes": Broken(ws=_WSTextAsBytes),
    "ws_text_received_as_bytes": Broken(ws=_WSReceiveTextAsBytes),
}

#: the fixture app through every proxy layer, with nothing broken (the control of every break)
control = Broken(scope=_headers_as(_Headers), http=_Protocol, ws=_Proxy)

globals().update(BREAKS)
