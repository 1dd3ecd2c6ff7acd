"""RecordPosition: where a record is in a Riegeli/records file."""

from __future__ import annotations

from riegeli._riegeli import RecordPosition

__all__ = ('RecordPosition',)
