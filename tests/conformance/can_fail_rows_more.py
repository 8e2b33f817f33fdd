"""The rows of test_checks_can_fail.py, part two: WebSocket, RSGI, WSGI, extensions, properties, robustness,
TLS, issue 11's dimensions (byte classes, connection states, observables and the letter) and interop
through the field's own clients. The ``Row`` is can_fail_rows.py's."""

from __future__ import annotations

from tests.conformance.can_fail_rows import Row

__all__ = ["ROWS"]

ROWS = [
    # WebSocket
    Row(
        "websocket_close",
        "ws-proxy",
        "ws_close_code_1005",
        (
            "test_close_without_code_is_answered_without_1005_on_the_wire",
            "test_client_close_is_answered_with_close_then_tcp_close[1000]",
        ),
    ),
    # every observable (dimension 5): the code of the Close frame granian sends after the app raised or returned
    Row(
        "websocket_close",
        "ws-proxy-granian",
        "ws_close_code_1005",
        ("test_close_code_after_the_app_ended[raise]", "test_close_code_after_the_app_ended[return]"),
    ),
    Row(
        "websocket_close",
        "ws-proxy",
        "ws_tcp_kept_open",
        ("test_server_closes_tcp_after_server_initiated_handshake",),
        wait=5,
    ),
    Row("websocket", "asgi", "ws_text_as_bytes", ("test_text_message_round_trips_as_text[1B]",)),
    Row("websocket", "rsgi", "ws_text_as_bytes", ("test_text_message_round_trips_as_text[125B]",)),
    Row("websocket_asgi", "asgi", "ws_scheme_http", ("test_scope_scheme_is_ws_on_plain_listener",)),
    Row("websocket_asgi", "asgi", "ws_query_string_decoded", ("test_scope_query_string_is_raw_bytes",)),
    Row("websocket_asgi", "asgi", "ws_text_received_as_bytes", ("test_text_arrives_as_text_and_binary_as_bytes",)),
    Row("websocket_asgi", "asgi", "ws_close_reason_dropped", ("test_app_close_reason_reaches_the_client",)),
    Row(
        "websocket_asgi",
        "asgi",
        "ws_subprotocols_reversed",
        ("test_scope_subprotocols_list_the_offers_in_order[one-header]",),
    ),
    Row("websocket_asgi", "asgi", "ws_close_code_dropped", ("test_app_close_code_reaches_the_client[3000]",)),
    Row("websocket_asgi", "asgi", "ws_disconnect_code_1000", ("test_disconnect_carries_the_client_close_code[4999]",)),
    Row("websocket_rsgi", "rsgi", "ws_text_received_as_bytes", ("test_message_kinds_and_data_types",)),
    Row("websocket_rsgi", "rsgi", "ws_text_as_bytes", ("test_send_str_and_send_bytes_make_text_and_binary_frames",)),
    # RSGI HTTP scope
    Row("rsgi_scope", "rsgi", "proto_upper", ("test_proto_is_http",)),
    Row("rsgi_scope", "rsgi", "rsgi_version_missing", ("test_rsgi_version_is_a_known_version_str",)),
    Row("rsgi_scope", "rsgi", "http_version_1_0", ("test_http_version_is_one_of_the_defined_values[HTTP/1.0-1]",)),
    Row("rsgi_scope", "rsgi", "scheme_https", ("test_scheme_is_http_on_plain_listener",)),
    Row("rsgi_scope", "rsgi", "path_with_query", ("test_path_excludes_the_query[/probe/a?x=1&y=2-/probe/a-x=1&y=2]",)),
    Row("rsgi_scope", "rsgi", "server_port_off_by_one", ("test_server_is_address_and_listening_port",)),
    Row("rsgi_scope", "rsgi", "method_lower", ("test_method_is_upper_case[GET]",)),
    Row("rsgi_scope", "rsgi", "client_port_dropped", ("test_client_is_address_and_port",)),
    Row("rsgi_scope", "rsgi", "header_keys_upper", ("test_header_names_are_lower_case",)),
    Row("rsgi_scope", "rsgi", "get_all_reversed", ("test_get_all_returns_repeated_values_in_order",)),
    Row("rsgi_scope", "rsgi", "missing_header_is_none", ("test_missing_header_lookup_raises_key_error",)),
    # WSGI environ, input, response
    Row("wsgi_environ", "wsgi-stdlib", "environ_dict_subclass", ("test_environ_is_a_builtin_dict",)),
    Row(
        "wsgi_environ",
        "wire-workers",
        "multiprocess_false",
        ("test_multiprocess_is_true_when_the_server_runs_several_worker_processes",),
    ),
    Row(
        "wsgi_environ",
        "wsgi-stdlib",
        "server_port_int",
        ("test_server_port_is_the_listening_port_as_str", "test_required_cgi_variables_are_present_str"),
    ),
    Row(
        "wsgi_environ",
        "wsgi-stdlib",
        "server_protocol_always_1_0",
        ("test_server_protocol_is_the_request_version[HTTP/1.1]",),
    ),
    Row("wsgi_environ", "wsgi-stdlib", "query_string_decoded", ("test_query_string_is_raw[x=%20%2F&y=a+b]",)),
    Row(
        "wsgi_environ",
        "wsgi-stdlib",
        "path_info_utf8",
        ("test_path_info_is_percent_decoded_latin1[/probe/caf%C3%A9-/probe/caf\\xc3\\xa9]",),
    ),
    Row("wsgi_environ", "wsgi-stdlib", "wsgi_version_list", ("test_wsgi_version_is_tuple_1_0",)),
    Row("wsgi_environ", "wsgi-stdlib", "url_scheme_https", ("test_url_scheme_is_http_on_plain_listener",)),
    Row("wsgi_environ", "wsgi-stdlib", "run_once_true", ("test_run_once_is_false_for_a_long_running_server",)),
    Row("wsgi_environ", "wsgi-stdlib", "remote_addr_missing", ("test_remote_addr_is_the_peer",)),
    Row(
        "wsgi_environ",
        "wsgi-stdlib",
        "content_type_also_http",
        ("test_content_type_and_length_are_cgi_variables_only",),
    ),
    Row(
        "wsgi_environ",
        "wsgi-stdlib",
        "http_values_bytes",
        ("test_cgi_values_are_native_str", "test_request_headers_become_http_variables"),
    ),
    Row("wsgi_environ", "wsgi-stdlib", "http_repeats_last_only", ("test_repeated_headers_are_joined_with_commas",)),
    Row(
        "wsgi_environ",
        "wsgi-stdlib",
        "input_lacks_readlines",
        ("test_input_and_error_streams_have_the_required_methods",),
    ),
    Row(
        "wsgi_input",
        "wsgi-stdlib",
        "input_reads_past_content_length",
        (
            "test_read_past_content_length_returns_the_body_then_empty",
            "test_input_never_returns_the_next_pipelined_request",
        ),
    ),
    Row("wsgi_input", "wire", "unread_body_left_in_buffer", ("test_unread_body_does_not_become_the_next_request",)),
    Row(
        "wsgi_input", "wsgi-stdlib", "input_read_without_size_short", ("test_read_without_size_returns_the_whole_body",)
    ),
    Row("wsgi_input", "wsgi-stdlib", "errors_lacks_flush", ("test_errors_writelines_and_flush_work",)),
    Row("wsgi_input", "wsgi-stdlib", "input_read_ignores_size", ("test_read_with_size_returns_at_most_size_bytes",)),
    Row(
        "wsgi_input",
        "wsgi-stdlib",
        "input_readline_ignores_size",
        ("test_readline_with_size_returns_at_most_size_bytes",),
    ),
    Row(
        "wsgi_response",
        "wsgi-stdlib",
        "start_response_never_raises",
        (
            "test_second_start_response_without_exc_info_raises",
            "test_hop_by_hop_header_from_the_app_is_an_error[connection]",
            "test_invalid_header_is_rejected_when_start_response_is_called[cr-lf-value]",
        ),
    ),
    Row(
        "wsgi_response",
        "wsgi-stdlib",
        "exc_info_dropped",
        ("test_exc_info_before_headers_replaces_status_and_headers",),
    ),
    Row("wsgi_response", "wsgi-stdlib", "write_discards", ("test_start_response_returns_a_write_callable_that_sends",)),
    Row(
        "wsgi_response",
        "wire",
        "app_headers_unchecked",
        (
            "test_invalid_header_never_splits_the_response[cr-lf-value]",
            "test_invalid_header_never_splits_the_response[lf-value]",
        ),
    ),
    Row("wsgi_response", "wire", "write_past_length_sent", ("test_write_past_content_length_is_not_sent",)),
    Row(
        "wsgi_iterable",
        "wsgi",
        "close_not_called",
        (
            "test_close_is_called_after_a_complete_response[iterator-with-close]",
            "test_close_is_called_after_a_complete_response[start-response-in-first-next]",
            "test_close_is_called_when_iteration_raises[first-next-raises]",
            "test_close_is_called_when_iteration_raises[later-next-raises]",
        ),
        wait=12,
    ),
    Row(
        "wsgi_iterable",
        "wsgi",
        "last_block_dropped",
        (
            "test_body_matching_content_length_is_sent_whole[iterator-with-close]",
            "test_body_without_content_length_is_framed[iterator-with-close]",
            "test_body_without_content_length_is_framed[generator]",
        ),
    ),
    Row(
        "wsgi_iterable",
        "wsgi",
        "content_length_dropped",
        (
            "test_body_longer_than_content_length_is_not_sent[iterator-with-close]",
            "test_body_shorter_than_content_length_closes_the_connection[iterator-with-close]",
        ),
    ),
    Row("wsgi_iterable", "wsgi", "crlf_normalised", ("test_binary_body_is_transmitted_unmodified",)),
    Row(
        "wsgi_iterable",
        "wsgi",
        "next_after_close",
        ("test_no_next_after_close[iterator-with-close]", "test_no_next_after_close[start-response-in-first-next]"),
    ),
    Row(
        "wsgi_iterable",
        "wsgi",
        "close_called_twice",
        ("test_close_is_not_called_twice[iterator-with-close]", "test_close_is_not_called_twice[later-next-raises]"),
    ),
    # ASGI extensions and lifespan
    Row("asgi_extensions", "asgi", "debug_extension_advertised", ("test_debug_extension_is_never_advertised",)),
    Row(
        "asgi_extensions",
        "asgi",
        "tls_extension_on_plain",
        ("test_tls_extension_is_absent_on_plain_connections[HTTP/1.1]",),
    ),
    Row(
        "asgi_extensions", "asgi-granian", "pathsend_short_by_one", ("test_pathsend_keeps_the_app_headers[small.txt]",)
    ),
    Row("asgi_lifespan", "asgi", "lifespan_asgi_version_2", ("test_lifespan_scope_asgi_version_is_3_0",)),
    Row("asgi_lifespan", "asgi", "lifespan_state_prefilled", ("test_lifespan_state_starts_as_an_empty_dict",)),
    Row("asgi_lifespan", "asgi", "state_not_from_lifespan", ("test_state_set_at_startup_is_visible_in_requests",)),
    Row(
        "asgi_lifespan",
        "asgi",
        "lifespan_state_not_copied",
        ("test_key_added_in_one_request_is_invisible_in_the_next",),
    ),
    # RSGI protocol methods and responses
    Row("rsgi_protocol", "rsgi", "body_loses_a_byte", ("test_await_protocol_returns_the_exact_body[binary]",)),
    Row(
        "rsgi_protocol",
        "rsgi",
        "echo_iter_reordered",
        ("test_async_iteration_chunks_concatenate_to_the_body[content-length]",),
    ),
    Row("rsgi_protocol", "rsgi", "entry_is_call", ("test_rsgi_method_is_preferred_over_call",)),
    Row(
        "rsgi_responses",
        "rsgi",
        "status_always_200",
        (
            "test_response_status_is_sent_as_given[response_bytes-404]",
            "test_response_status_is_sent_as_given[response_file-404]",
            "test_response_status_is_sent_as_given[response_stream-str-404]",
        ),
    ),
    Row(
        "rsgi_responses",
        "rsgi",
        "response_repeats_merged",
        (
            "test_repeated_header_names_are_all_sent_in_order[response_bytes]",
            "test_repeated_header_names_are_all_sent_in_order[response_empty]",
            "test_repeated_header_names_are_all_sent_in_order[response_stream-bytes]",
        ),
    ),
    Row("rsgi_responses", "rsgi", "body_crlf_normalised", ("test_response_bytes_sends_status_headers_and_exact_body",)),
    Row("rsgi_responses", "rsgi", "stream_reordered", ("test_stream_sends_every_chunk_in_order",)),
    Row("rsgi_responses", "rsgi", "str_as_latin1", ("test_response_str_is_sent_utf8_encoded",)),
    # property-based round trips (hypothesis finds a counterexample, then the check fails)
    Row("properties", "asgi", "path_not_decoded", ("test_utf8_path_reaches_the_app_decoded",)),
    Row("properties", "asgi", "header_values_reencoded", ("test_obs_text_header_value_reaches_asgi_as_opaque_bytes",)),
    Row("properties", "asgi", "body_loses_a_byte", ("test_body_round_trips_whatever_the_framing_and_fragmentation",)),
    # a failing example that waits out its read timeout (10 s) must fail the check, not time it out: the
    # round trips stop at the first failing example (hypothesis's shrinker replayed it 30 times on daphne)
    Row(
        "properties",
        "asgi",
        "ws_empty_message_dropped",
        ("test_websocket_messages_round_trip_whatever_the_fragmentation",),
        wait=25,
    ),
    Row(
        "websocket",
        "asgi",
        "ws_empty_message_dropped",
        ("test_binary_message_round_trips_with_minimal_length[0B]", "test_text_message_round_trips_as_text[0B]"),
        wait=2,
    ),
    # robustness
    Row("robustness", "asgi", "body_loses_a_byte", ("test_trickled_body_arrives_whole",)),
    Row(
        "vanishing_clients",
        "asgi",
        "disconnect_swallowed",
        ("test_asgi_client_vanishing_mid_body_is_http_disconnect",),
        wait=5,
    ),
    Row(
        "robustness",
        "wire",
        "headers_truncated",
        ("test_64kib_of_headers_is_refused_with_4xx_or_served[one-64KiB-field]",),
    ),
    Row("robustness", "wire", "pipeline_reordered", ("test_burst_of_200_pipelined_requests_is_answered_in_order",)),
    Row(
        "robustness",
        "asgi",
        "leaks_a_descriptor_per_request",
        ("test_burst_of_200_pipelined_requests_is_answered_in_order",),
        wait=6,
    ),
    Row(
        "robustness",
        "asgi",
        "leaks_a_mebibyte_per_request",
        ("test_burst_of_200_pipelined_requests_is_answered_in_order",),
        wait=6,
    ),
    # TLS listeners (the ALPN and version checks are the TLS layer's own; the app's view can be broken)
    Row("tls", "wsgi-tls", "url_scheme_http", ("test_wsgi_url_scheme_is_https",)),
    Row("tls", "asgi-tls", "scheme_http", ("test_asgi_scheme_is_https",)),
    Row("tls", "rsgi-tls", "scheme_http", ("test_rsgi_scheme_is_https",)),
]

