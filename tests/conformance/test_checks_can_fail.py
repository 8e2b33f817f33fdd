"""Every conformance area can fail: a deliberately broken app or server makes the right check fail.

Each row of ``ROWS`` names an area (a ``conformance/test_<area>.py`` file), how the broken behaviour is
served (``VIAS``: an app wrapper under uvicorn or granian, the stdlib server of ``tests/broken/server.py``,
or the relay of ``tests/broken/proxy.py`` in front of a real server), the break (a name in that via's
``BREAKS``) and the checks that must fail because of it. The same checks must *pass* on the control: the
same server and wrapper machinery with nothing broken. A check that passes while the behaviour it checks
is broken cannot fail, and that is a defect.

Adding an area is adding a row. ``test_every_area_has_a_row`` fails when a committed conformance file has
neither a row nor an entry in ``UNCOVERED`` saying why it cannot have one; ``test_every_check_has_a_row_or_is_listed``
does the same per check function (the older checks without a row are listed in ``data/checks_without_rows.txt``).

All runs happen once per session, batched into a few parallel conformance subprocesses
(``tests/broken/runs.py``, ``GATECHECK_CAN_FAIL_WORKERS`` at a time); each row then only reads its outcomes.
A failing row shows what the check said on the broken target and the tail of that conformance run.
"""
from __future__ import annotations

import ast
import subprocess
from pathlib import Path
from typing import NamedTuple

import pytest

from tests.broken import asgi, proxy, rsgi, server, wsgi
from tests.broken.runs import REPO, Run, Via, run_all


def _granian(interface: str, http: str = "1") -> str:
    # kept short: the harness names each server's log file after the whole command
    return f"{{python}} -m granian --interface {interface} --host {{host}} --port {{port}} --http {http} " \
           f"tests.broken.{interface}:{{break}}"


VIAS = {
    "asgi": Via("asgi", "{python} -m uvicorn --host {host} --port {port} --no-access-log tests.broken.asgi:{break}",
                features="websockets,lifespan"),
    "asgi-granian": Via("asgi", _granian("asgi"), features="websockets,lifespan,pathsend"),
    # uvicorn raises from send() after the response completed: the control ignores those messages (the letter)
    "asgi-late": Via("asgi", "{python} -m uvicorn --host {host} --port {port} --no-access-log tests.broken.asgi:{break}",
                     features="websockets,lifespan", control="late_messages_ignored"),
    "asgi-h2": Via("asgi", _granian("asgi", "2"), http="h2", features="h2c,lifespan"),
    "rsgi": Via("rsgi", _granian("rsgi"), features="websockets"),
    "rsgi-h2": Via("rsgi", _granian("rsgi", "2"), http="h2", features="h2c"),
    "wsgi": Via("wsgi", _granian("wsgi")),
    # the stdlib server of tests/broken/server.py: unbroken, serving a broken WSGI app (WSGI rules granian
    # itself deviates from), or broken, serving the fixture app (the HTTP/1.1 wire rules)
    "wsgi-stdlib": Via("wsgi", "{python} -m tests.broken.server --host {host} --port {port} "
                               "--app tests.broken.wsgi:{break}"),
    "wire": Via("wsgi", "{python} -m tests.broken.server --host {host} --port {port} --break {break}",
                control="none"),
    # the same, asked for {workers} processes (checks that start a private server with two workers)
    "wire-workers": Via("wsgi", "{python} -m tests.broken.server --host {host} --port {port} --workers {workers} "
                                "--break {break}", features="workers", control="none"),
    # granian with the suite's test certificate (tls=on's command line), serving a broken WSGI app over TLS
    "wsgi-tls": Via("wsgi", "{python} -m granian --interface wsgi --host {host} --port {port} --http 1 "
                            "--ssl-certificate {tls_cert} --ssl-keyfile {tls_key} tests.broken.wsgi:{break}",
                    features="tls"),
    "asgi-tls": Via("asgi", "{python} -m uvicorn --host {host} --port {port} --no-access-log "
                            "--ssl-certfile {tls_cert} --ssl-keyfile {tls_key} tests.broken.asgi:{break}",
                    features="tls"),
    "rsgi-tls": Via("rsgi", "{python} -m granian --interface rsgi --host {host} --port {port} --http 1 "
                            "--ssl-certificate {tls_cert} --ssl-keyfile {tls_key} tests.broken.rsgi:{break}",
                    features="tls"),
    # a relay in front of a real server, corrupting what the server's own protocol layer sends
    "ws-proxy": Via("asgi", "{python} -m tests.broken.proxy --port {port} --break {break} -- "
                            "{python} -m uvicorn --port @PORT@ gatecheck.fixtures.apps.asgi:app", features="websockets",
                    control="none"),
    # the same relay in front of granian, which answers an app's exception after accept with a Close frame
    # (uvicorn just closes the TCP connection)
    "ws-proxy-granian": Via("asgi", "{python} -m tests.broken.proxy --port {port} --break {break} -- {python} -m "
                                    "granian --interface asgi --http 1 --port @PORT@ gatecheck.fixtures.apps.asgi:app",
                            features="websockets", control="none"),
    # HTTP/1 readiness (http auto): the harness's h2 readiness probe refuses a server whose SETTINGS are invalid
    "h2-proxy": Via("asgi", "{python} -m tests.broken.proxy --port {port} --break {break} -- "
                            "{python} -m granian --interface asgi --port @PORT@ gatecheck.fixtures.apps.asgi:app",
                    http="auto", features="h2c", control="none"),
}

#: where each via's breaks are defined
CATALOGUES = {"asgi": asgi.BREAKS, "asgi-late": asgi.BREAKS, "asgi-granian": asgi.BREAKS, "asgi-h2": asgi.BREAKS, "rsgi": rsgi.BREAKS,
              "rsgi-h2": rsgi.BREAKS, "wsgi": wsgi.BREAKS, "wsgi-stdlib": wsgi.BREAKS, "wire": server.BREAKS, "wire-workers": server.BREAKS,
              "wsgi-tls": wsgi.BREAKS, "asgi-tls": asgi.BREAKS, "rsgi-tls": rsgi.BREAKS,
              "ws-proxy": proxy.BREAKS, "ws-proxy-granian": proxy.BREAKS, "h2-proxy": proxy.BREAKS}


