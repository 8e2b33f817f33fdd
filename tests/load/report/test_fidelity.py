"""The fidelity document: ranks and Spearman's rho, seed rows matched to our runs, extras, CV flags, the CLI."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from gatecheck.load.__main__ import main
from gatecheck.load.records import open_text
from gatecheck.load.report.fidelity import compare
from gatecheck.load.report.fidelity_md import render
from gatecheck.load.report.ranking import average_ranks, inversions, spearman
from gatecheck.load.report.seedtables import SeedError, load_seed_file, load_seeds

DATA = Path(__file__).parent.parent / "data"
LAB = Path(__file__).resolve().parents[3] / "benchmarks" / "load"  # the committed results (gzipped when large)


# ---- ranking ------------------------------------------------------------------------------------------


def test_average_ranks_share_ties():
    assert average_ranks([10, 30, 20, 30]) == [4, 1.5, 3, 1.5]


def test_spearman_matches_hand_computed_values():
    assert spearman([1, 2, 3, 4], [10, 20, 30, 40]) == pytest.approx(1.0)
    assert spearman([1, 2, 3, 4], [40, 30, 20, 10]) == pytest.approx(-1.0)
    # ranks (1..5) and (2, 1, 3, 4, 5): sum d^2 = 2, rho = 1 - 6*2 / (5*24) = 0.9
    assert spearman([50, 40, 30, 20, 10], [40, 50, 30, 20, 10]) == pytest.approx(0.9)
    # with a tie: ranks a = (1, 2, 3, 4), b = (1.5, 1.5, 3, 4); Pearson of the ranks = 4.5 / sqrt(5 * 4.5)
    assert spearman([4, 3, 2, 1], [9, 9, 5, 1]) == pytest.approx(4.5 / (5 * 4.5) ** 0.5)
    assert spearman([1], [1]) is None and spearman([1, 1], [1, 2]) is None


def test_inversions_name_the_reference_faster_row_first_and_skip_ties():
    found = inversions([100, 50, 10], [40, 60, 10])
    assert [(i.first, i.second) for i in found] == [(0, 1)]
    assert found[0].reference_gap == pytest.approx(1.0) and found[0].other_gap == pytest.approx(0.5)
    assert inversions([100, 50], [60, 60]) == []


# ---- seed data ----------------------------------------------------------------------------------------


def test_the_committed_seed_files_load_and_cover_every_issue_table():
    profiles = {t.profile for d in load_seeds() for t in d.tables}
    assert profiles == {
        "rsgi_types",
        "interfaces",
        "http2",
        "files",
        "event_loops",
        "task_impl",
        "concurrency",
        "pyver",
        "vs",
        "json",
    }
    readme = next(d for d in load_seeds() if d.name == "README")
    assert readme.commit.startswith("9a20b17") and readme.environment.startswith("AMD Ryzen 7 5700X")
    interfaces = next(t for t in readme.tables if t.profile == "interfaces")
    assert [r.rps for r in interfaces.rows][:3] == [143073, 119975, 17699]


def test_a_malformed_seed_file_is_one_clear_error(tmp_path):
    bad = tmp_path / "x.toml"
    bad.write_text('source = "s"\n[[table]]\nprofile = "p"\ntitle = "T"\nrows = [ { label = "a", rps = 1 } ]\n')
    with pytest.raises(SeedError, match=r"x.toml: table 1 \('T'\): row 'a': missing"):
        load_seed_file(bad)


# ---- matching and rendering ---------------------------------------------------------------------------

SEED = """source = "granian benchmarks/T.md"
commit = "9a20b1742b97ab8e85f58220f98f1d14e35387c3"
run_at = "Wed 05 Aug 2026"
environment = "Box (CPUs: 16)"
python = "3.13"
granian = "2.8.1"

[[table]]
profile = "fake"
title = "Fake"
rows = [
  { label = "A", concurrency = 128, total = 10, rps = 300, avg_ms = 1, max_ms = 2 },
  { label = "B", concurrency = 128, total = 10, rps = 200, avg_ms = 1, max_ms = 2 },
  { label = "C", concurrency = 64, total = 10, rps = 100, avg_ms = 1, max_ms = 2 },
  { label = "G", concurrency = 64, total = 10, rps = 50, avg_ms = 1, max_ms = 2, reason = "no gevent" },
]
[table.explanations]
"A | B" = "B has a faster parser here."

