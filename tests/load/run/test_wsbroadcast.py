"""The WebSocket broadcast load (the seed's benchmarks/ws method): its arithmetic, its record, and runs against
real Granian servers, including routes that must not pass for a broadcast."""

from __future__ import annotations

import contextlib
import threading
import time
from dataclasses import replace

import pytest

from gatecheck.load.plan.profile import ProfileError, load_profile
from gatecheck.load.plan.routes import route as lookup_route
from gatecheck.load.run.options import RunOptions, messages_for
from gatecheck.load.run.runner import _costs
from gatecheck.load.run.wsbroadcast import (
    BroadcastError,
    BroadcastRun,
    broadcast,
    check_broadcast,
    payloads,
    throughputs,
)
from gatecheck.servers import start_server


def test_the_throughputs_are_the_seeds_formulas_summed_over_the_clients():
    # benchmarks/ws/benchmark.py build_results: send M/t_send, receive M*N/t_recv, "sum" M*(N+1)/max(t_send, t_recv)
    per_client = [{"send_s": 1.0, "recv_s": 2.0, "total_s": 2.5}, {"send_s": 0.5, "recv_s": 1.0, "total_s": 1.0}]
    th = throughputs(per_client, clients=2, messages=10)
    assert th == {
        "send": 10 / 1.0 + 10 / 0.5,
        "recv": 20 / 2.0 + 20 / 1.0,
        "combined": 30 / 2.0 + 30 / 1.0,
        "all": 30 / 2.5 + 30 / 1.0,
    }


def test_a_timing_of_zero_is_an_error_not_an_infinite_throughput():
    with pytest.raises(BroadcastError, match="timing"):
        throughputs([{"send_s": 0.0, "recv_s": 1.0, "total_s": 1.0}], clients=1, messages=5)


def test_the_messages_are_the_seeds():
    assert payloads(3) == [b"msg0", b"msg1", b"msg2"]
    assert payloads(20000)[:2] == [b"msg00000", b"msg00001"] and len(payloads(20000)) == 20000


def test_the_record_counts_messages_and_names_the_client_not_oha():
    result = {
        "throughput": {"send": 30.0, "recv": 30.0, "combined": 45.0, "all": 42.0},
        "extensions": [],
        "websockets": "17.4",
        "per_client": [{"send_s": 1.0, "recv_s": 2.0, "total_s": 2.5, "sent": 10, "received": 20}],
    }
    run = BroadcastRun(
        route="ws_broadcast",
        path="/ws_broadcast",
        clients=2,
        messages=10,
        result=result,
        wall=4.0,
        server_peak_rss=1,
        server_cpu_seconds=2.0,
        server_processes=1,
        client_cpu_seconds=3.8,
        client_cpus=(1,),
        server_cpus=(0,),
    )
    rec = run.to_dict()
    assert rec["rps"] == 45.0 and rec["concurrency"] == 2 and rec["total"] == rec["ok"] == 40
    assert rec["ws"]["send"] == 30.0 and rec["server"]["util"] == 0.5 and "oha" not in rec
    assert rec["client"]["util"] == 0.95 and rec["generator_bound"] and rec["flags"] == ["generator-bound"]


def test_a_websocket_case_needs_its_message_count_and_an_http_case_refuses_one(tmp_path):
    bad = tmp_path / "bad.toml"
    bad.write_text(
        'title = "t"\n[[case]]\nlabel = "x"\ntarget = "granian:rsgi"\nroute = "ws_broadcast"\nconcurrency = [8]\n'
    )
    with pytest.raises(ProfileError, match="give messages"):
        load_profile(bad)
    bad.write_text(
        'title = "t"\n[[case]]\nlabel = "x"\ntarget = "granian:rsgi"\nroute = "b1k"\nconcurrency = [8]\nmessages = 5\n'
    )
    with pytest.raises(ProfileError, match="messages is for WebSocket routes"):
        load_profile(bad)


def test_the_vs_profile_has_the_seeds_websocket_rows_with_its_message_counts():
    cases = [c for c in load_profile("vs").cases if c.group == "Websockets"]
    assert {(c.concurrency, c.messages) for c in cases} == {((8,), 20000), ((16,), 10000), ((32,), 5000)}
    assert len(cases) == 15
    quick = RunOptions(profile=load_profile("vs"), quick=0.2)
    assert messages_for(cases[0], quick) == 4000 and messages_for(cases[0], RunOptions(profile=quick.profile)) == 20000


