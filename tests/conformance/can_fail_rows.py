"""The rows of test_checks_can_fail.py, part one: the HTTP areas (ASGI, echo, files, streaming, the HTTP/1.1
wire, HTTP/2). Each ``Row`` names an area (``conformance/test_<area>.py``), a via of can_fail_vias.py, a
break of that via's catalogue, and the checks that must fail with it and pass on the control."""

from __future__ import annotations

from typing import NamedTuple

__all__ = ["Row", "ROWS"]


class Row(NamedTuple):
    area: str  # conformance/test_<area>.py
    via: str  # a key of VIAS
    brk: str  # a break of that via's catalogue
    fails: tuple  # checks of that file (name[params]) that must fail, and pass on the control
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
    Row(
        "asgi_scope",
        "asgi",
        "method_lower",
        ("test_method_is_upper_case_str[GET]", "test_method_is_upper_case_str[PURGE]"),
    ),
    Row("asgi_scope", "asgi", "scheme_https", ("test_scheme_is_http_on_plain_listener",)),
    Row(
        "asgi_scope",
        "asgi",
        "path_not_decoded",
        (
            "test_path_is_percent_and_utf8_decoded[/probe/a%20b-/probe/a b]",
            "test_path_is_percent_and_utf8_decoded[/probe/100%25-/probe/100%]",
        ),
    ),
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
    Row(
        "asgi_messages",
        "asgi-late",
        "late_messages_raise",
        (
            "test_send_after_completion_returns_normally[body-after-length]",
            "test_send_after_completion_returns_normally[start-after-chunked]",
        ),
    ),
    Row(
        "asgi_messages",
        "asgi",
        "body_loses_a_byte",
        (
            "test_request_bodies_concatenate_to_the_decoded_body[content-length]",
            "test_request_bodies_concatenate_to_the_decoded_body[chunked-separate-writes]",
        ),
    ),
    Row(
        "asgi_messages",
        "asgi",
        "more_body_as_int",
        ("test_more_body_is_true_until_the_last_request_message[content-length]",),
    ),
    Row(
        "asgi_messages",
        "asgi",
        "body_as_bytearray",
        ("test_request_message_values_have_their_types[chunked-one-write]",),
    ),
    Row("asgi_messages", "asgi", "content_encoding_dropped", ("test_content_encoding_is_left_to_the_app",)),
    Row(
        "asgi_messages",
        "asgi",
        "empty_body_ends_response",
        ("test_empty_body_message_mid_stream_does_not_end_the_response",),
    ),
    Row("asgi_messages", "asgi", "unknown_keys_refused", ("test_unknown_keys_in_events_are_accepted",)),
    Row("asgi_messages", "asgi", "disconnect_too_early", ("test_receive_waits_while_the_request_is_open",)),
    Row(
        "asgi_messages",
        "asgi",
        "disconnect_swallowed",
        ("test_receive_returns_disconnect_when_the_client_leaves[fin]",),
        wait=6,
    ),
    Row(
        "asgi_messages",
        "asgi",
        "response_repeats_merged",
        (
            "test_response_headers_keep_duplicates_in_order[lists]",
            "test_response_headers_keep_duplicates_in_order[tuple]",
        ),
    ),
    Row(
        "asgi_messages",
        "asgi",
        "non_list_headers_dropped",
        (
            "test_response_headers_keep_duplicates_in_order[tuple]",
            "test_response_headers_keep_duplicates_in_order[iterable]",
        ),
    ),
    Row(
        "asgi_messages",
        "asgi",
        "body_key_required",
        ("test_response_body_in_each_message_shape_is_delivered[last-without-body-key]",),
    ),
    Row("asgi_messages", "asgi", "body_buffered", ("test_each_body_message_is_flushed_before_the_next[1B]",), wait=2),
    # ASGI HTTP messages that go wrong
    Row(
        "asgi_messages_errors",
        "asgi",
        "send_never_raises",
        (
            "test_invalid_event_raises_from_send[unknown-type]",
            "test_header_with_cr_lf_or_nul_makes_send_raise[value-crlf]",
        ),
    ),
    Row("asgi_messages_errors", "asgi", "errors_become_200", ("test_exception_before_start_is_answered_with_5xx",)),
    Row(
        "asgi_messages_errors",
        "asgi",
        "unfinished_response_completed",
        ("test_app_returning_mid_response_is_never_a_complete_response[mid-body-chunked]",),
    ),
    Row(
        "asgi_messages_errors",
        "asgi",
        "errors_after_start_complete_the_response",
        ("test_exception_after_start_never_looks_complete[mid-body-chunked]",),
    ),
    # request bodies echoed
    Row(
        "echo",
        "asgi",
        "body_loses_a_byte",
        (
            "test_echo_returns_content_length_body_byte_exact[1000B]",
            "test_chunked_request_body_is_decoded_for_echo[5000B]",
        ),
    ),
    Row("echo", "asgi", "content_length_dropped", ("test_echo_response_declares_its_length",)),
    Row("echo", "asgi", "echo_iter_reordered", ("test_iterated_echo_returns_body_byte_exact[1000B]",)),
    Row("echo", "rsgi", "body_loses_a_byte", ("test_echo_returns_content_length_body_byte_exact[1B]",)),
    Row("echo", "rsgi", "echo_iter_reordered", ("test_iterated_echo_returns_body_byte_exact[65537B]",)),
    Row(
        "echo", "wsgi", "input_reads_past_content_length", ("test_echo_returns_content_length_body_byte_exact[1000B]",)
    ),
    # file responses
    Row("files", "asgi", "file_short_by_one", ("test_asgi_file_body_is_byte_exact_with_app_headers[photo.jpg]",)),
    Row("files", "asgi-granian", "pathsend_short_by_one", ("test_pathsend_sends_the_file_byte_exact[small.txt]",)),
    Row("files", "rsgi", "file_short_by_one", ("test_file_response_is_byte_exact_with_app_headers[small.txt]",)),
    Row("files", "rsgi", "file_range_short_by_one", ("test_response_file_range_sends_exactly_the_range[1000-2000]",)),
    Row("files", "wire", "head_body", ("test_head_file_response_has_no_body[photo.jpg]",)),
    # streaming both ways
    Row("streaming", "asgi", "body_buffered", ("test_asgi_body_chunks_reach_the_client_as_sent",)),
    Row(
        "streaming", "asgi", "echo_iter_reordered", ("test_iterated_echo_streams_body_back_byte_exact[64KiB+1-length]",)
    ),
    Row("streaming", "rsgi", "stream_buffered", ("test_rsgi_stream_chunks_reach_the_client_as_sent",)),
    Row("streaming", "wsgi", "blocks_buffered", ("test_wsgi_yielded_blocks_reach_the_client_as_yielded",)),
    # the HTTP/1.1 wire (the broken server)
    Row(
        "http1_framing",
        "wire",
        "content_length_lenient",
        ("test_invalid_content_length_is_rejected[plus]", "test_invalid_content_length_closes_the_connection[plus]"),
    ),
    Row(
        "http1_framing",
        "wire",
        "chunk_size_int",
        ("test_invalid_chunk_size_is_rejected[hex-prefix]", "test_invalid_chunk_size_is_rejected[plus]"),
    ),
    # request framing from the grammar (conformance/spec/framing.py): one break per reading the grammar forbids
    Row(
        "http1_grammar",
        "wire",
        "chunk_crlf_skipped",
        (
            "test_chunked_body_is_read_as_the_grammar_reads_it[chunked-data1-crlf-replace-2]",
            "test_invalid_request_is_answered_400[chunked-data2-crlf-replace-2]",
        ),
    ),
    Row(
        "http1_grammar",
        "wire",
        "head_body_ignored",
        (
            "test_body_on_any_method_is_framed_by_its_fields[body-head-length]",
            "test_body_on_any_method_is_framed_by_its_fields[body-head-chunked]",
        ),
    ),
    Row(
        "http1_grammar",
        "wire",
        "truncated_chunked_completed",
        (
            "test_truncated_body_is_read_as_incomplete[truncated-chunked-trailer-0]",
            "test_truncated_body_is_read_as_incomplete[truncated-chunked-data2-1]",
        ),
    ),
    Row(
        "http1_grammar",
        "wire",
        "method_case_folded",
        ("test_request_line_is_read_as_the_grammar_reads_it[method-get]",),
    ),
    Row(
        "http1_grammar",
        "wire",
        "transfer_coding_prefix",
        ("test_field_lines_are_read_as_the_grammar_reads_them[fields-chunked-framing-crlf-before-2]",),
    ),
    Row(
        "http1_grammar",
        "wire",
        "content_length_lenient",
        ("test_content_length_body_is_read_as_the_grammar_reads_it[content-length-plus]",),
    ),
    Row(
        "http1_grammar",
        "wire",
        "error_kept_open",
        ("test_invalid_request_closes_the_connection[method-non-token-0x28]",),
        wait=10,
    ),
    Row(
        "http1_grammar",
        "wire",
        "garbage_skipped",
        ("test_invalid_request_is_answered_400[method-non-token-0x7b]",),
        wait=5,
    ),
    # request-scoped rules on a reused connection (positions table)
    Row(
        "connection_reuse",
        "wire",
        "query_kept",
        (
            "test_app_is_handed_the_same_request_at_each_position[keep-alive-2nd]",
            "test_app_is_handed_the_same_request_at_each_position[pipelined-3rd]",
        ),
    ),
    Row(
        "connection_reuse",
        "wire",
        "date_cached_per_connection",
        (
            "test_date_is_current_at_each_position[keep-alive-2nd]",
            "test_date_is_current_at_each_position[keep-alive-3rd]",
        ),
        wait=7,
    ),
    Row(
        "connection_reuse",
        "wire",
        "server_header_appended",
        (
            "test_server_fields_are_not_repeated_at_each_position[keep-alive-2nd]",
            "test_server_fields_are_not_repeated_at_each_position[pipelined-3rd]",
        ),
    ),
    Row(
        "connection_reuse",
        "wire",
        "later_framed_twice",
        (
            "test_response_is_framed_once_at_each_position[keep-alive-3rd]",
            "test_response_is_framed_once_at_each_position[pipelined-2nd]",
        ),
    ),
    Row(
        "connection_reuse",
        "asgi",
        "state_shared_per_connection",
        (
            "test_state_copy_is_fresh_at_each_position[keep-alive-2nd]",
            "test_state_copy_is_fresh_at_each_position[keep-alive-3rd]",
        ),
    ),
    # time on a connection (a private server with a low keep-alive timeout, through the via's template)
    Row(
        "connection_timing",
        "wire-options",
        "keep_alive_cuts_pipeline",
        ("test_pipelined_request_outliving_the_keep_alive_timeout_is_answered",),
        wait=3,
    ),
    Row(
        "connection_timing",
        "wire",
        "close_with_bytes_behind_400",
        ("test_connection_close_request_with_bytes_behind_it_gets_its_own_response[same-write]",),
    ),
    Row(
        "connection_timing",
        "wire",
        "connection_close_ignored",
        (
            "test_bytes_behind_a_connection_close_request_are_not_processed[same-write]",
            "test_bytes_behind_a_connection_close_request_are_not_processed[while-running]",
        ),
        wait=3,
    ),
    # forwarded fields: believed from anyone and mapped as sent; or never believed
    Row(
        "forwarded_fields",
        "wire-options",
        "forwarded_verbatim",
        (
            "test_forwarded_fields_leave_remote_addr_an_address[x-forwarded-for-chain]",
            "test_forwarded_fields_leave_wsgi_url_scheme_http_or_https[x-forwarded-proto-ws]",
            "test_untrusted_proxy_fields_change_nothing[http]",
        ),
    ),
    Row("forwarded_fields", "wire-options", "trusted_proxy_ignored", ("test_trusted_proxy_fields_are_mapped[http]",)),
    Row(
        "forwarded_fields",
        "asgi-granian",
        "forwarded_verbatim",
        (
            "test_forwarded_fields_leave_the_http_scheme_an_http_scheme[x-forwarded-proto-ws]",
            "test_forwarded_fields_leave_the_websocket_scheme_a_websocket_scheme[x-forwarded-proto-https]",
            "test_forwarded_fields_leave_the_client_one_address[x-forwarded-for-chain]",
        ),
    ),
    Row("http1_framing", "wire", "content_length_wraps", ("test_content_length_overflow_does_not_wrap",)),
    Row("http1_framing", "wire", "chunk_size_wraps", ("test_chunk_size_overflow_does_not_wrap",)),
    Row("http1_framing", "wire", "trailers_merged", ("test_request_trailers_are_not_merged_into_headers",)),
    Row(
        "http1_framing",
        "wire",
        "te_chunked_anywhere",
        ("test_transfer_coding_not_ending_in_chunked_is_rejected[chunked-gzip]",),
    ),
    Row(
        "http1_framing",
        "wire",
        "incomplete_body_kept_open",
        ("test_incomplete_content_length_body_closes_the_connection",),
        wait=4.5,
    ),
    Row(
        "http1_framing",
        "wire",
        "first_content_length_wins",
        ("test_differing_content_lengths_are_rejected[two-lines]",),
    ),
    Row(
        "http1_framing",
        "wire",
        "unread_body_left_in_buffer",
        ("test_unread_body_does_not_desynchronise_the_connection",),
    ),
    Row("http1_framing", "wire", "chunk_bare_lf", ("test_bare_lf_in_chunked_framing_is_rejected[after-size]",)),
    Row(
        "http1_smuggling",
        "wire",
        "garbage_skipped",
        (
            "test_garbage_after_a_pipelined_request_is_rejected",
            "test_garbage_after_a_pipelined_request_closes_the_connection",
        ),
    ),
    Row(
        "http1_smuggling",
        "wire",
        "http10_te_accepted",
        ("test_http10_request_with_transfer_encoding_is_faulty_and_closed[te-only]",),
    ),
    Row(
        "http1_smuggling",
        "wire",
        "cl_te_accepted",
        ("test_cl_te_request_closes_the_connection[cl-first]", "test_te_cl_request_closes_the_connection[te-first]"),
    ),
    Row("http1_fields", "wire", "host_not_required", ("test_http11_request_without_host_is_rejected",)),
    Row("http1_fields", "wire", "two_hosts_accepted", ("test_request_with_two_host_lines_is_rejected[same-value]",)),
    Row("http1_fields", "wire", "method_case_folded", ("test_method_is_case_sensitive",)),
    Row("http1_fields", "wire", "request_line_bare_cr_kept", ("test_bare_cr_in_the_request_line_is_rejected",)),
    Row(
        "http1_fields", "wire", "nul_in_values_kept", ("test_nul_in_a_field_value_is_rejected_or_replaced_with_space",)
    ),
    Row("http1_fields", "wire", "any_field_name", ("test_field_name_that_is_not_a_token_is_rejected[brackets]",)),
    Row("http1_fields", "wire", "spaces_in_target", ("test_whitespace_inside_request_target_is_rejected",)),
    Row("http1_fields", "wire", "host_required_for_http10", ("test_http10_request_without_host_is_served",)),
    Row(
        "http1_fields",
        "wire",
        "space_before_colon",
        ("test_whitespace_between_field_name_and_colon_is_rejected[space]",),
    ),
    Row("http1_fields", "wire", "obs_fold_joined", ("test_obs_fold_is_rejected_or_replaced_with_space",)),
    Row(
        "http1_fields",
        "wire",
        "bare_cr_splits_lines",
        ("test_bare_cr_in_a_field_is_rejected_or_replaced_with_space[as-line-end]",),
    ),
    Row(
        "http1_connection",
        "wire",
        "connection_close_ignored",
        (
            "test_connection_close_request_is_answered_then_closed[lower]",
            "test_request_pipelined_after_connection_close_is_not_processed",
        ),
    ),
    Row(
        "http1_connection", "wire", "no_persistent_connections", ("test_two_sequential_requests_share_one_connection",)
    ),
    Row(
        "http1_connection",
        "wire-closing",
        "no_persistence_unannounced",
        ("test_server_that_closes_after_its_response_says_close",),
    ),
    Row(
        "http1_connection",
        "wire",
        "close_unannounced",
        ("test_connection_close_request_gets_connection_close_in_response",),
    ),
    Row(
        "http1_connection",
        "wire",
        "http10_kept_open",
        ("test_http10_request_without_keep_alive_is_closed_after_response",),
    ),
    Row(
        "http1_connection",
        "wire",
        "pipeline_reordered",
        (
            "test_pipelined_requests_are_answered_completely_and_in_order[one-write]",
            "test_pipelined_posts_keep_their_own_bodies",
        ),
    ),
    Row("http1_responses", "wire", "head_body", ("test_head_response_has_no_content[payload]",)),
    Row(
        "http1_responses",
        "wire",
        "no_content_body",
        ("test_no_content_status_has_no_body_even_if_the_app_sends_one[204]", "test_204_has_no_content_length"),
    ),
    Row(
        "http1_responses",
        "wire",
        "no_date",
        ("test_date_is_sent_in_2xx_and_4xx[app-200]", "test_date_is_sent_in_the_servers_own_400"),
    ),
    Row("http1_responses", "wire", "status_without_reason", ("test_status_line_has_sp_after_the_code[registered]",)),
    Row(
        "http1_responses", "wire", "version_echoed", ("test_response_version_is_http11_for_http1x_requests[http-1.0]",)
    ),
    Row("http1_responses", "wire", "continue_to_http10", ("test_no_1xx_is_sent_to_an_http10_client",)),
    Row(
        "http1_responses", "wire", "app_date_duplicated", ("test_app_supplied_date_or_server_is_not_duplicated[date]",)
    ),
    Row(
        "http1_responses",
        "wire",
        "expect_ignored",
        ("test_expect_100_continue_gets_100_or_a_final_status_before_the_body",),
        wait=3,
    ),
    Row("http1_responses", "wire", "head_length_zero", ("test_head_content_length_equals_the_get_length",)),
    Row("http1_responses", "wire", "upgrade_honoured", ("test_upgrade_to_an_unknown_protocol_is_ignored",)),
    Row(
        "http1_responses",
        "wire",
        "app_headers_unchecked",
        ("test_cr_lf_in_an_app_header_value_never_splits_the_response",),
    ),
    Row(
        "http1_limits",
        "wire",
        "headers_truncated",
        ("test_oversized_header_section_is_4xx_or_passed_whole[4000-fields]",),
    ),
    Row(
        "http1_limits",
        "wire",
        "target_truncated",
        ("test_overlong_request_target_is_414_or_served", "test_request_line_of_8000_octets_is_accepted"),
    ),
    Row(
        "http1_limits",
        "wire",
        "incomplete_answered",
        ("test_incomplete_request_is_waited_for_not_answered[after-request-line]",),
    ),
    # HTTP/2 at the gateway
    Row("h2_connection", "h2-proxy", "h2_push_enabled", ("test_server_never_enables_push_in_its_settings",)),
    Row(
        "h2_connection",
        "h2-proxy",
        "h2_preface_not_settings",
        ("test_server_preface_is_settings_and_our_settings_are_acked",),
    ),
    Row("h2_mapping", "asgi-h2", "http_version_2_as_1_1", ("test_asgi_http_version_is_2",)),
    Row(
        "h2_mapping",
        "asgi-h2",
        "pseudo_header_leaks",
        ("test_asgi_pseudo_headers_map_to_scope_keys_and_never_to_headers",),
    ),
    Row("h2_mapping", "asgi-h2", "host_header_last", ("test_asgi_authority_becomes_the_first_host_header",)),
    Row("h2_mapping", "rsgi-h2", "http_version_2_as_1_1", ("test_rsgi_http_version_is_2",)),
    # every observable (dimension 5): the status a WSGI error handler names, over HTTP/2 too
    Row(
        "h2_mapping", "wsgi-h2", "exc_info_ignored", ("test_wsgi_exc_info_before_headers_replaces_status_and_headers",)
    ),
    Row(
        "h2_streams",
        "asgi-h2",
        "body_loses_a_byte",
        ("test_concurrent_streams_with_interleaved_bodies_are_byte_exact",),
    ),
    Row(
        "h2_streams",
        "asgi-h2",
        "disconnect_swallowed",
        ("test_reset_reaches_the_app_as_a_disconnect[response]",),
        wait=5,
    ),
]
