"""The compliance matrix rendered from recorded results, and a screenshot of it in headless Chromium.

``data/matrix-results.json`` is cut from real runs of the granian, uvicorn and daphne envs (2026-11-23, the
tox envs' command lines): one or two records per target × area × outcome × (spec or POLICY/INFO) of four
targets: granian:wsgi:auto and uvicorn (known deviations, not supported areas), granian:asgi:auto?tls=on
(only TLS applies), daphne:asgi:h1 (MUST NOT failures, a timeout, a POLICY failure, an INFO noted).
``data/results-sample.json`` is a hand-made schema-1 file.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from gatecheck.conformance.matrix import (
    Matrix,
    load_results,
    main,
    render_index_html,
    render_index_md,
    render_target_html,
    render_target_md,
    slug,
)
from gatecheck.conformance.matrix.model import evidence_of
from gatecheck.conformance.matrix.view import BANDS, cell_view
from gatecheck.conformance.spec.levels import row_for_check
from tests.conformance.chromium import evaluate, find_chromium, page_widths, screenshot
from tests.conformance.pngread import read_png

DATA = Path(__file__).parent / "data"
RECORDED = DATA / "matrix-results.json"
SAMPLE = DATA / "results-sample.json"


@pytest.fixture(scope="module")
def matrix() -> Matrix:
    return Matrix(*load_results([RECORDED]))


def test_a_cell_is_the_spec_share_with_known_deviations_counted_and_policy_info_apart(tmp_path):
    records = [
        ("MUST", "passed"),
        ("SHOULD", "failed"),
        ("MUST", "known"),
        ("DEFINED", "passed"),
        ("POLICY", "failed"),
        ("INFO", "noted"),
        ("MUST", "unsupported"),
        ("SHOULD NOT", "error"),
        ("MAY", "noted"),
    ]
    m = _matrix(
        tmp_path, [dict(level=lv, outcome=o, check=f"test_a.py::test_{i}") for i, (lv, o) in enumerate(records)]
    )
    cell = m.cell("s:asgi:h1", "ASGI")
    assert (cell.passed, cell.decided, cell.known, cell.failed) == (2, 5, 1, 2)
    assert cell.policy == [0, 1] and cell.info == [0, 2]  # a MAY never enters the MUST/SHOULD share
    view = cell_view(cell, "ASGI")
    assert (view.css, view.main, view.sub, view.known, view.failed) == ("b0", "40%", "2/5", "✗1 known", "2 failed")
    assert m.rows["s:asgi:h1"].share == 0.4


def test_a_crash_counts_as_a_failure_of_its_level(tmp_path):
    m = _matrix(
        tmp_path,
        [
            dict(level="MUST", outcome="crashed", check="test_a.py::test_c", message="crashed: x"),
            dict(level="MUST", outcome="passed", check="test_a.py::test_p"),
        ],
    )
    cell = m.cell("s:asgi:h1", "ASGI")
    assert (cell.passed, cell.decided, cell.failed) == (1, 2, 1)
    assert "crashed the server" in render_target_md(m, "s:asgi:h1")


def test_not_supported_and_not_applicable_cells_differ_from_failures(tmp_path):
    m = _matrix(
        tmp_path,
        [
            dict(level="MUST", outcome="unsupported", check="test_a.py::test_u"),
            dict(level="MUST", outcome="passed", check="test_b.py::test_p", area="wsgi_input"),
        ],
    )
    assert cell_view(m.cell("s:asgi:h1", "ASGI"), "").css == "ns"
    assert cell_view(m.cell("s:asgi:h1", "RSGI"), "").css == "na"
    assert cell_view(m.cell("s:asgi:h1", "WSGI"), "").main == "100%"
    # a failure is never rounded up to 100%
    assert (
        cell_view(
            _matrix(
                tmp_path,
                [dict(level="MUST", outcome="passed", check=f"test_a.py::test_{i}") for i in range(999)]
                + [dict(level="MUST", outcome="failed", check="test_a.py::test_f")],
            ).cell("s:asgi:h1", "ASGI"),
            "",
        ).main
        == "99.9%"
    )


def test_overview_has_every_target_area_legend_and_no_script_or_external_asset(matrix):
    page = render_index_html(matrix)
    assert page.startswith("<!doctype html>") and "<script" not in page.lower()
    assert "src=" not in page and "http://" not in page and "https://" not in page and "@import" not in page
    for target in matrix.targets:
        assert f'href="{slug(target)}.html"' in page
    for area in ("ASGI", "WSGI", "HTTP/1.1", "h2spec", "TLS"):
        assert f'title="{area}">{area}</th>' in page
    assert "Legend" in page and "not supported" in page and ">POLICY</th>" in page and ">INFO</th>" in page
    assert 'class="ns' in page and " known</small>" in page
    # the servers lead, then the configurations; the filters are radio buttons and CSS, no script
    assert page.index("<h2>Servers</h2>") < page.index("<h2>Configurations</h2>")
    assert all(f"id=f-{i}" in page for i in ("asgi", "rsgi", "wsgi", "a0")) and ":has(#f-asgi:checked)" in page
    assert all(f'data-i="{matrix.info[t]["interface"]}"' in page for t in matrix.targets)


def test_target_page_lists_failures_and_known_deviations_with_sentence_and_evidence(matrix):
    for target in matrix.targets:
        page = render_target_html(matrix, target)
        listed = [r for r in matrix.records[target] if r["outcome"] in ("failed", "known", "noted", "timeout")]
        for record in listed:
            assert _h(record["check"]) in page
            assert _h(evidence_of(record)[:60]) in page
            sentence = record.get("sentence") or row_for_check(record["check"]).sentence
            assert _h(sentence) in page
        assert "<script" not in page.lower()
    outcomes = {r["outcome"] for t in matrix.targets for r in matrix.records[t]}
    assert {"known", "failed", "timeout", "noted"} <= outcomes, "the recorded fixture must hold each"
    # a known deviation's evidence is its expectation entry's, without the "known deviation [clause]:" prefix
    known = [r for t in matrix.targets for r in matrix.records[t] if r["outcome"] == "known"]
    assert all(not evidence_of(r).startswith("known deviation [") for r in known)


def test_policy_and_info_failures_are_listed_apart_from_spec_failures(tmp_path):
    m = _matrix(
        tmp_path,
        [
            dict(level="POLICY", outcome="failed", check="test_a.py::test_policy", message="E p"),
            dict(level="MUST", outcome="failed", check="test_a.py::test_must", message="E m"),
            dict(level="INFO", outcome="noted", check="test_a.py::test_info", message="E i"),
        ],
    )
    page = render_target_md(m, "s:asgi:h1")
    spec, policy, info = (
        page.index(f"## {title}")
        for title in ("MUST/SHOULD failures (1)", "POLICY failures (1)", "INFO and MAY noted (1)")
    )
    assert spec < page.index("test_must") < policy < page.index("test_policy") < info < page.index("test_info")


def test_markdown_pages_link_each_other(matrix):
    index = render_index_md(matrix)
    for target in matrix.targets:
        assert f"({slug(target)}.md)" in index
        assert "[← the matrix](README.md)" in render_target_md(matrix, target)
    assert "| target |" in index and ("🟩" in index or "🟢" in index)


def test_cli_writes_every_page_and_refuses_bad_input(tmp_path, capsys):
    out = tmp_path / "m"
    assert main([str(RECORDED), str(SAMPLE), "--out", str(out)]) == 0
    both = Matrix(*load_results([RECORDED, SAMPLE]))
    names = {p.name for p in out.iterdir()}
    assert names == {"index.html", "README.md", "checks.html", "checks"} | {
        f"{slug(t)}.{ext}" for t in both.targets for ext in ("html", "md")
    }
    assert len(list((out / "checks").iterdir())) == both.check_count
    assert main([str(DATA), "--out", str(tmp_path / "dir")]) == 0  # a directory: its *.json
    # a render removes its own pages of an earlier render (a target gone), nothing else
    (out / "notes.md").write_text("mine", encoding="utf-8")
    assert main([str(RECORDED), "--out", str(out)]) == 0
    names = {p.name for p in out.iterdir()}
    assert "notes.md" in names and "a-asgi-h1.html" not in names and "a-asgi-h1.md" not in names
    assert len(list((out / "checks").iterdir())) == Matrix(*load_results([RECORDED])).check_count
    assert f"{slug(Matrix(*load_results([RECORDED])).targets[0])}.md" in names
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps({"schema_version": 99, "targets": [], "checks": []}))
    assert main([str(bad), "--out", str(tmp_path / "x")]) == 2
    assert "schema_version 99 not supported" in capsys.readouterr().err
    assert main([str(tmp_path / "missing.json")]) == 2
    assert "run the conformance envs first" in capsys.readouterr().err


def test_the_command_runs_as_a_module(tmp_path):
    done = subprocess.run(
        [sys.executable, "-m", "gatecheck.conformance.matrix", str(RECORDED), "--out", str(tmp_path)],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=Path(__file__).parents[2],
    )
    assert done.returncode == 0, done.stderr
    assert "pages in" in done.stdout and (tmp_path / "index.html").exists()


def test_sentence_comes_from_the_record_or_else_the_levels_table(tmp_path):
    from gatecheck.conformance.spec.levels import LEVELS_DIR, load_table

    stem = sorted(LEVELS_DIR.glob("test_*.toml"))[0].stem
    table_check = f"{stem}.py::{next(iter(load_table(stem)))}"
    m = _matrix(
        tmp_path,
        [
            dict(level="MUST", outcome="failed", check="test_q.py::test_quoted", sentence="A server MUST | quote."),
            dict(level="MUST", outcome="failed", check=table_check, sentence=""),
        ],
    )
    page = render_target_html(m, "s:asgi:h1")
    assert "A server MUST | quote." in page and _h(row_for_check(table_check).sentence) in page
    assert "<pre>x</pre>" in page  # a failure's evidence is its message ("E x"), pytest's "E " left out
    assert "> A server MUST \\| quote." in render_target_md(m, "s:asgi:h1")


def test_screenshot_in_headless_chromium_shows_the_coloured_matrix_at_1280_px_without_horizontal_scroll(
    tmp_path, matrix
):
    binary = find_chromium()
    if binary is None:
        pytest.skip(
            "no Chromium binary (chromium, chromium-browser, google-chrome; or GATECHECK_CHROMIUM): "
            "apt-get install chromium"
        )
    assert main([str(RECORDED), "--out", str(tmp_path / "m")]) == 0
    png = tmp_path / "index.png"
    output = screenshot(binary, tmp_path / "m" / "index.html", png, size=(1280, 900))
    assert png.exists() and png.stat().st_size > 10_000, f"no screenshot; Chromium said:\n{output}"
    image = read_png(png)
    assert image.width == 1280
    pixels = list(image.pixels(step=2))
    white = sum(p == (255, 255, 255) for p in pixels)
    assert len(set(pixels)) > 50 and white < 0.95 * len(pixels), "the screenshot is blank"
    # the cells' colours were painted: every band the overview uses is on screen
    bands = {cell_view(matrix.cell(t, a), "").css for t in matrix.targets for a in matrix.areas}
    expected = {_rgb(colour) for _, css, colour, _, _ in BANDS if css in bands}
    assert expected and expected <= set(pixels), f"missing cell colours {expected - set(pixels)}"
    # laid out by the browser in a 1280 px window, the overview is no wider than the window
    scroll, client = page_widths(binary, tmp_path / "m" / "index.html", 1280, tmp_path)
    assert scroll is not None, "Chromium did not lay the page out"
    assert scroll <= client, f"the overview is {scroll} px wide in a {client} px window: a horizontal scroll"
    # the filters, CSS only: WSGI leaves the WSGI configurations; an area leaves its column alone
    visible = (
        "[...document.querySelectorAll('#configurations tbody tr')].filter(r=>r.offsetParent)"
        ".map(r=>r.dataset.i).join(' ')"
    )
    shown = evaluate(
        binary,
        tmp_path / "m" / "index.html",
        f"(document.getElementById('f-wsgi').checked=true,{visible})",
        1280,
        tmp_path,
    )
    wsgi = [t for t in matrix.targets if matrix.info[t]["interface"] == "wsgi"]
    assert shown is not None and shown.split() == ["wsgi"] * len(wsgi), shown
    columns = (
        "(document.getElementById('f-a0').checked=true,[...document.querySelectorAll('#servers thead th')]"
        ".filter(h=>h.offsetParent).map(h=>h.textContent).join('|'))"
    )
    heads = evaluate(binary, tmp_path / "m" / "index.html", columns, 1280, tmp_path)
    assert heads is not None and heads.split("|")[-1] == matrix.areas[0] and matrix.areas[1] not in heads.split("|")


def _rgb(colour: str) -> tuple:
    return tuple(int(colour[i : i + 2], 16) for i in (1, 3, 5))


def _h(text: str) -> str:
    import html

    return html.escape(text)


def _matrix(tmp_path, records: list) -> Matrix:
    base = {
        "area": "asgi_scope",
        "clause": "ASGI §1",
        "duration": 0.1,
        "interface": "asgi",
        "message": "E x",
        "server": "s",
        "target": "s:asgi:h1",
        "sentence": "It must.",
        "accepts": "a yes",
    }
    data = {
        "schema_version": 2,
        "created": "2026-11-23T00:00:00Z",
        "targets": [
            {
                "target": "s:asgi:h1",
                "server": "s",
                "interface": "asgi",
                "http": "h1",
                "features": [],
                "versions": {"s": "1"},
            }
        ],
        "checks": [dict(base, **r) for r in records],
    }
    path = tmp_path / f"r{len(list(tmp_path.glob('r*.json')))}.json"
    path.write_text(json.dumps(data), encoding="utf-8")
    return Matrix(*load_results([path]))


# -- a matrix for choosing: servers first, every check across every server ---------------------------------


def _configs(tmp_path, configs: dict) -> Matrix:
    """A matrix of one server "s" with the given configurations: name -> [(level, outcome), ...]."""
    targets, checks = [], []
    for name, records in configs.items():
        targets.append(
            {
                "target": name,
                "server": "s",
                "interface": name.split(":")[1],
                "http": "h1",
                "features": [],
                "versions": {"s": "1.0"},
            }
        )
        for i, (level, outcome) in enumerate(records):
            checks.append(
                {
                    "check": f"test_asgi_scope.py::test_{i}",
                    "target": name,
                    "server": "s",
                    "interface": name.split(":")[1],
                    "area": "asgi_scope",
                    "clause": "§1",
                    "level": level,
                    "outcome": outcome,
                    "message": "E x",
                    "sentence": "It must.",
                    "accepts": "yes",
                }
            )
    path = tmp_path / "configs.json"
    path.write_text(json.dumps({"schema_version": 2, "created": "c", "targets": targets, "checks": checks}))
    return Matrix(*load_results([path]))


def test_a_servers_row_takes_its_best_full_configuration_and_counts_known_deviations_as_failing(tmp_path):
    from gatecheck.conformance.matrix.servers import server_rows

    full = [("MUST", "passed")] * 8 + [("MUST", "known"), ("SHOULD", "failed")] + [("SHOULD", "passed")] * 2
    better = [("MUST", "passed")] * 9 + [("MUST", "known")] + [("SHOULD", "passed")] * 2
    tls_only = [("MUST", "passed")] * 2 + [("MUST", "unsupported")] * 10
    crash = [("MUST", "passed")] * 9 + [("MUST", "error")] + [("SHOULD", "passed")] * 2
    m = _matrix_of(
        tmp_path,
        {"s:asgi:h1": full, "s:asgi:h1?x=1": better, "s:asgi:h1?tls=on": tls_only, "s:asgi:h1?y=2": crash},
        crash_message="the server process exited during this check",
    )
    (row,) = server_rows(m)
    assert row.best == "s:asgi:h1?x=1" and "s:asgi:h1?tls=on" not in row.full  # 100% on 2 checks is not best
    assert row.rate(m, row.best, "must") == 0.9 and row.rate(m, row.best, "should") == 1.0
    assert row.spread(m, "must") == (8 / 9, 0.9) and row.spread(m, "should") == (2 / 3, 1.0)
    assert row.failing(m) == (1, 1) and row.crashes == 1 and row.versions == ["1.0"]
    page = render_index_html(m)
    assert "<b>1</b><small>1 known</small>" in page and 'best: <a href="s-asgi-h1-x-1.html">' in page


def _matrix_of(tmp_path, configs: dict, crash_message: str) -> Matrix:
    m = _configs(tmp_path, configs)
    for records in m.records.values():
        for record in records:
            if record["outcome"] == "error":
                record["message"] = crash_message
    return m


def test_every_check_has_a_page_with_what_each_configuration_did_and_its_evidence(tmp_path):
    from gatecheck.conformance.matrix.checkpage import by_check, check_pages, render_check_html, render_checks_html

    m = _matrix(
        tmp_path,
        [
            dict(
                level="MUST",
                outcome="known",
                check="test_a.py::test_k[x]",
                message="known deviation [ASGI §1]: sent x, got y",
                upstream="https://github.com/o/s/issues/7",
                exchange="connection 1 (127.0.0.1:1):\n  → sent 3 bytes:\n    GET",
            ),
            dict(level="MUST", outcome="passed", check="test_a.py::test_p"),
        ],
    )
    records_of = by_check(m)
    pages = check_pages(records_of)
    assert pages == {"test_a.py::test_k[x]": "test_a--test_k-x.html", "test_a.py::test_p": "test_a--test_p.html"}
    page = render_check_html(m, "test_a.py::test_k[x]", records_of["test_a.py::test_k[x]"], {})
    assert "sent x, got y" in page and 'href="https://github.com/o/s/issues/7"' in page and "→ sent 3 bytes" in page
    assert "gatecheck conformance --server s:asgi:h1 --no-expectations &#x27;test_a.py::test_k[x]&#x27;" in page
    assert 'href="../s-asgi-h1.html"' in page and "It must." in page
    overview = render_checks_html(m, records_of, pages)
    assert 'href="checks/test_a--test_k-x.html"' in overview and "✗1 known" in overview
    assert 'href="https://github.com/o/s/issues/7"' in render_target_html(m, "s:asgi:h1")
    assert "Upstream: https://github.com/o/s/issues/7" in render_target_md(m, "s:asgi:h1")
