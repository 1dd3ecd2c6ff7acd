"""The native part of riegeli (Rust). Import the classes from `riegeli`.

Readers (`RecordReader`, `ArrayRecordReader`, and so `ArrayRecordDataSource`) also take the
URL of an object in object storage, as a `str`, wherever they take a path:
`s3://bucket/key` (also `s3a://`), `gs://bucket/key`, `az://container/blob` (also `azure://`,
`abfs(s)://`, `adl://`), or `http(s)://host/path` (any server answering HEAD and ranged
GETs). The object is read by ranged requests through a cache, without the GIL: sequential
reads fetch large windows ahead, batch reads of an ArrayRecord file fetch exactly the chunks
they need, concurrently. Credentials, regions and endpoints come from the environment as the
Rust `object_store` crate reads them: `AWS_ACCESS_KEY_ID`, `AWS_SECRET_ACCESS_KEY`,
`AWS_SESSION_TOKEN`, `AWS_REGION`, `AWS_ENDPOINT` (an S3-compatible server),
`AWS_ALLOW_HTTP=true` (a plain-HTTP endpoint), ...; `GOOGLE_SERVICE_ACCOUNT` (a key file),
`GOOGLE_APPLICATION_CREDENTIALS`, ...; `AZURE_STORAGE_ACCOUNT_NAME`,
`AZURE_STORAGE_ACCOUNT_KEY`, ... Writers take local paths or file objects only. A worker
process forked after this one read URLs reads them too (readers opened in the worker).
"""

import os
from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import Any, BinaryIO, Generic, Optional, SupportsIndex, TypeVar, Union, final, overload

from google.protobuf.message import Message

from riegeli.records.records_metadata_pb2 import RecordsMetadata
from riegeli.records.skipped_region import SkippedRegion

_M = TypeVar('_M', bound=Message)
_T = TypeVar('_T')
_Buffer = Union[bytes, bytearray, memoryview]
_Source = Union[BinaryIO, str, bytes, 'os.PathLike[str]', 'os.PathLike[bytes]']

__all__ = [
    'RecordPosition',
    'RecordReader',
    'RecordIterator',
    'SearchProbe',
    'RecordWriter',
    'ArrayRecordReader',
    'ArrayRecordWriter',
    'ArrayRecordShards',
    'PendingRead',
    'ArrowBatches',
    'EXISTENCE_ONLY',
    'byte_ranges',
    '__version__',
]

EXISTENCE_ONLY: int
__version__: str

@final
class RecordPosition:
    """A position of a record: the beginning of its chunk and its index in the chunk."""

    def __new__(cls, chunk_begin: int, record_index: int) -> RecordPosition: ...
    @property
    def chunk_begin(self) -> int: ...
    @property
    def record_index(self) -> int: ...
    @property
    def numeric(self) -> int: ...
    def to_bytes(self) -> bytes: ...
    @staticmethod
    def from_bytes(serialized: bytes) -> RecordPosition: ...
    @staticmethod
    def from_str(serialized: Union[str, bytes]) -> RecordPosition: ...
    def __lt__(self, other: RecordPosition, /) -> bool: ...
    def __le__(self, other: RecordPosition, /) -> bool: ...
    def __gt__(self, other: RecordPosition, /) -> bool: ...
    def __ge__(self, other: RecordPosition, /) -> bool: ...
    def __hash__(self) -> int: ...

@final
class RecordIterator(Iterator[_T], Generic[_T]):
    def __iter__(self) -> RecordIterator[_T]: ...
    def __next__(self) -> _T: ...

@final
class SearchProbe:
    """What RecordReader.search() passes to its test: the record being judged."""

    def read_record(self) -> bytes: ...
    def read_message(self, message_type: type[_M]) -> _M: ...

