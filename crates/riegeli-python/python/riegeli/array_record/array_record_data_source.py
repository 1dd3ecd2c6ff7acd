"""array_record's `ArrayRecordDataSource`: random access to the records of ArrayRecord files.

A data source (as Grain and PyTorch use them) over one or more files::

    class RandomAccessDataSource(Protocol, Generic[T]):
        def __len__(self) -> int: ...
        def __getitem__(self, record_key: SupportsIndex) -> T: ...
        def __getitems__(self, record_keys: Sequence[SupportsIndex]) -> Sequence[T]: ...

Record keys number the records of all files (or of the part of each file asked for) one after
the other. Readers are opened on first use, and again in each process a pickled data source
reaches (Grain's worker processes).

Files may be objects in object storage, named by URL strings (`s3://bucket/key`, `gs://...`,
`az://...`, `https://host/path`, also with `[start:end]`): they are kept as given (never made
`pathlib.Path`s, which would collapse the `//`) and read by `ArrayRecordReader` with ranged
requests, credentials and endpoints coming from the environment (`AWS_ACCESS_KEY_ID`, ...).
Workers receive the data source pickled and open their own readers, forked or spawned.
"""

from __future__ import annotations

import dataclasses
import functools
import hashlib
import logging
import os
import pathlib
import re
import typing
from concurrent import futures
from typing import Any, Callable, Iterator, List, Mapping, Optional, Protocol, Sequence, SupportsIndex, Tuple, TypeVar, Union

from riegeli import _riegeli
from riegeli.array_record import array_record_module

__all__ = ('ArrayRecordDataSource', 'FileInstruction')

_T = TypeVar('_T')

# Threads that open files to count their records.
_NUM_THREADS_COMPUTING_NUM_RECORDS = 64

_log = logging.getLogger(__name__)


@typing.runtime_checkable
class FileInstruction(Protocol):
    """What TFDS's FileInstruction has: read `take` records of `filename` from `skip` on."""

    filename: str
    skip: int
    take: int
    examples_in_shard: int


# A path, a URL (a str, passed on unchanged) or a FileInstruction.
PathLikeOrFileInstruction = Union[str, 'os.PathLike[str]', FileInstruction]
ArrayRecordDataSourcePaths = Union[PathLikeOrFileInstruction, Sequence[PathLikeOrFileInstruction]]


def _run_in_parallel(
    function: Callable[..., _T],
    list_of_kwargs_to_function: Sequence[Mapping[str, Any]],
    num_workers: int,
) -> List[_T]:
    """`function` called with each kwargs, on `num_workers` threads; results in order."""
    if num_workers < 1:
        raise ValueError('num_workers must be >=1 for parallelism.')
    if num_workers == 1 or len(list_of_kwargs_to_function) == 1:
        return [function(**kwargs) for kwargs in list_of_kwargs_to_function]
    with futures.ThreadPoolExecutor(num_workers) as executor:
        thread_futures = [executor.submit(function, **kwargs) for kwargs in list_of_kwargs_to_function]
        for completed in futures.as_completed(thread_futures):
            if completed.exception() is not None:
                for remaining in thread_futures:
                    remaining.cancel()
                raise completed.exception()  # type: ignore[misc]
    return [future.result() for future in thread_futures]


@dataclasses.dataclass(frozen=True)
class _ReadInstruction:
    """The records `[start, end)` of `filename`."""

    filename: str
    start: int
    end: int
    num_records: int = dataclasses.field(init=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, 'num_records', self.end - self.start)


