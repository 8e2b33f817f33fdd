"""The checks: one file per spec area, ``test_<area>.py``; a check's id is ``<file>.py::<function>[<params>]``.

Rules of this package: a check imports the client (``conformance.client``), the fixture app's view
(``conformance.app``), the rule layer (``conformance.spec``), its area's helpers (``conformance.helpers``) and
``conformance.h2spec``; never the plugin (``conformance.plugin``), which finds the checks, not the other way
round. ``conformance/conftest.py`` registers the plugin for a run of these files.
"""
