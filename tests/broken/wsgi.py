"""Deliberately broken WSGI behaviour: the fixture app behind a wrapper that breaks exactly one rule.

Load ``tests.broken.wsgi:<name>`` with any WSGI server (``tests.broken.wsgi:control`` breaks nothing).
Each entry of ``BREAKS`` plays a server that gets one PEP 3333 rule wrong — an environ value, the
``wsgi.input`` stream, ``start_response``/``write`` or the iterable's ``close()`` — so the conformance
check for that rule must fail while every other rule still holds.

Rules of this module: one entry, one broken rule; the event-log token (``HTTP_X_GATECHECK_TOKEN``) is never
touched, so the harness can still watch the app.
"""

from __future__ import annotations

from urllib.parse import unquote

from gatecheck.fixtures.apps.wsgi import app as fixture_app

__all__ = ["BREAKS", "control"]

_TOKEN_KEY = "HTTP_X_GATECHECK_TOKEN"


def _on_environ(edit):
    def wrap(app):
        def broken(environ, start_response):
            environ = dict(environ)
            edit(environ)
            return app(environ, start_response)

        return broken

    return wrap


def _on_start_response(make):
    """``make(start_response)`` returns the broken start_response for one request."""

    def wrap(app):
        def broken(environ, start_response):
            return app(environ, make(start_response))

        return broken

    return wrap


def _on_iterable(make):
    """``make(iterable)`` returns what the server gets instead of the app's iterable."""

    def wrap(app):
        def broken(environ, start_response):
            return make(app(environ, start_response))

        return broken

    return wrap


def _on_input(proxy_class):
    return _on_environ(lambda env: env.update({"wsgi.input": proxy_class(env["wsgi.input"])}))


# -- environ -------------------------------------------------------------------------------------


class _EnvironSubclass(dict):
    pass


def _as_subclass(app):
    def broken(environ, start_response):
        return app(_EnvironSubclass(environ), start_response)

    return broken


def _http_values(edit):
    def apply(environ):
        for key, value in list(environ.items()):
            if key.startswith("HTTP_") and key != _TOKEN_KEY:
                environ[key] = edit(value)

    return apply


def _put(key, value_of):
    def apply(environ):
        environ[key] = value_of(environ.get(key))

    return apply


def _path_info_utf8(value):
    try:
        return value.encode("latin-1").decode("utf-8")
    except (UnicodeError, AttributeError):
        return value


# -- wsgi.input ----------------------------------------------------------------------------------


class _Input:
    """A transparent proxy of the server's wsgi.input."""

    def __init__(self, inner):
        self._inner = inner

    def read(self, *args):
        return self._inner.read(*args)

    def readline(self, *args):
        return self._inner.readline(*args)

    def readlines(self, *args):
        return self._inner.readlines(*args)

    def __iter__(self):
        return iter(self._inner)


class _ReadsPastContentLength(_Input):
    """No simulated EOF: the read that reaches the end of the body goes on into the next request's bytes
    (once: then the stream ends, so an app reading to EOF still finishes)."""

    _NEXT = b"GET /ping HTTP/1.1\r\nHost: gatecheck\r\n\r\n"
    _leaked = False

    def read(self, size=-1):
        data = self._inner.read() if size is None or size < 0 else self._inner.read(size)
        wanted = None if size is None or size < 0 else size - len(data)
        if not self._leaked and (wanted is None or wanted > 0):
            self._leaked = True
            data += self._NEXT[:wanted]
        return data


class _ReadIgnoresSize(_Input):
    def read(self, size=-1):
        return self._inner.read()


class _ReadlineIgnoresSize(_Input):
    def readline(self, size=-1):
        return self._inner.readline()


class _ReadWithoutSizeReadsALittle(_Input):
    def read(self, size=-1):
        return self._inner.read(4 if size is None or size < 0 else size)


class _NoReadlines:
    def __init__(self, inner):
        self._inner = inner
        self.read, self.readline = inner.read, inner.readline

    def __iter__(self):
        return iter(self._inner)


# -- start_response, write, close ------------------------------------------------------------------


def _never_raises(start_response):
    """start_response never raises: a second call, a hop-by-hop or an invalid header all pass silently."""
    write = []

    def broken(status, headers, exc_info=None):
        try:
            write[:] = [start_response(status, headers, exc_info)]
        except Exception:
            pass  # the server's error is swallowed
        return write[0] if write else (lambda data: None)

    return broken


def _exc_info_dropped(start_response):
    def broken(status, headers, exc_info=None):
        return start_response(status, headers)

    return broken


def _exc_info_ignored(start_response):
    """The error handler's start_response(..., exc_info) changes nothing: the first status and headers go out
    (a server that never lets an app change its mind; granian replaces them even without exc_info)."""
    first = []

    def broken(status, headers, exc_info=None):
        if exc_info is not None and first:
            return first[0]
        first.append(start_response(status, headers, exc_info))
        return first[-1]

    return broken


def _write_discards(start_response):
    def broken(status, headers, exc_info=None):
        start_response(status, headers, exc_info)
        return lambda data: None

    return broken


