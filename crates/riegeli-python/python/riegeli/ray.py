"""Ray Data I/O for Riegeli/records and ArrayRecord files (needs `ray[data]`).

Datasets have one `binary` column, `record`::

    import ray
    from riegeli import ray as riegeli_ray

    ds = riegeli_ray.read_array_record('data/')            # a file, a directory or a list
    ds.write_datasink(riegeli_ray.RiegeliDatasink('out/', file_format='riegeli'))

Read tasks are parts of files, so that one large file is read by many tasks: byte ranges of
whole 64 KiB blocks for Riegeli/records files (a range reads the records of the chunks that
begin in it, found from the block header where it starts), record index ranges for ArrayRecord
files (through their footer). A directory means the files inside it, recursively, except those
whose names begin with `.` or `_`. Paths with a scheme (`s3://...`), or any path with
`filesystem=` (a `pyarrow.fs.FileSystem`), are read through pyarrow; ArrayRecord files there
are read by byte ranges, as Riegeli/records files (an ArrayRecord file is one).
"""

from __future__ import annotations

import functools
import inspect
import os
import uuid
from typing import Any, Callable, Dict, Iterator, List, Optional, Sequence, Tuple, Union

import pyarrow as pa
import pyarrow.fs as pafs
import ray.data
from ray.data.block import BlockAccessor, BlockMetadata
from ray.data.datasource import Datasink, Datasource, ReadTask

import riegeli
from riegeli.array_record import ArrayRecordReader, ArrayRecordWriter

__all__ = ('RiegeliDatasink', 'RiegeliDatasource', 'read_array_record', 'read_riegeli')

_SCHEMA = pa.schema([('record', pa.binary())])
_FORMATS = ('riegeli', 'array_record')
# Read tasks of fewer bytes cost Ray more than they read: a 1 GB file in Ray's default 200
# tasks read 2x slower than in 8 (bench_engines.py).
_MIN_BYTES_PER_TASK = 16 << 20
_BLOCK_BYTES = 32 << 20  # A read task yields a table about every this many bytes of records.
_Paths = Union[str, 'os.PathLike[str]', Sequence[Union[str, 'os.PathLike[str]']]]


def _filesystem(path: str, filesystem: Optional[pafs.FileSystem]) -> Tuple[pafs.FileSystem, str]:
    if filesystem is not None:
        return filesystem, path
    if '://' in path:
        return pafs.FileSystem.from_uri(path)
    return pafs.LocalFileSystem(), os.path.abspath(path)


def _files(paths: _Paths, filesystem: Optional[pafs.FileSystem]) -> List[Tuple[pafs.FileSystem, str, int]]:
    """(filesystem, path, size) of each file, directories expanded, in order."""
    if isinstance(paths, (str, os.PathLike)):
        paths = [paths]
    files: List[Tuple[pafs.FileSystem, str, int]] = []
    for path in paths:
        fs, path = _filesystem(os.fspath(path), filesystem)
        info = fs.get_file_info(path)
        if info.type == pafs.FileType.Directory:
            inside = fs.get_file_info(pafs.FileSelector(path, recursive=True))
            kept = [i for i in inside if i.type == pafs.FileType.File and not i.base_name.startswith(('.', '_'))]
            files.extend((fs, i.path, i.size) for i in sorted(kept, key=lambda i: i.path))
        elif info.type == pafs.FileType.File:
            files.append((fs, path, info.size))
        else:
            raise FileNotFoundError(path)
    return files


def _ray_call(base: Callable[..., Any], *args: Any, **kwargs: Any) -> Dict[str, Any]:
    """The arguments of Ray's call to a method of ours that overrides `base`, by name.

    Each Ray release calls these methods with the arguments its own base class declares
    (`Datasource.get_read_tasks` took `per_task_row_limit` from 2.50 and `data_context` from
    2.54, `Datasink.on_write_start` a `schema` from 2.53): the installed Ray's signature is
    the one checked, so that a release that adds one is not refused, and an argument its base
    class does not take is a TypeError as before."""
    return inspect.signature(base).bind(None, *args, **kwargs).arguments


def _ray_new(cls: Callable[..., Any], **kwargs: Any) -> Any:
    """`cls(**kwargs)` with those of `kwargs` that the installed Ray's `cls` takes: `ReadTask`
    takes the `schema` from 2.48 (`BlockMetadata` took it before) and `per_task_row_limit`
    from 2.50 (when Ray passes one to `get_read_tasks`)."""
    parameters = inspect.signature(cls).parameters
    return cls(**{name: value for name, value in kwargs.items() if name in parameters})