class Row(NamedTuple):
    area: str          # conformance/test_<area>.py
    via: str           # a key of VIAS
    brk: str           # a break of that via's catalogue
    fails: tuple       # checks of that file (name[params]) that must fail, and pass on the control
    wait: float = 0.0  # seconds the broken run waits for what never comes (only to schedule it early)

    @property
    def id(self) -> str:
        return f"{self.area}-{self.via}-{self.brk}"

    def checks(self) -> tuple:
        return tuple(f"test_{self.area}.py::{check}" for check in self.fails)


ROWS = [
    # ASGI HTTP scope (uvicorn: it passes every scope check, so each broken key shows alone)
    Row("asgi_scope", "asgi", "http_version_1", ("test_http_version_matches_request[HTTP/1.1-1.1]",)),
    Row("asgi_scope", "asgi", "asgi_version_2", ("test_scope_asgi_version_is_3_0",)),
    Row("asgi_scope", "asgi", "spec_version_unknown", ("test_scope_spec_version_is_a_known_version",)),
    Row("asgi_scope", "asgi", "scope_bytes_key", ("test_scope_keys_are_str",)),
    Row("asgi_scope", "asgi", "method_lower",
        ("test_method_is_upper_case_str[GET]", "test_method_is_upper_case_str[PURGE]")),
    Row("asgi_scope", "asgi", "scheme_https", ("test_scheme_is_http_on_plain_listener",)),
    Row("asgi_scope", "asgi", "path_not_decoded",
        ("test_path_is_percent_and_utf8_decoded[/probe/a%20b-/probe/a b]",
         "test_path_is_percent_and_utf8_decoded[/probe/100%25-/probe/100%]")),
    Row("asgi_scope", "asgi", "raw_path_short", ("test_raw_path_is_the_received_bytes[/probe/a%20b]",)),
    Row("asgi_scope", "asgi", "query_string_str", ("test_query_string_is_raw_bytes[a=1]",)),
    Row("asgi_scope", "asgi", "root_path_bytes", ("test_root_path_is_str",)),
    Row("asgi_scope", "asgi", "header_names_upper", ("test_header_names_are_lower_case",)),
    Row("asgi_scope", "asgi", "header_repeats_merged", ("test_headers_are_byte_pairs_with_duplicates_in_order",)),
    Row("asgi_scope", "asgi", "header_values_reencoded", ("test_header_values_are_passed_as_received",)),
    Row("asgi_scope", "asgi", "client_port_str", ("test_client_is_host_and_int_port",)),
    Row("asgi_scope", "asgi", "server_port_off_by_one", ("test_server_is_host_and_int_port_of_the_listener",)),
    Row("asgi_scope", "asgi", "extension_not_a_dict", ("test_extension_values_are_dicts",)),
    # ASGI HTTP messages
    Row("asgi_messages", "asgi-late", "late_messages_raise",
        ("test_send_after_completion_returns_normally[body-after-length]",
         "test_send_after_completion_returns_normally[start-after-chunked]")),
    Row("asgi_messages", "asgi", "body_loses_a_byte",
        ("test_request_bodies_concatenate_to_the_decoded_body[content-length]",
         "test_request_bodies_concatenate_to_the_decoded_body[chunked-separate-writes]")),
    Row("asgi_messages", "asgi", "more_body_as_int",
        ("test_more_body_is_true_until_the_last_request_message[content-length]",)),
    Row("asgi_messages", "asgi", "body_as_bytearray",
        ("test_request_message_values_have_their_types[chunked-one-write]",)),
    Row("asgi_messages", "asgi", "content_encoding_dropped", ("test_content_encoding_is_left_to_the_app",)),
    Row("asgi_messages", "asgi", "empty_body_ends_response",
        ("test_empty_body_message_mid_stream_does_not_end_the_response",)),
    Row("asgi_messages", "asgi", "unknown_keys_refused", ("test_unknown_keys_in_events_are_accepted",)),
    Row("asgi_messages", "asgi", "disconnect_too_early", ("test_receive_waits_while_the_request_is_open",)),
    Row("asgi_messages", "asgi", "disconnect_swallowed",
        ("test_receive_returns_disconnect_when_the_client_leaves[fin]",), wait=6),
    Row("asgi_messages", "asgi", "response_repeats_merged",
        ("test_response_headers_keep_duplicates_in_order[lists]",
         "test_response_headers_keep_duplicates_in_order[tuple]")),
    Row("asgi_messages", "asgi", "non_list_headers_dropped",
        ("test_response_headers_keep_duplicates_in_order[tuple]",
         "test_response_headers_keep_duplicates_in_order[iterable]")),
    Row("asgi_messages", "asgi", "body_key_required",
        ("test_response_body_in_each_message_shape_is_delivered[last-without-body-key]",)),
    Row("asgi_messages", "asgi", "body_buffered", ("test_each_body_message_is_flushed_before_the_next[1B]",), wait=2),
    # ASGI HTTP messages that go wrong
    Row("asgi_messages_errors", "asgi", "send_never_raises",
        ("test_invalid_event_raises_from_send[unknown-type]",
         "test_header_with_cr_lf_or_nul_makes_send_raise[value-crlf]")),
    Row("asgi_messages_errors", "asgi", "errors_become_200", ("test_exception_before_start_is_answered_with_5xx",)),
    Row("asgi_messages_errors", "asgi", "unfinished_response_completed",
        ("test_app_returning_mid_response_is_never_a_complete_response[mid-body-chunked]",)),
    Row("asgi_messages_errors", "asgi", "errors_after_start_complete_the_response",
        ("test_exception_after_start_never_looks_complete[mid-body-chunked]",)),
    # request bodies echoed
    Row("echo", "asgi", "body_loses_a_byte",
        ("test_echo_returns_content_length_body_byte_exact[1000B]",
         "test_chunked_request_body_is_decoded_for_echo[5000B]")),
    Row("echo", "asgi", "content_length_dropped", ("test_echo_response_declares_its_length",)),
    Row("echo", "asgi", "echo_iter_reordered", ("test_iterated_echo_returns_body_byte_exact[1000B]",)),
    Row("echo", "rsgi", "body_loses_a_byte", ("test_echo_returns_content_length_body_byte_exact[1B]",)),
    Row("echo", "rsgi", "echo_iter_reordered", ("test_iterated_echo_returns_body_byte_exact[65537B]",)),
    Row("echo", "wsgi", "input_reads_past_content_length",
        ("test_echo_returns_content_length_body_byte_exact[1000B]",)),
    # file responses
    Row("files", "asgi", "file_short_by_one", ("test_asgi_file_body_is_byte_exact_with_app_headers[photo.jpg]",)),
    Row("files", "asgi-granian", "pathsend_short_by_one", ("test_pathsend_sends_the_file_byte_exact[small.txt]",)),
    Row("files", "rsgi", "file_short_by_one", ("test_file_response_is_byte_exact_with_app_headers[small.txt]",)),
    Row("files", "rsgi", "file_range_short_by_one", ("test_response_file_range_sends_exactly_the_range[1000-2000]",)),
    Row("files", "wire", "head_body", ("test_head_file_response_has_no_body[photo.jpg]",)),
    # streaming both ways
    Row("streaming", "asgi", "body_buffered", ("test_asgi_body_chunks_reach_the_client_as_sent",)),
    Row("streaming", "asgi", "echo_iter_reordered",
        ("test_iterated_echo_streams_body_back_byte_exact[64KiB+1-length]",)),
    Row("streaming", "rsgi", "stream_buffered", ("test_rsgi_stream_chunks_reach_the_client_as_sent",)),
    Row("streaming", "wsgi", "blocks_buffered", ("test_wsgi_yielded_blocks_reach_the_client_as_yielded",)),
    # the HTTP/1.1 wire (the broken server)
    Row("http1_framing", "wire", "content_length_lenient",
        ("test_invalid_content_length_is_rejected[plus]", "test_invalid_content_length_closes_the_connection[plus]")),
    Row("http1_framing", "wire", "chunk_size_int",
        ("test_invalid_chunk_size_is_rejected[hex-prefix]",
         "test_invalid_chunk_size_is_rejected[plus]")),
    Row("http1_framing", "wire", "content_length_wraps", ("test_content_length_overflow_does_not_wrap",)),
    Row("http1_framing", "wire", "chunk_size_wraps", ("test_chunk_size_overflow_does_not_wrap",)),
    Row("http1_framing", "wire", "trailers_merged", ("test_request_trailers_are_not_merged_into_headers",)),
    Row("http1_framing", "wire", "te_chunked_anywhere",
        ("test_transfer_coding_not_ending_in_chunked_is_rejected[chunked-gzip]",)),
    Row("http1_framing", "wire", "incomplete_body_kept_open",
        ("test_incomplete_content_length_body_closes_the_connection",), wait=4.5),
    Row("http1_framing", "wire", "first_content_length_wins",
        ("test_differing_content_lengths_are_rejected[two-lines]",)),
    Row("http1_framing", "wire", "unread_body_left_in_buffer",
        ("test_unread_body_does_not_desynchronise_the_connection",)),
    Row("http1_framing", "wire", "chunk_bare_lf",
        ("test_bare_lf_in_chunked_framing_is_rejected[after-size]",)),
    Row("http1_smuggling", "wire", "garbage_skipped",
        ("test_garbage_after_a_pipelined_request_is_rejected",
         "test_garbage_after_a_pipelined_request_closes_the_connection")),
    Row("http1_smuggling", "wire", "http10_te_accepted",
        ("test_http10_request_with_transfer_encoding_is_faulty_and_closed[te-only]",)),
    Row("http1_smuggling", "wire", "cl_te_accepted",
        ("test_cl_te_request_closes_the_connection[cl-first]",
         "test_te_cl_request_closes_the_connection[te-first]")),
    Row("http1_fields", "wire", "host_not_required", ("test_http11_request_without_host_is_rejected",)),
    Row("http1_fields", "wire", "two_hosts_accepted", ("test_request_with_two_host_lines_is_rejected[same-value]",)),
    Row("http1_fields", "wire", "method_case_folded", ("test_method_is_case_sensitive",)),
    Row("http1_fields", "wire", "request_line_bare_cr_kept", ("test_bare_cr_in_the_request_line_is_rejected",)),
    Row("http1_fields", "wire", "nul_in_values_kept",
        ("test_nul_in_a_field_value_is_rejected_or_replaced_with_space",)),
    Row("http1_fields", "wire", "any_field_name",
        ("test_field_name_that_is_not_a_token_is_rejected[brackets]",)),
    Row("http1_fields", "wire", "spaces_in_target", ("test_whitespace_inside_request_target_is_rejected",)),
    Row("http1_fields", "wire", "host_required_for_http10", ("test_http10_request_without_host_is_served",)),
    Row("http1_fields", "wire", "space_before_colon",
        ("test_whitespace_between_field_name_and_colon_is_rejected[space]",)),
    Row("http1_fields", "wire", "obs_fold_joined", ("test_obs_fold_is_rejected_or_replaced_with_space",)),
    Row("http1_fields", "wire", "bare_cr_splits_lines",
        ("test_bare_cr_in_a_field_is_rejected_or_replaced_with_space[as-line-end]",)),
    Row("http1_connection", "wire", "connection_close_ignored",
        ("test_connection_close_request_is_answered_then_closed[lower]",
         "test_request_pipelined_after_connection_close_is_not_processed")),
    Row("http1_connection", "wire", "no_persistent_connections",
        ("test_two_sequential_requests_share_one_connection",)),
    Row("http1_connection", "wire", "close_unannounced",
        ("test_connection_close_request_gets_connection_close_in_response",)),
    Row("http1_connection", "wire", "http10_kept_open",
        ("test_http10_request_without_keep_alive_is_closed_after_response",)),
    Row("http1_connection", "wire", "pipeline_reordered",
        ("test_pipelined_requests_are_answered_completely_and_in_order[one-write]",
         "test_pipelined_posts_keep_their_own_bodies")),
    Row("http1_responses", "wire", "head_body", ("test_head_response_has_no_content[payload]",)),
    Row("http1_responses", "wire", "no_content_body",
        ("test_no_content_status_has_no_body_even_if_the_app_sends_one[204]",
         "test_204_has_no_content_length")),
    Row("http1_responses", "wire", "no_date",
        ("test_date_is_sent_in_2xx_and_4xx[app-200]", "test_date_is_sent_in_the_servers_own_400")),
    Row("http1_responses", "wire", "status_without_reason", ("test_status_line_has_sp_after_the_code[registered]",)),
    Row("http1_responses", "wire", "version_echoed",
        ("test_response_version_is_http11_for_http1x_requests[http-1.0]",)),
    Row("http1_responses", "wire", "continue_to_http10", ("test_no_1xx_is_sent_to_an_http10_client",)),
    Row("http1_responses", "wire", "app_date_duplicated",
        ("test_app_supplied_date_or_server_is_not_duplicated[date]",)),
    Row("http1_responses", "wire", "expect_ignored",
        ("test_expect_100_continue_gets_100_or_a_final_status_before_the_body",), wait=3),
    Row("http1_responses", "wire", "head_length_zero", ("test_head_content_length_equals_the_get_length",)),
    Row("http1_responses", "wire", "upgrade_honoured", ("test_upgrade_to_an_unknown_protocol_is_ignored",)),
    Row("http1_responses", "wire", "app_headers_unchecked",
        ("test_cr_lf_in_an_app_header_value_never_splits_the_response",)),
    Row("http1_limits", "wire", "headers_truncated",
        ("test_oversized_header_section_is_4xx_or_passed_whole[4000-fields]",)),
    Row("http1_limits", "wire", "target_truncated",
        ("test_overlong_request_target_is_414_or_served", "test_request_line_of_8000_octets_is_accepted")),
    Row("http1_limits", "wire", "incomplete_answered",
        ("test_incomplete_request_is_waited_for_not_answered[after-request-line]",)),
    # HTTP/2 at the gateway
    Row("h2_connection", "h2-proxy", "h2_push_enabled", ("test_server_never_enables_push_in_its_settings",)),
    Row("h2_connection", "h2-proxy", "h2_preface_not_settings",
        ("test_server_preface_is_settings_and_our_settings_are_acked",)),
    Row("h2_mapping", "asgi-h2", "http_version_2_as_1_1", ("test_asgi_http_version_is_2",)),
    Row("h2_mapping", "asgi-h2", "pseudo_header_leaks",
        ("test_asgi_pseudo_headers_map_to_scope_keys_and_never_to_headers",)),
    Row("h2_mapping", "asgi-h2", "host_header_last", ("test_asgi_authority_becomes_the_first_host_header",)),
    Row("h2_mapping", "rsgi-h2", "http_version_2_as_1_1", ("test_rsgi_http_version_is_2",)),
    Row("h2_streams", "asgi-h2", "body_loses_a_byte",
        ("test_concurrent_streams_with_interleaved_bodies_are_byte_exact",)),
    Row("h2_streams", "asgi-h2", "disconnect_swallowed",
        ("test_reset_reaches_the_app_as_a_disconnect[response]",), wait=5),
    # WebSocket
    Row("websocket_close", "ws-proxy", "ws_close_code_1005",
        ("test_close_without_code_is_answered_without_1005_on_the_wire",
         "test_client_close_is_answered_with_close_then_tcp_close[1000]")),
    Row("websocket_close", "ws-proxy-granian", "ws_close_code_1005",
        ("test_close_after_the_app_raised_says_unexpected_condition",)),
    Row("websocket_close", "ws-proxy", "ws_tcp_kept_open", ("test_server_closes_tcp_after_server_initiated_handshake",),
        wait=5),
    Row("websocket", "asgi", "ws_text_as_bytes", ("test_text_message_round_trips_as_text[1B]",)),
    Row("websocket", "rsgi", "ws_text_as_bytes", ("test_text_message_round_trips_as_text[125B]",)),
    Row("websocket_asgi", "asgi", "ws_scheme_http", ("test_scope_scheme_is_ws_on_plain_listener",)),
    Row("websocket_asgi", "asgi", "ws_query_string_decoded", ("test_scope_query_string_is_raw_bytes",)),
    Row("websocket_asgi", "asgi", "ws_text_received_as_bytes", ("test_text_arrives_as_text_and_binary_as_bytes",)),
    Row("websocket_asgi", "asgi", "ws_close_reason_dropped", ("test_app_close_reason_reaches_the_client",)),
    Row("websocket_asgi", "asgi", "ws_subprotocols_reversed",
        ("test_scope_subprotocols_list_the_offers_in_order[one-header]",)),
    Row("websocket_asgi", "asgi", "ws_close_code_dropped", ("test_app_close_code_reaches_the_client[3000]",)),
    Row("websocket_asgi", "asgi", "ws_disconnect_code_1000", ("test_disconnect_carries_the_client_close_code[4999]",)),
    Row("websocket_rsgi", "rsgi", "ws_text_received_as_bytes", ("test_message_kinds_and_data_types",)),
    Row("websocket_rsgi", "rsgi", "ws_text_as_bytes", ("test_send_str_and_send_bytes_make_text_and_binary_frames",)),
    # RSGI HTTP scope
    Row("rsgi_scope", "rsgi", "proto_upper", ("test_proto_is_http",)),
    Row("rsgi_scope", "rsgi", "rsgi_version_missing", ("test_rsgi_version_is_a_known_version_str",)),
    Row("rsgi_scope", "rsgi", "http_version_1_0", ("test_http_version_is_one_of_the_defined_values[HTTP/1.0-1]",)),
    Row("rsgi_scope", "rsgi", "scheme_https", ("test_scheme_is_http_on_plain_listener",)),
    Row("rsgi_scope", "rsgi", "path_with_query",
        ("test_path_excludes_the_query[/probe/a?x=1&y=2-/probe/a-x=1&y=2]",)),
    Row("rsgi_scope", "rsgi", "server_port_off_by_one", ("test_server_is_address_and_listening_port",)),
    Row("rsgi_scope", "rsgi", "method_lower", ("test_method_is_upper_case[GET]",)),
    Row("rsgi_scope", "rsgi", "client_port_dropped", ("test_client_is_address_and_port",)),
    Row("rsgi_scope", "rsgi", "header_keys_upper", ("test_header_names_are_lower_case",)),
    Row("rsgi_scope", "rsgi", "get_all_reversed", ("test_get_all_returns_repeated_values_in_order",)),
    Row("rsgi_scope", "rsgi", "missing_header_is_none", ("test_missing_header_lookup_raises_key_error",)),
    # WSGI environ, input, response
    Row("wsgi_environ", "wsgi-stdlib", "environ_dict_subclass", ("test_environ_is_a_builtin_dict",)),
    Row("wsgi_environ", "wire-workers", "multiprocess_false",
        ("test_multiprocess_is_true_when_the_server_runs_several_worker_processes",)),
    Row("wsgi_environ", "wsgi-stdlib", "server_port_int",
        ("test_server_port_is_the_listening_port_as_str", "test_required_cgi_variables_are_present_str")),
    Row("wsgi_environ", "wsgi-stdlib", "server_protocol_always_1_0",
        ("test_server_protocol_is_the_request_version[HTTP/1.1]",)),
    Row("wsgi_environ", "wsgi-stdlib", "query_string_decoded", ("test_query_string_is_raw[x=%20%2F&y=a+b]",)),
    Row("wsgi_environ", "wsgi-stdlib", "path_info_utf8",
        ("test_path_info_is_percent_decoded_latin1[/probe/caf%C3%A9-/probe/caf\\xc3\\xa9]",)),
    Row("wsgi_environ", "wsgi-stdlib", "wsgi_version_list", ("test_wsgi_version_is_tuple_1_0",)),
    Row("wsgi_environ", "wsgi-stdlib", "url_scheme_https", ("test_url_scheme_is_http_on_plain_listener",)),
    Row("wsgi_environ", "wsgi-stdlib", "run_once_true", ("test_run_once_is_false_for_a_long_running_server",)),
    Row("wsgi_environ", "wsgi-stdlib", "remote_addr_missing", ("test_remote_addr_is_the_peer",)),
    Row("wsgi_environ", "wsgi-stdlib", "content_type_also_http",
        ("test_content_type_and_length_are_cgi_variables_only",)),
    Row("wsgi_environ", "wsgi-stdlib", "http_values_bytes",
        ("test_cgi_values_are_native_str", "test_request_headers_become_http_variables")),
    Row("wsgi_environ", "wsgi-stdlib", "http_repeats_last_only", ("test_repeated_headers_are_joined_with_commas",)),
    Row("wsgi_environ", "wsgi-stdlib", "input_lacks_readlines",
        ("test_input_and_error_streams_have_the_required_methods",)),
    Row("wsgi_input", "wsgi-stdlib", "input_reads_past_content_length",
        ("test_read_past_content_length_returns_the_body_then_empty",
         "test_input_never_returns_the_next_pipelined_request")),
    Row("wsgi_input", "wire", "unread_body_left_in_buffer", ("test_unread_body_does_not_become_the_next_request",)),
    Row("wsgi_input", "wsgi-stdlib", "input_read_without_size_short",
        ("test_read_without_size_returns_the_whole_body",)),
    Row("wsgi_input", "wsgi-stdlib", "errors_lacks_flush", ("test_errors_writelines_and_flush_work",)),
    Row("wsgi_input", "wsgi-stdlib", "input_read_ignores_size", ("test_read_with_size_returns_at_most_size_bytes",)),
    Row("wsgi_input", "wsgi-stdlib", "input_readline_ignores_size",
        ("test_readline_with_size_returns_at_most_size_bytes",)),
    Row("wsgi_response", "wsgi-stdlib", "start_response_never_raises",
        ("test_second_start_response_without_exc_info_raises",
         "test_hop_by_hop_header_from_the_app_is_an_error[connection]",
         "test_invalid_header_is_rejected_when_start_response_is_called[cr-lf-value]")),
    Row("wsgi_response", "wsgi-stdlib", "exc_info_dropped",
        ("test_exc_info_before_headers_replaces_status_and_headers",)),
    Row("wsgi_response", "wsgi-stdlib", "write_discards", ("test_start_response_returns_a_write_callable_that_sends",)),
    Row("wsgi_response", "wire", "app_headers_unchecked",
        ("test_invalid_header_never_splits_the_response[cr-lf-value]",
         "test_invalid_header_never_splits_the_response[lf-value]")),
    Row("wsgi_response", "wire", "write_past_length_sent", ("test_write_past_content_length_is_not_sent",)),
    Row("wsgi_iterable", "wsgi", "close_not_called",
        ("test_close_is_called_after_a_complete_response[iterator-with-close]",
         "test_close_is_called_after_a_complete_response[start-response-in-first-next]",
         "test_close_is_called_when_iteration_raises[first-next-raises]",
         "test_close_is_called_when_iteration_raises[later-next-raises]"),
        wait=12),
    Row("wsgi_iterable", "wsgi", "last_block_dropped",
        ("test_body_matching_content_length_is_sent_whole[iterator-with-close]",
         "test_body_without_content_length_is_framed[iterator-with-close]",
         "test_body_without_content_length_is_framed[generator]")),
    Row("wsgi_iterable", "wsgi", "content_length_dropped",
        ("test_body_longer_than_content_length_is_not_sent[iterator-with-close]",
         "test_body_shorter_than_content_length_closes_the_connection[iterator-with-close]")),
    Row("wsgi_iterable", "wsgi", "crlf_normalised", ("test_binary_body_is_transmitted_unmodified",)),
    Row("wsgi_iterable", "wsgi", "next_after_close",
        ("test_no_next_after_close[iterator-with-close]", "test_no_next_after_close[start-response-in-first-next]")),
    Row("wsgi_iterable", "wsgi", "close_called_twice",
        ("test_close_is_not_called_twice[iterator-with-close]", "test_close_is_not_called_twice[later-next-raises]")),
    # ASGI extensions and lifespan
    Row("asgi_extensions", "asgi", "debug_extension_advertised", ("test_debug_extension_is_never_advertised",)),
    Row("asgi_extensions", "asgi", "tls_extension_on_plain",
        ("test_tls_extension_is_absent_on_plain_connections[HTTP/1.1]",)),
    Row("asgi_extensions", "asgi-granian", "pathsend_short_by_one",
        ("test_pathsend_keeps_the_app_headers[small.txt]",)),
    Row("asgi_lifespan", "asgi", "lifespan_asgi_version_2", ("test_lifespan_scope_asgi_version_is_3_0",)),
    Row("asgi_lifespan", "asgi", "lifespan_state_prefilled", ("test_lifespan_state_starts_as_an_empty_dict",)),
    Row("asgi_lifespan", "asgi", "state_not_from_lifespan", ("test_state_set_at_startup_is_visible_in_requests",)),
    Row("asgi_lifespan", "asgi", "lifespan_state_not_copied",
        ("test_key_added_in_one_request_is_invisible_in_the_next",)),
    # RSGI protocol methods and responses
    Row("rsgi_protocol", "rsgi", "body_loses_a_byte", ("test_await_protocol_returns_the_exact_body[binary]",)),
    Row("rsgi_protocol", "rsgi", "echo_iter_reordered",
        ("test_async_iteration_chunks_concatenate_to_the_body[content-length]",)),
    Row("rsgi_protocol", "rsgi", "entry_is_call", ("test_rsgi_method_is_preferred_over_call",)),
    Row("rsgi_responses", "rsgi", "status_always_200",
        ("test_response_status_is_sent_as_given[response_bytes-404]",
         "test_response_status_is_sent_as_given[response_file-404]",
         "test_response_status_is_sent_as_given[response_stream-str-404]")),
    Row("rsgi_responses", "rsgi", "response_repeats_merged",
        ("test_repeated_header_names_are_all_sent_in_order[response_bytes]",
         "test_repeated_header_names_are_all_sent_in_order[response_empty]",
         "test_repeated_header_names_are_all_sent_in_order[response_stream-bytes]")),
    Row("rsgi_responses", "rsgi", "body_crlf_normalised", ("test_response_bytes_sends_status_headers_and_exact_body",)),
    Row("rsgi_responses", "rsgi", "stream_reordered", ("test_stream_sends_every_chunk_in_order",)),
    Row("rsgi_responses", "rsgi", "str_as_latin1", ("test_response_str_is_sent_utf8_encoded",)),
    # property-based round trips (hypothesis finds a counterexample, then the check fails)
    Row("properties", "asgi", "path_not_decoded", ("test_utf8_path_reaches_the_app_decoded",)),
    Row("properties", "asgi", "header_values_reencoded", ("test_obs_text_header_value_reaches_asgi_as_opaque_bytes",)),
    Row("properties", "asgi", "body_loses_a_byte", ("test_body_round_trips_whatever_the_framing_and_fragmentation",)),
    # a failing example that waits out its read timeout (10 s) must fail the check, not time it out: the
    # round trips stop at the first failing example (hypothesis's shrinker replayed it 30 times on daphne)
    Row("properties", "asgi", "ws_empty_message_dropped",
        ("test_websocket_messages_round_trip_whatever_the_fragmentation",), wait=25),
    Row("websocket", "asgi", "ws_empty_message_dropped",
        ("test_binary_message_round_trips_with_minimal_length[0B]", "test_text_message_round_trips_as_text[0B]"),
        wait=2),
    # robustness
    Row("robustness", "asgi", "body_loses_a_byte", ("test_trickled_body_arrives_whole",)),
    Row("vanishing_clients", "asgi", "disconnect_swallowed",
        ("test_asgi_client_vanishing_mid_body_is_http_disconnect",), wait=5),
    Row("robustness", "wire", "headers_truncated",
        ("test_64kib_of_headers_is_refused_with_4xx_or_served[one-64KiB-field]",)),
    Row("robustness", "wire", "pipeline_reordered", ("test_burst_of_200_pipelined_requests_is_answered_in_order",)),
    Row("robustness", "asgi", "leaks_a_descriptor_per_request",
        ("test_burst_of_200_pipelined_requests_is_answered_in_order",), wait=6),
    Row("robustness", "asgi", "leaks_a_mebibyte_per_request",
        ("test_burst_of_200_pipelined_requests_is_answered_in_order",), wait=6),
    # TLS listeners (the ALPN and version checks are the TLS layer's own; the app's view can be broken)
    Row("tls", "wsgi-tls", "url_scheme_http", ("test_wsgi_url_scheme_is_https",)),
    Row("tls", "asgi-tls", "scheme_http", ("test_asgi_scheme_is_https",)),
    Row("tls", "rsgi-tls", "scheme_http", ("test_rsgi_scheme_is_https",)),
]

