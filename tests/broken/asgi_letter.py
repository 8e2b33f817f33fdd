"""The letter of ASGI (issue 11, dimension 6): what the texts say a server does where uvicorn does otherwise
(the control of a via), and the contradiction made explicit (the break an INFO check must note)."""

from __future__ import annotations

import asyncio

__all__ = ["after_completion", "ignored", "refused", "disconnect_only_once", "WITHHELD"]


def after_completion(then):
    """A send that hands every message to ``send`` until the response completed, then calls ``then(message)``."""

    def make(send):
        done = []

        async def sender(message):
            if done:
                return await then(message)
            if message.get("type") == "http.response.body" and not message.get("more_body", False):
                done.append(True)
            return await send(message)

        return sender

    return make


async def ignored(message):
    return None


async def refused(message):
    raise RuntimeError(f"{message.get('type')} after the response completed")


#: seconds a receive() after the first http.disconnect waits before it answers (bounded: rule 2)
WITHHELD = 8.0


def disconnect_only_once(app):
    """receive() returns http.disconnect once; every later call on that request waits WITHHELD s before it
    answers (as daphne 4.2 and hypercorn 0.18 do, without the bound)."""

    async def broken(scope, receive, send):
        if scope["type"] != "http":
            return await app(scope, receive, send)
        told = []

        async def receive_once():
            if told:
                await asyncio.sleep(WITHHELD)
            message = await receive()
            if message["type"] == "http.disconnect":
                told.append(True)
            return message

        await app(scope, receive_once, send)

    return broken
