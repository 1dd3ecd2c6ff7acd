"""Shared fixtures of the riegeli Python tests."""

from __future__ import annotations

import io

import pytest

import riegeli


def write_file(records, options: str = '', **kwargs) -> bytes:
    """Records written by our RecordWriter into memory."""
    dest = io.BytesIO()
    with riegeli.RecordWriter(dest, owns_dest=False, options=options, **kwargs) as writer:
        writer.write_records(records)
    return dest.getvalue()


@pytest.fixture
def records() -> list[bytes]:
    return [b'record %d ' % i * (i % 7) for i in range(2000)]
