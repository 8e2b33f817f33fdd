"""The WebSocket broadcast client program: one run of the seed's WebSocket method, in its own process.

    python -m gatecheck.load.run.wsclient ws://127.0.0.1:PORT/ws_broadcast --clients 8 --messages 4000

Rules of this module:
- It is the program ``load.run.wsbroadcast`` starts, pinned to the load generator's CPUs; it prints one JSON
  line (the result, or ``{"error": ...}``) and exits 0 only for a complete, checked run.
- Every message received is checked as it arrives, and each of the M messages must reach each client N
  times (``load.run.wsbroadcast``'s rules); the throughputs are that module's ``throughputs``.
- No package of ``load`` imports this module, so ``python -m`` runs it once, as ``__main__``.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import time
from typing import Any, Sequence

from ..plan import SETTLE
from .wsbroadcast import BroadcastError, payloads, throughputs

__all__ = ["main"]


def _connect(url: str):
    """websockets' client with its defaults (as the seed's), except keepalive pings: off. The seed's runs took a
    few seconds, under the first ping at 20 s; a run here can take longer, and a server that answers a ping only
    when its app has read the messages queued before it (Granian: tungstenite handles a ping in stream order)
    then misses the 20 s pong deadline while it is still broadcasting (measured: a first run of the ``vs``
    WebSocket rows failed with 1011 "keepalive ping timeout" at 16 and 32 clients; the runs of record are in
    benchmarks/load/vs_ws). The run's own deadline and the checked message count stand instead."""
    from websockets.asyncio.client import connect  # websockets >= 13 (the project's floor)

    return connect(url, open_timeout=10, close_timeout=5, ping_interval=None)


def _extensions(ws: Any) -> str:
    return str(ws.response.headers.get("Sec-WebSocket-Extensions", "") or "")


async def _client(
    url: str, clients: int, sent: Sequence[bytes], opened: list, all_open: asyncio.Event, settle: float, phase: dict
) -> dict:
    expected = len(sent) * clients
    counts = dict.fromkeys(sent, 0)  # every client sends every payload, so each must arrive ``clients`` times
    async with _connect(url) as ws:
        opened.append(_extensions(ws))
        if len(opened) == clients:
            all_open.set()
        await all_open.wait()
        await asyncio.sleep(settle)

        async def receive() -> float:
            for count in range(expected):
                message = await ws.recv()
                try:
                    counts[message] += 1  # a text frame (str) is no key either
                except KeyError:
                    raise BroadcastError(
                        f"message {count + 1} of {expected} is {message[:40]!r}, not one of the "
                        f"messages sent (binary {sent[0]!r}...)"
                    ) from None
            return time.monotonic()

        async def send() -> float:
            for message in sent:
                await ws.send(message)
            return time.monotonic()

        began = time.monotonic()
        phase.setdefault("began", began)
        phase.setdefault("cpu_began", time.process_time())
        # both run to their end, so a wrong message is reported as such even when the server's close made a
        # send fail first
        recv_end, send_end = await asyncio.gather(receive(), send(), return_exceptions=True)
        ended = time.monotonic()
        phase["ended"], phase["cpu_ended"] = ended, time.process_time()  # the last client to end writes last
        for outcome in (recv_end, send_end):
            if isinstance(outcome, BaseException):
                raise outcome
    # the count was exact, so a message that came twice took the place of one that never came
    wrong = [(message, n) for message, n in counts.items() if n != clients]
    if wrong:
        shown = ", ".join(f"{message!r} {n} times" for message, n in wrong[:3])
        raise BroadcastError(
            f"{len(wrong)} of the {len(sent)} messages did not arrive exactly once from each "
            f"client ({clients} times in all): {shown}"
        )
    return {
        "send_s": send_end - began,
        "recv_s": recv_end - began,
        "total_s": ended - began,
        "sent": len(sent),
        "received": expected,
    }


async def _run(url: str, clients: int, messages: int, settle: float) -> dict:
    sent = payloads(messages)
    opened: list = []
    all_open = asyncio.Event()
    phase: dict = {}
    tasks = [
        asyncio.ensure_future(_client(url, clients, sent, opened, all_open, settle, phase)) for _ in range(clients)
    ]
    try:
        per_client = await asyncio.gather(*tasks)
    finally:
        for task in tasks:
            task.cancel()
    # the measured phase, from the first client's start to the last one's end, and this process's CPU over it
    measured = {"wall_s": phase["ended"] - phase["began"], "cpu_s": phase["cpu_ended"] - phase["cpu_began"]}
    return {
        "clients": clients,
        "messages": messages,
        "per_client": per_client,
        "phase": measured,
        "throughput": throughputs(per_client, clients, messages),
        "extensions": sorted(set(opened)),
    }


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m gatecheck.load.run.wsclient",
        description="one WebSocket broadcast run against a server's /ws_broadcast route; prints a JSON result",
    )
    parser.add_argument("url", help="ws://127.0.0.1:PORT/ws_broadcast")
    parser.add_argument("--clients", type=int, required=True, help="connections, each sending and receiving")
    parser.add_argument("--messages", type=int, required=True, help="messages each client sends")
    parser.add_argument("--settle", type=float, default=SETTLE, help="seconds to wait once all are connected")
    parser.add_argument("--timeout", type=float, default=300.0, help="seconds before the run is given up")
    args = parser.parse_args(argv)
    if args.clients < 1 or args.messages < 1:
        parser.error("--clients and --messages must be at least 1")
    import websockets

    try:
        result = asyncio.run(asyncio.wait_for(_run(args.url, args.clients, args.messages, args.settle), args.timeout))
    except asyncio.TimeoutError:
        error = f"the run did not finish within {args.timeout:g} s"
    except (BroadcastError, OSError) as exc:
        error = str(exc)
    except Exception as exc:  # a closed connection, a refused handshake: websockets' own exceptions
        error = f"{type(exc).__name__}: {exc}"
    else:
        result["websockets"] = websockets.__version__
        print(json.dumps(result))
        return 0
    print(json.dumps({"error": error}))
    return 1


if __name__ == "__main__":  # pragma: no cover - the client process
    sys.exit(main())
