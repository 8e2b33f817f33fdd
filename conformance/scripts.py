"""Request targets for the fixture apps' scripted route (``/script?s=<JSON>``, fixtures/ROUTES.md)."""
from __future__ import annotations

import json
from urllib.parse import quote

__all__ = ["script_target"]


def script_target(steps: list, path: str = "/script") -> str:
    """The request target that runs ``steps`` (a JSON-able list of script steps)."""
    return f"{path}?s={quote(json.dumps(steps, separators=(',', ':')), safe='')}"
