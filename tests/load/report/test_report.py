"""Reports: golden Markdown from a committed results file of a real run, row selection, plots."""

from __future__ import annotations

import copy
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from gatecheck.load.plan.profile import load_profile
from gatecheck.load.records.results import ResultsError, load_records
from gatecheck.load.report.plot import latency_svg, rps_svg
from gatecheck.load.report.rows import select_rows
from gatecheck.load.report.tables import render, render_vs, write_report

DATA = Path(__file__).parent.parent / "data"


@pytest.fixture
def records():
    return load_records([DATA / "sample-smoke.jsonl"])


@pytest.fixture
def profile():
    return load_profile(DATA / "sample-smoke-profile.toml")


def test_the_report_of_a_real_run_matches_the_golden_text(records, profile):
    """A quick smoke run on the 2-core dev machine, recorded once (regenerate the golden when the format changes)."""
    text = (
        render(records, profile=profile, plots={"RPS against concurrency": "smoke-rps.svg"}) + "\n" + render_vs(records)
    )
    assert text == (DATA / "sample-smoke-report.md").read_text()


def test_the_oha_ceiling_is_extrapolated_from_its_cpu_time(records, profile):
    text = render(records, profile=profile)
    fastest = max((r for r in records if r["kind"] == "run"), key=lambda r: r["rps"])
    per_cpu = fastest["ok"] / fastest["oha"]["cpu_seconds"]
    assert f"oha's ceiling here: about {per_cpu:,.0f} RPS on its 1 CPU (" in text


def test_errors_and_generator_bound_runs_are_marked_and_explained(records, profile):
    runs = [copy.deepcopy(r) for r in records if r["kind"] == "run"]
    runs[1]["errors"] = {"Connection refused (os error 111)": 12}
    runs[1]["non_2xx"] = {"503": 3}
    for r in runs:
        r["host_load"] = {}
    runs[-1]["generator_bound"] = True
    text = render(runs, profile=profile)
    assert "| 15 |" in text and " ⚠" in text and " †" in text
    assert "- RSGI get 1KB (c64): Connection refused (os error 111): 12, HTTP 503: 3" in text
    assert "† generator-bound: oha used ≥90% of its CPUs" in text


def test_skipped_cases_are_listed_with_their_reason(records, profile):
    skip = {
        "kind": "skip",
        "profile": "smoke",
        "case": "RSGI workers 4",
        "target": "granian:rsgi?workers=4",
        "session": "29990101T000000Z-1",
        "reason": "needs 4 cores, host has 2 (use --full to run anyway)",
    }
    text = render(records + [skip], profile=profile)
    assert "- Not run: RSGI workers 4 (granian:rsgi?workers=4): needs 4 cores, host has 2" in text


def test_plots_are_well_formed_svg(records):
    rows = select_rows(records)
    for svg in (
        rps_svg(rows, title="t"),
        latency_svg(rows, title="t"),
        rps_svg(rows[1:], title="bars"),
        rps_svg([], title="none"),
    ):
        root = ET.fromstring(svg)
        assert root.tag.endswith("svg")
    assert "<polyline" in rps_svg(rows, title="t")  # several concurrencies: lines
    assert "<polyline" not in rps_svg(rows[1:], title="bars")  # one each: bars


def test_write_report_writes_markdown_and_plots_and_refuses_mixed_machines(tmp_path, records):
    path = write_report([DATA / "sample-smoke.jsonl"], tmp_path, vs=True)
    assert path.name == "report.md" and "## Side by side" in path.read_text()
    assert (tmp_path / "smoke-rps.svg").exists() and (tmp_path / "smoke-latency.svg").exists()
    mixed = tmp_path / "mixed.jsonl"
    lines = (DATA / "sample-smoke.jsonl").read_text().splitlines()
    mixed.write_text(lines[0] + "\n" + lines[1].replace('"cpu_model":"AMD EPYC"', '"cpu_model":"Other CPU"') + "\n")
    with pytest.raises(ResultsError, match="incompatible results"):
        write_report([mixed], tmp_path / "m")
    assert write_report([mixed], tmp_path / "m", force=True).exists()


def test_websocket_rows_get_their_own_table_in_messages_per_second(records, profile):
    ws = copy.deepcopy(next(r for r in records if r["kind"] == "run"))
    ws.pop("oha", None)
    ws.update(
        case="Granian Rsgi (8 clients)",
        group="Websockets",
        route="ws_broadcast",
        concurrency=8,
        rps=315098.0,
        messages_per_client=20000,
        host_load={},
        ws={
            "send": 1.0e6,
            "recv": 2.8e5,
            "combined": 315098.0,
            "all": 3.0e5,
            "extensions": [],
            "websockets": "17.4",
            "per_client": [],
        },
        client={"cpu_seconds": 9.0, "util": 0.9, "cpus": [1]},
    )
    text = render(records + [ws], profile=profile)
    assert "### Websockets" in text and "WebSocket broadcast (`load.wsbroadcast`" in text
    assert "The client (websockets 17.4, its defaults but for keepalive pings, off)" in text
    assert "| Granian Rsgi (8 clients) | 20000 | 1,000,000 | 280,000 | 315,098 |" in text
    assert "Granian Rsgi (8 clients)" not in render_vs(records + [ws])  # messages are not requests
