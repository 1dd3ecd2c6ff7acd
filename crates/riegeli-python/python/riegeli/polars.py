"""Riegeli/records files as Polars LazyFrames, through Polars' IO plugin hook.

`scan_riegeli(path)` is a `polars.LazyFrame` of the records of a Riegeli/records file, one
column per field (the Arrow columns of `RecordReader.arrow_batches()`). Polars pushes down to
the reader the columns it needs (only those are decoded, and transposed chunks decompress only
their buckets) and a row limit (reading stops there). A predicate is applied here, in Python,
after each batch is read: records are not skipped unread.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Any, Iterator, Optional, Sequence, Union

from riegeli.records.record_reader import RecordReader

if TYPE_CHECKING:
    import polars

__all__ = ('scan_riegeli',)


def _projection(columns: Optional[Sequence[str]], with_columns: Optional[Sequence[str]]) -> Optional[list[str]]:
    """The field paths to read: those of `columns` (all if None) under the top-level `with_columns`."""
    if with_columns is None:
        return None if columns is None else list(columns)
    if columns is None:
        return list(with_columns)
    wanted = set(with_columns)
    return [path for path in columns if path.split('.', 1)[0] in wanted]


def scan_riegeli(
    path: Union[str, os.PathLike[str]],
    columns: Optional[Sequence[str]] = None,
    *,
    message_type: Any = None,
    file_descriptor_set: Any = None,
    format: Optional[str] = None,
    skip_bad_records: bool = False,
    batch_size: int = 65536,
) -> polars.LazyFrame:
    """A LazyFrame of the records of the Riegeli/records file at `path` (a path or URL).

    Args:
      path: The file.
      columns: Field paths to read (`a`, `b.c`), as `RecordReader.arrow_batches()` takes
        them; None: every field.
      message_type, file_descriptor_set, format, skip_bad_records: as
        `RecordReader.arrow_batches()` takes them (by default, the record type the file's
        metadata names).
      batch_size: Rows per batch read, unless Polars asks for another size.

    Returns:
      A `polars.LazyFrame`. Its schema is read from the file now (for `tf.train.Example`
      records, from the first record). Projection (`select`) and row limits (`head`) are
      pushed down to the reader; a filter is applied in Python to each batch after it is read.
    """
    import polars as pl
    from polars.io.plugins import register_io_source

    path = os.fspath(path)
    options = dict(
        message_type=message_type,
        file_descriptor_set=file_descriptor_set,
        format=format,
        skip_bad_records=skip_bad_records,
    )
    with RecordReader(path) as reader:
        schema = pl.DataFrame(reader.arrow_batches(columns, max_rows=0, **options)).schema

    def source(
        with_columns: Optional[list[str]],
        predicate: Optional[pl.Expr],
        n_rows: Optional[int],
        polars_batch_size: Optional[int],
    ) -> Iterator[pl.DataFrame]:
        projection = _projection(columns, with_columns)
        size = polars_batch_size or batch_size
        remaining = n_rows
        with RecordReader(path) as reader:
            while remaining is None or remaining > 0:
                wanted = size if remaining is None else min(size, remaining)
                # A DataFrame of the C stream (`polars.from_arrow` makes a Series of structs).
                frame = pl.DataFrame(reader.arrow_batches(projection, batch_size=wanted, max_rows=wanted, **options))
                if frame.height == 0:
                    return
                if with_columns is not None:
                    frame = frame.select(with_columns)
                if predicate is not None:
                    frame = frame.filter(predicate)
                if remaining is not None:
                    frame = frame.head(remaining)
                    remaining -= frame.height
                yield frame

    return register_io_source(source, schema=schema)
