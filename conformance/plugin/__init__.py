"""The conformance session as a pytest plugin: ``hooks`` (the entry point ``pytest11`` gatecheck of an installed
gatecheck; ``conformance/conftest.py`` registers it when that did not).

    options.py       command-line options; values and output paths checked before anything starts
    targets.py       the session's targets, resolved from --server / --server-cmd
    started.py       StartedServer: one started target (the session's or a check's private one)
    pool.py          the session's servers: started once, restarted when they die, stopped and cleaned up
    expectations.py  known deviations: the built-in files (conformance/expectations/*.toml) and --expectations
    stale.py         the end-of-run report of expectation entries that matched no check
    outcomes.py      what each phase of a check says, as data (passed, failed, known, error, timeout ...)
    interrupts.py    per-check and session deadlines (SIGALRM), Ctrl-C and SIGTERM
    resultsfile.py   the records: appended while running, one JSON document at the end
    finish.py        a killed session's results finished from its partial file (run by the server reaper)
    session.py       the session's state in one object
    tools.py         h2spec found or installed before the first check, else the session incomplete
    reports.py       a check's pytest report shaped by its verdict, with the broken rule and the server's log
    summary.py       the gatecheck section of the terminal summary
    outputs.py       the results opened and locked, a lost record or an unwritable JUnit XML said
    jobs.py          --jobs N: the targets checked in child pytest sessions, N at a time
    merge.py         the children's results, JUnit XML and collections merged into one run's
    hooks.py         the pytest hooks and fixtures that tie these together (inert unless asked for)
    profiles.py      the hypothesis profiles of the property checks
"""
