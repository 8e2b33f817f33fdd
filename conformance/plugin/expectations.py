"""Known deviations: ``conformance/expectations/<server>.toml`` (or one ``--expectations FILE``).

    [[deviation]]
    check = "test_http1_framing.py::test_cl_te_conflict_closes_connection"   # "*" matches any params: "test_x[*]"
    targets = ["granian:wsgi*"]          # optional fnmatch patterns on the resolved target; default: all
    clause = "RFC 9112 §6.1"
    evidence = "sent CL:6 + TE:chunked with body '0\\r\\n\\r\\nX'; got 200 and the connection stayed open"
    link = "https://github.com/..."      # optional

Each entry must have been confirmed by hand (a raw request and what came back) before it is added: the
evidence line says what was sent and what came back. A listed check that fails its assertion is *known*;
one that passes is *fixed*, which fails the run so the file is kept honest; an error is never known
(``outcomes.py`` decides).
"""
from __future__ import annotations

import fnmatch
import re
import sys
from dataclasses import dataclass
from pathlib import Path

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

__all__ = ["Deviation", "load_expectations", "load_expectation_file", "EXPECTATIONS_DIR", "ExpectationError"]

EXPECTATIONS_DIR = Path(__file__).resolve().parent.parent / "expectations"
_REQUIRED = ("check", "clause", "evidence")


class ExpectationError(ValueError):
    pass


@dataclass(frozen=True)
class Deviation:
    server: str
    check: str
    clause: str
    evidence: str
    targets: tuple = ()
    link: str = ""

    def applies(self, check_id: str, target: str) -> bool:
        if not _glob(self.check).fullmatch(check_id):
            return False
        return not self.targets or any(fnmatch.fnmatchcase(target, pattern) for pattern in self.targets)

    def reason(self) -> str:
        text = f"known deviation [{self.clause}]: {self.evidence}"
        return f"{text} ({self.link})" if self.link else text


def _glob(pattern: str) -> "re.Pattern":
    """``*`` matches anything; every other character (``[`` included) is literal, as in check ids."""
    return re.compile(".*".join(re.escape(part) for part in pattern.split("*")))


def load_expectations(server: str, directory: Path = EXPECTATIONS_DIR) -> list:
    """``server``'s committed deviations (none when it has no file)."""
    path = directory / f"{server}.toml"
    if not path.exists():
        return []
    return load_expectation_file(path, server)


def load_expectation_file(path: Path, server: str = "*") -> list:
    """The deviations of one file (``--expectations FILE``: for every target its patterns match)."""
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except tomllib.TOMLDecodeError as exc:
        raise ExpectationError(f"{path}: not valid TOML: {exc}") from None
    except OSError as exc:
        raise ExpectationError(f"expectations file {path}: {exc.strerror}") from None
    entries = data.get("deviation", [])
    unknown = set(data) - {"deviation"}
    if unknown:
        raise ExpectationError(f"{path}: unknown top-level keys {sorted(unknown)}; use [[deviation]] tables")
    result = []
    for n, entry in enumerate(entries, 1):
        missing = [k for k in _REQUIRED if not str(entry.get(k, "")).strip()]
        if missing:
            raise ExpectationError(f"{path}: deviation #{n} lacks {', '.join(missing)}")
        extra = set(entry) - {"check", "clause", "evidence", "targets", "link"}
        if extra:
            raise ExpectationError(f"{path}: deviation #{n} has unknown keys {sorted(extra)}")
        result.append(Deviation(server, entry["check"], entry["clause"], entry["evidence"],
                                tuple(entry.get("targets", ())), entry.get("link", "")))
    return result
