"""h2spec, the HTTP/2 conformance tool, run through the suite: find or install the pinned version
(``install``), run it once per target and read its report (``tool``), regenerate the case list (``caselist``).

    python -m gatecheck.conformance.h2spec --write-cases     # regenerate conformance/data/h2spec_cases.txt
"""

from .tool import *  # noqa: F401,F403
from .tool import __all__  # noqa: F401
