"""What a check may say about its own result, besides passing or failing an assertion.

    not_supported("the server sends no raw_path (optional key)")    # the check's outcome is "unsupported"

The session's results file is written by ``conformance/plugin/resultsfile.py``; the outcomes are decided
in ``conformance/plugin/outcomes.py``. ``UNSUPPORTED_PREFIX`` is the older spelling (a ``pytest.skip``
reason starting with it), still recognised for the checks that use it.
"""
from __future__ import annotations

from .plugin.outcomes import UNSUPPORTED_PREFIX, NotSupported
from .plugin.resultsfile import check_id_of  # noqa: F401  (a check's id, for modules below the plugin)

__all__ = ["not_supported", "UNSUPPORTED_PREFIX", "check_id_of"]


def not_supported(reason: str):
    """End the check as *unsupported*: the target lacks what the check needs."""
    raise NotSupported(msg=f"{UNSUPPORTED_PREFIX} {reason}", pytrace=False)
