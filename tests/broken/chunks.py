"""Chunk helpers shared by the broken ASGI and RSGI apps."""

from __future__ import annotations

__all__ = ["reordered"]


def reordered(chunks: list) -> list:
    """The non-empty chunks with the first two swapped; a lone chunk comes out second half first (so any
    body of two bytes or more comes back out of order, however the server split it)."""
    chunks = [c for c in chunks if c]
    if len(chunks) >= 2:
        return [chunks[1], chunks[0]] + chunks[2:]
    if chunks and len(chunks[0]) >= 2:
        half = len(chunks[0]) // 2
        return [chunks[0][half:], chunks[0][:half]]
    return chunks