def _get_read_instructions(
    paths: Sequence[PathLikeOrFileInstruction], reader_options: str = ''
) -> Sequence[_ReadInstruction]:
    """The read instruction of each path: a FileInstruction, `"file[start:end]"` or a file (opened
    with `reader_options`, so that `scan_fallback` counts a file it would read; a file that cannot
    be opened raises `RuntimeError`)."""

    def get_read_instruction(path: PathLikeOrFileInstruction) -> _ReadInstruction:
        if isinstance(path, FileInstruction):
            start = path.skip
            end = path.skip + path.take
            filename = os.fspath(path.filename)
        elif m := re.fullmatch(r'(.*)\[(\d+):(\d+)\]', os.fspath(path)):
            filename = m.group(1)
            start = int(m.group(2))
            end = int(m.group(3))
        else:
            filename = os.fspath(path)
            reader = array_record_module.ArrayRecordReader(filename, reader_options)
            start = 0
            end = reader.num_records()
            reader.close()
        return _ReadInstruction(filename, start, end)

    num_workers = min(len(paths), _NUM_THREADS_COMPUTING_NUM_RECORDS)
    return _run_in_parallel(get_read_instruction, [{'path': path} for path in paths], num_workers)


def _reader_options(additional_reader_options: str) -> str:
    """The options of readers for random access (no read-ahead), as array_record's data source
    opens them."""
    return f'readahead_buffer_size:0,{additional_reader_options}'


class _HasWriterOptions(Protocol):
    """What `_check_group_size` asks of a reader."""

    def writer_options_string(self) -> Optional[str]: ...


def _check_group_size(filename: str, reader: _HasWriterOptions) -> None:
    """Logs an error if the file's group size is not 1 (slow random access), as array_record."""
    options = reader.writer_options_string()
    if not options:
        return
    group_size = re.search(r'group_size:(\d+),', options)
    if not group_size:
        raise ValueError(f"Couldn't detect group_size for {filename}. Extracted writer options: {options}.")
    if group_size[1] != '1':
        _log.error(
            "File %s was created with group size %s. Grain requires group size 1 for good "
            "performance. Please re-generate your ArrayRecord files with 'group_size:1'.",
            filename,
            group_size[1],
        )


class _WriterOptions:
    """What `_check_group_size` asks of a reader: the writer options of a file just opened."""

    def __init__(self, options: Optional[str]) -> None:
        self._options = options

    def writer_options_string(self) -> Optional[str]:
        return self._options


def _on_open(paths: Sequence[str], index: int, writer_options: Optional[str]) -> None:
    """Called when file `index` of `paths` is opened: checks its group size, as array_record."""
    _check_group_size(paths[index], _WriterOptions(writer_options))


class _OpenedShard:
    """A file `ArrayRecordDataSource` has open (`_peek_readers`, for tests): open until the data
    source closes its files."""

    def __init__(self, source: ArrayRecordDataSource, index: int) -> None:
        self._source = source
        self._index = index
        self._closes = source._closes

    def is_open(self) -> bool:
        return self._source._closes == self._closes and self._source._shards.is_open(self._index)


