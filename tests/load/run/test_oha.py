"""oha's JSON summary, parsed from real oha 1.16.0 output recorded in tests/load/data/."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from gatecheck.load.run.oha import DEADLINE_ERROR, OhaError, build_argv, error_kind, parse_json

DATA = Path(__file__).parent.parent / "data"


def recorded(name: str) -> str:
    return (DATA / f"oha-1.16.0-{name}.json").read_text()


def test_rps_counts_2xx_responses_over_elapsed_time():
    """RPS is 2xx responses / summary.total, not oha's requestsPerSec."""
    result = parse_json(recorded("success"))
    raw = json.loads(recorded("success"))
    assert result.ok == raw["statusCodeDistribution"]["200"]
    assert result.rps == pytest.approx(result.ok / raw["summary"]["total"])
    assert result.clean and not result.all_failed
    assert result.size_per_request == 1024


def test_latencies_are_seconds_from_summary_and_percentiles():
    result = parse_json(recorded("success"))
    raw = json.loads(recorded("success"))
    assert result.latency_avg == raw["summary"]["average"]
    assert result.latency_max == raw["summary"]["slowest"]
    assert result.latency_p50 == raw["latencyPercentiles"]["p50"]
    assert result.latency_p99 == raw["latencyPercentiles"]["p99"]


def test_non_2xx_responses_are_kept_apart_and_give_zero_rps():
    """20 HTTP 500 answers: no 2xx, so RPS 0 and all_failed, with the 500s counted."""
    result = parse_json(recorded("non2xx"))
    assert result.ok == 0
    assert result.non_2xx == {"500": 20}
    assert result.rps == 0.0
    assert result.all_failed


def test_connection_refused_is_all_failed_although_oha_reports_thousands_of_rps():
    """oha exits 0 and prints requestsPerSec > 0 when every connection was refused."""
    raw = json.loads(recorded("refused"))
    assert raw["summary"]["requestsPerSec"] > 1000
    result = parse_json(recorded("refused"))
    assert result.all_failed
    assert result.rps == 0.0
    assert result.latency_avg is None and result.latency_p99 is None  # serde writes NaN as null
    assert error_kind(next(iter(result.errors))) == "refused"
    assert DEADLINE_ERROR not in result.errors  # deadline aborts are oha's own cut, kept apart
    assert result.aborted == raw["errorDistribution"][DEADLINE_ERROR]


def test_a_server_that_dies_mid_run_shows_2xx_and_errors_separately():
    result = parse_json(recorded("server-died"))
    assert result.ok > 0 and result.error_count > 0
    assert not result.clean and not result.all_failed
    assert result.rps == pytest.approx(result.ok / result.elapsed)
    assert {error_kind(e) for e in result.errors} == {"refused", "closed"}
    assert result.total == result.ok + result.error_count


def test_http2_deadline_aborts_are_not_errors():
    result = parse_json(recorded("h2"))
    assert result.errors == {}
    assert result.aborted == 30
    assert result.clean


def test_echo_size_per_request_is_the_echoed_body():
    assert parse_json(recorded("echo")).size_per_request == 1024


@pytest.mark.parametrize("text", ["", "not json", "{}", '{"summary": {}}', "[1, 2]"])
def test_unparseable_output_is_a_harness_error_quoting_the_output(text):
    with pytest.raises(OhaError, match="could not parse oha JSON"):
        parse_json(text)


def test_argv_for_a_duration_run_waits_for_in_flight_requests():
    argv = build_argv("oha", "http://127.0.0.1:1/b1k", concurrency=128, duration=2.5, worker_threads=1)
    assert argv[:4] == ["oha", "--no-tui", "--output-format", "json"]
    assert argv[argv.index("-z") + 1] == "2500ms"  # humantime takes no fractions
    assert "-w" in argv and "-n" not in argv
    assert argv[argv.index("-c") + 1] == "128"
    assert argv[argv.index("--worker-threads") + 1] == "1"
    assert argv[argv.index("-t") + 1] == "10000ms"
    assert argv[-1] == "http://127.0.0.1:1/b1k"
    assert "--http2" not in argv and "-m" not in argv


def test_argv_without_keepalive_opens_a_connection_per_request_over_http1_only():
    h1 = build_argv("oha", "http://h/b1k", concurrency=1, requests=3, keepalive=False)
    h2 = build_argv("oha", "http://h/b1k", concurrency=1, requests=3, keepalive=False, http2=True)
    assert "--disable-keepalive" in h1 and "--disable-keepalive" not in h2  # oha: not supported for HTTP/2
    assert "--disable-keepalive" not in build_argv("oha", "http://h/b1k", concurrency=1, requests=3)


def test_argv_for_http2_echo_with_a_fixed_count():
    argv = build_argv(
        "oha",
        "http://h/echo",
        concurrency=8,
        requests=1000,
        http2=True,
        h2_parallel=4,
        method="POST",
        body_file="/tmp/b",
        worker_threads=2,
    )
    assert argv[argv.index("-n") + 1] == "1000" and "-z" not in argv and "-w" not in argv
    assert argv[argv.index("-p") + 1] == "4" and "--http2" in argv
    assert argv[argv.index("-m") + 1] == "POST" and argv[argv.index("-D") + 1] == "/tmp/b"


@pytest.mark.parametrize("kwargs", [{}, {"duration": 1, "requests": 1}, {"duration": 1, "concurrency": 0}])
def test_argv_rejects_impossible_runs(kwargs):
    kwargs = {"concurrency": 1, **kwargs}
    with pytest.raises(ValueError):
        build_argv("oha", "http://h/", **kwargs)


def _fake_oha(path: Path) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("#!/bin/sh\necho 'oha 1.16.0'\n")
    path.chmod(0o755)
    return path


def test_an_explicit_oha_path_wins_and_a_bad_one_is_refused(tmp_path, monkeypatch):
    from gatecheck.load.run.oha import OhaNotFound, find_oha

    fake = _fake_oha(tmp_path / "my-oha")
    monkeypatch.setenv("GATECHECK_OHA", str(fake))
    assert find_oha(build=False) == fake
    monkeypatch.setenv("GATECHECK_OHA", str(tmp_path / "missing"))
    with pytest.raises(OhaNotFound, match="GATECHECK_OHA="):
        find_oha(build=False)


def test_the_pinned_build_in_the_cache_is_found_and_its_version_read(tmp_path, monkeypatch):
    from gatecheck.load.run.oha import OHA_VERSION, find_oha, oha_version

    monkeypatch.delenv("GATECHECK_OHA", raising=False)
    monkeypatch.setenv("GATECHECK_CACHE", str(tmp_path))
    cached = _fake_oha(tmp_path / f"oha-{OHA_VERSION}" / "bin" / "oha")
    assert find_oha(build=False) == cached
    assert oha_version(cached) == "1.16.0"


def test_without_oha_and_without_cargo_the_error_says_what_to_install(tmp_path, monkeypatch):
    import gatecheck.load.run.oha as oha_mod

    monkeypatch.delenv("GATECHECK_OHA", raising=False)
    monkeypatch.setenv("GATECHECK_CACHE", str(tmp_path / "cache"))
    monkeypatch.setattr(oha_mod.shutil, "which", lambda name: None)
    monkeypatch.setattr(oha_mod.Path, "home", staticmethod(lambda: tmp_path))
    with pytest.raises(oha_mod.OhaNotFound, match="oha not found on PATH nor at"):
        oha_mod.find_oha(build=False)
    with pytest.raises(oha_mod.OhaNotFound, match="cargo .* is missing"):
        oha_mod.find_oha(build=True, log=lambda line: None)