def test_the_time_left_counts_a_broadcasts_messages():
    profile = load_profile("vs")
    case = next(c for c in profile.cases if c.group == "Websockets" and c.concurrency == (8,))
    from gatecheck.load.plan.profile import PlannedCase
    from gatecheck.servers import Target

    item = PlannedCase(case, Target.parse(case.target))
    opts = RunOptions(profile=profile)
    costs = _costs([(None, [item])], opts, opts.effective_method())
    assert len(costs) == 1 and costs[0] > 8 * 8 * 20000 / 200_000  # more than the 1.28 M messages at 200k/s


@pytest.fixture(params=["rsgi", "asgi"])
def granian_ws(request, tmp_path):
    interface = request.param
    with start_server(
        f"granian:{interface}", app=f"gatecheck.fixtures.apps.{interface}:app", log_dir=tmp_path / "logs"
    ) as srv:
        yield srv


def test_every_client_gets_every_message_from_a_real_granian(granian_ws):
    spec = lookup_route("ws_broadcast")
    check_broadcast(granian_ws, spec)
    run = broadcast(granian_ws, spec, 3, 200, settle=0.0)
    rec = run.to_dict()
    assert rec["total"] == 3 * 3 * 200 and rec["concurrency"] == 3 and rec["messages_per_client"] == 200
    assert [c["received"] for c in rec["ws"]["per_client"]] == [600, 600, 600]
    assert rec["rps"] == rec["ws"]["combined"] > rec["ws"]["recv"] > 0
    assert rec["server"]["cpu_seconds"] > 0 and rec["client"]["cpu_seconds"] > 0
    assert 0 < rec["elapsed"] < rec["wall"] and 0 < rec["client"]["phase_cpu_seconds"] < rec["client"]["cpu_seconds"]


def test_a_route_that_only_echoes_is_no_broadcast(tmp_path):
    """Each client gets its own messages back but not the other's: the run must fail, not count them."""
    echo = replace(lookup_route("ws_broadcast"), path="/ws_echo")
    with start_server("granian:rsgi", app="gatecheck.fixtures.apps.rsgi:app", log_dir=tmp_path) as srv:
        started = time.monotonic()
        with pytest.raises(BroadcastError, match="did not finish within 3 s"):
            check_broadcast(srv, echo, timeout=3.0)
        assert time.monotonic() - started < 15
        with pytest.raises(BroadcastError, match="did not finish within 3 s"):
            broadcast(srv, echo, 2, 20, settle=0.0, timeout=3.0)


@contextlib.contextmanager
def _stranger(srv, payload: bytes):
    """A stranger on /ws_broadcast sending ``payload`` every 0.1 s, from before the client connects until the run
    ends: the route delivers it to every connection, the client's included."""
    from websockets.sync.client import connect

    url = "ws://" + srv.url.split("://", 1)[1].rstrip("/") + "/ws_broadcast"
    done = threading.Event()
    with connect(url, open_timeout=10, close_timeout=2, ping_interval=None) as stranger:

        def intrude() -> None:
            while not done.wait(0.1):
                stranger.send(payload)
                try:
                    while True:
                        stranger.recv(timeout=0)  # drain its own copies
                except TimeoutError:
                    pass

        thread = threading.Thread(target=intrude, daemon=True)
        thread.start()
        try:
            yield
        finally:
            done.set()
            thread.join(5)


def test_a_message_that_was_never_sent_fails_the_run(tmp_path):
    with start_server("granian:asgi", app="gatecheck.fixtures.apps.asgi:app", log_dir=tmp_path) as srv:
        with _stranger(srv, b"intruder"):
            with pytest.raises(BroadcastError, match=r"b'intruder', not one of the messages sent"):
                broadcast(srv, lookup_route("ws_broadcast"), 1, 5, settle=1.0, timeout=20.0)


def test_a_duplicate_in_place_of_a_lost_message_fails_the_run(tmp_path):
    """The stranger sends b"msg0", one of the client's own payloads: the client gets its count of messages, but
    b"msg0" more than once and its last ones not at all."""
    assert payloads(5)[0] == b"msg0"
    with start_server("granian:rsgi", app="gatecheck.fixtures.apps.rsgi:app", log_dir=tmp_path) as srv:
        with _stranger(srv, b"msg0"):
            wrong = r"did not arrive exactly once from each client \(1 times in all\): b'msg0' [2-9]\d* times"
            with pytest.raises(BroadcastError, match=wrong):
                broadcast(srv, lookup_route("ws_broadcast"), 1, 5, settle=1.0, timeout=20.0)


def test_a_server_without_websockets_fails_the_check_with_what_to_do(tmp_path):
    with start_server("granian:rsgi?ws=off", app="gatecheck.fixtures.apps.rsgi:app", log_dir=tmp_path) as srv:
        with pytest.raises(BroadcastError, match=r"ws=on"):
            check_broadcast(srv, lookup_route("ws_broadcast"))
