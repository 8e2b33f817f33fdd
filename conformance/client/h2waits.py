"""The waits of the HTTP/2 client that end in an outcome: a stream's response, its headers or data, the server's
SETTINGS, how a request ended in words. A mixin of :class:`~gatecheck.conformance.client.h2.H2Client`, which
reads the frames (``pump``); a wait that ends with the connection closed raises, never returns an outcome."""

from __future__ import annotations

from gatecheck.conformance.client.h2frames import ACK, SETTINGS, StreamState, code_name

__all__ = ["H2Waits"]


class H2Waits:
    """Waiting for outcomes, on the state :class:`H2Client` keeps (``streams``, ``frames``, ``goaways``)."""

    def response(self, stream_id: int, timeout: float | None = None) -> StreamState:
        """Wait until the stream ends or is reset (or the connection goes); return its state."""
        state = self.streams.setdefault(stream_id, StreamState(stream_id))
        self.pump(lambda: state.done or self.refused(stream_id), timeout, what=f"end of stream {stream_id}")
        if not state.done and self.closed:
            raise AssertionError(
                f"the server closed the connection before stream {stream_id} ended "
                f"({len(state.data)} body bytes); frames: {self.frames[-8:]!r}"
            )
        return state

    def refused(self, stream_id: int) -> bool:
        """True when a GOAWAY says the server will not process ``stream_id``."""
        return any(stream_id > g.last_stream_id for g in self.goaways)

    def wait_headers(self, stream_id: int, timeout: float | None = None) -> StreamState:
        state = self.streams.setdefault(stream_id, StreamState(stream_id))
        self.pump(lambda: bool(state.headers) or state.done, timeout, what=f"response headers on stream {stream_id}")
        self._unless_closed(bool(state.headers) or state.done, f"response headers on stream {stream_id}")
        return state

    def wait_data(self, stream_id: int, size: int = 1, timeout: float | None = None) -> StreamState:
        state = self.streams.setdefault(stream_id, StreamState(stream_id))
        self.pump(
            lambda: len(state.data) >= size or state.done, timeout, what=f"{size} body bytes on stream {stream_id}"
        )
        self._unless_closed(len(state.data) >= size or state.done, f"{size} body bytes on stream {stream_id}")
        return state

    def wait_settings(self, timeout: float | None = None) -> None:
        """Wait for the server's SETTINGS and its ACK of ours."""

        def seen() -> bool:
            return any(f.type == SETTINGS and not f.flags & ACK for f in self.frames) and self.settings_acked > 0

        self.pump(seen, timeout, what="server SETTINGS and SETTINGS ACK")
        self._unless_closed(seen(), "the server's SETTINGS and its ACK of ours")

    def _unless_closed(self, held: bool, what: str) -> None:
        """A wait that ended because the server closed the connection is a failure, never an outcome."""
        if not held:
            raise AssertionError(
                f"the server ended the connection ({self.end or 'closed'}) before {what}; frames: {self.frames[-8:]!r}"
            )

    def stream_error_or_status(self, stream_id: int, timeout: float | None = None) -> str:
        """How a request ended, in words: 'reset:PROTOCOL_ERROR', 'status:400', 'goaway:PROTOCOL_ERROR' …"""
        state = self.streams.setdefault(stream_id, StreamState(stream_id))
        self.pump(lambda: state.done or bool(self.goaways), timeout, what=f"outcome of stream {stream_id}")
        if state.reset_code is not None and not state.headers:
            return f"reset:{code_name(state.reset_code)}"
        if state.headers:
            return f"status:{state.status}"
        if self.goaways:
            return f"goaway:{code_name(int(self.goaways[-1].error_code))}"
        return "closed"

    def frames_on(self, stream_id: int, ftype: int | None = None) -> list:
        return [f for f in self.frames if f.stream_id == stream_id and (ftype is None or f.type == ftype)]
