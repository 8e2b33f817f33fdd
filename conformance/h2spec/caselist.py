"""Regenerating the committed h2spec case list (``conformance/data/h2spec_cases.txt``) from the installed h2spec's
dry runs, without and with ``-S``:

    python -m gatecheck.conformance.h2spec --write-cases
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from gatecheck.conformance.h2spec.tool import CASES_FILE, INSTALL_HINT, find_h2spec, parse_dryrun

__all__ = ["write_cases", "main"]


def write_cases(binary: Path, path: Path = CASES_FILE) -> list:
    """Regenerate the case list from the installed h2spec (dry runs without and with -S)."""
    default = _dryrun(binary, strict=False)
    everything = _dryrun(binary, strict=True)
    default_ids = {case_id for case_id, _ in default}
    strict = len(everything) - len(default_ids)
    version = subprocess.run([str(binary), "--version"], capture_output=True, text=True, timeout=30).stdout.strip()
    lines = [
        f"# h2spec cases, from `h2spec --dryrun -S` ({version}; go install "
        "github.com/summerwind/h2spec/cmd/h2spec@latest resolves to v2.2.1).",
        f"# {len(everything)} cases: {len(default_ids)} default + {strict} strict (-S).",
        "# Regenerate: python -m gatecheck.conformance.h2spec --write-cases",
    ]
    lines += [f"{case_id}\t{'default' if case_id in default_ids else 'strict'}\t{desc}" for case_id, desc in everything]
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return everything


def _dryrun(binary: Path, strict: bool) -> list:
    argv = [str(binary), "--dryrun"] + (["-S"] if strict else [])
    return parse_dryrun(subprocess.run(argv, capture_output=True, text=True, timeout=30).stdout)


def main(argv: list | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    binary = find_h2spec()
    if binary is None:
        print(f"h2spec not found; {INSTALL_HINT}", file=sys.stderr)
        return 2
    if args == ["--write-cases"]:
        cases = write_cases(binary)
        print(f"wrote {len(cases)} cases to {CASES_FILE}")
        return 0
    print("usage: python -m gatecheck.conformance.h2spec --write-cases", file=sys.stderr)
    return 1


if __name__ == "__main__":
    sys.exit(main())