@final
class RecordWriter:
    """Writes records to a Riegeli/records file.

    dest is a binary file object (write and flush; close if owns_dest) or a local path (str or
    os.PathLike), created or truncated and written natively. URLs are not written to: write
    locally (or to a file object) and upload. As Google's, a file object is written from the
    position tell() gives, or from 0 if its seekable() is False (a pipe), or from assumed_pos
    if given (tell() is then not called); it is never asked to seek.

    Records are bytes-like objects (bytes, bytearray, memoryview, ...): anything else, str
    included, raises TypeError. metadata (a RecordsMetadata) or serialized_metadata (bytes,
    written as given, even if they do not parse), not both (TypeError), is written after the
    file signature. An option string that does not parse raises InvalidArgumentError with
    C++'s message. Once writing has raised (an exception of the file object, ...), the writer
    has failed: later writes and every close() raise the same exception again. pos and
    last_pos still answer after close().
    """

    def __new__(
        cls,
        dest: _Source,
        *,
        owns_dest: bool = True,
        assumed_pos: Optional[int] = None,
        min_buffer_size: int = 4096,
        max_buffer_size: int = 65536,
        buffer_size: Optional[int] = None,
        options: Union[str, bytes] = '',
        metadata: Optional[RecordsMetadata] = None,
        serialized_metadata: Optional[_Buffer] = None,
    ) -> RecordWriter: ...
    def __enter__(self) -> RecordWriter: ...
    def __exit__(self, exc_type: Any, exc_value: Any, traceback: Any) -> bool: ...
    def close(self) -> None: ...
    @property
    def dest(self) -> Any: ...
    def write_record(self, record: _Buffer) -> None: ...
    def write_message(self, record: Message) -> None: ...
    def write_records(self, records: Iterable[_Buffer]) -> None: ...
    def write_messages(self, records: Iterable[Message]) -> None: ...
    def flush(self, flush_type: Any = ...) -> None:
        """flush_type: a riegeli.FlushType (default FlushType.FROM_PROCESS)."""
    def estimated_size(self) -> int: ...
    def io_stats(self) -> dict[str, int]:
        """riegeli-rs: `{"requests": ..., "bytes": ...}` uploaded writing an object (zeros for a file)."""
    @property
    def pos(self) -> RecordPosition: ...
    @property
    def last_pos(self) -> RecordPosition: ...

