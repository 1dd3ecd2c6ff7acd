"""Apache Beam I/O for Riegeli/records and ArrayRecord files (needs `apache-beam`).

Records are `bytes`::

    import apache_beam as beam
    from riegeli import beam as riegeli_beam

    with beam.Pipeline() as p:
        records = p | riegeli_beam.ReadFromArrayRecord('gs://bucket/data-*.array_record')
        records | riegeli_beam.WriteToRiegeli('gs://bucket/out/part', file_name_suffix='.riegeli')

Files are opened through Beam's filesystems (local, GCS, S3, ...). Reading splits each file
into byte ranges: a range reads the records of the chunks that begin in it, found from the
64 KiB block header where it starts, so a file is read by many workers without reading it from
its beginning, and Beam may split a range again while it is read (dynamic work rebalancing):
each chunk is claimed through the range tracker before its records are returned. An
ArrayRecord file is a Riegeli/records file too; its footer is skipped. `RiegeliSource` is the
`FileBasedSource` under both readers, for `beam.io.Read(RiegeliSource(pattern))`.
"""

from __future__ import annotations

from typing import Optional

import apache_beam as beam
from apache_beam.coders import coders
from apache_beam.io import filebasedsink
from apache_beam.io import filebasedsource
from apache_beam.io import iobase
from apache_beam.io.filesystem import CompressionTypes
from apache_beam.io.range_trackers import OffsetRangeTracker

import riegeli
from riegeli.array_record import ArrayRecordWriter

__all__ = (
    'ArrayRecordSink',
    'ReadFromArrayRecord',
    'ReadFromRiegeli',
    'RiegeliSink',
    'RiegeliSource',
    'WriteToArrayRecord',
    'WriteToRiegeli',
)


class RiegeliSource(filebasedsource.FileBasedSource):
    """The records (`bytes`) of the Riegeli/records or ArrayRecord files matching a pattern.

    `desired_bundle_size` (bytes), if given, replaces the bundle size the runner asks for when
    the files are first split (Beam asks for at least 1 MiB); `min_bundle_size` bounds it
    from below, as for any `FileBasedSource`.
    """

    def __init__(
        self,
        file_pattern: str,
        min_bundle_size: int = 0,
        desired_bundle_size: Optional[int] = None,
        validate: bool = True,
    ) -> None:
        super().__init__(
            file_pattern,
            min_bundle_size=min_bundle_size,
            compression_type=CompressionTypes.UNCOMPRESSED,
            splittable=True,
            validate=validate,
        )
        self._desired_bundle_size = desired_bundle_size

    def split(self, desired_bundle_size=None, start_position=None, stop_position=None):
        if self._desired_bundle_size:
            desired_bundle_size = self._desired_bundle_size
        return super().split(desired_bundle_size, start_position, stop_position)

    def default_output_coder(self):
        return coders.BytesCoder()

    def read_records(self, file_name, range_tracker):
        stop = range_tracker.stop_position()
        # The tracker's stop only moves back (when Beam splits the range), so reading may stop
        # at the first one; the claims below stop at the current one.
        end = None if stop == OffsetRangeTracker.OFFSET_INFINITY else stop
        with self.open_file(file_name) as file:
            # Beam's file objects can seek, which set_byte_range needs (an assumed_pos would
            # exclude it, as in Google's module).
            reader = riegeli.RecordReader(file, owns_src=False)
            try:
                reader.set_byte_range(range_tracker.start_position(), end)
                chunk_begin = -1
                for record in reader.read_records():
                    begin = reader.last_pos.chunk_begin
                    if begin != chunk_begin:
                        if not range_tracker.try_claim(begin):
                            return
                        chunk_begin = begin
                    yield record
            finally:
                reader.close()


class ReadFromRiegeli(beam.PTransform):
    """Reads the records (`bytes`) of the Riegeli/records files matching `file_pattern`."""

    def __init__(
        self,
        file_pattern: str,
        min_bundle_size: int = 0,
        desired_bundle_size: Optional[int] = None,
        validate: bool = True,
    ) -> None:
        super().__init__()
        self._source = RiegeliSource(file_pattern, min_bundle_size, desired_bundle_size, validate)

    def expand(self, pbegin):
        return pbegin | iobase.Read(self._source)


