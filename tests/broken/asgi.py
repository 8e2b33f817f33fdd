"""Deliberately broken ASGI behaviour: the fixture app behind a wrapper that breaks exactly one rule.

Load ``tests.broken.asgi:<name>`` with any ASGI server (``tests.broken.asgi:control`` is the wrapper with
nothing broken). Each entry of ``BREAKS`` plays a server that gets one thing wrong — a scope key, a
request message, a response message it passes on — so the conformance check for that rule must fail
while every other rule still holds.

Rules of this module:

1. One entry, one broken rule; everything the entry does not name passes through untouched (lifespan
   always does, so a broken app still starts).
2. A break must not make a check *hang*: what it withholds it withholds for a bounded time, and a body
   it shortens gets a matching Content-Length.

The wrappers live beside it: the building blocks and scope edits in asgi_blocks.py, the message breaks in
asgi_messages.py, the letter of the text (late messages, repeated disconnects) in asgi_letter.py, the
variants (not breaks) in asgi_variants.py; this module names each and serves it.
"""

from __future__ import annotations

from urllib.parse import unquote_to_bytes

from gatecheck.fixtures.apps.asgi import app as fixture_app

from .asgi_blocks import *  # noqa: F401,F403 - the building blocks and scope edits BREAKS names
from .asgi_letter import *  # noqa: F401,F403
from .asgi_messages import *  # noqa: F401,F403
from .asgi_variants import ABANDONED_WORK, VARIANTS  # noqa: F401 - tests read ABANDONED_WORK here

__all__ = ["BREAKS", "VARIANTS", "ABANDONED_WORK", "control"]

