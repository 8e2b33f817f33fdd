"""What one area's checks share: HTTP/1 delivery and rejection judgements (``wire``), the WebSocket wire and
ASGI readers (``ws_wire``, ``ws_asgi``), ASGI upload scripts (``asgi_http``), hypothesis strategies
(``strategies``) and a server tree's resource use (``usage``).

Rules of this package: helpers sit between the checks and the client/app layers; they never import the plugin
or a check module.
"""
