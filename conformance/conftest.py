"""Loads the conformance session's pytest plugin (``conformance/plugin/hooks.py``) for ``pytest conformance
...`` in a checkout and for ``gatecheck conformance``, and makes it act without --server (Granian's defaults).

Where gatecheck is installed, its ``pytest11`` entry point has registered the plugin already: it is not
registered a second time (pluggy refuses one module under two names, and its options would be added twice).
Under ``PYTEST_DISABLE_PLUGIN_AUTOLOAD=1`` or in a checkout that is not installed, this registers it.
"""

import pytest

from gatecheck.conformance.plugin import hooks as _hooks

PLUGIN_NAME = "gatecheck"  # the entry point's name too: `-p no:gatecheck` turns it off


def pytest_addoption(parser, pluginmanager):
    if not pluginmanager.is_registered(_hooks):
        pluginmanager.register(_hooks, PLUGIN_NAME)
    _hooks.activate(pluginmanager)


@pytest.fixture
def usage(server, request):
    """The server tree's RSS and descriptors before a robustness scenario; ``usage.check()`` judges after.
    Its measurements become the check's JUnit properties (``user_properties``: what ``record_property`` does,
    without its warning under the default xunit2 family)."""
    from gatecheck.conformance.helpers.usage import Usage

    return Usage(server, lambda name, value: request.node.user_properties.append((name, value)))
