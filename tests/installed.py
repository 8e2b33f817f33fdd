"""The installed gatecheck, as the harness's tests run it: the check files of the installed package (the wheel
tox installed), never the checkout's. A conformance session in a child process runs from the package's folder,
so ``conformance/checks/test_echo.py`` names a check file and node ids read as they do for a user.
"""
from __future__ import annotations

import sys
from pathlib import Path

import gatecheck

__all__ = ["PKG", "CONFORMANCE", "CHECKS", "PYTEST", "PYTEST_ARGS", "RUN_DIR"]

#: the installed package: conformance/, fixtures/, load/, servers/ inside it
PKG = Path(gatecheck.__file__).resolve().parent
CONFORMANCE = PKG / "conformance"
CHECKS = CONFORMANCE / "checks"
#: pytest as `gatecheck conformance` runs it: the checks' own settings, rooted at the package
PYTEST_ARGS = ["-c", str(CONFORMANCE / "data" / "pytest.ini"), "--rootdir", str(PKG)]
PYTEST = [sys.executable, "-m", "pytest", *PYTEST_ARGS]
#: the working directory of a conformance session in a child process
RUN_DIR = PKG