@final
class RecordReader:
    """Reads records from a Riegeli/records file.

    src is a binary file object (read; close if owns_src), a path (str or os.PathLike), read
    natively, or the URL of an object (a str: `s3://bucket/key`, `gs://...`, `az://...`,
    `https://...`; see the module's docstring for credentials), read natively by ranged
    requests. A missing file or object raises FileNotFoundError (the object's URL in the
    message), other failures to open one OSError; `assumed_pos` applies to file objects only.
    As Google's, a file object is read from the position tell() gives and asked to seek when
    needed, unless its seekable() is False (a pipe: read from position 0) or assumed_pos is
    given (read from there); then it is read sequentially, supports_random_access is False,
    and seek(), size() and the searches raise UnimplementedError.

    As in Google's module: damage raises InvalidArgumentError (CorruptedFileError, which is a
    DataLossError too) unless recovery is given (then it is
    skipped and recovery is called with a SkippedRegion; raising StopIteration there ends
    reading, any other exception propagates). A file that ends inside a chunk reads as
    ending there, and close() raises CorruptedFileError ('Truncated Riegeli/records file,
    incomplete chunk at P with length N', as C++). A record that does not parse as the
    message type asked for raises protobuf's DecodeError, or with recovery is skipped too
    (read_message(s), search_for_message and read_metadata). Once a read has raised (a
    damaged file, an exception of the file object, a seek past the end of the file), the
    reader has failed: every later operation, close() included, raises the same exception
    again. pos still answers after close().
    """

    def __new__(
        cls,
        src: _Source,
        *,
        owns_src: bool = True,
        assumed_pos: Optional[int] = None,
        min_buffer_size: int = 4096,
        max_buffer_size: int = 65536,
        buffer_size: Optional[int] = None,
        field_projection: Optional[Iterable[Iterable[int]]] = None,
        recovery: Optional[Callable[[SkippedRegion], Any]] = None,
    ) -> RecordReader: ...
    def __enter__(self) -> RecordReader: ...
    def __exit__(self, exc_type: Any, exc_value: Any, traceback: Any) -> bool: ...
    def close(self) -> None: ...
    @property
    def src(self) -> Any: ...
    @property
    def supports_random_access(self) -> bool: ...
    def check_file_format(self) -> bool: ...
    def read_metadata(self) -> Optional[RecordsMetadata]: ...
    def read_serialized_metadata(self) -> Optional[bytes]: ...
    def read_record(self) -> Optional[bytes]: ...
    def read_message(self, message_type: type[_M]) -> Optional[_M]: ...
    def read_records(self) -> RecordIterator[bytes]: ...
    def read_messages(self, message_type: type[_M]) -> RecordIterator[_M]: ...
    def set_field_projection(self, field_projection: Optional[Iterable[Iterable[int]]]) -> None: ...

    def arrow_batches(
        self,
        columns: Optional[Sequence[str]] = None,
        *,
        batch_size: int = 65536,
        message_type: Any = None,
        file_descriptor_set: Any = None,
        format: Optional[str] = None,
        skip_bad_records: bool = False,
        max_rows: Optional[int] = None,
    ) -> ArrowBatches:
        """riegeli-rs: the records from the current one to the end, read by this reader (which is
        lent to the stream until it is consumed or dropped), as Arrow record batches, one column per field.

        Returns an object implementing the Arrow PyCapsule stream interface
        (`__arrow_c_stream__`): give it to `pyarrow.RecordBatchReader.from_stream`,
        `polars.from_arrow`, DuckDB, ... which decode the batches as they read them, without
        the GIL.

        Args:
          columns: Field paths to read (`a`, `b.c`); None: every field. Only those are
            decoded, and transposed chunks decompress only their buckets.
          batch_size: Rows per batch (the last may have fewer).
          message_type: The record type: a message class, or its full name with
            `file_descriptor_set`. By default, the type the file's metadata names.
          file_descriptor_set: A `FileDescriptorSet` (message or serialized) defining
            `message_type`.
          format: 'proto' (the default when the metadata names a type or `message_type` is
            given) or 'example' (`tf.train.Example` records: a list column per feature,
            inferred from the first batch; `columns` are feature names).
          skip_bad_records: Leave out records that do not decode (counted in
            `skipped_records`) rather than failing with an `InvalidArgumentError` naming the
            record (its index, and position in a Riegeli/records file).
          max_rows: riegeli-rs: at most this many rows; reading stops there.
        """

    def to_arrow(
        self,
        columns: Optional[Sequence[str]] = None,
        *,
        batch_size: int = 65536,
        message_type: Any = None,
        file_descriptor_set: Any = None,
        format: Optional[str] = None,
        skip_bad_records: bool = False,
        max_rows: Optional[int] = None,
    ) -> Any:
        """riegeli-rs: `arrow_batches(...)` read into a `pyarrow.Table` (pyarrow needed).

        The table's chunks have at most `batch_size` rows: a transposed chunk's rows come as a
        chunk of their own rather than copied into one with others'.
        """
    def set_byte_range(self, start: int, end: Optional[int] = None) -> None:
        """riegeli-rs: reads only the records of the chunks that begin in `[start, end)`.

        Byte offsets of the file (`end=None`: to its end). Moves to the first such chunk,
        found from the block header at `start` without reading the file before it; the
        ranges of any partition of a file read each of its records exactly once, which is
        how workers split a file (see `byte_ranges`).
        """
    def seek(self, pos: RecordPosition) -> None:
        """A position past the end of the file raises InvalidArgumentError
        (`Position P exceeds file size: S`)."""
    def seek_numeric(self, pos: int) -> None: ...
    def seek_back(self) -> bool: ...
    def size(self) -> int: ...
    @property
    def pos(self) -> RecordPosition: ...
    @property
    def last_pos(self) -> RecordPosition: ...
    def search(self, test: Callable[[SearchProbe], Optional[int]]) -> Optional[int]: ...
    def search_for_record(self, test: Callable[[bytes], Optional[int]]) -> Optional[int]: ...
    def search_for_message(self, message_type: type[_M], test: Callable[[_M], Optional[int]]) -> Optional[int]: ...

