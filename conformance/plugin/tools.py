"""The tools a session needs that are not Python packages: h2spec, found or installed before the first check
(``conformance/h2spec/install.py``); where it cannot be, the session is incomplete (one line now, the summary,
the results' ``incomplete``, exit status 1).
"""

from __future__ import annotations

__all__ = ["ensure_tools", "say"]


def ensure_tools(config, results, items) -> None:
    """Before the first check: h2spec found or installed when a selected check needs it; otherwise the
    session is incomplete (said in the summary and the results, and the exit status is non-zero)."""
    if config.option.collectonly or not any(
        item.path.name == "test_h2spec.py" and not item.get_closest_marker("gatecheck_unsupported") for item in items
    ):
        return
    from gatecheck.conformance.h2spec.install import ensure_h2spec

    _binary, problem = ensure_h2spec(lambda line: say(config, line))
    if problem:
        reason = f"h2spec not installed — {problem}"
        say(config, f"gatecheck: {reason}; its cases will not run and the run is incomplete")
        results.incomplete.append(reason)


def say(config, line: str) -> None:
    """A progress line on the terminal now, even while pytest captures output."""
    capman = config.pluginmanager.get_plugin("capturemanager")
    reporter = config.pluginmanager.get_plugin("terminalreporter")
    if capman is None or reporter is None:
        print(line, flush=True)
        return
    with capman.global_and_fixture_disabled():
        reporter.write_line(line)
