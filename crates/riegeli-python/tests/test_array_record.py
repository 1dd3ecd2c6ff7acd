"""riegeli.array_record: array_record's Python API, checked against array-record 0.8.6's C++."""

from __future__ import annotations

import dataclasses
import hashlib
import importlib
import logging
import pathlib
import pickle
import random
import threading
from concurrent import futures
from unittest import mock

import pytest

from riegeli.array_record import ArrayRecordDataSource
from riegeli.array_record import ArrayRecordReader
from riegeli.array_record import ArrayRecordWriter
from riegeli.array_record import array_record_data_source
from riegeli.array_record import array_record_module
from riegeli.array_record.python import array_record_module as python_alias

try:
    from array_record.python import array_record_module as cpp
except ImportError:  # Outside the CI venv: the interop tests are skipped.
    cpp = None

needs_cpp = pytest.mark.skipif(cpp is None, reason='array-record (C++) is not installed')

RECORDS = [b'%d ' % i * (i % 13) for i in range(1000)]


def write(module, path, records=RECORDS, options=''):
    writer = module.ArrayRecordWriter(str(path), options)
    for record in records:
        writer.write(record)
    writer.close()
    return str(path)


@pytest.fixture
def path(tmp_path):
    return write(array_record_module, tmp_path / 'ours.array_record', options='group_size:10')


def test_exports():
    assert ArrayRecordReader is array_record_module.ArrayRecordReader
    assert ArrayRecordWriter is array_record_module.ArrayRecordWriter
    assert ArrayRecordDataSource is array_record_data_source.ArrayRecordDataSource
    assert python_alias is array_record_module
    # array_record's modules are importable by their paths under riegeli.array_record.python.
    for module in (array_record_module, array_record_data_source):
        name = module.__name__.rsplit('.', 1)[1]
        assert importlib.import_module(f'riegeli.array_record.python.{name}') is module
    from riegeli.array_record.python.array_record_data_source import ArrayRecordDataSource as by_path

    assert by_path is ArrayRecordDataSource


# ---------------------------------------------------------------------------------------------
# ArrayRecordWriter


def test_writer_methods(tmp_path):
    writer = ArrayRecordWriter(str(tmp_path / 'w'), 'group_size:3')
    assert writer.ok() and writer.is_open()
    for record in RECORDS[:7]:
        writer.write(record)
    writer.close()
    assert not writer.ok() and not writer.is_open()
    writer.close()  # Again: nothing.
    with pytest.raises(RuntimeError, match='Object closed'):
        writer.write(b'x')
    reader = ArrayRecordReader(str(tmp_path / 'w'))
    assert reader.read_all() == RECORDS[:7]


def test_writer_accepts_pathlike_and_kwargs(tmp_path):
    writer = ArrayRecordWriter(tmp_path / 'p', options='uncompressed', unused=1)
    writer.write(b'a')
    writer.close()
    assert ArrayRecordReader(tmp_path / 'p').read_all() == [b'a']


def test_writer_without_close_finishes_the_file(tmp_path):
    writer = ArrayRecordWriter(str(tmp_path / 'u'))
    writer.write(b'y')
    del writer
    assert ArrayRecordReader(str(tmp_path / 'u')).read_all() == [b'y']


@pytest.mark.parametrize('record', ['str', bytearray(b'x'), memoryview(b'x'), 1, None])
def test_writer_takes_bytes_only(tmp_path, record):
    writer = ArrayRecordWriter(str(tmp_path / 't'))
    with pytest.raises(TypeError):
        writer.write(record)
    writer.close()


def test_writer_many_records_and_large_ones(tmp_path):
    records = [bytes([i % 256]) * (i * 37 % 5000) for i in range(3000)] + [b'z' * (3 << 20)]
    p = write(array_record_module, tmp_path / 'big', records, 'group_size:7,brotli:1')
    reader = ArrayRecordReader(p)
    assert reader.num_records() == len(records)
    assert reader.read_all() == records


# ---------------------------------------------------------------------------------------------
# ArrayRecordReader


