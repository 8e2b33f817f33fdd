"""No WebSocket or HTTP/2 check passes without evidence, and their clients' reads stop at a cap.

Each run is a pytest subprocess checking the hostile server (tests/hostile/server.py) as a
``--server-cmd`` target declaring WebSocket and h2c (``--http auto``: the readiness probe is HTTP/1.1,
every later request meets the mode, a WebSocket handshake and an HTTP/2 preface alike). The verdicts
come from the results JSON. To stay within about two minutes on two cores, only the first parameter set
of each check runs (the others take the same path through the client), the runs go in parallel (they
mostly wait on a socket), and ``silent``, where each check waits out its own timeout, is split in shards.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from tests.installed import PYTEST, RUN_DIR

ROOT = Path(__file__).resolve().parents[2]

WS_FILES = [
    "gatecheck/conformance/checks/test_websocket.py",
    "gatecheck/conformance/checks/test_websocket_close.py",
    "gatecheck/conformance/checks/test_websocket_asgi.py",
]
H2_FILES = [
    "gatecheck/conformance/checks/test_h2_connection.py",
    "gatecheck/conformance/checks/test_h2_mapping.py",
    "gatecheck/conformance/checks/test_h2_streams.py",
    "gatecheck/conformance/checks/test_h2spec.py",
]
#: the same exchanges through httpx and websockets (h2c and ws here; their HTTP/1.1 check runs there too)
INTEROP_FILES = ["gatecheck/conformance/checks/test_interop.py"]
FAST_MODES = ("garbage", "close", "reset", "bad-header")
SILENT_SHARDS = 12


#: checks that only look at a 101 the ws-* modes answer correctly (they pass there, rightly)
HANDSHAKE_ONLY = (
    "test_valid_handshake_is_answered_with_101_and_upgrade_headers",
    "test_accept_is_base64_sha1_of_the_key_as_sent",
    "test_no_subprotocol_header_when_none_was_chosen",
    "test_no_extension_the_client_did_not_offer",
    "test_permessage_deflate_answer_obeys_the_offer",
    "test_upgrade_tokens_are_case_insensitive_and_listed",
)

#: prints the pytest process's own peak RSS (KiB on Linux) after the run
_PYTEST_WITH_RSS = (
    "import resource, sys, pytest; rc = pytest.main(sys.argv[1:]); "
    "print('MAXRSS', resource.getrusage(resource.RUSAGE_SELF).ru_maxrss, file=sys.stderr); "
    "sys.exit(rc)"
)


def _target_args(mode: str) -> list:
    return [
        "--server-cmd",
        f"{{python}} -m tests.hostile.server --port {{port}} --mode {mode}",
        "--interface",
        "asgi",
        "--http",
        "auto",
        "--features",
        "websockets,h2c,h2c_upgrade",
    ]


def _run(mode: str, selection: list, results: Path, timeout: float = 420) -> tuple:
    """(checks from the results JSON, peak RSS of the pytest process in MiB, output tail)."""
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    # node ids name the target, whose id holds its command line: collected for silent, run for ``mode``
    selection = [s.replace("--mode_20silent_", f"--mode_20{mode}_") for s in selection]
    argv = [
        sys.executable,
        "-c",
        _PYTEST_WITH_RSS,
        "-p",
        "no:cacheprovider",
        "-q",
        "--tb=line",
        *selection,
        *_target_args(mode),
        "--results-json",
        str(results),
    ]
    out = subprocess.run(argv, cwd=RUN_DIR, capture_output=True, text=True, timeout=timeout, env=env)
    rss = re.search(r"MAXRSS (\d+)", out.stderr)
    tail = (out.stdout + out.stderr)[-3000:]
    assert results.exists() and rss, f"no results from the {mode} run:\n{tail}"
    return json.loads(results.read_text())["checks"], int(rss.group(1)) / 1024, tail


def _first_parameter_sets(files: list, tmp_path: Path) -> list:
    """One node id per check function (its first parameter set) in ``files``."""
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    out = subprocess.run(
        [
            *PYTEST,
            "-p",
            "no:cacheprovider",
            "--collect-only",
            "-q",
            *files,
            *_target_args("silent"),
            "--results-json",
            str(tmp_path / "collect.json"),
        ],
        cwd=RUN_DIR,
        capture_output=True,
        text=True,
        timeout=120,
        env=env,
    )
    seen, ids = set(), []
    for line in out.stdout.splitlines():
        if "::" in line and line.startswith("gatecheck/conformance/"):
            function = line.split("[", 1)[0]
            if function not in seen:
                seen.add(function)
                ids.append(line.strip())
    assert ids, out.stdout[-2000:] + out.stderr[-2000:]
    return ids


def _passes(checks: list) -> list:
    return [
        c["check"]
        for c in checks
        if c["outcome"] == "passed"
        and (c["area"].startswith("websocket") or c["area"].startswith("h2") or c["area"] == "interop")
    ]


def test_no_websocket_or_http2_check_passes_against_a_hostile_server(tmp_path):
    """Silent, garbage, a close, a reset or a malformed header after readiness: zero passes; after a valid
    101, a close or garbage: only the checks that look at the 101 alone may pass."""
    checks = _first_parameter_sets(WS_FILES + H2_FILES + INTEROP_FILES, tmp_path)
    ws_checks = [c for c in checks if c.split("::")[0] in WS_FILES[:2] or "::test_websockets_" in c]
    shards = [checks[n::SILENT_SHARDS] for n in range(SILENT_SHARDS)]
    jobs = [("silent", s) for s in shards] + [(m, checks) for m in FAST_MODES]
    jobs += [(m, ws_checks) for m in ("ws-close", "ws-garbage")]
    with ThreadPoolExecutor(len(jobs)) as pool:
        runs = list(pool.map(lambda j: (j[0], *_run(j[0], j[1], tmp_path / f"{j[0]}-{id(j)}.json")), jobs))
    for mode, checks, _rss, tail in runs:
        ran = [c for c in checks if c["outcome"] in ("passed", "failed")]
        assert ran, f"{mode}: no check ran:\n{tail}"
        passed = _passes(checks)
        if mode.startswith("ws-"):
            passed = [p for p in passed if not any(name in p for name in HANDSHAKE_ONLY)]
        assert passed == [], f"{mode}: passed without evidence: {passed}"
        assert None not in [c["outcome"] for c in checks], f"{mode}: a check never finished:\n{tail}"


CAPPED = {
    "ws-endless-frame": (
        "gatecheck/conformance/checks/test_websocket.py::test_binary_message_round_trips_with_minimal_length",
        "0B",
    ),
    "ws-endless-message": (
        "gatecheck/conformance/checks/test_websocket.py::test_text_message_round_trips_as_text",
        "0B",
    ),
    "h2-endless-data": ("gatecheck/conformance/checks/test_h2_mapping.py::test_te_trailers_is_served", ""),
    "h2-endless-headers": ("gatecheck/conformance/checks/test_h2_mapping.py::test_te_trailers_is_served", ""),
}


def test_endless_frames_data_and_header_blocks_stop_at_a_cap(tmp_path):
    """A frame declaring 2^62 bytes, a message that never ends, endless DATA and an endless header block:
    each check fails naming the cap it stopped at, and pytest's memory stays small."""

    def one(mode):
        check, param = CAPPED[mode]
        return mode, *_run(mode, [check, "-k", param] if param else [check], tmp_path / f"{mode}.json", timeout=120)

    with ThreadPoolExecutor(len(CAPPED)) as pool:
        runs = list(pool.map(one, CAPPED))
    for mode, checks, rss_mib, tail in runs:
        assert [c["outcome"] for c in checks] == ["failed"], f"{mode}: {checks}\n{tail}"
        assert "cap" in checks[0]["message"], f"{mode}: the failure does not name a cap: {checks[0]['message']}"
        assert rss_mib < 300, f"{mode}: the pytest process reached {rss_mib:.0f} MiB"