#: conformance areas without a row, and why none can be written (yet)
ROWS += [
    # byte classes (conformance/dimensions.py): request fields over HTTP/1.1, HTTP/2, the WebSocket handshake;
    # the app's response fields
    Row("byte_classes", "wire", "nul_in_values_kept", ("test_request_field_value_octets_over_http1[nul]",)),
    Row("byte_classes", "wire", "any_field_name", ("test_request_field_name_octets_over_http1[delimiters]",)),
    Row("byte_classes", "asgi-h2", "header_values_reencoded", ("test_request_field_value_octets_over_http2[obs-text]",)),
    Row("byte_classes", "h2-proxy", "h2_errors_as_no_error",
        ("test_request_field_name_octets_over_http2[ctl-and-space]",)),
    Row("byte_classes", "asgi", "ws_header_values_reencoded", ("test_websocket_handshake_field_value_octets[obs-text]",)),
    Row("byte_classes", "wire", "app_headers_unchecked",
        ("test_app_field_value_octets_on_the_wire[nul-cr-lf]", "test_app_field_name_octets_never_reach_the_wire[delimiters]")),
    # connection states: every position of a kept-alive connection and of a pipeline
    Row("connection_states", "wire", "pipeline_reordered", ("test_app_sees_the_request_at_each_position[pipelined-1st]",)),
    Row("connection_states", "asgi", "body_loses_a_byte",
        ("test_request_body_is_read_at_each_position[keep-alive-2nd-content-length]",)),
    Row("connection_states", "rsgi", "echo_iter_reordered",
        ("test_streamed_response_is_delimited_at_each_position[pipelined-2nd]",)),
    Row("connection_states", "wire", "connection_close_ignored",
        ("test_connection_close_request_is_answered_then_closed_at_each_position[keep-alive-3rd]",
         "test_requests_pipelined_after_a_close_are_not_processed[pipelined-1st-request]"), wait=2),
    Row("connection_states", "wire", "app_headers_unchecked",
        ("test_connection_close_from_the_app_closes_at_each_position[keep-alive-2nd]",), wait=2),
    Row("connection_states", "wire", "half_close_drops", ("test_half_closed_client_gets_its_responses[get]",)),
    # a close the request under test provokes fails (a connection of GET /ping only stays open: not "unsupported")
    Row("connection_states", "wire", "later_body_dropped",
        ("test_request_body_is_read_at_each_position[keep-alive-2nd-content-length]",
         "test_request_body_is_read_at_each_position[pipelined-3rd-chunked]")),
]