class _Iterable:
    """Iterates the app's iterable; ``closes`` is how many times the app's close() is called."""

    def __init__(self, inner, closes: int):
        self._inner, self._closes = inner, closes
        self._iter = iter(inner)

    def __iter__(self):
        return self

    def __next__(self):
        return next(self._iter)

    def close(self):
        for _ in range(self._closes):
            close = getattr(self._inner, "close", None)
            if close is not None:
                close()


class _NextAfterClose(_Iterable):
    """close() closes the app's iterable, then asks it for one more item."""

    def close(self):
        super().close()
        try:
            next(self._iter)
        except Exception:
            pass


def _blocks_joined(inner):
    """Every block the app yields is held until the iterable ends, then sent as one (no streaming)."""
    try:
        return [b"".join(inner)]
    finally:
        close = getattr(inner, "close", None)
        if close is not None:
            close()


def _crlf_normalised(inner):
    """Blocks go out with CR LF turned into LF (a text-mode transfer)."""
    try:
        return [bytes(block).replace(b"\r\n", b"\n") for block in inner]
    finally:
        close = getattr(inner, "close", None)
        if close is not None:
            close()


class _ErrorsWithoutFlush:
    def __init__(self, inner):
        self.write, self.writelines = inner.write, inner.writelines


def _last_block_dropped(inner):
    """Every block but the last is sent (the app's close() still called)."""
    try:
        blocks = [bytes(block) for block in inner]
        return blocks[:-1]
    finally:
        close = getattr(inner, "close", None)
        if close is not None:
            close()


def _content_length_dropped(start_response):
    """The app's Content-Length never reaches the server (it frames the body its own way)."""

    def broken(status, headers, exc_info=None):
        headers = [(n, v) for n, v in headers if n.lower() != "content-length"]
        return start_response(status, headers, exc_info) if exc_info else start_response(status, headers)

    return broken


def _unclosed(inner):
    it = iter(inner)
    return (block for block in it)  # a generator of our own: the app's close() is never reached


#: name -> wrapper(app) -> broken app; each breaks the one rule its name says
BREAKS = {
    # environ
    "environ_dict_subclass": _as_subclass,
    "server_port_int": _on_environ(_put("SERVER_PORT", int)),
    "server_protocol_always_1_0": _on_environ(_put("SERVER_PROTOCOL", lambda v: "HTTP/1.0")),
    "query_string_decoded": _on_environ(_put("QUERY_STRING", lambda v: unquote(v or ""))),
    "path_info_utf8": _on_environ(_put("PATH_INFO", _path_info_utf8)),
    "wsgi_version_list": _on_environ(_put("wsgi.version", lambda v: [1, 0])),
    "url_scheme_https": _on_environ(_put("wsgi.url_scheme", lambda v: "https")),
    "url_scheme_http": _on_environ(_put("wsgi.url_scheme", lambda v: "http")),
    "run_once_true": _on_environ(_put("wsgi.run_once", lambda v: True)),
    "remote_addr_missing": _on_environ(lambda env: env.pop("REMOTE_ADDR", None)),
    "content_type_also_http": _on_environ(lambda env: env.update(HTTP_CONTENT_TYPE=env.get("CONTENT_TYPE", ""))),
    "http_values_bytes": _on_environ(_http_values(lambda v: v.encode("latin-1"))),
    "http_repeats_last_only": _on_environ(_http_values(lambda v: v.split(",")[-1].strip())),
    # wsgi.input
    "input_reads_past_content_length": _on_input(_ReadsPastContentLength),
    "input_read_ignores_size": _on_input(_ReadIgnoresSize),
    "input_readline_ignores_size": _on_input(_ReadlineIgnoresSize),
    "input_lacks_readlines": _on_input(_NoReadlines),
    "input_read_without_size_short": _on_input(_ReadWithoutSizeReadsALittle),
    "errors_lacks_flush": _on_environ(lambda env: env.update({"wsgi.errors": _ErrorsWithoutFlush(env["wsgi.errors"])})),
    # start_response, write(), the iterable
    "start_response_never_raises": _on_start_response(_never_raises),
    "exc_info_dropped": _on_start_response(_exc_info_dropped),
    "exc_info_ignored": _on_start_response(_exc_info_ignored),
    "write_discards": _on_start_response(_write_discards),
    "blocks_buffered": _on_iterable(_blocks_joined),
    "crlf_normalised": _on_iterable(_crlf_normalised),
    "close_not_called": _on_iterable(_unclosed),
    "last_block_dropped": _on_iterable(_last_block_dropped),
    "content_length_dropped": _on_start_response(_content_length_dropped),
    "close_called_twice": _on_iterable(lambda inner: _Iterable(inner, 2)),
    "next_after_close": _on_iterable(lambda inner: _NextAfterClose(inner, 1)),
}

#: the fixture app through every building block, with nothing broken (the control of every break)
control = _on_environ(lambda env: None)(
    _on_input(_Input)(_on_iterable(lambda inner: _Iterable(inner, 1))(_on_start_response(lambda sr: sr)(fixture_app)))
)

globals().update({name: wrap(fixture_app) for name, wrap in BREAKS.items()})
