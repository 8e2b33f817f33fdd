"""The rule layer: what a check declares and may say.

- ``markers``: ``@spec(clause, level)``, ``@interfaces``, ``@needs`` and their validation
- ``levels``: the levels table (``conformance/levels/<check file>.toml``): each check's sentence, level, answers
- ``dimensions`` and ``observables``: the tables checks parametrize over (app shapes, byte classes, connection
  states, every observable of a rule)
- ``results``: ``not_supported`` and the check id

Rules of this package: it imports the servers' capability names and pytest, nothing of the plugin or the checks.
"""