# interoperability through the field's own clients (httpx, websockets): the same breaks, seen by those clients;
# over TLS and HTTP/2 on TLS through granian and uvicorn with the test certificate
VIAS.update({
    "asgi-h2-tls": Via("asgi", "{python} -m granian --interface asgi --host {host} --port {port} --http 2 "
                               "--ssl-certificate {tls_cert} --ssl-keyfile {tls_key} tests.broken.asgi:{break}",
                       http="h2", features="tls,h2c"),
    "asgi-tls-ws": Via("asgi", "{python} -m uvicorn --host {host} --port {port} --no-access-log "
                               "--ssl-certfile {tls_cert} --ssl-keyfile {tls_key} tests.broken.asgi:{break}",
                       features="tls,websockets"),
})
CATALOGUES.update({"asgi-h2-tls": asgi.BREAKS, "asgi-tls-ws": asgi.BREAKS})
_H1, _H2, _TLS1, _TLS2 = ("test_httpx_http11_round_trip", "test_httpx_h2c_round_trip",
                          "test_httpx_https_http11_round_trip", "test_httpx_https_h2_round_trip")
ROWS += [
    Row("interop", "asgi", "body_loses_a_byte",
        (f"{_H1}[echo-1KiB]", f"{_H1}[echo-1MiB]", f"{_H1}[upload-streamed]")),
    Row("interop", "asgi", "file_short_by_one", (f"{_H1}[file-photo.jpg]", f"{_H1}[file-small.txt]")),
    Row("interop", "asgi", "json_short_by_one", (f"{_H1}[json]",)),
    Row("interop", "rsgi", "stream_reordered", (f"{_H1}[response-streamed]",)),
    Row("interop", "asgi-h2", "body_loses_a_byte", (f"{_H2}[echo-1KiB]", f"{_H2}[upload-streamed]")),
    Row("interop", "asgi-h2", "json_short_by_one", (f"{_H2}[json]",)),
    Row("interop", "rsgi-h2", "stream_reordered", (f"{_H2}[response-streamed]",)),
    Row("interop", "asgi-tls", "body_loses_a_byte", (f"{_TLS1}[echo-1KiB]", f"{_TLS1}[upload-streamed]")),
    Row("interop", "asgi-h2-tls", "body_loses_a_byte", (f"{_TLS2}[echo-1MiB]", f"{_TLS2}[upload-streamed]")),
    Row("interop", "asgi", "ws_text_as_bytes", ("test_websockets_round_trip[text]",)),
    Row("interop", "asgi", "ws_bytes_short_by_one",
        ("test_websockets_round_trip[binary]", "test_websockets_round_trip[1MiB]",
         "test_websockets_round_trip[fragmented]")),
    Row("interop", "ws-proxy", "ws_close_code_1005", ("test_websockets_round_trip[close]",)),
    Row("interop", "asgi-tls-ws", "ws_text_as_bytes", ("test_websockets_wss_round_trip[text]",)),
    Row("interop", "asgi-tls-ws", "ws_bytes_short_by_one", ("test_websockets_wss_round_trip[fragmented]",)),
]

