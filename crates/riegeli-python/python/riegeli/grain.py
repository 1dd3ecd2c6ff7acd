"""Grain datasets over riegeli files, read natively (riegeli-rs's; needs `grain`).

`ArrayRecordIterDataset` reads ArrayRecord records in an order Grain defines, a window ahead::

    source = ArrayRecordDataSource(paths)
    order = grain.MapDataset.range(len(source)).shuffle(seed=42).repeat(3)
    dataset = ArrayRecordIterDataset(source, order, batch_size=256).map(parse_batch)

yields the records of `grain.MapDataset.source(source).shuffle(seed=42).repeat(3)`, in the same
order, without a Python call per record read: the keys of the next window are taken from
`order` (any `MapDataset` of keys: shuffled, repeated, sliced, filtered, ...) and read by a
native thread, without the GIL, each chunk decoded once, while the current window is consumed.

`RiegeliIterDataset` reads plain Riegeli/records files in order, one after the other.

Both iterators checkpoint (`get_state`/`set_state`: a small dict) and both datasets pickle
(paths, not open files), so that they run in `mp_prefetch` workers.
"""

from __future__ import annotations

import os
from typing import Any, Optional, Sequence, Union

import grain

import riegeli
from riegeli.array_record.array_record_data_source import ArrayRecordDataSource, ArrayRecordDataSourcePaths

__all__ = ('ArrayRecordIterDataset', 'RiegeliIterDataset')

# The records read ahead by default.
DEFAULT_WINDOW_SIZE = 1024


def _slice_sources(dataset: Any, sl: slice) -> None:
    """Gives the sources `dataset` starts from (`MapDataset.range(...)`) the contiguous part
    `sl` names (worker `sl.start` of `sl.step`), as Grain slices its own pipelines sequentially:
    in place, on a copy of the pipeline."""
    if hasattr(dataset, 'set_slice'):
        dataset.set_slice(sl, True)
        return
    if not dataset.parents:
        raise ValueError(f'Cannot slice {type(dataset)} sequentially')
    for parent in dataset.parents:
        _slice_sources(parent, sl)


class ArrayRecordIterDataset(grain.IterDataset):
    """The records of an ArrayRecord data source in the order of a `MapDataset` of keys, read a
    window ahead natively.

    Equivalent to iterating `order.map(source.__getitem__)` (records as `bytes`; `None` elements
    of `order`, those a `filter` drops, are skipped), or with `batch_size`, to `.batch(...)`
    of that as lists of records. Each record is handed out once, in order.
    """

    def __init__(
        self,
        source: Union[ArrayRecordDataSource, ArrayRecordDataSourcePaths],
        order: Optional[grain.MapDataset] = None,
        *,
        window_size: int = DEFAULT_WINDOW_SIZE,
        batch_size: Optional[int] = None,
        drop_remainder: bool = False,
    ) -> None:
        """A dataset of the records of `source`.

        Args:
          source: an `ArrayRecordDataSource`, or what one takes (paths, URLs, instructions).
          order: the keys to read, in order (default: every record once, in order).
          window_size: how many records are read ahead, at least 1.
          batch_size: if given, lists of this many records are yielded (the last one shorter,
            unless `drop_remainder`).
          drop_remainder: with `batch_size`, the last batch is dropped if it is short.
        """
        if not isinstance(source, ArrayRecordDataSource):
            source = ArrayRecordDataSource(source)
        if order is None:
            order = grain.MapDataset.range(len(source))
        if not isinstance(order, grain.MapDataset):
            raise TypeError(f'order must be a grain.MapDataset of record keys, not {type(order)}')
        if window_size < 1:
            raise ValueError(f'window_size must be at least 1, not {window_size}')
        if batch_size is not None and batch_size < 1:
            raise ValueError(f'batch_size must be at least 1, not {batch_size}')
        super().__init__(order)
        self._parents: tuple[grain.MapDataset, ...] = (order,)
        self._source = source
        self._window_size = window_size
        self._batch_size = batch_size
        self._drop_remainder = drop_remainder

    def set_slice(self, sl: slice, sequential_slice: bool = False) -> None:
        """Reads `order[sl]` only, or with `sequential_slice` the keys of a contiguous part of
        the sources of `order` (Grain's `mp_prefetch` gives each worker a slice, as it slices
        `MapDataset.to_iter_dataset()`)."""
        if sequential_slice:
            _slice_sources(self._parents[0], sl)
        else:
            self._parents = (self._parents[0][sl],)

    def __iter__(self) -> _ReadAheadIterator:
        return _ReadAheadIterator(self)

    def __str__(self) -> str:
        return (
            f'ArrayRecordIterDataset(window_size={self._window_size}, batch_size={self._batch_size}, '
            f'drop_remainder={self._drop_remainder})'
        )


