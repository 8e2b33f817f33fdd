"""Known deviations: the built-in ``conformance/expectations/<server>.toml`` and a server's own files
(``--expectations FILE``, repeatable).

    server = "granian"                   # optional, own files only: the server whose targets the file is for
                                         # (default: every target of the session; a built-in file: its stem)
    [[deviation]]
    check = "test_http1_framing.py::test_cl_te_conflict_closes_connection"   # the check id; "*": "test_x[*]"
    targets = ["granian:wsgi*"]          # optional fnmatch patterns on the resolved target; default: all
    versions = ">=2.8,<2.9"              # optional PEP 440 specifiers on the server's version; default: all
    evidence = "sent CL:6 + TE:chunked with body '0\\r\\n\\r\\nX'; got 200 and the connection stayed open"
    link = "https://..."                 # optional: a discussion, a note
    upstream = "https://github.com/emmett-framework/granian/issues/NNN"   # optional: the server's issue or PR
    intermittent = "failed 3 of 40 runs with the CPU saturated, 0 of 12 idle"   # optional, see below

The key is the **check id** the results file records: ``<file>.py::<function>[<parameters>]``, the
parameters being the check's own parameter id without the target's part (``resultsfile.check_id_of``; the
levels table keys its rows the same way). ``*`` matches anything; every other character is literal.

The clause is the check's (its ``@spec`` and levels-table row): an entry does not repeat it. A ``clause``
key, from files written before, is ignored with a warning.

``versions`` is matched against the server version recorded for the started target, pre-releases and dev
builds included (``>=2.8,<2.10`` holds for ``2.9.0.dev3``; PEP 440 orders ``2.9.0.dev3`` before ``2.9``, so
``>=2.9`` does not); an entry whose range excludes it, or whose target's version is unknown (a
``--server-cmd``), does not apply there and is not stale.

Combining: the built-in file of each target's server is read first (unless ``--no-builtin-expectations``),
then each ``--expectations FILE`` in the order given; when several entries match a check on a target, the
last one read wins, so a server's own file overrides the built-in entry for the same check.
``--no-expectations`` reads none at all.

Each entry must have been confirmed by hand (a raw request and what came back) before it is added: the
evidence line says what was sent and what came back. A listed check that fails its assertion is *known*;
one that passes is *fixed*, which fails the run so the file is kept honest; an error is never known
(``outcomes.py`` decides). Entries that matched no check of a run are reported as stale (``stale.py``).

``intermittent`` is for a race in the server: a deviation confirmed by hand that shows in some runs and
not others (the evidence is a failing run's bytes; the value says how often it was seen, and where). Such
a check is *known* whichever way its call went, so the verdict does not flip from run to run and a run
that happened to miss the race does not call it fixed; the message says whether it held this time. An
error is still never known. Remove the entry when the server's fix is released (no run can prove a race
gone).
"""

from __future__ import annotations

import fnmatch
import re
import sys
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

__all__ = [
    "Deviation",
    "Applied",
    "Expectations",
    "load_expectations",
    "load_expectation_file",
    "EXPECTATIONS_DIR",
    "ExpectationError",
    "server_version",
    "CHECK_ID",
    "expectations_of",
]

EXPECTATIONS_DIR = Path(__file__).resolve().parent.parent / "expectations"
ANY_SERVER = "*"
_REQUIRED = ("check", "evidence")
_KEYS = {"check", "evidence", "targets", "versions", "link", "upstream", "intermittent"}
_IGNORED = {"clause"}  # the check's own clause is used
#: a check id: ``file.py::function`` with optional ``[parameters]`` (``*`` allowed anywhere)
CHECK_ID = re.compile(r"[\w*.-]+\.py::[\w*]+(\[.*\])?")
_HEADER = re.compile(r"^[ \t]*\[\[[ \t]*deviation[ \t]*\]\]", re.MULTILINE)


class ExpectationError(ValueError):
    pass