[[table]]
profile = "fakepy"
title = "Fake versions"
env = "python"
rows = [
  { python = "3.10", label = "A", concurrency = 128, total = 10, rps = 100, avg_ms = 1, max_ms = 2 },
  { python = "3.11", label = "A", concurrency = 128, total = 10, rps = 200, avg_ms = 1, max_ms = 2 },
  { python = "3.14", label = "A", concurrency = 128, total = 10, rps = 300, avg_ms = 1, max_ms = 2 },
]
"""


def run(profile, case, rps, *, conc=128, repeat=0, python="3.11.7", load=0.2, session="20261201T100000Z-1"):
    return {
        "kind": "run",
        "profile": profile,
        "case": case,
        "group": "",
        "target": "granian:rsgi",
        "route": "b1k",
        "concurrency": conc,
        "rps": rps,
        "repeat": repeat,
        "session": session,
        "host_load": {"loadavg1": load},
        "versions": {"python": python, "granian": "2.8.7", "oha": "1.16.0"},
        "environment": {"cpu_model": "AMD EPYC", "cpu_count": 2, "kernel": "6.18"},
    }


@pytest.fixture
def seeds(tmp_path):
    path = tmp_path / "T.toml"
    path.write_text(SEED)
    return [load_seed_file(path)]


@pytest.fixture
def records():
    out = []
    for i, (a, b) in enumerate([(100, 120), (102, 118), (101, 119), (99, 121), (100, 120)]):
        out += [run("fake", "A", a, repeat=i, load=0.1 * (i + 1)), run("fake", "B", b, repeat=i)]
        out += [run("fake", "A", a / 2, conc=64, repeat=i)]  # c128 wins for A
    out += [run("fake", "C", v, conc=64, repeat=i) for i, v in enumerate((50, 60, 70))]  # CV 16.7%
    out += [
        run("fake", "D", 80),
        run("fakepy", "A", 50, python="3.10.13"),
        run("fakepy", "A", 70, python="3.11.7"),
        run("fakepy", "A", 90, python="3.9.18"),
    ]
    return out


def test_seed_rows_meet_the_median_at_the_winning_concurrency(records, seeds):
    fake, fakepy = compare(records, seeds)
    a, b, c, g = fake.lines
    assert a.ours.record["rps"] == 100 and a.ours.concurrency == 128 and set(a.ours.by_concurrency) == {64, 128}
    assert b.ours.record["rps"] == 120 and c.ours.record["rps"] == 60
    assert g.ours is None and g.seed.reason == "no gevent"
    assert [r.label for r in fake.extras] == ["D"]
    assert fake.rho == pytest.approx(0.5)  # seed ranks (1, 2, 3), ours (2, 1, 3): 1 - 6*2/(3*8)
    assert fake.load_range == (0.1, 0.5)
    # the Python column: 3.10 and 3.11 compared; 3.14 not measured; 3.9 an extra
    assert [line.ours is not None for line in fakepy.lines] == [True, True, False]
    assert [r.env_values[0] for r in fakepy.extras] == ["3.9"] and fakepy.rho == pytest.approx(1.0)


def test_render_shows_ranks_cv_flags_explanations_and_extras(records, seeds):
    text = render(compare(records, seeds), seeds)
    assert "| Fake | 3 | 0.500 | 16.7% | 1 | - | 0.1 to 0.5 |" in text
    assert "| A | 128 | 300 | 100 | **128** of 64/128 | 5 | 1.1% | 1 | 2 |" in text
    assert "| C | 64 | 100 | 60 | 64 | 3 | 16.7% ⚠ | 3 | 3 |" in text
    assert "| G | 64 | 50 | not reproduced |" in text and "- G: not reproduced: no gevent" in text
    assert "- A above B in the seed (+50.0%), below it here (+20.0%): B has a faster parser here." in text
    assert "Spearman's rho: 0.500 (n = 3 rows" in text
    assert "| D | 80 | 128 | 1 | - |" in text
    assert "| 3.14 | A | 128 | 300 | not measured |" in text and "| 3.9 A | 90 | 128 | 1 | - |" in text
    assert (
        "Seed: granian benchmarks/T.md at 9a20b17 (run Wed 05 Aug 2026; Box (CPUs: 16); Python 3.13; Granian 2.8.1)."
        in text
    )


def test_an_inversion_inside_our_own_spread_says_so_with_both_ranges(records, seeds):
    records = [r for r in records if r["case"] != "B"]
    records += [run("fake", "B", v, repeat=i) for i, v in enumerate((95, 104, 110, 101, 97))]  # median 101 > A's 100
    text = render(compare(records, seeds), seeds)
    assert (
        "- A above B in the seed (+50.0%), below it here (+1.0%) (our repeats overlap: 99-102 and 95-110 RPS): "
        "B has a faster parser here."
    ) in text


def test_an_unexplained_inversion_says_where_to_explain_it(records, seeds):
    records = [r for r in records if r["case"] != "B"] + [run("fake", "B", 130)]
    text = render(compare(records, seeds), seeds)
    assert '*unexplained: add `"A | B" = "..."` under `[table.explanations]`' not in text  # explained in the seed
    records = [r for r in records if r["case"] != "C"] + [run("fake", "C", 200)]
    text = render(compare(records, seeds), seeds)
    assert '*unexplained: add `"B | C" = "..."` under `[table.explanations]` in `load/seeds/T.toml`' in text


def test_recorded_interfaces_results_render_against_the_real_seed():
    text = render(compare(json_lines(LAB / "interfaces" / "results.jsonl.gz"), load_seeds()), load_seeds())
    assert "| RSGI get 1KB | 128 | 143,073 |" in text and "(n = 9 rows" in text


def json_lines(path):
    with open_text(path) as fh:
        return [json.loads(line) for line in fh if line.strip()]


# ---- CLI ----------------------------------------------------------------------------------------------


def test_cli_writes_the_document(tmp_path, capsys):
    out = tmp_path / "f.md"
    assert main(["fidelity", str(LAB / "interfaces"), "--out", str(out)]) == 0
    assert out.read_text().startswith("# Load fidelity") and capsys.readouterr().out.strip() == str(out)


def test_cli_writes_the_lab_document_by_default():
    from gatecheck.load.__main__ import build_parser

    assert build_parser().parse_args(["fidelity", "results/interfaces"]).out == Path("benchmarks/load/fidelity.md")


def test_cli_missing_directory_is_one_line(tmp_path, capsys):
    assert main(["fidelity", str(tmp_path / "nope"), "--out", str(tmp_path / "f.md")]) == 1
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and err.startswith("error: ") and "nope: no such results file or directory" in err


def test_cli_results_of_no_seeded_profile_is_one_line(tmp_path, capsys):
    assert main(["fidelity", str(DATA / "sample-smoke.jsonl"), "--out", str(tmp_path / "f.md")]) == 1
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and "no runs of a profile the seeds cover (found: smoke;" in err
    assert not (tmp_path / "f.md").exists()


def test_every_reproduced_seed_row_has_its_profile_case_at_the_seed_concurrency():
    """The profiles are aligned with the seed: each seed row names a case of its profile and group, and the case
    runs the seed's concurrency (among others where the profile picks the best per row)."""
    from gatecheck.load.plan.profile import load_profile

    for doc in load_seeds():
        for table in doc.tables:
            cases = {(c.group, c.label): c for c in load_profile(table.profile).cases}
            for row in table.rows:
                if row.reason:
                    continue
                case = cases.get((table.group, row.case_label))
                assert case is not None, f"{doc.name}: {table.title}: no case {row.case_label!r}"
                assert row.concurrency in case.concurrency, (
                    f"{row.case_label}: c{row.concurrency} not in {case.concurrency}"
                )