def test_reader_sequential(path):
    reader = ArrayRecordReader(path)
    assert reader.ok() and reader.is_open()
    assert reader.num_records() == len(RECORDS)
    assert reader.record_index() == 0
    got = [reader.read() for _ in range(len(RECORDS))]
    assert got == RECORDS
    assert reader.record_index() == len(RECORDS)
    with pytest.raises(IndexError, match=f'Out of range of num_records: {len(RECORDS)}'):
        reader.read()
    reader.close()
    assert not reader.ok() and not reader.is_open()
    assert reader.num_records() == 0
    reader.close()


@pytest.mark.parametrize('options', ['', 'readahead_buffer_size:0', 'readahead_buffer_size:100', 'max_parallelism:0'])
def test_reader_seek_and_read(path, options):
    reader = ArrayRecordReader(path, options)
    reader.seek(500)
    assert reader.record_index() == 500
    assert reader.read() == RECORDS[500]
    assert reader.read() == RECORDS[501]
    reader.seek(3)
    assert [reader.read() for _ in range(30)] == RECORDS[3:33]
    reader.seek(len(RECORDS) + 5)  # Clamped, as C++.
    assert reader.record_index() == len(RECORDS)
    reader.seek(-1)  # The end, as C++.
    assert reader.record_index() == len(RECORDS)
    reader.seek(True)
    assert reader.read() == RECORDS[1]
    with pytest.raises(TypeError):
        reader.seek(1.0)


def test_reader_batches(path):
    reader = ArrayRecordReader(path)
    reader.seek(7)
    indices = [999, 0, 5, 5, 123]
    assert reader.read(indices) == [RECORDS[i] for i in indices]
    assert reader.read(tuple(indices)) == [RECORDS[i] for i in indices]
    assert reader.read([]) == []
    assert reader.read(10, 20) == RECORDS[10:20]
    assert reader.read(-3, 1000) == RECORDS[-3:]
    assert reader.read(0, -1) == RECORDS[:-1]
    assert reader.read_all() == RECORDS
    # Batch reads leave the position of read() alone.
    assert reader.record_index() == 7
    assert reader.read() == RECORDS[7]


@pytest.mark.parametrize('options', ['', 'max_parallelism:0'])
def test_reader_single_indices_in_any_order(path, options):
    # One index at a time (a data source's `source[i]`) keeps its chunk decoded for the next.
    reader = ArrayRecordReader(path, options)
    n = len(RECORDS)
    orders = [range(n), range(n - 1, -1, -1), random.Random(5).sample(range(n), n)]
    for order in orders:
        assert [reader.read([i])[0] for i in order] == [RECORDS[i] for i in order]
    assert reader.read() == RECORDS[0]
    assert reader.read([n - 1]) == [RECORDS[n - 1]]
    assert reader.read() == RECORDS[1]
    with pytest.raises(RuntimeError, match=f'index {n} out of bound {n}'):
        reader.read([n])


def test_reader_writer_options_string(path):
    assert ArrayRecordReader(path).writer_options_string() == (
        'group_size:10,transpose:false,pad_to_block_boundary:false,zstd:3,window_log:20,max_parallelism:1'
    )


def test_reader_accepts_kwargs_and_pathlike(path):
    reader = ArrayRecordReader(pathlib.Path(path), '', file_reader_buffer_size=32768)
    assert reader.num_records() == len(RECORDS)


