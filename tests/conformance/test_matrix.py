"""The compliance matrix rendered from a committed sample results file."""
from __future__ import annotations

import json
from pathlib import Path

from gatecheck.conformance.matrix import Matrix, load_results, main, render_html, render_markdown

SAMPLE = Path(__file__).parent / "data" / "results-sample.json"


def test_markdown_has_totals_levels_and_cells_per_clause():
    text = render_markdown(Matrix(*load_results([SAMPLE])))
    assert "3 distinct checks × 2 targets" in text
    assert "| `a:asgi:h1` | a 1.0 | 1 | 0 | 1 | 0 | 1 |" in text
    assert "| `b:wsgi:h1` | b 2.0 | 0 | 1 | 0 | 0 | 0 |" in text
    assert "### RFC 1 §1" in text
    assert "| `test_x.py::test_one` | MUST | pass | FAIL |" in text
    assert "| `test_y.py::test_asgi_only` | DEFINED | n/s | n/a |" in text
    # MUST: a passes 1/1, b passes 0/1; SHOULD: a's known deviation counts against it
    assert "| `a:asgi:h1` | 1/1 | – | 0/1 |" in text


def test_html_is_self_contained_and_escapes_messages():
    page = render_html(Matrix(*load_results([SAMPLE])))
    assert page.startswith("<!doctype html>") and "<script" not in page and "http" not in page.split("<body>")[0].split("title>")[0]
    assert "title=\"E boom\"" in page


def test_cli_writes_both_files_and_refuses_unknown_schema(tmp_path, capsys):
    assert main([str(SAMPLE), "--md", str(tmp_path / "m.md"), "--html", str(tmp_path / "m.html")]) == 0
    assert (tmp_path / "m.md").exists() and (tmp_path / "m.html").exists()
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps({"schema_version": 99, "targets": [], "checks": []}))
    assert main([str(bad), "--md", str(tmp_path / "x.md"), "--html", str(tmp_path / "x.html")]) == 2
    assert "schema_version 99 not supported" in capsys.readouterr().err
    assert main([str(tmp_path / "missing.json")]) == 2


def test_sentence_comes_from_the_record_or_else_the_levels_table(tmp_path):
    from gatecheck.conformance.levels import LEVELS_DIR, load_table, row_for_check

    stem = sorted(LEVELS_DIR.glob("test_*.toml"))[0].stem
    function = next(iter(load_table(stem)))
    table_check = f"{stem}.py::{function}"
    record = {"area": "x", "clause": "RFC 1 §1", "level": "MUST", "duration": 0.1, "interface": "asgi",
              "message": "", "outcome": "passed", "server": "a", "target": "a:asgi:h1"}
    data = {"schema_version": 1, "created": "now", "targets": [
        {"target": "a:asgi:h1", "server": "a", "interface": "asgi", "http": "h1", "features": [], "versions": {}}],
        "checks": [dict(record, check="test_q.py::test_quoted", sentence="A server MUST | quote."),
                   dict(record, check=table_check)]}
    path = tmp_path / "r.json"
    path.write_text(json.dumps(data), encoding="utf-8")
    m = Matrix(*load_results([path]))
    text = render_markdown(m)
    assert "| `test_q.py::test_quoted` | MUST | pass | A server MUST \\| quote. |" in text
    assert f"| {row_for_check(table_check).sentence.replace('|', chr(92) + '|')} |" in text
    assert "A server MUST | quote." in render_html(m)