@dataclass(frozen=True)
class Deviation:
    server: str  # the server whose targets it is for, or "*" (an own file without server)
    check: str
    evidence: str
    targets: tuple = ()
    link: str = ""
    versions: str = ""
    source: str = ""  # the file it was read from
    line: int | None = None  # the line of its [[deviation]] header
    intermittent: str = ""  # a race: how often it was seen failing, and where (see the module text)
    upstream: str = ""  # the server's own issue or pull request about it (a URL)

    def names(self, check_id: str) -> bool:
        """Whether its check pattern matches ``check_id``."""
        if "*" not in self.check:
            return self.check == check_id
        return _glob(self.check).fullmatch(check_id) is not None

    def on_target(self, server: str, target: str) -> bool:
        """Whether it is for ``target`` (of ``server``), whatever the version."""
        if self.server not in (ANY_SERVER, server):
            return False
        return not self.targets or any(fnmatch.fnmatchcase(target, pattern) for pattern in self.targets)

    def in_range(self, version: str | None) -> bool:
        """Whether the server's ``version`` is in its range (no range: always; unknown version: never)."""
        if not self.versions:
            return True
        return version is not None and _specifiers(self.versions).contains(version, prereleases=True)

    def applies(self, check_id: str, target: str, version: str | None = None, server: str | None = None) -> bool:
        server = server if server is not None else target.split(":", 1)[0]
        return self.names(check_id) and self.on_target(server, target) and self.in_range(version)

    @property
    def where(self) -> str:
        """``file:line`` (or the file and the check, when the line is not known)."""
        if self.line is not None:
            return f"{self.source}:{self.line}"
        return f"{self.source} ({self.check})" if self.source else self.check

    def reason(self, clause: str = "") -> str:
        kind = "known intermittent deviation" if self.intermittent else "known deviation"
        text = f"{kind} [{clause}]: {self.evidence}" if clause else f"{kind}: {self.evidence}"
        text = f"{text} ({self.link})" if self.link else text
        text = f"{text} (upstream: {self.upstream})" if self.upstream else text
        return f"{text}; intermittent: {self.intermittent}" if self.intermittent else text


@dataclass(frozen=True)
class Applied:
    """A deviation matched to a check: the clause comes from the check, the evidence from the entry."""

    deviation: Deviation
    clause: str

    check = property(lambda self: self.deviation.check)
    where = property(lambda self: self.deviation.where)
    intermittent = property(lambda self: self.deviation.intermittent)

    def reason(self) -> str:
        return self.deviation.reason(self.clause)


@dataclass
class Expectations:
    """The session's deviations, in the order read (built-in files first, then each own file)."""

    entries: list = field(default_factory=list)
    files: list = field(default_factory=list)  # every file read, as given
    warnings: list = field(default_factory=list)
    _index: tuple | None = field(
        default=None, repr=False, compare=False
    )  # (entries seen, exact check -> indexes, globs)

    def candidates(self, check_id: str, server: str, target: str) -> list:
        """The entries naming ``check_id`` on ``target``, whatever the version (decided once it is known), in
        the order read."""
        if self._index is None or self._index[0] != len(self.entries):
            exact: dict = {}
            for i, d in enumerate(self.entries):
                if "*" not in d.check:
                    exact.setdefault(d.check, []).append(i)
            globs = [i for i, d in enumerate(self.entries) if "*" in d.check]
            self._index = (len(self.entries), exact, globs)
        _, exact, globs = self._index
        named = sorted(exact.get(check_id, []) + [i for i in globs if self.entries[i].names(check_id)])
        return [self.entries[i] for i in named if self.entries[i].on_target(server, target)]

    @staticmethod
    def chosen(candidates: list, version: str | None) -> Deviation | None:
        """The last entry read among ``candidates`` whose range holds ``version``."""
        return next((d for d in reversed(candidates) if d.in_range(version)), None)


def server_version(versions: dict) -> str | None:
    """The server's own version among a target's recorded versions ({package: version, "python": ...})."""
    for key, value in (versions or {}).items():
        if key != "python" and value and value != "unknown":
            return str(value)
    return None


def read_expectations(servers, files, builtin: bool = True, directory: Path = EXPECTATIONS_DIR) -> Expectations:
    """The built-in files of ``servers`` (unless ``builtin`` is false), then ``files`` in order."""
    result = Expectations()
    paths = [(directory / f"{server}.toml", server) for server in dict.fromkeys(servers)] if builtin else []
    paths = [(path, server) for path, server in paths if path.exists()]
    paths += [(Path(path), None) for path in files]
    for path, server in paths:
        entries, warnings = _read(path, server)
        result.entries += entries
        result.warnings += warnings
        result.files.append(str(path))
    return result


def expectations_of(config, targets) -> Expectations:
    """A session's deviations from its options: the built-in file of each target's server (unless
    --no-builtin-expectations), then each --expectations FILE; none with --no-expectations."""
    files = config.getoption("--expectations")
    if config.getoption("--no-expectations"):
        if files or config.getoption("--no-builtin-expectations"):
            raise ExpectationError(
                "--no-expectations reads no expectation file: leave out --expectations "
                "and --no-builtin-expectations, or --no-expectations"
            )
        return Expectations()
    return read_expectations(
        [st.target.server for st in targets], files, builtin=not config.getoption("--no-builtin-expectations")
    )