class ArrayRecordDataSource:
    """Data source over ArrayRecord files (array_record's API).

    Keys are mapped to files and read natively (`riegeli._riegeli.ArrayRecordShards`): a batch
    of keys (`__getitems__`) reads each file's part as one batch, each chunk decoded once, the
    files concurrently, without the GIL.
    """

    def __init__(
        self,
        paths: ArrayRecordDataSourcePaths,
        reader_options: Optional[Mapping[str, str]] = None,
        reader_pool_size: Optional[int] = None,
    ) -> None:
        """Opens a data source.

        Args:
          paths: a path (`str` or `pathlib.Path`, possibly `"file[start:end]"` for records
            `[start, end)` of the file) or a URL (`str` only: `"s3://bucket/key"`,
            `"gs://..."`, `"az://..."`, `"https://..."`, possibly with `[start:end]`), an
            object with `filename`, `skip`, `take` and `examples_in_shard` (a TFDS
            FileInstruction), or a non-empty sequence of them. Only plain paths are opened
            here (to count their records).
          reader_options: reader options (`{'max_parallelism': '0'}`, ...), given to each
            `ArrayRecordReader` after `readahead_buffer_size:0` (and to those counting the
            records of plain paths: `{'scan_fallback': 'true'}` reads a file without a usable
            footer, which otherwise raises `RuntimeError`, by a scan).
          reader_pool_size: accepted for compatibility; no effect (one reader per file, shared
            by threads, as array_record's).
        """
        del reader_pool_size
        if isinstance(paths, (str, pathlib.Path, FileInstruction)):
            paths = [paths]
        elif isinstance(paths, Sequence):
            if len(paths) <= 0:
                raise ValueError('Paths sequence can not be of 0 length')
            if not all(isinstance(path, (str, pathlib.Path, FileInstruction)) for path in paths):
                raise ValueError(
                    'All elements in a path sequence must be of type: String, pathlib.Path, or FileInstruction.'
                )
        else:
            raise ValueError(
                'Unsupported path format was used. Path format must be a Sequence, String, pathlib.Path or '
                'FileInstruction.'
            )
        if reader_options is None:
            self._reader_options_string = ''
        else:
            self._reader_options_string = ','.join(f'{k}:{v}' for k, v in reader_options.items())
        self._read_instructions = _get_read_instructions(paths, self._reader_options_string)
        self._paths = [ri.filename for ri in self._read_instructions]
        self._num_records = sum(ri.num_records for ri in self._read_instructions)
        self._open_shards()

    def _open_shards(self) -> None:
        """The native reader of the files (which opens each on first use, in each process)."""
        self._shards = _riegeli.ArrayRecordShards(
            self._paths,
            [(ri.start, ri.end) for ri in self._read_instructions],
            _reader_options(self._reader_options_string),
            # Not a method of this object: the native object would keep it alive.
            functools.partial(_on_open, tuple(self._paths)),
        )
        # How many times the files were closed (`_peek_readers`).
        self._closes = 0

    def __enter__(self) -> ArrayRecordDataSource:
        return self

    def __exit__(self, exc_type: Any, exc_value: Any, traceback: Any) -> None:
        self._shards.close()
        self._closes += 1

    def __len__(self) -> int:
        return self._num_records

    def __iter__(self) -> Iterator[bytes]:
        for index in range(self._num_records):
            yield self[index]

    def _reader_idx_and_position(self, record_key: SupportsIndex) -> Tuple[int, int]:
        """The file of a record key and the record's index in it."""
        return self._shards.locate(record_key)

    def __getitem__(self, record_key: SupportsIndex) -> bytes:
        return self._shards.read(record_key)

    def __getitems__(self, record_keys: Sequence[SupportsIndex]) -> Sequence[bytes]:
        """The records of `record_keys`, in order; each file's are read in one batch."""
        if len(record_keys) == 0:
            # As array_record's: no keys means no worker thread, which its helper refuses.
            raise ValueError('num_workers must be >=1 for parallelism.')
        return self._shards.read_batch(record_keys)

    # Grain's batched path.
    _getitems = __getitems__

    def arrow_batches(
        self, columns: Optional[Sequence[str]] = None, *, indices: Any = None, **kwargs: Any
    ) -> _riegeli.ArrowBatches:
        """riegeli-rs: the records (all, or those of the keys `indices`: a `range` or keys in any
        order) as Arrow record batches, read by readers of their own; the other arguments are
        those of `ArrayRecordReader.arrow_batches`."""
        return self._shards.arrow_batches(columns, indices=indices, **kwargs)

    def to_arrow(self, columns: Optional[Sequence[str]] = None, *, indices: Any = None, **kwargs: Any) -> Any:
        """riegeli-rs: `arrow_batches(...)` read into a `pyarrow.Table` (pyarrow needed)."""
        from riegeli import _arrow

        return _arrow.to_table(self.arrow_batches(columns, indices=indices, **kwargs))

    def __getstate__(self) -> dict[str, Any]:
        state = self.__dict__.copy()
        del state['_shards']
        del state['_closes']
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        # Files are opened on first use, in this process.
        self._open_shards()

    def __repr__(self) -> str:
        """A hash of the paths, which can be a long list."""
        h = hashlib.sha1()
        for p in self._paths:
            h.update(p.encode())
        return f'ArrayRecordDataSource(hash_of_paths={h.hexdigest()})'

    def _peek_readers(self) -> List[Any]:
        """For each file, an object whose `is_open()` says whether it is open, or `None` where it
        is not (array_record's gives the readers, for tests)."""
        return [
            _OpenedShard(self, index) if self._shards.is_open(index) else None for index in range(len(self._paths))
        ]
