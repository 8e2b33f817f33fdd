"""Kept for the checks that import ``script_target`` from here; the implementation lives in
``conformance/scripted.py`` (one place for /script targets and event-log readers)."""
from __future__ import annotations

from .scripted import script_target

__all__ = ["script_target"]