def byte_ranges(size: int, target: int) -> list[tuple[int, int]]:
    """riegeli-rs: `(start, end)` byte ranges of about `target` bytes (whole 64 KiB blocks)
    partitioning a file of `size` bytes, for `RecordReader.set_byte_range`."""

@final
class ArrayRecordWriter:
    """Writes an ArrayRecord file (array_record's `array_record_module.ArrayRecordWriter`).

    `options` is array_record's writer option string (`group_size:1`, `transpose`,
    `zstd:3`, `brotli:6`, `snappy`, `uncompressed`, `window_log:20`,
    `pad_to_block_boundary:true`, ...); a bad one raises `ValueError` with C++'s message. As C++'s Python
    module, the file records `max_parallelism:1` in its writer options (records are encoded
    in the calling thread, without the GIL, in batches; the file is written on an I/O
    thread). Other keyword arguments are accepted and ignored, as C++.

    `path` is a local path: URLs are not written to (write locally and upload).

    A file that cannot be created does not raise here: `ok()` is then `False`, and `write()`
    and `close()` raise `RuntimeError` with the reason. Writing after `close()` raises
    `RuntimeError('Object closed')`. A writer dropped without `close()` still finishes its
    file (C++ leaves it unfinished).
    """

    def __new__(
        cls, path: Union[str, 'os.PathLike[str]', BinaryIO], options: str = '', **kwargs: Any
    ) -> ArrayRecordWriter:
        """`path` may also be a binary file object (riegeli-rs), written from its current
        position on and not closed by `close()`."""
    def write(self, record: bytes) -> None:
        """Writes one record (`bytes` only, as C++: `str`, `bytearray`, `int` raise `TypeError`).

        Records are handed to the encoder in batches: an error of the file may be raised by
        a later `write()` or by `close()`.
        """
    def close(self) -> None:
        """Finishes the file (last chunk, footer, postscript); again: no effect."""
    def io_stats(self) -> dict[str, int]:
        """riegeli-rs: `{"requests": ..., "bytes": ...}` uploaded writing an object (zeros for a file)."""
    def ok(self) -> bool:
        """`True` while open and no error happened."""
    def is_open(self) -> bool:
        """`False` once `close()` was called."""