def test_a_python_column_table_inverts_only_pairs_of_one_version_or_one_row(tmp_path):
    path = tmp_path / "V.toml"
    path.write_text(
        SEED.split('[[table]]\nprofile = "fakepy"')[0]
        + """[[table]]
profile = "fakepy"
title = "Fake versions"
env = "python"
rows = [
  { python = "3.10", label = "A", concurrency = 128, total = 10, rps = 300, avg_ms = 1, max_ms = 2 },
  { python = "3.10", label = "B", concurrency = 128, total = 10, rps = 100, avg_ms = 1, max_ms = 2 },
  { python = "3.11", label = "A", concurrency = 128, total = 10, rps = 400, avg_ms = 1, max_ms = 2 },
  { python = "3.11", label = "B", concurrency = 128, total = 10, rps = 200, avg_ms = 1, max_ms = 2 },
]
"""
    )
    # ours: each version keeps A above B and 3.11 above 3.10 per row; only 3.10 A against 3.11 B (a pair that
    # differs in version and row) comes out the other way round, and it is not an inversion
    records = [
        run("fakepy", "A", 300, python="3.10.13"),
        run("fakepy", "B", 100, python="3.10.13"),
        run("fakepy", "A", 500, python="3.11.7"),
        run("fakepy", "B", 350, python="3.11.7"),
    ]
    (fakepy,) = compare(records, [load_seed_file(path)])
    assert fakepy.inversions == [] and fakepy.rho < 1.0
    assert fakepy.rho_by_env == {"3.10": pytest.approx(1.0), "3.11": pytest.approx(1.0)}
    assert "Spearman's rho over each Python version's rows: 3.10 1.000, 3.11 1.000." in render([fakepy])