# RFC 9112 §9.3's close rule: its control is a server without persistent connections that says "close" (on one
# that keeps connections open the check is not applicable, never a pass)
VIAS["wire-closing"] = Via("wsgi", "{python} -m tests.broken.server --host {host} --port {port} --break {break}",
                           control="no_persistent_connections")
CATALOGUES["wire-closing"] = server.BREAKS
ROWS += [
    Row("http1_connection", "wire-closing", "no_persistence_unannounced",
        ("test_server_that_closes_after_its_response_says_close",)),
]


UNCOVERED = {
    "h2spec": "its cases are h2spec's own verdicts on the server's HTTP/2 framing layer, reported as they come; "
              "the harness's part (parsing the report, counting the cases) has tests of its own",
}


def _runs(rows) -> dict:
    """{(via, break or None for the control): Run}: one run per (via, break) with the union of its rows'
    checks, and one control per via with the union of all its rows' checks."""
    checks: dict = {}
    waits: dict = {}
    for row in rows:
        waits[(row.via, row.brk)] = waits.get((row.via, row.brk), 0.0) + row.wait
        for key in ((row.via, row.brk), (row.via, None)):
            ids = checks.setdefault(key, [])
            ids.extend(c for c in row.checks() if c not in ids)
    # short target names: the harness puts the whole target (command included) into log file names
    return {(via, brk): Run(f"r{n}", via, brk or VIAS[via].control, tuple(ids), control=brk is None,
                            wait=waits.get((via, brk), 0.0))
            for n, ((via, brk), ids) in enumerate(checks.items())}


