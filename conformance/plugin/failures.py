"""A failure as someone can act on it: the target, the clause and its sentence, what the rule allows, what went
wrong and where the check stopped, the bytes sent and received, the server's log, and one command that reruns
exactly that check on that target.

The same text is printed by a serial session (it replaces pytest's traceback in the failure's report, unless
``--tb`` was given) and by a ``--jobs`` run's parent (from the records its children decided), so its parts are
record fields, kept for every check whose outcome is not a pass (``DETAILED``):

    where         the check's line where it stopped (and the innermost frame, when that is elsewhere)
    exchange      the bytes of its last connections (``conformance.client.transcript``), escaped and capped
    log           what the server logged during the check (its end, capped)
    out_of_range  an expectation entry for the check that would have applied but for its version range
    upstream      a known deviation's upstream issue or pull request (its entry's ``upstream``)
"""

from __future__ import annotations

import re
import shlex
from pathlib import Path

from gatecheck.conformance.client import transcript
from gatecheck.conformance.plugin.outcomes import FAILING

__all__ = [
    "DETAILED",
    "rerun_options",
    "rerun_command",
    "details",
    "failure_text",
    "FailureRepr",
    "LOG_CAP",
    "out_of_range_note",
    "message_lines",
]

#: outcomes whose record keeps the details (a pass needs none; an unsupported check sent nothing to judge)
DETAILED = FAILING | {"known", "noted"}
LOG_CAP = 2000
_OPTIONS = ("--expectations",)
_FLAGS = ("--no-expectations", "--no-builtin-expectations")


def rerun_options(config) -> list:
    """The options of this session a rerun of one check repeats: which expectation files apply."""
    out = [flag for flag in _FLAGS if config.getoption(flag)]
    for path in config.getoption("--expectations") or ():
        out += ["--expectations", path]
    return out


def rerun_command(target: str, check: str, options=()) -> str:
    """``gatecheck conformance --server TARGET [OPTIONS] 'CHECK'``: exactly ``check`` on ``target``."""
    words = ["gatecheck", "conformance", "--server", target, *options, check]
    return " ".join(shlex.quote(word) for word in words)


def out_of_range_note(candidates, server: str, version: str | None) -> str:
    """What a failure says when expectation entries name its check on its target but none holds the server's
    ``version`` ("" when none names it): the last one read, its range and where it is."""
    if not candidates:
        return ""
    entry = candidates[-1]
    now = f"{server} {version}" if version else f"{server} of an unknown version"
    return f"recorded for {server} {entry.versions} at {entry.where}, not {now}: re-confirm or remove"


def details(item, call, log_text: str = "") -> dict:
    """The record fields of a check that did not pass, from its call (``call.excinfo``), the client's transcript
    and the server's log."""
    out = {}
    where = _where(item, call.excinfo)
    if where:
        out["where"] = where
    exchange = transcript.render()
    if exchange:
        out["exchange"] = exchange
    log_text = (log_text or "").strip()
    if log_text:
        out["log"] = log_text if len(log_text) <= LOG_CAP else "[...]\n" + log_text[-LOG_CAP:]
    return out


def _where(item, excinfo) -> str:
    if excinfo is None or not excinfo.traceback:
        return ""
    here = Path(str(item.path))
    own = [entry for entry in excinfo.traceback if Path(str(entry.path)) == here]
    inner = excinfo.traceback[-1]
    text = f"{here.name}:{own[-1].lineno + 1}" if own else ""
    if own and inner is own[-1]:
        return text
    inner_text = f"{_short_path(Path(str(inner.path)))}:{inner.lineno + 1}"
    return f"{text} (innermost: {inner_text})" if text else inner_text


def _short_path(path: Path) -> str:
    parts = path.parts
    return "/".join(parts[parts.index("gatecheck") :]) if "gatecheck" in parts else path.name


def message_lines(record: dict) -> list:
    """The record's message, pytest's ``E`` prefixes left out."""
    text = re.sub(r"(?m)^E {0,7}", "", (record.get("message") or "").strip())
    return text.splitlines() or ["(no message)"]


def failure_text(record: dict, target: str, options=(), versions: str = "") -> str:
    """The failure of one record, as printed: ``target`` is what ``--server`` takes for its target (the target
    record's ``spec``, else its name); ``options`` the session's rerun options; ``versions`` the server's."""
    lines = [
        f"target:  {record['target']}" + (f" ({versions})" if versions else ""),
        f"check:   {record['check']}",
        f"clause:  {record.get('clause', '')} ({record.get('level', '')})",
    ]
    if record.get("sentence"):
        lines += [f'         "{record["sentence"]}"']
    if record.get("accepts"):
        lines += [f"allows:  {record['accepts']}"]
    message = message_lines(record)
    label = f"{record['outcome']}:"
    first = message[0][len(label) :].strip() if message[0].startswith(label) else message[0]  # "fixed: ..."
    lines += [f"{label:<8} {first}"] + [f"         {line}" for line in message[1:]]
    if record.get("where"):
        lines += [f"at:      {record['where']}"]
    if record.get("out_of_range"):
        lines += [f"note:    {record['out_of_range']}"]
    if record.get("exchange"):
        lines += ["bytes:   " + "\n         ".join(record["exchange"].splitlines())]
    else:
        lines += ["bytes:   (none: the check opened no connection through the suite's client during its call)"]
    if record.get("log"):
        lines += ["server log during the check:"] + [f"  {line}" for line in record["log"].splitlines()]
    lines += [f"rerun:   {rerun_command(target, record['check'], options)}"]
    return "\n".join(lines)


class _Crash:
    """What pytest's short summary and ``--tb=line`` read of a failure (``reprcrash``)."""

    def __init__(self, message: str, path: str = "", lineno: int = 0) -> None:
        self.message, self.path, self.lineno = message, path, lineno

    def __str__(self) -> str:
        return f"{self.path}:{self.lineno}: {self.message}" if self.path else self.message


class FailureRepr:
    """A failure's report text (``report.longrepr``) in place of pytest's traceback: :func:`failure_text`."""

    def __init__(self, text: str, headline: str) -> None:
        self.text, self.reprcrash = text, _Crash(headline)

    def toterminal(self, tw) -> None:
        for line in self.text.splitlines():
            tw.line(line)

    def __str__(self) -> str:
        return self.text
