"""Input files shared by the Beam and Ray tests (`cargo xtask engines`).

Small files with many chunks, so that byte ranges of a few KiB split each file many ways:
ArrayRecord files written by C++ (array_record's `array_record_module`) and by us, and
Riegeli/records files written by us with small chunks and padding. Every file holds some
records also found in the others (and empty records), so comparisons are of multisets.
"""

from __future__ import annotations

import collections
import dataclasses
import pathlib
import random

import pytest
from array_record.python import array_record_module as cxx

import riegeli
from riegeli.array_record import ArrayRecordReader, ArrayRecordWriter


@dataclasses.dataclass
class Inputs:
    array_record_dir: pathlib.Path
    array_record_files: list[pathlib.Path]
    array_records: collections.Counter
    riegeli_dir: pathlib.Path
    riegeli_files: list[pathlib.Path]
    riegeli_records: collections.Counter

    @property
    def all_records(self) -> collections.Counter:
        return self.array_records + self.riegeli_records


def _records(seed: int, count: int) -> list[bytes]:
    rng = random.Random(seed)
    records = []
    for i in range(count):
        if i % 97 == 0:
            records.append(b'' if i % 2 else b'shared record')
        else:
            # Half random (incompressible), so that files stay a few hundred KiB compressed.
            size = rng.randrange(200)
            records.append(b'%d:%d:' % (seed, i) + rng.randbytes(size // 2) + b'x' * (size - size // 2))
    return records


def read_array_record_cxx(path) -> list[bytes]:
    """The records of an ArrayRecord file, read by C++."""
    reader = cxx.ArrayRecordReader(str(path))
    try:
        return reader.read_all()
    finally:
        reader.close()


def read_array_record_ours(path) -> list[bytes]:
    reader = ArrayRecordReader(str(path))
    try:
        return reader.read_all()
    finally:
        reader.close()


def read_riegeli(path) -> list[bytes]:
    with riegeli.RecordReader(str(path)) as reader:
        return list(reader.read_records())


@pytest.fixture(scope='session')
def inputs(tmp_path_factory) -> Inputs:
    root = tmp_path_factory.mktemp('inputs')
    array_record_dir = root / 'array_record'
    riegeli_dir = root / 'riegeli'
    array_record_dir.mkdir()
    riegeli_dir.mkdir()
    array_records: collections.Counter = collections.Counter()
    riegeli_records: collections.Counter = collections.Counter()
    array_record_files = []
    # C++'s writer: many chunks of 10 records, with each compression.
    for i, options in enumerate(['group_size:10', 'group_size:10,zstd:1', 'group_size:10,uncompressed']):
        path = array_record_dir / f'cxx-{i}.array_record'
        records = _records(i, 3000)
        writer = cxx.ArrayRecordWriter(str(path), options)
        for record in records:
            writer.write(record)
        writer.close()
        array_record_files.append(path)
        array_records.update(records)
    path = array_record_dir / 'ours.array_record'
    records = _records(10, 3000)
    writer = ArrayRecordWriter(str(path), 'group_size:25,snappy')
    for record in records:
        writer.write(record)
    writer.close()
    array_record_files.append(path)
    array_records.update(records)
    # Not a data file: Ray's reader skips names beginning with `_` or `.` in a directory.
    (array_record_dir / '_SUCCESS').write_bytes(b'')

    riegeli_files = []
    for i, options in enumerate(['uncompressed,chunk_size:4k,padding', 'zstd:1,chunk_size:8k', 'chunk_size:16k']):
        path = riegeli_dir / f'ours-{i}.riegeli'
        records = _records(20 + i, 3000)
        with riegeli.RecordWriter(str(path), options=options) as writer:
            for j, record in enumerate(records):
                writer.write_record(record)
                if j % 700 == 699:
                    writer.flush()  # With `padding`, to the next block boundary.
        riegeli_files.append(path)
        riegeli_records.update(records)

    for path in array_record_files:
        assert collections.Counter(read_array_record_cxx(path)) == collections.Counter(read_riegeli(path))
    return Inputs(array_record_dir, array_record_files, array_records, riegeli_dir, riegeli_files, riegeli_records)


def pytest_configure(config):
    # Ray's own tips and deprecations, raised inside Ray.
    config.addinivalue_line('filterwarnings', 'ignore::DeprecationWarning:ray')
    config.addinivalue_line('filterwarnings', 'ignore::FutureWarning:ray')