@pytest.fixture(scope="session")
def outcomes(request):
    """({(via, break): run name}, outcomes) for every run the selected rows need (all conformance
    subprocesses run here, once)."""
    rows = [item.callspec.params["row"] for item in request.session.items
            if hasattr(item, "callspec") and isinstance(item.callspec.params.get("row"), Row)]
    runs = _runs(rows)
    return {key: run.name for key, run in runs.items()}, run_all(list(runs.values()), VIAS)


@pytest.mark.parametrize("row", ROWS, ids=[row.id for row in ROWS])
def test_broken_behaviour_fails_its_check(outcomes, row):
    """The check fails on the broken behaviour and passes on the unbroken control."""
    names, outcomes = outcomes
    control, broken = names[(row.via, None)], names[(row.via, row.brk)]
    problems = []
    for check in row.checks():
        got_control, got_broken = outcomes.outcome(control, check), outcomes.outcome(broken, check)
        if got_control != "passed":
            problems.append(f"{check}: {got_control} on the control ({row.via}), expected passed: "
                            f"{outcomes.message(control, check)[:300]}")
        if got_broken not in ("failed", "noted"):   # noted: an INFO check's failure (it never fails a run)
            problems.append(f"{check}: {got_broken} with {row.brk!r} broken, expected failed "
                            f"(a check that cannot fail): {outcomes.message(broken, check)[:300]}")
    if problems:
        tail = outcomes.log(broken) if any(" with " in p for p in problems) else outcomes.log(control)
        pytest.fail("\n".join(problems) + "\n--- conformance run output (tail) ---\n" + tail[-2000:], pytrace=False)


