"""Hostile servers: real processes that misbehave after readiness, for the harness's own tests."""
