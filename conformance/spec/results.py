"""What a check may say about its own result, besides passing or failing an assertion, and its id.

    not_supported("the server sends no raw_path (optional key)")    # the check's outcome is "unsupported"
    raise CheckError("the fixture app could not read its script: ...")  # "error": no evidence either way

Rules of this module: it is below the plugin. The plugin (``conformance/plugin/outcomes.py``) decides outcomes
from what is raised here; checks and helpers import this module, never the plugin. ``UNSUPPORTED_PREFIX`` is
the older spelling (a ``pytest.skip`` reason starting with it), still recognised for the checks that use it.
"""

from __future__ import annotations

from pathlib import Path

import pytest

__all__ = [
    "not_supported",
    "NotSupported",
    "UNSUPPORTED_PREFIX",
    "NO_TARGET",
    "check_id_of",
    "CheckError",
    "ServerCrashed",
]

UNSUPPORTED_PREFIX = "not supported:"
NO_TARGET = "no-target"  # the server parameter's id on a check that applies to none of the targets


class NotSupported(pytest.skip.Exception):
    """Raised by a check (``not_supported(reason)``) when the target lacks what the check needs."""


class CheckError(Exception):
    """The check could not judge its rule, for a reason that is not the server's answer to the rule: the fixture
    app refused the check's request (it could not read its script). The check's outcome is "error", never a
    failure citing an unrelated clause, never a pass, never "known"."""


class ServerCrashed(Exception):
    """The server died while the check's request was in flight: the check's outcome is "crashed" (a finding,
    counted by level), with the server's last log lines."""


def not_supported(reason: str):
    """End the check as *unsupported*: the target lacks what the check needs."""
    raise NotSupported(msg=f"{UNSUPPORTED_PREFIX} {reason}", pytrace=False)


def check_id_of(item) -> str:
    """The check id, ``file.py::function[params]``: the check's own parameter id without the target's part,
    so the same check on several targets (or on none) shares one id. It keys the results' records, the
    levels table's rows and the expectation entries.

    The target's part is taken out as the one id pytest got from the ``server`` parametrization (pytest
    joins one id per parametrization with "-"), never by searching the joined string."""
    base = f"{Path(str(item.path)).name}::{getattr(item, 'originalname', item.name)}"
    callspec = getattr(item, "callspec", None)
    if callspec is None:
        return base
    ids = callspec.id
    if "server" in callspec.params:
        server_id = getattr(callspec.params["server"], "id", None) or NO_TARGET
        parts = list(getattr(callspec, "_idlist", ()))
        if server_id in parts:
            parts.remove(server_id)
            ids = "-".join(parts)
        else:  # pragma: no cover  (a pytest without CallSpec._idlist)
            for form in (f"{server_id}-", f"-{server_id}", server_id):
                if form in ids:
                    ids = ids.replace(form, "", 1)
                    break
    return f"{base}[{ids}]" if ids else base
