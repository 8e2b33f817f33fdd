"""Hypothesis profiles for test_properties.py.

"gatecheck" (loaded here, so it is the default) keeps one target's property checks to a few seconds and is
reproducible: derandomized, no example database. "thorough" explores: pytest --hypothesis-profile thorough
(the hypothesis plugin loads it after this module).
"""
from __future__ import annotations

try:
    from hypothesis import HealthCheck, settings
except ImportError:  # pragma: no cover - hypothesis is a declared test dependency
    settings = None

if settings is not None:
    _common = dict(deadline=None, database=None, print_blob=True,
                   suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
    settings.register_profile("gatecheck", max_examples=12, derandomize=True, **_common)
    settings.register_profile("thorough", max_examples=400, **_common)
    settings.load_profile("gatecheck")
