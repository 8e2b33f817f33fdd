"""The installed gatecheck, as the harness's tests run it: the check files of the installed package (the wheel
tox installed), never the checkout's. A conformance session in a child process runs from the folder that holds
the package (site-packages), rooted there, so ``gatecheck/conformance/checks/test_echo.py`` names a check file
both on its command line and in its output. Not from the package's own folder: a server that finds its app
module by walking up from the working directory (granian does) would read it as a package.
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
#: pytest with the checks' own settings, as `gatecheck conformance` runs it
PYTEST_ARGS = [
    "-c",
    str(CONFORMANCE / "data" / "pytest.ini"),
    "--rootdir",
    str(PKG.parent),
    "--confcutdir",
    str(CONFORMANCE),
]
PYTEST = [sys.executable, "-m", "pytest", *PYTEST_ARGS]
#: the working directory of a conformance session in a child process
RUN_DIR = PKG.parent
