"""Outcomes as data: what each phase of a check (setup, call, teardown) says, and what the check's is.

    passed       the call ran and every assertion held
    failed       the call ran to an assertion and it failed (or raised)
    noted        an INFO check (the letter of the text, no MUST/SHOULD broken) or a MAY check (a permission)
                 whose call failed: shown apart, never failing a run
    crashed      the server died while the check's request was in flight (the session's server exited, or one
                 of its processes vanished; a private server of the check exited unasked): a finding of that
                 check, counted by level like a failure; never "known"
    known        a listed deviation (expectations file) whose call ran and failed: only this is known, except
                 a deviation listed as intermittent (a race), which is known whichever way its call went
    fixed        a listed deviation whose call passed: the run fails until the entry is removed
    error        the check could not run or finish: setup/teardown failed, the server did not start or could
                 not be restarted, or the fixture app refused the check's request (it could not read its
                 script: the check has no evidence either way). Never "known".
    timeout      the call ran past its deadline (--check-timeout, or what remained of --session-timeout)
    interrupted  Ctrl-C or SIGTERM arrived while the check ran
    unsupported  the target lacks a feature the check needs (declared, or found by the check)
    skipped      the check skipped itself for another reason

A listed check is "known" only from its call phase: a setup or teardown error (the server did not start,
died during the check, could not be restarted) outranks it and the check is an error.

The decision is made from the phase, the exception the call raised (``call.excinfo``) and the item's
matched deviation; nothing is parsed back from report text, except the "not supported:" prefix of a
check's own ``pytest.skip`` (kept for the check files that still use it; new code raises ``NotSupported``).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from gatecheck.conformance.spec.results import UNSUPPORTED_PREFIX, CheckError, NotSupported, ServerCrashed

__all__ = [
    "OUTCOMES",
    "FAILING",
    "FINDINGS",
    "Verdict",
    "CheckTimeout",
    "decide",
    "worse",
    "SPEC_GROUP",
    "level_group",
    "NEVER_FAILING_LEVELS",
]

OUTCOMES = (
    "passed",
    "failed",
    "crashed",
    "error",
    "timeout",
    "interrupted",
    "noted",
    "known",
    "fixed",
    "unsupported",
    "skipped",
)
#: outcomes that make the run fail (exit status non-zero)
FAILING = frozenset({"failed", "crashed", "error", "timeout", "interrupted", "fixed"})
#: outcomes counted by level in the summary and the results: the server broke the check's rule, or died of it
FINDINGS = ("failed", "crashed", "timeout")
#: when two phases disagree, the higher rank is the check's outcome (a teardown error beats a passed call; a
#: crash beats everything the check said, an interruption aside)
_RANK = {
    "passed": 0,
    "skipped": 1,
    "unsupported": 1,
    "noted": 2,
    "known": 2,
    "fixed": 3,
    "failed": 4,
    "timeout": 5,
    "error": 6,
    "crashed": 7,
    "interrupted": 8,
}
SPEC_GROUP = "MUST/SHOULD (spec)"
#: levels whose failed call is "noted", never "failed": INFO (the letter) and MAY (a permission)
NEVER_FAILING_LEVELS = ("INFO", "MAY")


class CheckTimeout(BaseException):
    """Raised into a check that ran past its deadline (a BaseException, so ``except Exception`` in a check
    cannot swallow it)."""


@dataclass(frozen=True)
class Verdict:
    outcome: str
    message: str = ""


def worse(old: str | None, new: str) -> bool:
    """Whether ``new`` replaces ``old`` as the check's outcome."""
    return old is None or _RANK[new] > _RANK[old]


def decide(when: str, report, excinfo, deviation, unsupported: bool, level: str = "") -> Verdict | None:
    """The verdict of one phase, or None when the phase says nothing (a setup or teardown that passed).
    ``level`` is the check's level: a failed INFO or MAY check is "noted", never "failed". A
    :class:`ServerCrashed` raised in any phase is "crashed"; a :class:`CheckError` in the call is "error"."""
    if _raised(excinfo, ServerCrashed):
        return Verdict("crashed", str(excinfo.value))
    if report.passed:
        if when != "call":
            return None
        if deviation and getattr(deviation, "intermittent", ""):  # a race missed this time is not a fix
            return Verdict("known", f"held this run; {deviation.reason()}")
        return Verdict("fixed", _fixed_message(deviation)) if deviation else Verdict("passed")
    if report.skipped:
        reason = _skip_reason(report)
        said_so = reason.removeprefix("Skipped: ").startswith(UNSUPPORTED_PREFIX)
        if unsupported or said_so or _raised(excinfo, NotSupported):
            return Verdict("unsupported", reason)
        return Verdict("skipped", reason)
    if _raised(excinfo, CheckError):
        return Verdict("error", str(excinfo.value)[:1000])
    if when != "call":
        return Verdict("error", _short(report))
    if _raised(excinfo, CheckTimeout):
        return Verdict("timeout", f"{excinfo.value}; it was at {_where(excinfo)}")
    if deviation:  # the call ran and failed: what the expectation file recorded (a teardown error still wins)
        return Verdict("known", deviation.reason())
    if level in NEVER_FAILING_LEVELS:
        what = "INFO" if level == "INFO" else "MAY, a permission"
        return Verdict("noted", f"{what} (never fails a run): " + _short(report))
    return Verdict("failed", _short(report))


def level_group(level: str) -> str:
    """How the summary groups a check's level: the spec's obligations together (MUST, SHOULD and their NOTs,
    DEFINED), POLICY, MAY and INFO each apart."""
    return level if level in ("POLICY", "INFO", "MAY") else SPEC_GROUP


def _raised(excinfo, types) -> bool:
    return excinfo is not None and isinstance(excinfo.value, types)


def _where(excinfo, depth: int = 3) -> str:
    """Where the check was (``file:line``), the alarm handler's own frame left out: the innermost frame,
    then up to ``depth - 1`` of its callers (``... <- caller``), so a wait inside a library names the
    library's call and the check's line that led to it."""
    entries = [e for e in excinfo.traceback if Path(str(e.path)).name != "interrupts.py"]
    if not entries:  # pragma: no cover
        return "an unknown place"
    inner, *callers = [f"{e.path}:{e.lineno + 1}" for e in reversed(entries[-depth:])]
    return inner + "".join(f" <- {Path(c).name}" for c in callers)


def _fixed_message(deviation) -> str:
    return (
        f"fixed: this check now passes, but it is listed as a known deviation; remove the entry "
        f"'{deviation.check}' at {deviation.where} ({deviation.reason()})"
    )


def _skip_reason(report) -> str:
    return str(report.longrepr[2]) if isinstance(report.longrepr, tuple) else str(report.longrepr or "")


def _short(report) -> str:
    """The assertion lines of a failure (``E ...``), or the end of its text."""
    if isinstance(report.longrepr, tuple):
        return str(report.longrepr[2])[:1000]
    text = getattr(report, "longreprtext", "") or ""
    lines = [ln for ln in text.splitlines() if ln.startswith("E ")]
    return "\n".join(lines[:8])[:1000] if lines else text[-1000:]