@final
class ArrayRecordReader:
    """Reads an ArrayRecord file (array_record's `array_record_module.ArrayRecordReader`).

    `options` is array_record's reader option string:

        options ::= option? ("," option?)*
        option ::= "readahead_buffer_size" ":" ("auto" | bytes)
                 | "max_parallelism" ":" ("auto" | 0..2147483647)
                 | "index_storage_option" ":" ("" | "in_memory" | "offloaded")
                 | "footer_prefetch_bytes" ":" ("auto" | bytes)
                 | "scan_fallback" (":" ("true" | "false"))?

    where bytes is a real with an optional suffix [BkKMGTPE], at most 1G. An unknown option
    or a bad value raises `ValueError` with C++'s message (which lists C++'s options).

    - `readahead_buffer_size` (default 16M): how many bytes of records `read()` decodes
      ahead, in parallel (0: one chunk at a time, best for random access).
    - `max_parallelism` (default `auto`: the number of cores): threads decoding chunks in
      the batch reads (`read(indices)`, `read(begin, end)`, `read_all()`); 0 or 1 decode in
      the calling thread.
    - `index_storage_option` and `footer_prefetch_bytes`: checked as C++ does (offloaded
      needs `footer_prefetch_bytes:0`) but without effect: the index is always in memory.
    - `scan_fallback` (riegeli-rs's option, not array_record's: its reader rejects it): a
      file without a usable footer and postscript is read by a scan of its chunks instead of
      failing (see below).

    Keyword arguments (`file_reader_buffer_size`, `file_options`) are accepted and ignored.

    `path` is a local path or the URL of an object (a str: `s3://bucket/key`, `gs://...`,
    `az://...`, `https://...`; see the module's docstring for credentials), read by ranged
    requests: opening reads only the end of the object (footer and index), and each batch
    read fetches exactly the chunks it decodes, concurrently (`read()`: those of its
    read-ahead).

    As in C++, a file or object that cannot be opened (missing, no access, or without a usable
    ArrayRecord footer and postscript: cut short by an interrupted copy, damaged, or a plain
    Riegeli/records file) does not raise here: `ok()` is then `False` and every read, `seek()`
    and `close()` raise `RuntimeError` with the reason and the path or URL. With
    `scan_fallback`, a file without a usable footer is indexed by scanning it instead: the
    records there are. Every read releases the GIL; batch reads decode chunks on several
    threads and build their list at once.
    """

    def __new__(cls, path: Union[str, 'os.PathLike[str]'], options: str = '', **kwargs: Any) -> ArrayRecordReader: ...
    def ok(self) -> bool:
        """`True` while open and not failed."""
    def close(self) -> None:
        """Closes the file; raises `RuntimeError` if opening had failed."""
    def is_open(self) -> bool:
        """`False` once `close()` was called."""
    def io_stats(self) -> dict[str, int]:
        """riegeli-rs: what reading an object cost in this process: `requests`, `bytes`,
        `cache_hits`, `cache_bytes`, `cache_misses`, `cache_damaged`, `retries`, `hedges`,
        `refetches` (all 0 for a local file)."""
    def num_records(self) -> int:
        """The number of records (0 once closed or if opening failed)."""
    def record_index(self) -> int:
        """The index of the record the next `read()` returns."""
    def writer_options_string(self) -> Optional[str]:
        """The writer options stored in the file, or `None`."""
    def seek(self, index: int) -> None:
        """Makes `index` (clamped to `[0, num_records()]`, negative meaning the end) the next to read."""
    @overload
    def read(self) -> bytes:
        """The next record; `IndexError` at the end."""
    @overload
    def read(self, indices: Sequence[int]) -> list[bytes]:
        """The records at these indices, in their order; `RuntimeError` if one is out of range."""
    @overload
    def read(self, begin: int, end: int) -> list[bytes]:
        """The records in `[begin, end)` (negative: from the end); `IndexError` if empty or out of range."""
    def read_all(self) -> list[bytes]:
        """Every record (the position of `read()` does not move)."""

    def arrow_batches(
        self,
        columns: Optional[Sequence[str]] = None,
        *,
        indices: Union[range, Sequence[int], None] = None,
        batch_size: int = 65536,
        message_type: Any = None,
        file_descriptor_set: Any = None,
        format: Optional[str] = None,
        skip_bad_records: bool = False,
        max_rows: Optional[int] = None,
    ) -> ArrowBatches:
        """riegeli-rs: all records (or those of `indices`: a `range`, or indices in any order),
        read by a reader of their own, as Arrow record batches, one column per field.

        Returns an object implementing the Arrow PyCapsule stream interface
        (`__arrow_c_stream__`): give it to `pyarrow.RecordBatchReader.from_stream`,
        `polars.from_arrow`, DuckDB, ... which decode the batches as they read them, without
        the GIL.

        Args:
          columns: Field paths to read (`a`, `b.c`); None: every field. Only those are
            decoded, and transposed chunks decompress only their buckets.
          batch_size: Rows per batch (the last may have fewer).
          message_type: The record type: a message class, or its full name with
            `file_descriptor_set`. By default, the type the file's metadata names.
          file_descriptor_set: A `FileDescriptorSet` (message or serialized) defining
            `message_type`.
          format: 'proto' (the default when the metadata names a type or `message_type` is
            given) or 'example' (`tf.train.Example` records: a list column per feature,
            inferred from the first batch; `columns` are feature names).
          skip_bad_records: Leave out records that do not decode (counted in
            `skipped_records`) rather than failing with an `InvalidArgumentError` naming the
            record (its index, and position in a Riegeli/records file).
          max_rows: riegeli-rs: at most this many rows; reading stops there.
        """

    def to_arrow(
        self,
        columns: Optional[Sequence[str]] = None,
        *,
        indices: Union[range, Sequence[int], None] = None,
        batch_size: int = 65536,
        message_type: Any = None,
        file_descriptor_set: Any = None,
        format: Optional[str] = None,
        skip_bad_records: bool = False,
        max_rows: Optional[int] = None,
    ) -> Any:
        """riegeli-rs: `arrow_batches(...)` read into a `pyarrow.Table` (pyarrow needed)."""

