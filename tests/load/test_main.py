"""``python -m gatecheck.load``: subcommands in-process, bad values rejected at parse time."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

import gatecheck.load.__main__ as cli

DATA = Path(__file__).parent / "data"


def test_list_profiles_names_every_profile(capsys):
    assert cli.main(["list-profiles"]) == 0
    out = capsys.readouterr().out
    for name in ("interfaces", "vs", "concurrency", "json", "smoke"):
        assert f"\n{name} " in "\n" + out


def test_no_command_prints_usage_and_fails(capsys):
    assert cli.main([]) == 1
    assert "usage:" in capsys.readouterr().err


@pytest.mark.parametrize(
    "argv, message",
    [
        (["run", "--profile", "nope"], "no profile 'nope'"),
        (["run", "--profile", "smoke", "--quick", "2"], "expected a factor in (0, 1], got '2'"),
        (["run", "--profile", "smoke", "--quick", "x"], "expected a positive number, got 'x'"),
        (["run", "--profile", "smoke", "--repeat", "0"], "expected a positive integer, got '0'"),
        (["run", "--profile", "smoke", "--server-cpus", "1-0"], "invalid CPU list: '1-0'"),
        (["run", "--profile", "smoke", "-c", "64,x"], "invalid concurrency list: '64,x'"),
        (["run", "granian:nope", "--profile", "smoke"], "unknown interface 'nope'"),
        (["run", "granian"], "the following arguments are required: --profile"),
    ],
)
def test_bad_values_are_rejected_at_parse_time_quoting_them(capsys, argv, message):
    with pytest.raises(SystemExit) as exc:
        cli.main(argv)
    assert exc.value.code == 2
    assert message in capsys.readouterr().err


def test_every_option_has_help():
    parser = cli.build_parser()
    subparsers = next(a for a in parser._actions if a.dest == "command").choices
    for name, sub in subparsers.items():
        for action in sub._actions:
            if action.dest != "help":
                assert action.help, f"{name} {action.option_strings or action.dest} has no help"


def test_dry_run_shows_runs_and_skips_without_starting_anything(capsys):
    assert cli.main(["run", "granian", "--profile", "concurrency", "--dry-run"]) == 0
    out = capsys.readouterr().out
    assert (
        "granian:rsgi:h1?loop=uvloop&runtime-blocking-threads=1&workers=2&ws=off" in out
        and "skip (needs 4 cores" in out
    )


def test_a_full_target_selects_its_interface_and_adds_its_options(capsys):
    assert cli.main(["run", "granian:wsgi?blocking-threads=2", "--profile", "interfaces", "--dry-run"]) == 0
    lines = [l for l in capsys.readouterr().out.splitlines() if l.strip()]
    assert len(lines) == 3 and all("granian:wsgi" in l and "blocking-threads=2" in l for l in lines)


def test_only_one_of_the_pinning_options_is_an_error(capsys):
    assert cli.main(["run", "granian", "--profile", "smoke", "--server-cpus", "0"]) == 2
    assert "give both --server-cpus and --oha-cpus" in capsys.readouterr().err


def test_report_renders_a_results_file(tmp_path, capsys):
    shutil.copy(DATA / "sample-smoke.jsonl", tmp_path / "results.jsonl")
    assert cli.main(["report", str(tmp_path), "--vs", "--print"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("# gatecheck load: Smoke") and "## Side by side" in out


def test_report_of_an_unreadable_file_is_a_clear_error(tmp_path, capsys):
    bad = tmp_path / "r.jsonl"
    bad.write_text('{"schema_version": 7, "kind": "run"}\n')
    assert cli.main(["report", str(bad)]) == 1
    assert "record format version 7 not supported" in capsys.readouterr().err


def test_gate_hands_its_options_to_the_gate_command_line(monkeypatch):
    from gatecheck.load.gate import cli as gate_cli

    seen = {}
    monkeypatch.setattr(gate_cli, "main_from_args", lambda args: seen.update(base=args.base, pairs=args.pairs) or 0)
    assert cli.main(["gate", "--base", "granian==2.8.6", "--head", "granian==2.8.7", "--pairs", "12"]) == 0
    assert seen == {"base": "granian==2.8.6", "pairs": 12}


def test_gate_options_are_only_parsed_for_the_gate(capsys):
    with pytest.raises(SystemExit):
        cli.main(["gate", "--pairs", "3", "--base", "a", "--head", "b"])
    assert "--pairs must be a whole number >= 8" in capsys.readouterr().err