def _read_task(
    read: Callable[[], Iterator[pa.Table]],
    num_rows: Optional[int],
    size_bytes: int,
    path: str,
    per_task_row_limit: Optional[int],
) -> ReadTask:
    meta = _ray_new(
        BlockMetadata, num_rows=num_rows, size_bytes=size_bytes, schema=_SCHEMA, input_files=[path], exec_stats=None
    )
    return _ray_new(ReadTask, read_fn=read, metadata=meta, schema=_SCHEMA, per_task_row_limit=per_task_row_limit)


def _table(records: List[bytes]) -> pa.Table:
    return pa.Table.from_arrays([pa.array(records, type=pa.binary())], schema=_SCHEMA)


def _read_byte_range(fs: pafs.FileSystem, path: str, start: int, end: int) -> Iterator[pa.Table]:
    local = isinstance(fs, pafs.LocalFileSystem)
    src = path if local else fs.open_input_file(path)
    # pyarrow's input files can seek, which set_byte_range needs (an assumed_pos would
    # exclude it, as in Google's module).
    with riegeli.RecordReader(src) as reader:
        reader.set_byte_range(start, end)
        records, size, tables = [], 0, 0
        for record in reader.read_records():
            records.append(record)
            size += len(record)
            if size >= _BLOCK_BYTES:
                yield _table(records)
                records, size, tables = [], 0, tables + 1
        if records or not tables:
            yield _table(records)


def _read_index_range(path: str, begin: int, end: int, batch: int, options: str) -> Iterator[pa.Table]:
    reader = ArrayRecordReader(path, options)
    try:
        for first in range(begin, end, batch):
            yield _table(reader.read(first, min(first + batch, end)))
    finally:
        reader.close()