class _ReadAheadIterator(grain.DatasetIterator):
    """The iterator of `ArrayRecordIterDataset`. Its state is the position in `order` after the
    last record handed out."""

    def __init__(self, dataset: ArrayRecordIterDataset) -> None:
        super().__init__()
        self._order = dataset._parents[0]
        self._length = len(self._order)
        self._shards = dataset._source._shards
        self._window_size = dataset._window_size
        self._batch_size = dataset._batch_size
        self._drop_remainder = dataset._drop_remainder
        # The position in `order` after the last record handed out (the state).
        self._next = 0
        # How far `order` was taken into windows.
        self._taken = 0
        # The current window: its records, the position in `order` after each, and the next.
        self._records: list[bytes] = []
        self._after: list[int] = []
        self._at = 0
        # The next window, being read: (PendingRead, positions after each record).
        self._pending: Optional[tuple[Any, list[int]]] = None
        self._started = False

    def _start_next_window(self) -> None:
        """Takes the keys of the next window from `order` and starts reading them."""
        keys: list[Any] = []
        after: list[int] = []
        order, position, end = self._order, self._taken, self._length
        while len(keys) < self._window_size and position < end:
            key = order[position]
            position += 1
            if key is not None:
                keys.append(key)
                after.append(position)
        self._taken = position
        self._pending = (self._shards.start_read(keys), after) if keys else None

    def _next_window(self) -> bool:
        """Makes the window read ahead the current one and starts reading the next; `False` at
        the end."""
        if not self._started:
            self._started = True
            self._start_next_window()
        if self._pending is None:
            return False
        pending, after = self._pending
        self._pending = None
        self._records = pending.result()
        self._after = after
        self._at = 0
        self._start_next_window()
        return True

    def __next__(self) -> Any:
        if self._batch_size is None:
            if self._at >= len(self._records) and not self._next_window():
                raise StopIteration
            record = self._records[self._at]
            self._next = self._after[self._at]
            self._at += 1
            return record
        batch: list[bytes] = []
        while len(batch) < self._batch_size:
            if self._at >= len(self._records) and not self._next_window():
                break
            take = min(self._batch_size - len(batch), len(self._records) - self._at)
            batch.extend(self._records[self._at : self._at + take])
            self._at += take
        if not batch or (self._drop_remainder and len(batch) < self._batch_size):
            raise StopIteration
        self._next = self._after[self._at - 1]
        return batch

    def get_state(self) -> dict[str, Any]:
        return {'next_index': self._next}

    def set_state(self, state: dict[str, Any]) -> None:
        position = int(state['next_index'])
        if not 0 <= position <= self._length:
            raise ValueError(f'next_index {position} is outside [0, {self._length}]')
        self._next = self._taken = position
        self._records, self._after, self._at = [], [], 0
        self._pending = None
        self._started = False

    def __str__(self) -> str:
        return f'ArrayRecordIterDataset iterator at {self._next}'


PathLike = Union[str, 'os.PathLike[str]']


class RiegeliIterDataset(grain.IterDataset):
    """The records of plain Riegeli/records files (paths or URLs), file after file, in order.

    Its iterator's state is `{'file_index': i, 'position': p}`: the next record is the one at
    numeric `RecordPosition` `p` of file `i` (the position after the last one handed out).
    """

    def __init__(self, paths: Union[PathLike, Sequence[PathLike]]) -> None:
        super().__init__()
        if isinstance(paths, (str, os.PathLike)):
            paths = [paths]
        self._paths = [path if isinstance(path, str) else os.fspath(path) for path in paths]

    def __iter__(self) -> _RiegeliIterator:
        return _RiegeliIterator(self._paths)

    def __str__(self) -> str:
        return f'RiegeliIterDataset({len(self._paths)} files)'


class _RiegeliIterator(grain.DatasetIterator):
    def __init__(self, paths: Sequence[str]) -> None:
        super().__init__()
        self._paths = paths
        self._file = 0
        # Where reading file `_file` starts when it is opened.
        self._position = 0
        self._reader: Optional[riegeli.RecordReader] = None

    def __next__(self) -> bytes:
        while self._file < len(self._paths):
            if self._reader is None:
                self._reader = riegeli.RecordReader(self._paths[self._file])
                if self._position:
                    self._reader.seek_numeric(self._position)
            record = self._reader.read_record()
            if record is not None:
                return record
            self._close()
            self._file += 1
            self._position = 0
        raise StopIteration

    def _close(self) -> None:
        if self._reader is not None:
            self._reader.close()
            self._reader = None

    def get_state(self) -> dict[str, Any]:
        # The reader is where the last record handed out ended (it reads nothing ahead of it).
        position = self._reader.pos.numeric if self._reader is not None else self._position
        return {'file_index': self._file, 'position': position}

    def set_state(self, state: dict[str, Any]) -> None:
        file_index, position = int(state['file_index']), int(state['position'])
        if not 0 <= file_index <= len(self._paths) or position < 0:
            raise ValueError(f'bad state {state} for {len(self._paths)} files')
        self._close()
        self._file, self._position = file_index, position

    def __str__(self) -> str:
        return f'RiegeliIterDataset iterator at file {self._file}, position {self._position}'