def test_reader_threads_share_it(path):
    reader = ArrayRecordReader(path, 'readahead_buffer_size:0')
    failures = []

    def work(seed):
        for i in range(200):
            j = (seed * 7919 + i * 104729) % len(RECORDS)
            if reader.read([j]) != [RECORDS[j]] or reader.read(j, j + 1) != [RECORDS[j]]:
                failures.append(j)

    threads = [threading.Thread(target=work, args=(seed,)) for seed in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert failures == []


# ---------------------------------------------------------------------------------------------
# Errors: the same exception classes as C++ in the same situations.

ERROR_CASES = {
    'read past the end': lambda r: (r.seek(r.num_records()), r.read()),
    'read index out of range': lambda r: r.read([r.num_records()]),
    'read negative index': lambda r: r.read([-1]),
    'read huge index': lambda r: r.read([2**64]),
    'read a str': lambda r: r.read('x'),
    'read a generator': lambda r: r.read(iter([0])),
    'read None': lambda r: r.read(None),
    'read three args': lambda r: r.read(1, 2, 3),
    'read keyword': lambda r: r.read(indices=[0]),
    'read empty range': lambda r: r.read(2, 2),
    'read reversed range': lambda r: r.read(3, 2),
    'read range past the end': lambda r: r.read(0, r.num_records() + 1),
    'read range too negative': lambda r: r.read(-r.num_records() - 1, 2),
    'read range not int32': lambda r: r.read(0, 2**31),
    'read range float': lambda r: r.read(0.0, 1),
    'seek float': lambda r: r.seek(1.5),
    'seek huge': lambda r: r.seek(2**63),
    'read after close': lambda r: (r.close(), r.read()),
    'read indices after close': lambda r: (r.close(), r.read([0])),
    'read range after close': lambda r: (r.close(), r.read(0, 1)),
    'read_all after close': lambda r: (r.close(), r.read_all()),
    'seek after close': lambda r: (r.close(), r.seek(0)),
}


def outcome(function, *args):
    """The class of the exception `function(*args)` raises, or its result."""
    try:
        return ('returned', function(*args))
    except Exception as e:  # noqa: BLE001 - the class is the point
        return ('raised', type(e))


@needs_cpp
@pytest.mark.parametrize('case', sorted(ERROR_CASES))
def test_reader_errors_match_cpp(tmp_path, case):
    ours = write(array_record_module, tmp_path / 'ours', RECORDS[:5], 'group_size:2')
    theirs = write(cpp, tmp_path / 'theirs', RECORDS[:5], 'group_size:2')
    expected = outcome(ERROR_CASES[case], cpp.ArrayRecordReader(theirs))
    assert expected[0] == 'raised'
    assert outcome(ERROR_CASES[case], ArrayRecordReader(ours)) == expected


READER_OPTIONS = [
    '',
    ',,',
    'readahead_buffer_size:0,max_parallelism:0',
    'readahead_buffer_size:1.5M,max_parallelism:auto',
    'readahead_buffer_size:auto',
    'readahead_buffer_size:1e3',
    'max_parallelism: 3',
    'index_storage_option:in_memory',
    'index_storage_option:',
    'index_storage_option:offloaded,footer_prefetch_bytes:0',
    'footer_prefetch_bytes:auto',
    # Rejected:
    'foo:1',
    'default',
    ':',
    ' max_parallelism:1',
    'max_parallelism',
    'max_parallelism:-1',
    'max_parallelism:2147483648',
    'max_parallelism:x',
    'max_parallelism:1,max_parallelism:2',
    'readahead_buffer_size:x',
    'readahead_buffer_size:-1',
    'readahead_buffer_size:1q',
    'readahead_buffer_size:2G',
    'index_storage_option:foo',
    'index_storage_option:offloaded',
    'footer_prefetch_bytes:auto,index_storage_option:offloaded',
]


@needs_cpp
@pytest.mark.parametrize('options', READER_OPTIONS)
def test_reader_options_match_cpp(path, options):
    def read_all(module):
        reader = module.ArrayRecordReader(path, options)
        return reader.read_all()

    expected = outcome(read_all, cpp)
    assert outcome(read_all, array_record_module) == expected
    if expected[0] == 'raised':
        assert expected[1] is ValueError
        assert message(cpp.ArrayRecordReader, path, options) == message(ArrayRecordReader, path, options)


def message(function, *args):
    try:
        function(*args)
    except Exception as e:  # noqa: BLE001 - the message is the point
        return str(e)
    return None


@needs_cpp
@pytest.mark.parametrize(
    'options',
    ['foo:1', 'group_size:0', 'zstd,brotli', 'group_size:2,default', 'default,default', 'window_log:9', 'snappy,window_log:20',
     'default,group_size:2', 'default:1', ',,group_size:2,,', 'grup_size:1', 'chunk_size:1k', 'group_size:x',
     'transpose:maybe', 'uncompressed:3', 'uncompressed,window_log:20', 'window_log:auto,uncompressed', 'zstd,default',
     'group_size:1,group_size:2', 'brotli:12', 'snappy:3', 'max_parallelism:0', 'transpose_bucket_size:0',
     'transpose_bucket_size:-1', 'pad_to_block_boundary:x', 'saturation_delay_ms:0', 'brotli,window_log:31',
     'transpose_bucket_size:1.5k', 'group_size: 3', 'zstd:', 'brotli:', 'zstd: +5', 'window_log:20'],
)
def test_writer_options_match_cpp(tmp_path, options):
    def create(module, name):
        module.ArrayRecordWriter(str(tmp_path / name), options).close()

    assert outcome(create, array_record_module, 'ours') == outcome(create, cpp, 'cpp')
    # A bad option string raises C++'s ValueError, word for word.
    assert message(array_record_module.ArrayRecordWriter, str(tmp_path / 'ours2'), options) == message(
        cpp.ArrayRecordWriter, str(tmp_path / 'cpp2'), options)


@needs_cpp
@pytest.mark.parametrize('name', ['missing', 'junk', 'empty'])
def test_reader_unopenable_files_match_cpp(tmp_path, name):
    p = tmp_path / name
    if name == 'junk':
        p.write_bytes(b'hello world' * 10)
    elif name == 'empty':
        p.write_bytes(b'')
    for module in (cpp, array_record_module):
        reader = module.ArrayRecordReader(str(p))  # Does not raise: ok() says.
        assert not reader.ok()
        assert reader.is_open()
        assert reader.num_records() == 0
        assert reader.writer_options_string() is None
        for method in (reader.read, reader.read_all, lambda: reader.read([0]), lambda: reader.seek(0)):
            with pytest.raises(RuntimeError):
                method()
        with pytest.raises(RuntimeError):
            reader.close()
        assert not reader.ok()
        assert not reader.is_open()


def footer_offset(data):
    """Where the footer begins, from the first postscript copy (a simple uncompressed chunk at
    `size - 65536`: block header, chunk header, 5 bytes of sizes, then `08 varint(offset) ...`)."""
    at = len(data) - 65536 + 24 + 40 + 5
    assert data[at] == 0x08
    value, shift = 0, 0
    for byte in data[at + 1:at + 11]:
        value |= (byte & 0x7F) << shift
        shift += 7
        if byte < 0x80:
            return value
    raise AssertionError('no postscript')


def cut_files(tmp_path, path):
    """The file at `path` cut short at several places, as an interrupted copy or upload leaves it."""
    data = pathlib.Path(path).read_bytes()
    footer = footer_offset(data)
    cuts = {
        'in half': len(data) // 2,
        'inside the footer': footer + 50,
        'the postscript block missing': len(data) - 65536,
        'inside the postscript chunk': len(data) - 65536 + 30,
        'the last byte missing': len(data) - 1,
    }
    for name, at in cuts.items():
        cut = tmp_path / f'cut-{at}'
        cut.write_bytes(data[:at])
        yield name, str(cut)


def check_refused(cut):
    """A cut file opens as array_record's reader opens it: `ok()` false, and every read raises
    `RuntimeError` saying why (C++ also raises, but for some cuts with an empty message, and its
    `read_all()` then returns `[]` and `read([0])` `[b'']`: ours never returns records it lacks)."""
    reader = ArrayRecordReader(cut)
    assert not reader.ok() and reader.is_open()
    assert reader.num_records() == 0
    assert reader.writer_options_string() is None
    for read in (reader.read, reader.read_all, lambda: reader.read([0]), lambda: reader.seek(0)):
        with pytest.raises(RuntimeError, match='ArrayRecord index.*scan_fallback'):
            read()
    with pytest.raises(IndexError):
        reader.read(0, 1)
    with pytest.raises(RuntimeError, match='ArrayRecord index'):
        reader.close()
    assert not reader.ok() and not reader.is_open()
    with pytest.raises(RuntimeError, match='ArrayRecord index'):
        ArrayRecordDataSource(cut)
    with pytest.raises(RuntimeError, match='ArrayRecord index'):
        ArrayRecordDataSource([f'{cut}[0:1]'])[0]


def check_scanned(cut, records):
    """With `scan_fallback`, the records there are: a prefix of the file's, all of them when the
    cut is past the data chunks."""
    reader = ArrayRecordReader(cut, 'scan_fallback')
    assert reader.ok()
    got = reader.read_all()
    assert 0 < len(got) <= len(records) and got == records[:len(got)]
    assert reader.read([len(got) - 1, 0]) == [got[-1], got[0]]
    source = ArrayRecordDataSource([cut], reader_options={'scan_fallback': 'true'})
    assert len(source) == len(got)
    assert source.__getitems__([len(got) - 1, 0]) == [got[-1], got[0]]
    return len(got)


@pytest.mark.parametrize('options', ['group_size:10', 'group_size:1,uncompressed'])
def test_cut_files_are_refused_unless_scanned(tmp_path, options):
    path = write(array_record_module, tmp_path / 'ours', options=options)
    data_end = footer_offset(pathlib.Path(path).read_bytes())
    for name, cut in cut_files(tmp_path, path):
        check_refused(cut)
        n = check_scanned(cut, RECORDS)
        if pathlib.Path(cut).stat().st_size > data_end:
            assert n == len(RECORDS), name


@needs_cpp
def test_cut_cpp_files_are_refused_as_cpp_refuses_them(tmp_path):
    path = write(cpp, tmp_path / 'cpp', options='group_size:10')
    for name, cut in cut_files(tmp_path, path):
        theirs = cpp.ArrayRecordReader(cut)
        assert not theirs.ok(), name
        for read in (theirs.read, lambda: theirs.seek(0), theirs.close):
            with pytest.raises(RuntimeError):
                read()
        with pytest.raises(RuntimeError):
            pytest.importorskip('array_record.python.array_record_data_source').ArrayRecordDataSource(cut)
        check_refused(cut)
        check_scanned(cut, RECORDS)


@needs_cpp
def test_writer_uncreatable_file_matches_cpp(tmp_path):
    for module in (cpp, array_record_module):
        writer = module.ArrayRecordWriter(str(tmp_path / 'missing-dir' / 'x'))
        assert not writer.ok()
        assert writer.is_open()
        with pytest.raises(RuntimeError):
            writer.write(b'x')
        with pytest.raises(RuntimeError):
            writer.close()
        assert not writer.ok()
        assert not writer.is_open()


# ---------------------------------------------------------------------------------------------
# Interop with C++

WRITER_OPTIONS = ['', 'group_size:1', 'group_size:10,zstd', 'transpose,brotli:6', 'snappy', 'uncompressed,group_size:64',
                  'group_size:3,pad_to_block_boundary:true', 'max_parallelism:4']


@needs_cpp
@pytest.mark.parametrize('options', WRITER_OPTIONS)
def test_cpp_writes_we_read(tmp_path, options):
    p = write(cpp, tmp_path / 'cpp', options=options)
    theirs = cpp.ArrayRecordReader(p)
    ours = ArrayRecordReader(p)
    assert ours.num_records() == theirs.num_records() == len(RECORDS)
    assert ours.writer_options_string() == theirs.writer_options_string()
    assert ours.read_all() == RECORDS
    assert [ours.read() for _ in range(len(RECORDS))] == RECORDS
    indices = [i * 7919 % len(RECORDS) for i in range(300)]
    assert ours.read(indices) == theirs.read(indices)
    assert ours.read(100, 200) == theirs.read(100, 200)


@needs_cpp
@pytest.mark.parametrize('options', WRITER_OPTIONS)
def test_we_write_cpp_reads(tmp_path, options):
    ours_path = write(array_record_module, tmp_path / 'ours', options=options)
    cpp_path = write(cpp, tmp_path / 'cpp', options=options)
    theirs = cpp.ArrayRecordReader(ours_path)
    assert theirs.ok()
    assert theirs.num_records() == len(RECORDS)
    assert theirs.read_all() == RECORDS
    assert [theirs.read() for _ in range(len(RECORDS))] == RECORDS
    # The footer says what C++'s own file says.
    assert theirs.writer_options_string() == cpp.ArrayRecordReader(cpp_path).writer_options_string()
    # Same layout: same size.
    assert pathlib.Path(ours_path).stat().st_size == pathlib.Path(cpp_path).stat().st_size


@needs_cpp
def test_cpp_data_source_reads_ours(tmp_path):
    cpp_source = pytest.importorskip('array_record.python.array_record_data_source')
    p = write(array_record_module, tmp_path / 'ours', options='group_size:1')
    source = cpp_source.ArrayRecordDataSource(p)
    assert len(source) == len(RECORDS)
    assert source.__getitems__([5, 3]) == [RECORDS[5], RECORDS[3]]


# ---------------------------------------------------------------------------------------------
# ArrayRecordDataSource


@dataclasses.dataclass
class Instruction:
    filename: str
    skip: int
    take: int
    examples_in_shard: int


@pytest.fixture
def shards(tmp_path):
    """Three files of 100, 50 and 1 records (group size 1), and their records."""
    files, everything = [], []
    for n, count in enumerate([100, 50, 1]):
        records = [b'shard %d record %d' % (n, i) for i in range(count)]
        files.append(write(array_record_module, tmp_path / f'shard-{n}', records, 'group_size:1'))
        everything.append(records)
    return files, everything


def test_data_source_single_path(shards):
    files, records = shards
    for paths in (files[0], pathlib.Path(files[0]), [files[0]]):
        source = ArrayRecordDataSource(paths)
        assert len(source) == 100
        assert source[7] == records[0][7]
        assert list(source) == records[0]


def test_data_source_many_files(shards):
    files, records = shards
    flat = [r for rs in records for r in rs]
    with ArrayRecordDataSource([files[0], pathlib.Path(files[1]), files[2]]) as source:
        assert len(source) == 151
        assert [source[i] for i in range(151)] == flat
        keys = [150, 0, 120, 99, 100, 3, 3]
        assert source.__getitems__(keys) == [flat[k] for k in keys]
        assert source._getitems(keys) == [flat[k] for k in keys]
        assert list(source) == flat
        with pytest.raises(ValueError):
            source[151]
        with pytest.raises(ValueError):
            source[-1]
        with pytest.raises(ValueError):
            source.__getitems__([0, 151])


def test_data_source_slices_and_instructions(shards):
    files, records = shards
    source = ArrayRecordDataSource([f'{files[0]}[10:20]', Instruction(files[1], 5, 3, 50)])
    assert len(source) == 13
    assert list(source) == records[0][10:20] + records[1][5:8]
    assert source[12] == records[1][7]
    # A slice may end a pathlib.Path too.
    source = ArrayRecordDataSource([pathlib.Path(f'{files[1]}[49:50]'), pathlib.Path(f'{files[0]}[0:2]')])
    assert [source[i] for i in (2, 0, 1)] == [records[0][1], records[1][49], records[0][0]]


def test_data_source_maps_keys_without_opening_files():
    """Instructions give the record counts: keys map to (file, index in the file) with no file
    opened (these do not exist)."""
    source = ArrayRecordDataSource(
        [Instruction('nowhere/a', 0, 2, 2), Instruction('nowhere/b', 2, 3, 99), Instruction('nowhere/c', 10, 1, 99)]
    )
    assert len(source) == 6
    mapped = [source._reader_idx_and_position(key) for key in range(6)]
    assert mapped == [(0, 0), (0, 1), (1, 2), (1, 3), (1, 4), (2, 10)]
    for key in (-1, 6, 1000):
        with pytest.raises(ValueError):
            source._reader_idx_and_position(key)


def test_data_source_getitems_of_no_keys_raises(shards):
    """As array_record's: no keys means no worker thread, which its helper refuses."""
    files, _ = shards
    source = ArrayRecordDataSource(files)
    with pytest.raises(ValueError, match='^num_workers must be >=1 for parallelism.$'):
        source.__getitems__([])
    with pytest.raises(ValueError, match='num_workers'):
        source._getitems(())


def test_data_source_opens_readers_on_use_and_closes_them_on_exit(shards):
    files, records = shards
    with ArrayRecordDataSource(files) as source:
        assert source._peek_readers() == [None, None, None]
        assert source[3] == records[0][3]
        assert source.__getitems__([120]) == [records[1][20]]
        first, second, third = source._peek_readers()
        assert first.is_open() and second.is_open() and third is None
    assert source._peek_readers() == [None, None, None]
    assert not first.is_open() and not second.is_open()
    # Used again, it opens readers again.
    assert source[150] == records[2][0]


def test_data_source_repr_is_a_hash_of_the_paths(shards):
    files, _ = shards
    digest = hashlib.sha1(''.join([files[0], files[1], files[1]]).encode()).hexdigest()
    source = ArrayRecordDataSource([files[0], f'{files[1]}[1:3]', Instruction(files[1], 0, 1, 50)])
    assert repr(source) == f'ArrayRecordDataSource(hash_of_paths={digest})'


class FakeReader:
    def __init__(self, options):
        self.options = options

    def writer_options_string(self):
        return self.options


@pytest.mark.parametrize('group_size', [2, 11, 65536])
def test_data_source_logs_an_error_for_group_sizes_above_one(tmp_path, caplog, group_size):
    path = write(array_record_module, tmp_path / 'f', [b'x'], f'group_size:{group_size}')
    reader = ArrayRecordReader(path)
    with caplog.at_level(logging.ERROR):
        array_record_data_source._check_group_size(path, reader)
    expected = f'File {path} was created with group size {group_size}. Grain requires group size 1 for good performance'
    assert [r.levelno for r in caplog.records] == [logging.ERROR]
    assert caplog.records[0].getMessage().startswith(expected)
    # The data source checks each file when it opens its reader.
    caplog.clear()
    with caplog.at_level(logging.ERROR):
        assert ArrayRecordDataSource(path)[0] == b'x'
    assert expected in caplog.text


def test_data_source_group_size_one_or_unknown_is_not_logged(tmp_path, caplog):
    path = write(array_record_module, tmp_path / 'f', [b'x'], 'group_size:1')
    with caplog.at_level(logging.DEBUG):
        array_record_data_source._check_group_size(path, ArrayRecordReader(path))
        # Files written before writer options were stored (2022) have none: not checked.
        array_record_data_source._check_group_size('old', FakeReader(''))
        array_record_data_source._check_group_size('old', FakeReader(None))
    assert caplog.records == []
    with pytest.raises(ValueError, match="Couldn't detect group_size for odd"):
        array_record_data_source._check_group_size('odd', FakeReader('zstd:3,max_parallelism:1'))


def test_run_in_parallel_keeps_the_order_and_reraises():
    run = array_record_data_source._run_in_parallel
    calls = []

    def record(**kwargs):
        calls.append(kwargs)
        return sorted(kwargs)

    assert run(record, [{'a': 1}, {'b': 2, 'c': 3}], num_workers=1) == [['a'], ['b', 'c']]
    assert calls == [{'a': 1}, {'b': 2, 'c': 3}]
    # On many threads, results still in the order of the arguments.
    assert run(lambda i: i * i, [{'i': i} for i in range(100)], num_workers=8) == [i * i for i in range(100)]

    def fail_on_one(i):
        if i == 1:
            raise KeyError('the second')
        return i

    for num_workers in (1, 3):
        with pytest.raises(KeyError, match='the second'):
            run(fail_on_one, [{'i': 0}, {'i': 1}, {'i': 2}], num_workers=num_workers)
    for num_workers in (0, -1, -2):
        with pytest.raises(ValueError, match='^num_workers must be >=1 for parallelism.$'):
            run(record, [{'a': 1}, {'b': 2}], num_workers=num_workers)


def test_run_in_parallel_asks_for_num_workers_threads():
    with mock.patch('concurrent.futures.ThreadPoolExecutor', wraps=futures.ThreadPoolExecutor) as executor:
        array_record_data_source._run_in_parallel(lambda i: i, [{'i': 1}, {'i': 2}], num_workers=42)
    executor.assert_called_once_with(42)


def test_data_source_bad_paths(shards):
    files, _ = shards
    with pytest.raises(ValueError):
        ArrayRecordDataSource([])
    with pytest.raises(ValueError):
        ArrayRecordDataSource([files[0], 3])
    with pytest.raises(ValueError):
        ArrayRecordDataSource(3)


def test_data_source_reader_options(shards):
    files, records = shards
    source = ArrayRecordDataSource(files[0], reader_options={'max_parallelism': '1'}, reader_pool_size=4)
    assert source[99] == records[0][99]
    with pytest.raises(ValueError):
        ArrayRecordDataSource(files[0], reader_options={'nope': '1'})[0]


def test_data_source_pickles(shards):
    files, records = shards
    source = ArrayRecordDataSource(files)
    assert source[1] == records[0][1]  # A reader is open.
    copy = pickle.loads(pickle.dumps(source))
    assert repr(copy) == repr(source)
    assert repr(source).startswith('ArrayRecordDataSource(hash_of_paths=')
    assert len(copy) == len(source)
    assert copy._peek_readers() == [None] * 3  # Reopened lazily.
    assert list(copy) == list(source)


def test_data_source_threads(shards):
    files, records = shards
    flat = [r for rs in records for r in rs]
    source = ArrayRecordDataSource(files)
    failures = []

    def work(seed):
        keys = [(seed * 31 + i * 17) % len(flat) for i in range(100)]
        if source.__getitems__(keys) != [flat[k] for k in keys]:
            failures.append(seed)
        if [source[k] for k in keys] != [flat[k] for k in keys]:
            failures.append(seed)

    threads = [threading.Thread(target=work, args=(seed,)) for seed in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert failures == []


@needs_cpp
def test_data_source_matches_cpp(shards):
    cpp_source = pytest.importorskip('array_record.python.array_record_data_source')
    files, _ = shards
    paths = [f'{files[0]}[3:90]', files[1], Instruction(files[2], 0, 1, 1)]
    ours = ArrayRecordDataSource(paths)
    theirs = cpp_source.ArrayRecordDataSource(paths)
    assert len(ours) == len(theirs)
    assert repr(ours) == repr(theirs)
    assert list(ours) == list(theirs)
    keys = [i * 37 % len(ours) for i in range(200)]
    assert ours.__getitems__(keys) == theirs.__getitems__(keys)
    for source in (ours, theirs):
        with pytest.raises(ValueError, match='^num_workers must be >=1 for parallelism.$'):
            source.__getitems__([])


# ---------------------------------------------------------------------------------------------
# Grain


def grain_batches(grain, source, worker_count):
    """Grain's DataLoader over `source`: shuffle, then batches of 16, on worker processes."""
    # Grain before 0.2.9 has no default shard_options.
    sampler = grain.samplers.IndexSampler(
        num_records=len(source), shard_options=grain.sharding.NoSharding(), shuffle=True, seed=42, num_epochs=1
    )
    loader = grain.DataLoader(
        data_source=source,
        sampler=sampler,
        operations=[grain.transforms.Batch(batch_size=16)],
        worker_count=worker_count,
    )
    return [batch.tolist() for batch in loader]


@needs_cpp
def test_grain_pipeline_matches_array_record(shards):
    grain = pytest.importorskip('grain')
    cpp_source = pytest.importorskip('array_record.python.array_record_data_source')
    files, records = shards
    ours = grain_batches(grain, ArrayRecordDataSource(files), worker_count=2)
    theirs = grain_batches(grain, cpp_source.ArrayRecordDataSource(files), worker_count=2)
    assert ours == theirs
    flat = sorted(r for rs in records for r in rs)
    assert sorted(r for batch in ours for r in batch) == flat
    # The dataset API, in this process.
    dataset = grain.MapDataset.source(ArrayRecordDataSource(files)).shuffle(seed=7).batch(10)
    assert sorted(r for batch in dataset for r in batch.tolist()) == flat


@needs_cpp
def test_writer_to_a_file_object_is_read_by_cpp(tmp_path):
    records = [b'record %d' % i for i in range(300)]
    path = tmp_path / 'f.array_record'
    with open(path, 'wb') as f:
        writer = array_record_module.ArrayRecordWriter(f, 'group_size:7')
        for record in records:
            writer.write(record)
        writer.close()
        assert not f.closed
    reader = cpp.ArrayRecordReader(str(path))
    assert reader.num_records() == 300 and reader.read_all() == records
    reader.close()
    with pytest.raises(TypeError):
        array_record_module.ArrayRecordWriter(42)