def test_the_websocket_seed_table_counts_messages_and_needs_no_latencies(tmp_path):
    vs = next(d for d in load_seeds() if d.name == "vs")
    ws = next(t for t in vs.tables if t.title == "Websockets")
    assert ws.metric == "msg/s" and len(ws.rows) == 14  # Hypercorn at 32 clients is N/A in the seed
    first = ws.rows[0]
    assert (first.label, first.concurrency, first.rps, first.send, first.recv) == (
        "Granian Rsgi (8 clients)",
        8,
        315098,
        1246391,
        280087,
    )
    bad = tmp_path / "x.toml"
    bad.write_text(
        'source = "s"\n[[table]]\nprofile = "p"\ntitle = "T"\nmetric = "msg/s"\n'
        'rows = [ { label = "a", concurrency = 8 } ]\n'
    )
    with pytest.raises(SeedError, match=r"row 'a': missing \['rps'\]"):
        load_seed_file(bad)
    bad.write_text('source = "s"\n[[table]]\nprofile = "p"\ntitle = "T"\nmetric = "qps"\nrows = []\nreason = "r"\n')
    with pytest.raises(SeedError, match="metric must be one of"):
        load_seed_file(bad)


def test_two_tables_may_come_from_two_machines_but_one_table_from_one(tmp_path, seeds):
    """Each table ranks its own rows: a table measured on another VM is compared on its own; rows of one table
    from two machines are refused (one line), and each table says when its runs were measured."""
    from gatecheck.load.records.results import ResultsError, append_records
    from gatecheck.load.report.fidelity_md import write_fidelity

    def on(kernel, started, records):
        return [{**r, "environment": {**r["environment"], "kernel": kernel}, "started_at": started} for r in records]

    first, second = tmp_path / "a", tmp_path / "b"
    append_records(
        first / "results.jsonl",
        on("6.18-v782", "2026-11-27T10:28:54+00:00", [run("fake", "A", 100), run("fake", "B", 120)]),
    )
    append_records(
        second / "results.jsonl",
        on("6.18-v657", "2026-11-28T16:22:01+00:00", [run("fakepy", "A", 50, python="3.10.13")]),
    )
    text = write_fidelity([first, second], tmp_path / "f.md", seeds=seeds).read_text()
    assert "Ours: measured 2026-11-27 10:28-10:28 UTC; AMD EPYC" in text
    assert "Ours: measured 2026-11-28 16:22-16:22 UTC; AMD EPYC" in text
    append_records(second / "results.jsonl", on("6.18-v657", "2026-11-28T16:23:01+00:00", [run("fake", "C", 60)]))
    with pytest.raises(ResultsError, match="incompatible results: environment 'kernel'"):
        write_fidelity([first, second], tmp_path / "f.md", seeds=seeds)


def test_a_pattern_explains_a_class_of_pairs_and_an_exact_key_wins(tmp_path):
    path = tmp_path / "x.toml"
    path.write_text(
        'source = "s"\n[[table]]\nprofile = "p"\ntitle = "T"\nrows = [\n'
        '  { label = "Granian A", concurrency = 8, total = 1, rps = 3, avg_ms = 1, max_ms = 1 },\n'
        '  { label = "Granian B", concurrency = 8, total = 1, rps = 2, avg_ms = 1, max_ms = 1 },\n'
        '  { label = "Other", concurrency = 8, total = 1, rps = 1, avg_ms = 1, max_ms = 1 },\n]\n'
        '[table.explanations]\n"Granian A | Other" = "exact"\n"Granian* | Other" = "class"\n'
        '"Granian* | Granian*" = "within"\n'
    )
    table = load_seed_file(path).tables[0]
    assert table.explanation("Other", "Granian A") == "exact"
    assert table.explanation("Granian B", "Other") == "class"
    assert table.explanation("Granian B", "Granian A") == "within"
    assert table.explanation("Other", "Other") == ""
    path.write_text(path.read_text().replace('"Granian* | Granian*"', '"Uvicorn* | Granian*"'))
    with pytest.raises(SeedError, match=r"no row 'Uvicorn\*'"):
        load_seed_file(path)