def _untracked(paths: list) -> set:
    """The paths git does not track yet (a file someone is still writing); empty when git cannot tell."""
    try:
        out = subprocess.run(["git", "ls-files", "--others", "--", *map(str, paths)], cwd=REPO, capture_output=True,
                             text=True, timeout=30, stdin=subprocess.DEVNULL)
    except (OSError, subprocess.TimeoutExpired):
        return set()
    return {(REPO / line).resolve() for line in out.stdout.splitlines()} if out.returncode == 0 else set()


def test_every_area_has_a_row():
    """Every conformance/test_<area>.py has a row here (or a reason in UNCOVERED); an area file not yet
    committed is only reported (skipped), so a check file still being written does not break this test."""
    files = sorted((REPO / "conformance").glob("test_*.py"))
    covered = {row.area for row in ROWS} | set(UNCOVERED)
    missing = [p for p in files if p.stem[len("test_"):] not in covered]
    untracked = _untracked(missing) if missing else set()
    committed = sorted(p.stem[len("test_"):] for p in missing if p.resolve() not in untracked)
    assert not committed, (f"conformance areas without a broken-behaviour row: {committed}; add a Row to ROWS in "
                           f"{__file__} (a break in tests/broken/ that must make one of its checks fail) or say "
                           "in UNCOVERED why none can be written")
    gone = {row.area for row in ROWS} - {p.stem[len("test_"):] for p in files}
    assert not gone, f"rows for areas that no longer exist: {sorted(gone)}"
    if missing:
        pytest.skip(f"not committed yet, and without a broken-behaviour row: {[p.name for p in missing]} "
                    f"(add a Row to ROWS in {Path(__file__).name} before committing)")