def load_expectations(server: str, directory: Path = EXPECTATIONS_DIR) -> list:
    """``server``'s built-in deviations (none when it has no file)."""
    path = directory / f"{server}.toml"
    return load_expectation_file(path, server) if path.exists() else []


def load_expectation_file(path: Path, server: str | None = None) -> list:
    """The deviations of one file (``server``: a built-in file's; None: the file's own ``server`` or any)."""
    return _read(Path(path), server)[0]


def _read(path: Path, server: str | None) -> tuple:
    try:
        text = path.read_text(encoding="utf-8")
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise ExpectationError(f"{path}: not valid TOML: {exc}") from None
    except OSError as exc:
        raise ExpectationError(f"expectations file {path}: {exc.strerror}") from None
    allowed = {"deviation"} if server is not None else {"deviation", "server"}
    unknown = set(data) - allowed
    if unknown:
        raise ExpectationError(
            f"{path}: unknown top-level keys {sorted(unknown)}; use [[deviation]] tables"
            + ("" if server is not None else ' and an optional server = "NAME"')
        )
    owner = server if server is not None else str(data.get("server", ANY_SERVER) or ANY_SERVER)
    entries = data.get("deviation", [])
    lines = [text.count("\n", 0, m.start()) + 1 for m in _HEADER.finditer(text)]
    lines = lines if len(lines) == len(entries) else [None] * len(entries)
    result, warnings = [], []
    for n, (entry, line) in enumerate(zip(entries, lines), 1):
        where = f"{path}:{line}" if line else f"{path}: deviation #{n}"
        result.append(_entry(entry, where, owner, str(path), line))
        if _IGNORED & set(entry):
            warnings.append(f"{where}: 'clause' is ignored (the check's own clause is used); remove it")
    return result, warnings


def _entry(entry: dict, where: str, owner: str, source: str, line: int | None) -> Deviation:
    missing = [k for k in _REQUIRED if not str(entry.get(k, "")).strip()]
    if missing:
        raise ExpectationError(f"{where}: the deviation lacks {', '.join(missing)}")
    extra = set(entry) - _KEYS - _IGNORED
    if extra:
        raise ExpectationError(f"{where}: unknown keys {sorted(extra)} (known: {', '.join(sorted(_KEYS))})")
    check = str(entry["check"])
    if not CHECK_ID.fullmatch(check):
        raise ExpectationError(
            f"{where}: check {check!r} is not a check id: write <file>.py::<function>"
            "[<parameters>] as the results file's 'check' field spells it (no target part)"
        )
    versions = str(entry.get("versions", "")).strip()
    if versions:
        try:
            _specifiers(versions)
        except ValueError as exc:
            raise ExpectationError(f"{where}: versions {versions!r}: {exc}") from None
    intermittent = entry.get("intermittent", "")
    if not isinstance(intermittent, str) or ("intermittent" in entry and not intermittent.strip()):
        raise ExpectationError(
            f"{where}: intermittent must say how often the deviation was seen, e.g. "
            '"failed 3 of 40 runs with the CPU saturated, 0 of 12 idle"'
        )
    upstream = entry.get("upstream", "")
    if not isinstance(upstream, str) or ("upstream" in entry and not re.match(r"https?://\S+$", upstream.strip())):
        raise ExpectationError(
            f"{where}: upstream must be the URL of the server's issue or pull request, e.g. "
            '"https://github.com/emmett-framework/granian/issues/123"'
        )
    targets = entry.get("targets", ())
    if isinstance(targets, str) or not all(isinstance(t, str) for t in targets):
        raise ExpectationError(f'{where}: targets must be a list of patterns, e.g. ["granian:asgi*"]')
    return Deviation(
        owner,
        check,
        str(entry["evidence"]),
        tuple(targets),
        str(entry.get("link", "")),
        versions,
        source,
        line,
        intermittent.strip(),
        upstream.strip(),
    )


@lru_cache(maxsize=None)
def _specifiers(text: str):
    try:
        from packaging.specifiers import InvalidSpecifier, SpecifierSet
    except ImportError:  # pragma: no cover
        raise ValueError("version ranges need the 'packaging' package (pip install packaging)") from None
    try:
        return SpecifierSet(text)
    except InvalidSpecifier:
        raise ValueError('not PEP 440 version specifiers, e.g. ">=2.8,<2.9"') from None


@lru_cache(maxsize=None)
def _glob(pattern: str) -> "re.Pattern":
    """``*`` matches anything; every other character (``[`` included) is literal, as in check ids."""
    return re.compile(".*".join(re.escape(part) for part in pattern.split("*")))
