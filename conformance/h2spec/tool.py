"""h2spec, the HTTP/2 conformance tool, run through the suite: find it, run it once per target, read its report.

    python -m gatecheck.conformance.h2spec --write-cases     # regenerate the case list (caselist.py)

Rules of this module:

1. h2spec's exit status is never trusted (it is 0 when nothing ran). The outcome of a case is what the
   JUnit report (``-j``) says about it; the number of cases run is checked against the committed case list.
2. A case is named as h2spec names it on its command line: ``<group id>/<sequence>`` such as
   ``http2/5.1/3`` (``h2spec http2/5.1/3`` runs just that case). The committed list
   (``conformance/data/h2spec_cases.txt``) comes from ``h2spec --dryrun -S`` of the installed version.
3. The JUnit report has no sequence numbers (and leaves out cases that did not run), so a result is
   matched to its case by group and description, which are unique within a group.
4. h2spec gives no reason for a skip; the known causes (read from its source) are in :data:`SKIP_CAUSES`.
5. Every run has a deadline; a run that overstays it is killed and reported, never waited on.
6. A pass needs evidence that h2spec spoke HTTP/2 with the server: many cases pass when the connection
   just closes (e.g. http2/3.5/2, an invalid preface), so unless a case in :data:`HANDSHAKE_EVIDENCE`
   (the server's SETTINGS answered h2spec's preface) passed in the same run, no case counts as passed.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import tempfile
import time
import xml.etree.ElementTree as ET
from dataclasses import dataclass, field
from pathlib import Path
from typing import Optional

__all__ = [
    "Case",
    "CaseResult",
    "Report",
    "find_h2spec",
    "load_cases",
    "parse_dryrun",
    "parse_junit",
    "run",
    "CASES_FILE",
    "H2SPEC_PACKAGE",
    "INSTALL_HINT",
    "SKIP_CAUSES",
    "clause_for",
]

CASES_FILE = Path(__file__).resolve().parent.parent / "data" / "h2spec_cases.txt"
#: the pinned h2spec (its case list is conformance/data/h2spec_cases.txt); h2spec_install.py installs it
H2SPEC_PACKAGE = "github.com/summerwind/h2spec/cmd/h2spec@v2.2.1+incompatible"
INSTALL_HINT = f"run: GOBIN=${{GATECHECK_CACHE:-~/.cache/gatecheck}}/bin go install {H2SPEC_PACKAGE}"

#: h2spec's root groups: dry-run title -> group key (the first part of a case id)
ROOTS = {
    "Generic tests for HTTP/2 server": "generic",
    "Hypertext Transfer Protocol Version 2 (HTTP/2)": "http2",
    "HPACK: Header Compression for HTTP/2": "hpack",
}

#: the RFC section each ``generic`` group exercises (h2spec numbers them by its own outline)
_GENERIC = {"1": "RFC 7540 §3.5", "2": "RFC 7540 §5.1", "4": "RFC 7540 §8.1", "5": "RFC 7541 §6"}

#: why h2spec skips a case (it reports no reason; these are read from its source, v2.2.1)
SKIP_CAUSES = {
    "http2/5.1.2/1": "the server advertises no SETTINGS_MAX_CONCURRENT_STREAMS limit",
    "http2/6.5.3/1": "the response to the target path has no body",
    "http2/6.9.1/1": "the response to the target path has no body",
    "http2/6.9.2/1": "the response to the target path has no body",
    "http2/6.9.2/2": "the response to the target path has fewer than 5 body bytes",
}


#: cases that pass only when the server answered h2spec's connection preface with its SETTINGS frame
HANDSHAKE_EVIDENCE = ("http2/3.5/1", "generic/1/1")


@dataclass(frozen=True)
class Case:
    id: str  # e.g. "http2/5.1/3"
    strict: bool  # only run with -S (--strict): h2spec's SHOULD-level cases
    description: str

    @property
    def group(self) -> str:
        return self.id.rsplit("/", 1)[0]

    @property
    def clause(self) -> str:
        return clause_for(self.id)

    @property
    def level(self) -> str:
        return "SHOULD" if self.strict else "MUST"


@dataclass
class CaseResult:
    outcome: str  # "passed" | "failed" | "skipped"
    message: str = ""


@dataclass
class Report:
    """One h2spec run against one target."""

    command: list  # one argv per h2spec invocation
    returncode: Optional[int]
    stdout: str
    stderr: str
    results: dict = field(default_factory=dict)  # case id -> CaseResult
    tests_attr: int = 0  # sum of the JUnit testsuite ``tests`` attributes
    summary: Optional[tuple] = None  # (total, passed, skipped, failed) from stdout
    problem: str = ""  # why the run as a whole is unusable, if it is

    def tail(self, limit: int = 3000) -> str:
        text = (self.stdout + ("\n" + self.stderr if self.stderr.strip() else "")).strip()
        return text if len(text) <= limit else "[...]\n" + text[-limit:]


def clause_for(case_id: str) -> str:
    """The RFC section a case id points at: http2/6.9.1/2 -> "RFC 7540 §6.9.1" (h2spec cites RFC 7540/7541)."""
    key, section, _ = case_id.split("/")
    if key == "http2":
        return f"RFC 7540 §{section}"
    if key == "hpack":
        return f"RFC 7541 §{section}"
    if section.startswith("3."):  # generic 3.N: frame definitions, RFC 7540 §6.N
        return f"RFC 7540 §6.{section[2:]}"
    return _GENERIC.get(section, "RFC 7540")


def find_h2spec() -> Optional[Path]:
    """h2spec on PATH, else ``${GATECHECK_CACHE:-~/.cache/gatecheck}/bin/h2spec``, else None."""
    found = shutil.which("h2spec")
    if found:
        return Path(found)
    cache = Path(os.environ.get("GATECHECK_CACHE") or Path.home() / ".cache" / "gatecheck")
    candidate = cache / "bin" / "h2spec"
    return candidate if candidate.is_file() and os.access(candidate, os.X_OK) else None


# -- the case list ---------------------------------------------------------------------------------

_GROUP = re.compile(r"^\s+(\d+(?:\.\d+)*)\. (.+)$")
_TEST = re.compile(r"^\s+(\d+): (.+)$")


def parse_dryrun(text: str) -> list:
    """[(case id, description)] from ``h2spec --dryrun`` output, in order."""
    cases, key, section = [], None, None
    for line in text.splitlines():
        if not line.strip():
            continue
        if not line[0].isspace():
            key = ROOTS.get(line.strip())
            if key is None:
                raise ValueError(f"unknown h2spec root group {line.strip()!r}; known: {sorted(ROOTS)}")
            continue
        test = _TEST.match(line)
        if test:
            if key is None or section is None:
                raise ValueError(f"h2spec test line outside a group: {line!r}")
            cases.append((f"{key}/{section}/{test.group(1)}", test.group(2).strip()))
            continue
        group = _GROUP.match(line)
        if group:
            section = group.group(1)
    return cases


def load_cases(path: Path = CASES_FILE) -> list:
    """The committed case list: one ``<id>\\t<default|strict>\\t<description>`` per line, ``#`` comments."""
    cases = []
    for line in path.read_text(encoding="utf-8").splitlines():
        if not line.strip() or line.startswith("#"):
            continue
        case_id, kind, description = line.split("\t", 2)
        cases.append(Case(case_id, kind == "strict", description))
    return cases