# issue 11's dimensions (conformance/spec/dimensions.py, conformance/spec/observables.py)
ROWS += [
    # byte classes (conformance/spec/dimensions.py): request fields over HTTP/1.1, HTTP/2, the WebSocket handshake;
    # the app's response fields
    Row("byte_classes", "wire", "nul_in_values_kept", ("test_request_field_value_octets_over_http1[nul]",)),
    Row("byte_classes", "wire", "any_field_name", ("test_request_field_name_octets_over_http1[delimiters]",)),
    Row(
        "byte_classes", "asgi-h2", "header_values_reencoded", ("test_request_field_value_octets_over_http2[obs-text]",)
    ),
    Row(
        "byte_classes",
        "h2-proxy",
        "h2_errors_as_no_error",
        ("test_request_field_name_octets_over_http2[ctl-and-space]",),
    ),
    Row(
        "byte_classes", "asgi", "ws_header_values_reencoded", ("test_websocket_handshake_field_value_octets[obs-text]",)
    ),
    Row(
        "byte_classes",
        "wire",
        "app_headers_unchecked",
        (
            "test_app_field_value_octets_on_the_wire[nul-cr-lf]",
            "test_app_field_name_octets_never_reach_the_wire[delimiters]",
        ),
    ),
    # connection states: every position of a kept-alive connection and of a pipeline
    Row(
        "connection_states",
        "wire",
        "pipeline_reordered",
        ("test_app_sees_the_request_at_each_position[pipelined-1st]",),
    ),
    Row(
        "connection_states",
        "asgi",
        "body_loses_a_byte",
        ("test_request_body_is_read_at_each_position[keep-alive-2nd-content-length]",),
    ),
    Row(
        "connection_states",
        "rsgi",
        "echo_iter_reordered",
        ("test_streamed_response_is_delimited_at_each_position[pipelined-2nd]",),
    ),
    Row(
        "connection_states",
        "wire",
        "connection_close_ignored",
        (
            "test_connection_close_request_is_answered_then_closed_at_each_position[keep-alive-3rd]",
            "test_requests_pipelined_after_a_close_are_not_processed[pipelined-1st-request]",
        ),
        wait=2,
    ),
    Row(
        "connection_states",
        "wire",
        "app_headers_unchecked",
        ("test_connection_close_from_the_app_closes_at_each_position[keep-alive-2nd]",),
        wait=2,
    ),
    Row("connection_states", "wire", "half_close_drops", ("test_half_closed_client_gets_its_responses[get]",)),
    # a close the request under test provokes fails (a connection of GET /ping only stays open: not "unsupported")
    Row(
        "connection_states",
        "wire",
        "later_body_dropped",
        (
            "test_request_body_is_read_at_each_position[keep-alive-2nd-content-length]",
            "test_request_body_is_read_at_each_position[pipelined-3rd-chunked]",
        ),
    ),
    # the letter (dimension 6, INFO: a failure is "noted"): receive() keeps returning http.disconnect
    Row(
        "asgi_messages",
        "asgi",
        "disconnect_only_once",
        ("test_receive_after_disconnect_keeps_returning_disconnect",),
        wait=6,
    ),
]
_H1, _H2, _TLS1, _TLS2 = (
    "test_httpx_http11_round_trip",
    "test_httpx_h2c_round_trip",
    "test_httpx_https_http11_round_trip",
    "test_httpx_https_h2_round_trip",
)
ROWS += [
    Row("interop", "asgi", "body_loses_a_byte", (f"{_H1}[echo-1KiB]", f"{_H1}[echo-1MiB]", f"{_H1}[upload-streamed]")),
    Row("interop", "asgi", "file_short_by_one", (f"{_H1}[file-photo.jpg]", f"{_H1}[file-small.txt]")),
    Row("interop", "asgi", "json_short_by_one", (f"{_H1}[json]",)),
    Row("interop", "rsgi", "stream_reordered", (f"{_H1}[response-streamed]",)),
    Row("interop", "asgi-h2", "body_loses_a_byte", (f"{_H2}[echo-1KiB]", f"{_H2}[upload-streamed]")),
    Row("interop", "asgi-h2", "json_short_by_one", (f"{_H2}[json]",)),
    Row("interop", "rsgi-h2", "stream_reordered", (f"{_H2}[response-streamed]",)),
    Row("interop", "asgi-tls", "body_loses_a_byte", (f"{_TLS1}[echo-1KiB]", f"{_TLS1}[upload-streamed]")),
    Row("interop", "asgi-h2-tls", "body_loses_a_byte", (f"{_TLS2}[echo-1MiB]", f"{_TLS2}[upload-streamed]")),
    Row("interop", "asgi", "ws_text_as_bytes", ("test_websockets_round_trip[text]",)),
    Row(
        "interop",
        "asgi",
        "ws_bytes_short_by_one",
        (
            "test_websockets_round_trip[binary]",
            "test_websockets_round_trip[1MiB]",
            "test_websockets_round_trip[fragmented]",
        ),
    ),
    Row("interop", "ws-proxy", "ws_close_code_1005", ("test_websockets_round_trip[close]",)),
    Row("interop", "asgi-tls-ws", "ws_text_as_bytes", ("test_websockets_wss_round_trip[text]",)),
    Row("interop", "asgi-tls-ws", "ws_bytes_short_by_one", ("test_websockets_wss_round_trip[fragmented]",)),
]
