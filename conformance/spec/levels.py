"""The levels table: for every check, the sentence it derives from, the level that sentence gives, and the
answers that pass. One TOML file per check module, ``conformance/levels/<module stem>.toml``, keyed by check
function name:

    [test_head_response_has_no_content]
    clause = "RFC 9110 §9.3.2"
    level = "MUST NOT"
    sentence = "The server SHOULD send the same header fields ... but MUST NOT send content ..."   # word for word
    accepts = "a response to HEAD with no content after its header section"                         # one line

    [test_x.params."unsupported-major"]   # optional: a parameter under another sentence or level (same keys;
    level = "POLICY"                      # keys left out are taken from the check's own row)

A check whose parameters each cite their own section (``test_h2spec_case``: every h2spec case names the RFC
section it exercises) may say ``clause = "per parameter"``: the clause is then the one on the parameter's
``@spec``, and only the level is compared.

A parameter key matches a check id's parameters when it equals them or is one "-"-separated part of them
(``[unsupported-major]`` matches ``test_x[unsupported-major]`` and ``test_x[unsupported-major-chunked]``).

The level is the sentence. How a sentence shows its level (``keyword_in_sentence``):
- RFCs adopt BCP 14 (RFC 2119, RFC 8174): a keyword counts only in capitals. MUST is "MUST", "REQUIRED",
  "SHALL"; MUST NOT is "MUST NOT", "SHALL NOT"; SHOULD is "SHOULD", "RECOMMENDED"; SHOULD NOT is "SHOULD NOT",
  "NOT RECOMMENDED"; MAY is "MAY", "OPTIONAL". "ought to", "can", "is expected to" are not keywords: such a
  sentence gives POLICY (the suite's reading, reported apart) or INFO (shown apart, never failing a run).
- PEP 3333, ASGI and RSGI do not adopt BCP 14; each is its own normative text and writes its obligations
  in lower case ("must", "should", "may"). There the same words count in any case, and their plain
  meaning gives the level ("must" is MUST, "should not" is SHOULD NOT). A definition without such a word
  (ASGI's scope tables, RSGI's protocol) is DEFINED.
- DEFINED, POLICY and INFO need no keyword, nor does a "per parameter" row (its sentence is the tool's own
  statement of what it checks; the cases' sections carry the keywords).
"""

from __future__ import annotations

import re
import sys
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

__all__ = [
    "Row",
    "LEVELS_DIR",
    "PER_PARAMETER",
    "LevelsError",
    "load_table",
    "row_for",
    "row_for_check",
    "split_check_id",
    "keyword_in_sentence",
    "KEYWORDS",
]

LEVELS_DIR = Path(__file__).resolve().parent.parent / "levels"
_KEYS = ("clause", "level", "sentence", "accepts")
PER_PARAMETER = "per parameter"

# level → the words that express it (BCP 14 §2-§5; the longer forms are tried first)
KEYWORDS = {
    "MUST": ("MUST", "REQUIRED", "SHALL"),
    "MUST NOT": ("MUST NOT", "SHALL NOT"),
    "SHOULD": ("SHOULD", "RECOMMENDED"),
    "SHOULD NOT": ("SHOULD NOT", "NOT RECOMMENDED"),
    "MAY": ("MAY", "OPTIONAL"),
}


class LevelsError(ValueError):
    pass


@dataclass(frozen=True)
class Row:
    clause: str
    level: str
    sentence: str
    accepts: str

    def as_tuple(self) -> tuple:
        return (self.clause, self.level, self.sentence, self.accepts)


@dataclass(frozen=True)
class _Entry:
    row: Row
    params: dict  # parameter key → Row (already merged over the check's row)


def _row(data: dict, where: str, base: Row | None = None) -> Row:
    unknown = sorted(set(data) - set(_KEYS) - {"params"})
    if unknown:
        raise LevelsError(f"{where}: unknown key(s) {unknown}; a row has {', '.join(_KEYS)} (and params)")
    values = {k: data.get(k, getattr(base, k) if base else None) for k in _KEYS}
    missing = [k for k, v in values.items() if not isinstance(v, str) or not v.strip()]
    if missing:
        raise LevelsError(f"{where}: missing or empty {', '.join(missing)}")
    return Row(**{k: " ".join(v.split()) for k, v in values.items()})


@lru_cache(maxsize=None)
def load_table(stem: str, directory: Path = LEVELS_DIR) -> dict:
    """function name → _Entry for one check module (empty when the module has no file yet)."""
    path = directory / f"{stem}.toml"
    if not path.exists():
        return {}
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except tomllib.TOMLDecodeError as exc:
        raise LevelsError(f"{path}: {exc}") from None
    table = {}
    for name, body in data.items():
        if not isinstance(body, dict):
            raise LevelsError(f"{path}: {name} must be a table")
        row = _row(body, f"{path}: [{name}]")
        params = {
            key: _row(over, f"{path}: [{name}.params.{key!r}]", row) for key, over in body.get("params", {}).items()
        }
        table[name] = _Entry(row, params)
    return table


def _param_matches(key: str, params: str) -> bool:
    return params == key or f"-{params}-".find(f"-{key}-") >= 0


def row_for(stem: str, function: str, params: str = "") -> Row | None:
    """The row of one check (its parameter override when one matches), or None when the table has none."""
    entry = load_table(stem).get(function)
    if entry is None:
        return None
    for key, row in entry.params.items():
        if params and _param_matches(key, params):
            return row
    return entry.row


def split_check_id(check: str) -> tuple:
    """``test_x.py::test_f[a-b]`` → ("test_x", "test_f", "a-b")."""
    match = re.fullmatch(r"(?P<file>[^:]+?)(?:\.py)?::(?P<func>[^\[]+)(?:\[(?P<params>.*)\])?", check)
    if not match:
        return ("", "", "")
    return (Path(match["file"]).name, match["func"], match["params"] or "")


def row_for_check(check: str) -> Row | None:
    """The row for a results check id (``file.py::function[params]``)."""
    stem, function, params = split_check_id(check)
    return row_for(stem, function, params) if stem else None


def keyword_in_sentence(clause: str, level: str, sentence: str) -> bool:
    """Whether the sentence carries the keyword of its level (see the module docstring for the rule)."""
    words = KEYWORDS.get(level)
    if words is None or clause == PER_PARAMETER:
        return True
    bcp14 = clause.strip().upper().startswith("RFC")
    flags = 0 if bcp14 else re.IGNORECASE
    for word in words:
        pattern = r"\b" + word.replace(" ", r"\s+") + r"\b"
        if word in ("MUST", "SHALL", "SHOULD"):
            pattern += r"(?!\s+NOT\b)"
        if word == "RECOMMENDED":
            pattern = r"(?<!\bNOT\s)" + pattern
        if re.search(pattern, sentence, flags):
            return True
    return False
