"""A server its memory bound killed is told with where its memory went (``plugin/inflight.py`` rule 3): the
check during which its resident memory first rose fast, the check before it, and the largest rises. Recorded
rises, no server: the kill itself is ``tests/servers/test_memory_bound.py``'s."""

from __future__ import annotations

from types import SimpleNamespace

from gatecheck.conformance.plugin import inflight

MIB = 1 << 20


class _Process:  # weak-referenceable, as the real ServerProcess
    pass


def _handle(killed: bool):
    return SimpleNamespace(process=_Process(), memory_exceeded="memory bound: ..." if killed else None)


def test_a_killed_server_names_where_its_memory_began_to_grow():
    handle = _handle(killed=True)
    inflight._RISES[handle.process] = [
        ("test_a", 30 * MIB, 31 * MIB),
        ("test_overflow", 31 * MIB, 32 * MIB),  # the request that leaves a thread growing after its check
        ("test_next", 32 * MIB, 298 * MIB),
        ("test_later", 298 * MIB, 560 * MIB),
    ]
    story = inflight._memory_story(handle)
    assert "first rose by more than 64.0 MiB in one check during test_next (32.0 MiB → 298.0 MiB)" in story
    assert "right after test_overflow." in story
    assert story.index("test_next 32.0 MiB → 298.0 MiB") < story.index("test_later 298.0 MiB → 560.0 MiB")


def test_a_server_not_killed_by_its_bound_tells_no_story():
    handle = _handle(killed=False)
    inflight._RISES[handle.process] = [("test_next", 32 * MIB, 298 * MIB)]
    assert inflight._memory_story(handle) == ""
