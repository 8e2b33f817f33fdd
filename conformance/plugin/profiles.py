"""Hypothesis profiles for test_properties.py.

"gatecheck" keeps one target's property checks to a few seconds and is reproducible: derandomized, no example
database; a conformance session loads it (``load_profile``, from the plugin's configure hook) unless
``--hypothesis-profile`` names another. "thorough" explores: pytest --hypothesis-profile thorough. Importing
this module only registers them: a server project's own hypothesis tests keep their settings.

Whatever the profile, a conformance session draws the same examples wherever gatecheck is installed and
however the checks were selected: hypothesis (6.131 and later) mixes the literals of every imported "local"
module (one outside site-packages and the stdlib, not a test file) into the values it draws, derandomized or
not, so a checkout and an installed copy, or ``-k`` and a file path, drew different paths and headers, and a
property check's verdict changed with them (a literal "/pathsend/" drawn as a path segment became the %2F
that one server keeps encoded). Hypothesis has no public switch for it: :func:`load_profile` empties that
pool for the session. The inputs a verdict rests on are explicit ``@example``s of the checks themselves.
"""

from __future__ import annotations

try:
    from hypothesis import HealthCheck, settings
except ImportError:  # pragma: no cover - hypothesis is a declared test dependency
    settings = None

__all__ = ["load_profile"]

if settings is not None:
    _common = dict(
        deadline=None,
        database=None,
        print_blob=True,
        suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
    )
    settings.register_profile("gatecheck", max_examples=12, derandomize=True, **_common)
    settings.register_profile("thorough", max_examples=400, **_common)


def load_profile(config=None) -> None:
    """Load the "gatecheck" profile, unless the command line named a profile (hypothesis's plugin loads it);
    either way, draw no literals of imported modules."""
    if settings is None:
        return
    _without_local_constants()
    if config is not None and getattr(config.option, "hypothesis_profile", None):
        return
    settings.load_profile("gatecheck")


def _without_local_constants() -> None:
    """Empty hypothesis's pool of literals from imported local modules (a private hook: absent before 6.131,
    and left alone if a later version moves it)."""
    try:
        from hypothesis.internal.conjecture import providers
        from hypothesis.internal.constants_ast import Constants
    except ImportError:  # pragma: no cover - hypothesis before 6.131
        return
    if not callable(getattr(providers, "_get_local_constants", None)):  # pragma: no cover
        return
    empty = Constants()
    providers._get_local_constants = lambda: empty
    cache = getattr(providers, "CONSTANTS_CACHE", None)
    if cache is not None and hasattr(cache, "cache"):
        cache.cache.clear()
