"""The differential view: every framing mutation sent to several servers, and a table of how each read it.

    python -m gatecheck.conformance.helpers.differential --server granian:asgi --server uvicorn:asgi ... \\
        --out docs/differential.md

Each target is started with its fixture app (as a conformance session starts it), every mutation of
``conformance/spec/framing.py`` is observed once (``helpers/framing.observe``), and the table shows, per
mutation, what the grammar reads and each server's reading (``helpers/framing.label``). A reading the grammar
does not allow is in bold; one that no other server shares is marked with a dagger, so a server that differs
from the grammar and from the others stands out, and a new server is compared in one run. Rows where every
server read the mutation as the grammar allows are counted, not listed.
"""

from __future__ import annotations

import argparse
import collections
import json
import sys
import tempfile
from pathlib import Path

from gatecheck.conformance.app.started import StartedServer
from gatecheck.conformance.helpers.framing import label, observe, problems
from gatecheck.conformance.spec.framing import FAMILIES, MUTATIONS, reading_of
from gatecheck.servers import ServerError, resolve

__all__ = ["run_target", "render", "main"]


def run_target(text: str, mutations=MUTATIONS, *, log=print) -> dict:
    """{mutation name: (label, problems)} for one target (its server started and stopped here)."""
    adapter, target = resolve(text)
    work = Path(tempfile.mkdtemp(prefix="gatecheck-differential-"))
    server = StartedServer(
        target, adapter.target_capabilities(target), event_dir=work / "events", log_dir=work / "logs", work_dir=work
    )
    (work / "events").mkdir()
    (work / "logs").mkdir()
    out = {}
    try:
        server.start()
        for i, mutation in enumerate(mutations):
            try:
                obs = observe(server, mutation)
                out[mutation.name] = (label(obs, server.interface), problems(obs, server.interface))
            except (AssertionError, OSError) as exc:
                out[mutation.name] = ("error", [str(exc)[:200]])
                if not server.alive():
                    server.restart()
            if i % 50 == 49:
                log(f"{text}: {i + 1} of {len(mutations)}")
    finally:
        server.stop()
    return out


def _grammar(mutation) -> str:
    reading = reading_of(mutation)
    reads = "+".join(f"r{len(m.body)}" for m in reading.messages)
    end = {"complete": "", "invalid": "400 x", "incomplete": "waits"}[reading.end]
    return " ".join(p for p in (reads, end) for p in [p] if p) or "-"


def render(results: dict, versions: dict) -> str:
    """The Markdown page: a legend, per-server counts, and the rows where some server stands out."""
    names = list(results)
    lines = [
        "# Differential view: request framing",
        "",
        "Every framing mutation of `conformance/spec/framing.py` (derived from RFC 9112's grammar) sent to each",
        "server, and how each read it. Regenerate with `python -m gatecheck.conformance.helpers.differential",
        "--server TARGET ... --out docs/differential.md`; the same mutations are the checks of",
        "`test_http1_grammar.py`.",
        "",
        "A cell is the statuses of the responses (`x`: the server then closed), then what the app read of each",
        "request: `r83` a complete 83-octet body, `f` a read that failed, `H` the request hidden in the body",
        "(served only where the grammar reads body octets as a request). The grammar column is what RFC 9112",
        "reads (`400 x`: invalid, answered 400 and closed; `waits`: incomplete). **Bold**: a reading the",
        "grammar does not allow; †: no other server read it so.",
        "",
        "| server | version | mutations | read as the grammar allows | not |",
        "| --- | --- | ---: | ---: | ---: |",
    ]
    for name in names:
        bad = sum(1 for _, found in results[name].values() if found)
        total = len(results[name])
        lines.append(f"| {name} | {versions.get(name, '')} | {total} | {total - bad} | {bad} |")
    lines += ["", "| mutation | grammar | " + " | ".join(names) + " |", "| --- | --- |" + " --- |" * len(names)]
    quiet = 0
    for family, mutations in FAMILIES.items():
        for mutation in mutations:
            cells = [results[n].get(mutation.name, ("-", [])) for n in names]
            counts = collections.Counter(text for text, _ in cells)
            if not any(found for _, found in cells):
                quiet += 1
                continue
            shown = [_cell(text, found, len(names) > 2 and counts[text] == 1) for text, found in cells]
            lines.append(f"| `{mutation.name}` | {_grammar(mutation)} | " + " | ".join(shown) + " |")
    lines += ["", f"{quiet} more mutations were read by every server as the grammar allows.", ""]
    return "\n".join(lines)


def _cell(text: str, found: list, alone: bool) -> str:
    text = text.replace("|", "\\|")
    cell = f"**{text}**" if found else text
    return cell + (" †" if alone else "")


def _earlier(path) -> tuple:
    """(results, versions) of an earlier run kept with --json (empty when there is none)."""
    if path is None or not path.exists():
        return {}, {}
    data = json.loads(path.read_text(encoding="utf-8"))
    return {k: {m: tuple(v) for m, v in r.items()} for k, r in data["results"].items()}, data["versions"]


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m gatecheck.conformance.helpers.differential", description=__doc__.splitlines()[0]
    )
    parser.add_argument("--server", action="append", required=True, metavar="TARGET", help="a target (repeat)")
    parser.add_argument("--out", type=Path, help="write the Markdown table here (default: standard output)")
    parser.add_argument("--json", type=Path, help="also keep the readings here, and add those of an earlier run")
    args = parser.parse_args(argv)
    results, versions = _earlier(args.json)
    for text in args.server:
        try:
            adapter, target = resolve(text)
            versions[text] = adapter.version(target.option("python")) or ""
            results[text] = run_target(text, log=lambda m: print(m, file=sys.stderr))
        except ServerError as exc:
            print(f"{text}: {exc}", file=sys.stderr)
    if args.json:
        args.json.write_text(json.dumps({"results": results, "versions": versions}, indent=1), encoding="utf-8")
    page = render(results, versions)
    if args.out:
        args.out.write_text(page, encoding="utf-8")
    else:
        print(page)
    return 0


if __name__ == "__main__":
    sys.exit(main())