# -- running and reading the report ------------------------------------------------------------------

_SUMMARY = re.compile(r"(\d+) tests, (\d+) passed, (\d+) skipped, (\d+) failed")


def run(
    binary: Path,
    host: str,
    port: int,
    cases: list,
    *,
    path: str = "/",
    case_timeout: int = 2,
    deadline: float = 120.0,
    strict: bool = True,
    last: tuple = (),
) -> Report:
    """Run h2spec against ``host:port`` with JUnit reports; never raises for what h2spec does.

    Cases in ``last`` run in a second invocation after all the others, so whatever they leave behind on
    the server cannot change the verdicts of the cases h2spec would otherwise run after them.
    """
    passes = [[c.id for c in cases if c.id not in last], [c.id for c in cases if c.id in last]] if last else [[]]
    report = Report([], None, "", "")
    started = time.monotonic()
    for selection in (p for p in passes if p or not last):
        one = _run_once(
            binary,
            host,
            port,
            cases,
            selection,
            path=path,
            case_timeout=case_timeout,
            deadline=max(1.0, deadline - (time.monotonic() - started)),
            strict=strict,
        )
        report.command.append(one.command)
        report.returncode = one.returncode if report.returncode in (None, 0) else report.returncode
        report.stdout += one.stdout
        report.stderr += one.stderr
        report.results.update(one.results)
        report.tests_attr += one.tests_attr
        if one.summary is not None:
            previous = report.summary or (0, 0, 0, 0)
            report.summary = tuple(a + b for a, b in zip(previous, one.summary))
        report.problem = report.problem or one.problem
    _require_handshake_evidence(report, cases)
    return report


def _require_handshake_evidence(report: Report, cases: list) -> None:
    """Turn every pass into a failure when none of the run's :data:`HANDSHAKE_EVIDENCE` cases passed: the
    server never answered h2spec's preface, so a case that passed on a closed connection shows nothing.
    (A run given none of those cases is left as it is: it cannot tell.)"""
    selected = [c.id for c in cases if c.id in HANDSHAKE_EVIDENCE]
    if not selected or any(report.results.get(i, CaseResult("failed")).outcome == "passed" for i in selected):
        return
    why = (
        f"no evidence that the server speaks HTTP/2: none of {', '.join(selected)} (the server's SETTINGS "
        f"after h2spec's preface) passed in this run, so this case's pass shows nothing"
    )
    for case_id, result in report.results.items():
        if result.outcome == "passed":
            report.results[case_id] = CaseResult("failed", f"{why} (h2spec: passed {result.message})".strip())