@final
class ArrayRecordShards:
    """The records of several ArrayRecord files, each the records `[start, end)` of its file,
    numbered one after the other by keys `0..len()`: what `ArrayRecordDataSource` and
    `riegeli.grain` read through (riegeli-rs's, not array_record's).

    Files (paths or URLs, as `ArrayRecordReader` takes them, opened with `options`, its
    option grammar) are opened on first use, and again in a process forked since.
    `on_open(index, writer_options)` is called with each file opened; what it raises is
    raised by the read that opened the file. A batch (`read_batch`) reads each file's part
    as one batch read (each chunk decoded once), the files concurrently, without the GIL.

    A key that is not an integer raises `TypeError`, one outside `[0, len())` raises
    `ValueError`, a file that cannot be opened or read raises `RuntimeError`.
    """

    def __new__(
        cls,
        paths: Sequence[Union[str, 'os.PathLike[str]']],
        ranges: Sequence[tuple[int, int]],
        options: str = '',
        on_open: Optional[Callable[[int, Optional[str]], object]] = None,
    ) -> ArrayRecordShards: ...
    def __len__(self) -> int: ...
    def locate(self, key: SupportsIndex) -> tuple[int, int]:
        """The file of `key` and the record's index in that file."""
    def read(self, key: SupportsIndex) -> bytes:
        """The record of `key` (its chunk stays decoded for the next key of the same file)."""
    def read_batch(self, keys: Sequence[SupportsIndex]) -> list[bytes]:
        """The records of `keys` (any order, repeats allowed), in order."""
    def start_read(self, keys: Sequence[SupportsIndex]) -> PendingRead:
        """Starts `read_batch(keys)` on a thread of its own (keys are checked here)."""
    def is_open(self, shard: int) -> bool:
        """Whether file `shard` is open in this process."""
    def close(self) -> None:
        """Closes the files open in this process (they open again when read)."""

    def arrow_batches(
        self,
        columns: Optional[Sequence[str]] = None,
        *,
        indices: Union[range, Sequence[int], None] = None,
        batch_size: int = 65536,
        message_type: Any = None,
        file_descriptor_set: Any = None,
        format: Optional[str] = None,
        skip_bad_records: bool = False,
        max_rows: Optional[int] = None,
    ) -> ArrowBatches:
        """riegeli-rs: the records of `indices` (keys; None: all) as Arrow record batches,
        read by readers of their own (see `ArrayRecordReader.arrow_batches`)."""

@final
class PendingRead:
    """A batch read of `ArrayRecordShards.start_read`, going on on a thread of its own (in a
    process forked since, `result()` reads the batch itself)."""

    def result(self) -> list[bytes]:
        """The records, in the order of the keys, waiting for them without the GIL; once only
        (`RuntimeError` the second time)."""

@final
class ArrowBatches:
    """riegeli-rs: Arrow record batches of records, read once through the Arrow PyCapsule
    stream interface."""

    def __arrow_c_stream__(self, requested_schema: Optional[object] = None) -> object:
        """A PyCapsule "arrow_array_stream" of the batches; once only (`RuntimeError` after).
        `requested_schema` is ignored."""

    @property
    def skipped_records(self) -> int:
        """How many records were left out as bad so far (`skip_bad_records=True`)."""

    @property
    def skipped_errors(self) -> list[str]:
        """Why, for the first ten of them."""

    @property
    def consumed(self) -> bool:
        """Whether the stream was handed out."""

    def _take_error(self) -> Optional[BaseException]: ...