class ReadFromArrayRecord(ReadFromRiegeli):
    """Reads the records (`bytes`) of the ArrayRecord files matching `file_pattern`, split
    into byte ranges as Riegeli/records files are (the footer is skipped)."""


class RiegeliSink(filebasedsink.FileBasedSink):
    """Writes each shard as a Riegeli/records file; `options` are RecordWriter's."""

    def __init__(
        self,
        file_path_prefix: str,
        file_name_suffix: str = '',
        num_shards: int = 0,
        shard_name_template: Optional[str] = None,
        options: str = '',
    ) -> None:
        super().__init__(
            file_path_prefix,
            coder=coders.BytesCoder(),
            file_name_suffix=file_name_suffix,
            num_shards=num_shards,
            shard_name_template=shard_name_template,
            mime_type='application/octet-stream',
            compression_type=CompressionTypes.UNCOMPRESSED,
        )
        self.options = options

    def _writer(self, file):
        return riegeli.RecordWriter(file, owns_dest=False, assumed_pos=0, options=self.options)

    def open(self, temp_path):
        file = super().open(temp_path)
        try:
            return _Shard(file, self._writer(file))
        except BaseException:
            file.close()
            raise

    def write_record(self, file_handle, value):
        file_handle.writer.write_record(value)

    def close(self, file_handle):
        # The writer finishes the file before Beam's handle is closed.
        try:
            file_handle.writer.close()
        finally:
            file_handle.file.close()


class ArrayRecordSink(RiegeliSink):
    """Writes each shard as an ArrayRecord file; `options` are ArrayRecordWriter's."""

    def __init__(
        self,
        file_path_prefix: str,
        file_name_suffix: str = '',
        num_shards: int = 0,
        shard_name_template: Optional[str] = None,
        options: str = 'group_size:1',
    ) -> None:
        super().__init__(file_path_prefix, file_name_suffix, num_shards, shard_name_template, options)

    def _writer(self, file):
        return ArrayRecordWriter(file, self.options)

    def write_record(self, file_handle, value):
        # Bytes-like values as bytes; anything else (str, int, ...) raises TypeError, as
        # RecordWriter.write_record does (bytes(5) would be five zero bytes).
        file_handle.writer.write(value if type(value) is bytes else bytes(memoryview(value)))


class _Shard:
    """The handle of a shard being written: Beam's file and the writer on it."""

    __slots__ = ('file', 'writer')

    def __init__(self, file, writer) -> None:
        self.file = file
        self.writer = writer


class WriteToRiegeli(beam.PTransform):
    """Writes the records (`bytes`) as Riegeli/records files, one per shard (named as by
    `beam.io.WriteToText`); the output is the list of file names."""

    _sink_class = RiegeliSink

    def __init__(
        self,
        file_path_prefix: str,
        file_name_suffix: str = '',
        num_shards: int = 0,
        shard_name_template: Optional[str] = None,
        options: str = '',
    ) -> None:
        super().__init__()
        self._sink = self._sink_class(file_path_prefix, file_name_suffix, num_shards, shard_name_template, options)

    def expand(self, pcoll):
        return pcoll | iobase.Write(self._sink)


class WriteToArrayRecord(WriteToRiegeli):
    """Writes the records (`bytes`) as ArrayRecord files, one per shard; `options` are
    ArrayRecordWriter's (`group_size:1` by default, for random access to each record)."""

    _sink_class = ArrayRecordSink

    def __init__(
        self,
        file_path_prefix: str,
        file_name_suffix: str = '',
        num_shards: int = 0,
        shard_name_template: Optional[str] = None,
        options: str = 'group_size:1',
    ) -> None:
        super().__init__(file_path_prefix, file_name_suffix, num_shards, shard_name_template, options)