def _run_once(
    binary: Path,
    host: str,
    port: int,
    cases: list,
    selection: list,
    *,
    path: str,
    case_timeout: int,
    deadline: float,
    strict: bool,
) -> Report:
    with tempfile.TemporaryDirectory(prefix="h2spec-") as tmp:
        junit = Path(tmp) / "h2spec.xml"
        argv = [str(binary), "-h", host, "-p", str(port), "-P", path, "-o", str(case_timeout), "-j", str(junit)]
        argv += (["-S"] if strict else []) + list(selection)
        try:
            proc = subprocess.run(argv, capture_output=True, text=True, timeout=deadline, stdin=subprocess.DEVNULL)
        except subprocess.TimeoutExpired as exc:
            out = exc.stdout.decode("utf-8", "replace") if isinstance(exc.stdout, bytes) else (exc.stdout or "")
            return Report(argv, None, out, "", problem=f"h2spec did not finish within {deadline:.0f} s (killed)")
        report = Report(argv, proc.returncode, proc.stdout, proc.stderr)
        match = _SUMMARY.search(proc.stdout)
        report.summary = tuple(int(g) for g in match.groups()) if match else None
        if not junit.exists():
            report.problem = f"h2spec wrote no JUnit report (exit status {proc.returncode})"
            return report
        report.results, report.tests_attr = parse_junit(junit.read_text(encoding="utf-8"), cases)
    failures = _failure_texts(report.stdout)
    for case_id, result in report.results.items():
        extra = failures.get(_key_of(case_id, cases))
        if extra and result.outcome == "failed":
            result.message = extra  # the requirement, expected and actual lines, as h2spec printed them
    return report


def parse_junit(text: str, cases: list) -> tuple:
    """({case id: CaseResult}, sum of testsuite ``tests``) from h2spec's JUnit XML."""
    by_desc = {(c.group, c.description): c.id for c in cases}
    root = ET.fromstring(text)
    results, tests = {}, 0
    for suite in root.iter("testsuite"):
        tests += int(suite.get("tests") or 0)
        group = suite.get("package", "")
        for case in suite.iter("testcase"):
            desc = case.get("classname", "")
            case_id = by_desc.get((group, desc))
            if case_id is None:
                case_id = f"{group}/?{desc}"  # a case the committed list does not know: reported as extra
            failure, error, skipped = case.find("failure"), case.find("error"), case.find("skipped")
            if failure is not None:
                results[case_id] = CaseResult("failed", (failure.text or "").strip())
            elif error is not None:
                results[case_id] = _reset_means_closed(CaseResult("failed", (error.text or "").strip()))
            elif skipped is not None:
                results[case_id] = CaseResult("skipped", SKIP_CAUSES.get(case_id, "h2spec gives no reason"))
            else:
                results[case_id] = CaseResult("passed")
    return results, tests


def _reset_means_closed(result: CaseResult) -> CaseResult:
    """A TCP reset where h2spec expected the connection to close counts as closed.

    h2spec means it to: ``Conn.WaitEvent`` (spec/connection.go) turns ECONNRESET into a
    ConnectionClosedEvent, but it compares ``opErr.Err == syscall.ECONNRESET`` while current Go wraps the
    errno in an ``*os.SyscallError``, so a reset comes out as an error ("read: connection reset by
    peer"). (Every failure lands in JUnit ``<error>``, text = expected lines + the actual line, because
    its reporter type-switches on ``TestError`` values while the cases return pointers.)
    """
    lines = result.message.splitlines()
    if len(lines) >= 2 and "Connection closed" in lines[:-1] and lines[-1].endswith("connection reset by peer"):
        return CaseResult(
            "passed",
            "the server reset the TCP connection, which h2spec means to count as "
            "closing it (its ECONNRESET check misses the wrapped error): " + lines[-1],
        )
    return result


def _key_of(case_id: str, cases: list) -> tuple:
    for case in cases:
        if case.id == case_id:
            return case.group, case.description
    return ("", "")


def _failure_texts(stdout: str) -> dict:
    """{(group, description): "-> requirement ..."} from the "Failures:" section of h2spec's output."""
    if "Failures:" not in stdout:
        return {}
    texts, key, section, current = {}, None, None, None
    for line in stdout.split("Failures:", 1)[1].splitlines():
        stripped = line.strip()
        if not stripped or stripped.startswith("Finished in") or _SUMMARY.search(stripped):
            current = None
            continue
        if not line[0].isspace():
            key = ROOTS.get(stripped, key)
            continue
        fail = re.match(r"^\s+× (\d+): (.+)$", line)
        if fail and key and section:
            current = (f"{key}/{section}", fail.group(2).strip())
            texts[current] = ""
            continue
        group = _GROUP.match(line)
        if group and not stripped.startswith("->"):
            section, current = group.group(1), None
            continue
        if current is not None:
            texts[current] = (texts[current] + "\n" + stripped).strip()
    return texts
