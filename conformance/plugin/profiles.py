"""Hypothesis profiles for test_properties.py.

"gatecheck" keeps one target's property checks to a few seconds and is reproducible: derandomized, no example
database; a conformance session loads it (``load_profile``, from the plugin's configure hook) unless
``--hypothesis-profile`` names another. "thorough" explores: pytest --hypothesis-profile thorough. Importing
this module only registers them: a server project's own hypothesis tests keep their settings.
"""
from __future__ import annotations

try:
    from hypothesis import HealthCheck, settings
except ImportError:  # pragma: no cover - hypothesis is a declared test dependency
    settings = None

__all__ = ["load_profile"]

if settings is not None:
    _common = dict(deadline=None, database=None, print_blob=True,
                   suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
    settings.register_profile("gatecheck", max_examples=12, derandomize=True, **_common)
    settings.register_profile("thorough", max_examples=400, **_common)


def load_profile(config=None) -> None:
    """Load the "gatecheck" profile, unless the command line named a profile (hypothesis's plugin loads it)."""
    if settings is None:
        return
    if config is not None and getattr(config.option, "hypothesis_profile", None):
        return
    settings.load_profile("gatecheck")
