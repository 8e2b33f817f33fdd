"""conformance: pytest checks of gateway servers against the ASGI, RSGI, WSGI, HTTP and WebSocket specs."""
