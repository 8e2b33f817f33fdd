"""The conformance session's pytest plugin lives in ``conformance/plugin/``; this file loads it, so
``pytest conformance ...`` works as the README shows."""
from gatecheck.conformance.plugin import profiles  # noqa: F401  (registers and loads the hypothesis profiles)
from gatecheck.conformance.plugin.hooks import *  # noqa: F401,F403  (hooks and fixtures, listed in hooks.__all__)