#: name -> wrapper(app) -> broken app; each breaks the one rule its name says
BREAKS = {
    # HTTP connection scope
    "http_version_1": on_scope(lambda s: swap_version(s, "1.1", "1")),
    "http_version_2_as_1_1": on_scope(lambda s: swap_version(s, "2", "1.1")),
    "asgi_version_2": on_scope(asgi_key("version", "2.0")),
    "spec_version_unknown": on_scope(asgi_key("spec_version", "2.9")),
    "scope_bytes_key": on_scope(bytes_key),
    "method_lower": on_scope(set_key("method", str.lower)),
    "scheme_https": on_scope(lambda s: s.update(scheme="https")),
    "scheme_http": on_scope(lambda s: s.update(scheme="http")),
    "path_not_decoded": on_scope(lambda s: s.update(path=bytes(s["raw_path"]).decode("latin-1"))),
    "raw_path_short": on_scope(set_key("raw_path", lambda v: bytes(v)[:-1])),
    "query_string_str": on_scope(set_key("query_string", lambda v: bytes(v).decode("latin-1"))),
    "root_path_bytes": on_scope(lambda s: s.update(root_path=s.get("root_path", "").encode())),
    "header_names_upper": on_scope(edit_headers(upper_names)),
    "header_repeats_merged": on_scope(edit_headers(last_of_each_name)),
    "header_values_reencoded": on_scope(edit_headers(utf8_reencoded)),
    "ws_header_values_reencoded": on_scope(edit_headers(utf8_reencoded), types=("websocket",)),
    "pseudo_header_leaks": on_scope(edit_headers(pseudo_header_leaks)),
    "host_header_last": on_scope(edit_headers(host_moves_last)),
    "client_port_str": on_scope(set_key("client", lambda c: (c[0], str(c[1])))),
    "server_port_off_by_one": on_scope(set_key("server", lambda s: (s[0], s[1] + 1))),
    "extension_not_a_dict": on_scope(add_extension("gatecheck.bogus", True)),
    # extensions
    "debug_extension_advertised": on_scope(add_extension("http.response.debug", {})),
    "tls_extension_on_plain": on_scope(add_extension("tls", {"server_cert": None, "tls_version": 0x0304})),
    "pathsend_short_by_one": on_send(pathsend_short_by_one),
    # lifespan
    "lifespan_asgi_version_2": on_scope(asgi_key("version", "2.0"), types=("lifespan",)),
    "lifespan_state_prefilled": on_scope(state_prefilled, types=("lifespan",)),
    "lifespan_state_not_copied": state_not_copied,
    "state_not_from_lifespan": on_scope(state_fresh),
    "state_shared_per_connection": state_shared_per_connection,
    # forwarded fields believed from anyone and mapped as sent (the real bug: a WebSocket scheme "https")
    "forwarded_verbatim": on_scope(forwarded_verbatim, types=("http", "websocket")),
    # request messages
    "body_loses_a_byte": body_loses_a_byte,
    "more_body_as_int": on_receive(more_body_as_int),
    "body_as_bytearray": on_receive(body_as_bytearray),
    "disconnect_swallowed": on_receive(swallow_disconnect),
    "disconnect_too_early": disconnect_when_body_done,
    # response messages
    "echo_iter_reordered": on_send(reorder_body_chunks, paths=("/echo_iter",)),
    "body_buffered": on_send(buffer_body),
    "file_short_by_one": on_send(response_short_by_one, paths=("/file/",)),
    "response_repeats_merged": on_send(dedup_response_headers),
    "non_list_headers_dropped": on_send(non_list_headers_dropped),
    "body_key_required": on_send(body_key_required),
    "content_length_dropped": on_send(content_length_dropped, paths=("/echo",)),
    "content_encoding_dropped": on_send(content_encoding_dropped),
    "empty_body_ends_response": on_send(empty_body_ends_response),
    "unknown_keys_refused": on_send(unknown_keys_refused),
    "send_never_raises": on_send(send_errors_swallowed),
    "errors_become_200": errors_become_200,
    "unfinished_response_completed": finish_unfinished_responses,
    "errors_after_start_complete_the_response": lambda app: finish_unfinished_responses(app, on_error=True),
    # resources
    "leaks_a_descriptor_per_request": holds_per_request(descriptor),
    "leaks_a_mebibyte_per_request": holds_per_request(mebibyte),
    # WebSocket
    "ws_scheme_http": on_scope(ws_scheme_http, types=("websocket",)),
    "ws_subprotocols_reversed": on_scope(subprotocols_reversed, types=("websocket",)),
    "ws_text_as_bytes": on_send(ws_text_as_bytes, types=("websocket",)),
    "ws_close_code_dropped": on_send(ws_close_code_dropped, types=("websocket",)),
    "ws_empty_message_dropped": on_send(ws_empty_message_dropped, types=("websocket",)),
    "ws_close_reason_dropped": on_send(ws_close_reason_dropped, types=("websocket",)),
    "ws_text_received_as_bytes": on_receive(ws_text_received_as_bytes, types=("websocket",)),
    "ws_query_string_decoded": on_scope(
        lambda s: s.update(query_string=unquote_to_bytes(bytes(s["query_string"]))), types=("websocket",)
    ),
    "ws_disconnect_code_1000": on_receive(disconnect_code_1000, types=("websocket",)),
}


BREAKS.update(
    {
        # the letter of ASGI ("any further messages on the channel will be ignored"), as a control for uvicorn,
        # which raises; and the raise made explicit, as the break
        "late_messages_ignored": on_send(after_completion(ignored)),
        "late_messages_raise": on_send(after_completion(refused)),
        # "Sent to the application if receive is called after a response has been sent": on every such call
        "disconnect_only_once": disconnect_only_once,
        "json_short_by_one": on_send(response_short_by_one, paths=("/json",)),
        "ws_bytes_short_by_one": on_send(ws_bytes_short_by_one, types=("websocket",)),
    }
)


async def _unchanged(scope, message):
    return message


def _passthrough(send):
    return send


_ALL = ("http", "websocket")

#: the fixture app through every building block, with nothing broken (the control of every break)
control = on_scope(lambda scope: None, _ALL)(on_receive(_unchanged, _ALL)(on_send(_passthrough, _ALL)(fixture_app)))

globals().update({name: wrap(fixture_app) for name, wrap in {**BREAKS, **VARIANTS}.items()})