class RiegeliDatasource(Datasource):
    """The records of Riegeli/records (`file_format='riegeli'`) or ArrayRecord
    (`'array_record'`) files, for `ray.data.read_datasource`; `reader_options` are
    ArrayRecordReader's; byte-range read tasks are of `min_bytes_per_task` (16 MiB) at least."""

    def __init__(
        self,
        paths: _Paths,
        *,
        file_format: str = 'riegeli',
        filesystem: Optional[pafs.FileSystem] = None,
        reader_options: str = '',
        min_bytes_per_task: int = _MIN_BYTES_PER_TASK,
    ) -> None:
        super().__init__()
        self._min_bytes_per_task = max(1, min_bytes_per_task)
        if file_format not in _FORMATS:
            raise ValueError(f'file_format must be one of {_FORMATS}, not {file_format!r}')
        self._files = [f for f in _files(paths, filesystem) if f[2] > 0]
        self._format = file_format
        self._reader_options = reader_options

    def estimate_inmemory_data_size(self) -> int:
        return sum(size for _, _, size in self._files)

    def get_read_tasks(self, parallelism: int, *args: Any, **kwargs: Any) -> List[ReadTask]:
        """About `parallelism` read tasks; the other arguments are those of the installed
        Ray's `Datasource.get_read_tasks` (`per_task_row_limit` is passed on to the tasks)."""
        arguments = _ray_call(Datasource.get_read_tasks, parallelism, *args, **kwargs)
        per_task_row_limit = arguments.get('per_task_row_limit')
        parallelism = max(parallelism, 1)
        local = all(isinstance(fs, pafs.LocalFileSystem) for fs, _, _ in self._files)
        by_index = self._format == 'array_record' and local
        if by_index:
            counts = []
            for _, path, _ in self._files:
                reader = ArrayRecordReader(path, self._reader_options)
                try:
                    counts.append(reader.num_records())
                finally:
                    reader.close()
            step = max(1, -(-sum(counts) // parallelism))
        else:
            # About `parallelism` ranges (byte_ranges rounds up to whole 64 KiB blocks), none
            # smaller than min_bytes_per_task.
            step = max(self._min_bytes_per_task, -(-self.estimate_inmemory_data_size() // parallelism))
        tasks = []
        for i, (fs, path, size) in enumerate(self._files):
            if by_index:
                parts = [(begin, min(begin + step, counts[i])) for begin in range(0, counts[i], step)]
                batch = max(1, _BLOCK_BYTES * counts[i] // max(size, 1)) if parts else 1
                for begin, end in parts:
                    read = functools.partial(_read_index_range, path, begin, end, batch, self._reader_options)
                    estimate = size * (end - begin) // counts[i]
                    tasks.append(_read_task(read, end - begin, estimate, path, per_task_row_limit))
            else:
                for start, end in riegeli.byte_ranges(size, step):
                    read = functools.partial(_read_byte_range, fs, path, start, end)
                    tasks.append(_read_task(read, None, end - start, path, per_task_row_limit))
        return tasks


def read_riegeli(
    paths: _Paths,
    *,
    filesystem: Optional[pafs.FileSystem] = None,
    min_bytes_per_task: int = _MIN_BYTES_PER_TASK,
    **kwargs: Any,
) -> ray.data.Dataset:
    """A dataset of the records of Riegeli/records files (column `record`, `bytes`), one read
    task per byte range (of `min_bytes_per_task` at least); `kwargs` go to
    `ray.data.read_datasource` (`override_num_blocks`: about how many read tasks;
    `concurrency`, `ray_remote_args`, ...)."""
    source = RiegeliDatasource(paths, filesystem=filesystem, min_bytes_per_task=min_bytes_per_task)
    return ray.data.read_datasource(source, **kwargs)


def read_array_record(
    paths: _Paths,
    *,
    filesystem: Optional[pafs.FileSystem] = None,
    reader_options: str = '',
    min_bytes_per_task: int = _MIN_BYTES_PER_TASK,
    **kwargs: Any,
) -> ray.data.Dataset:
    """A dataset of the records of ArrayRecord files (column `record`, `bytes`), one read task
    per range of record indices (per byte range on other filesystems than the local one);
    `reader_options` are ArrayRecordReader's, `kwargs` as for `read_riegeli`."""
    source = RiegeliDatasource(
        paths,
        file_format='array_record',
        filesystem=filesystem,
        reader_options=reader_options,
        min_bytes_per_task=min_bytes_per_task,
    )
    return ray.data.read_datasource(source, **kwargs)


class RiegeliDatasink(Datasink):
    """Writes a dataset into the directory `path` as Riegeli/records or ArrayRecord files,
    one per write task (that received records), named `<uuid of this write>_<task>.riegeli`
    (or `.array_record`). `options` are RecordWriter's or ArrayRecordWriter's; `column` holds
    the records (`bytes`); `min_rows_per_file` makes Ray give each write task that many rows at
    least. After the write, `written_paths` lists the files."""

    def __init__(
        self,
        path: Union[str, 'os.PathLike[str]'],
        *,
        options: str = '',
        file_format: str = 'riegeli',
        column: str = 'record',
        filesystem: Optional[pafs.FileSystem] = None,
        min_rows_per_file: Optional[int] = None,
    ) -> None:
        if file_format not in _FORMATS:
            raise ValueError(f'file_format must be one of {_FORMATS}, not {file_format!r}')
        self._fs, self._path = _filesystem(os.fspath(path), filesystem)
        self._min_rows_per_file = min_rows_per_file
        self._options = options
        self._format = file_format
        self._column = column
        self._write_uuid = ''
        self.written_paths: List[str] = []

    @property
    def min_rows_per_write(self) -> Optional[int]:
        return self._min_rows_per_file

    # Its name in Ray 2.41.
    num_rows_per_write = min_rows_per_write

    def on_write_start(self, *args: Any, **kwargs: Any) -> None:
        """Creates the directory; the arguments are those of the installed Ray's
        `Datasink.on_write_start` (the schema, from 2.53), not needed here."""
        _ray_call(Datasink.on_write_start, *args, **kwargs)
        self._fs.create_dir(self._path, recursive=True)
        self._write_uuid = uuid.uuid4().hex

    def write(self, blocks, ctx) -> Optional[str]:
        path = f'{self._path}/{self._write_uuid}_{ctx.task_idx:06d}.{self._format}'
        local = isinstance(self._fs, pafs.LocalFileSystem)
        file: Any = None
        writer: Union[ArrayRecordWriter, riegeli.RecordWriter, None] = None
        write: Callable[[bytes], None]  # The writer's, set with it.
        try:
            for block in blocks:
                column = BlockAccessor.for_block(block).to_arrow().column(self._column)
                if len(column) == 0:
                    continue
                if writer is None:
                    file = None if local else self._fs.open_output_stream(path)
                    dest = path if local else file
                    if self._format == 'array_record':
                        writer = ArrayRecordWriter(dest, self._options)
                        write = writer.write
                    else:
                        pos = None if local else 0
                        writer = riegeli.RecordWriter(dest, owns_dest=False, assumed_pos=pos, options=self._options)
                        write = writer.write_record
                for record in column.to_pylist():
                    write(record)
            if writer is not None:
                writer.close()
        finally:
            if file is not None:
                file.close()
        return None if writer is None else path

    def on_write_complete(self, write_result) -> None:
        self.written_paths = sorted(p for p in write_result.write_returns if p is not None)
