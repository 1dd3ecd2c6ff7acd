"""array_record's Python API (google/array_record) on the Rust core.

Switching a program from array_record is a change of import::

    from array_record.python import array_record_module          # before
    from riegeli.array_record import array_record_module          # after
    from riegeli.array_record.python import array_record_module   # also works

`ArrayRecordWriter`, `ArrayRecordReader` and `ArrayRecordDataSource` are here too.
"""

from riegeli.array_record import array_record_data_source
from riegeli.array_record import array_record_module
from riegeli.array_record.array_record_data_source import ArrayRecordDataSource
from riegeli.array_record.array_record_module import ArrayRecordReader
from riegeli.array_record.array_record_module import ArrayRecordWriter

__all__ = (
    'ArrayRecordDataSource',
    'ArrayRecordReader',
    'ArrayRecordWriter',
    'array_record_data_source',
    'array_record_module',
)