WITHOUT_ROWS = Path(__file__).parent / "data" / "checks_without_rows.txt"


def _check_functions(path: Path) -> list:
    """The check functions (module-level ``test_*``) defined in one conformance file."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    return [node.name for node in tree.body
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name.startswith("test_")]


def test_every_check_has_a_row_or_is_listed():
    """Every check function (not only every area) has a row, or a line in data/checks_without_rows.txt (the
    older checks still without one); a listed check that got a row, or is gone, must leave the list. The
    area test above cannot see a new check in an area that already has a row for another check."""
    covered = {(f"test_{row.area}.py", check.split("[")[0]) for row in ROWS for check in row.fails}
    listed = {line.strip() for line in WITHOUT_ROWS.read_text(encoding="utf-8").splitlines()
              if line.strip() and not line.startswith("#")}
    files = [p for p in sorted((REPO / "conformance").glob("test_*.py")) if p.stem[len("test_"):] not in UNCOVERED]
    untracked = _untracked(files)
    defined = {f"{p.name}::{name}" for p in files if p.resolve() not in untracked for name in _check_functions(p)}
    missing = sorted(c for c in defined if tuple(c.split("::")) not in covered and c not in listed)
    assert not missing, (f"checks without a broken-behaviour row: {missing}; add a Row to ROWS in {Path(__file__).name} "
                         f"(a break that must make the check fail)")
    stale = sorted(c for c in listed if c not in defined or tuple(c.split("::")) in covered)
    assert not stale, f"lines of {WITHOUT_ROWS.name} whose check has a row now or no longer exists: {stale}"


def test_rows_name_real_breaks_and_every_break_has_a_row():
    """Each row's break exists in its via's catalogue, and every catalogued break is exercised by a row."""
    for row in ROWS:
        assert row.via in VIAS and row.brk in CATALOGUES[row.via], row
        assert all("::" not in check for check in row.fails), row
    used = {(id(CATALOGUES[row.via]), row.brk) for row in ROWS}
    used |= {(id(CATALOGUES[name]), via.control) for name, via in VIAS.items()}   # a via's own control
    unused = sorted(name for catalogue in {id(c): c for c in CATALOGUES.values()}.values()
                    for name in catalogue if (id(catalogue), name) not in used)
    assert not unused, f"breaks no row uses (dead code, or a row is missing): {unused}"
