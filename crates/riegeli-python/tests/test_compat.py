"""What programs moving from Google's riegeli module rely on, beyond round trips: file objects
that cannot seek, positions after close(), metadata written as given, a reader that stays
failed, records that must be bytes-like, C++'s messages, signatures and the version."""

from __future__ import annotations

import array
import gc
import importlib.metadata
import inspect
import io
import os
import re
import threading
import weakref

import pytest
from google.protobuf import descriptor_pb2, message

import riegeli
from conftest import write_file
from riegeli.array_record import ArrayRecordReader, ArrayRecordWriter

Message = descriptor_pb2.FileDescriptorProto


class Stream:
    """A file object that is not seekable: tell() and seek() must not be called."""

    def __init__(self, inner):
        self.inner = inner

    def seekable(self):
        return False

    def tell(self):
        raise AssertionError('tell() called on a stream')

    def seek(self, *args):
        raise AssertionError('seek() called on a stream')

    def __getattr__(self, name):
        return getattr(self.inner, name)


def write_with_positions(dest, records, options='uncompressed,chunk_size:3k', **kwargs):
    """Writes `records`; returns (pos before each, last_pos after each, pos after close)."""
    before, after = [], []
    writer = riegeli.RecordWriter(dest, options=options, **kwargs)
    for record in records:
        before.append(writer.pos)
        writer.write_record(record)
        after.append(writer.last_pos)
    writer.close()
    return before, after, writer.pos


RECORDS = [b'%d ' % i * 300 for i in range(40)]


@pytest.mark.parametrize('assumed_pos', [None, 0])
def test_streams_are_written_and_read_without_seeking(assumed_pos):
    expected = write_with_positions(io.BytesIO(), RECORDS, owns_dest=False)
    dest = io.BytesIO()
    assert write_with_positions(Stream(dest), RECORDS, owns_dest=False, assumed_pos=assumed_pos) == expected
    _, positions, end = expected

    reader = riegeli.RecordReader(Stream(io.BytesIO(dest.getvalue())), assumed_pos=assumed_pos)
    assert not reader.supports_random_access
    for record, pos in zip(RECORDS, positions):
        assert reader.read_record() == record
        assert reader.last_pos == pos
    assert reader.read_record() is None
    assert reader.pos == end
    reader.close()

    # What needs random access says why, as Google's does.
    for use in (lambda r: r.size(), lambda r: r.seek(positions[3]), lambda r: r.search_for_record(lambda _: 0)):
        reader = riegeli.RecordReader(Stream(io.BytesIO(dest.getvalue())), assumed_pos=assumed_pos)
        with pytest.raises(riegeli.UnimplementedError, match='excludes random access'):
            use(reader)
    assert riegeli.RecordReader(io.BytesIO(dest.getvalue())).supports_random_access


def open_kind(kind, path, mode):
    """A file object of each kind programs give: in memory, raw, buffered, or not seekable."""
    if kind == 'bytesio':
        return io.BytesIO(open(path, 'rb').read() if mode == 'rb' else b'')
    if kind == 'fileio':
        return io.FileIO(path, mode)
    if kind == 'buffered':
        return open(path, mode)
    return Stream(open(path, mode))


@pytest.mark.parametrize('parallelism', [0, 3])
@pytest.mark.parametrize('kind', ['bytesio', 'fileio', 'buffered', 'stream'])
def test_positions_round_trip_through_file_objects(tmp_path, kind, parallelism):
    path = str(tmp_path / 'f.riegeli')
    dest = open_kind(kind, path, 'wb')
    before, after, end = write_with_positions(
        dest, RECORDS, options=f'uncompressed,chunk_size:3k,parallelism:{parallelism}', owns_dest=False)
    for i in range(1, len(RECORDS)):
        assert after[i - 1] < before[i] <= after[i]
    if kind == 'bytesio':
        open(path, 'wb').write(dest.getvalue())
    dest.close()
    assert end == riegeli.RecordPosition(os.path.getsize(path), 0)

    with riegeli.RecordReader(open_kind(kind, path, 'rb')) as reader:
        for record, pos in zip(RECORDS, after):
            assert reader.pos <= pos
            assert reader.read_record() == record
            assert reader.last_pos == pos
        assert reader.read_record() is None
        assert reader.pos == end
        if kind != 'stream':
            # From the end back to the first record, and no further.
            for i in reversed(range(len(RECORDS))):
                assert reader.seek_back()
                assert reader.read_record() == RECORDS[i]
                assert reader.seek_back()
            assert not reader.seek_back()


def test_a_pipe_is_written_and_read():
    read_end, write_end = os.pipe()
    with open(read_end, 'rb') as source, open(write_end, 'wb') as dest:
        assert not source.seekable() and not dest.seekable()

        def write():
            with riegeli.RecordWriter(dest, owns_dest=False, options='zstd,chunk_size:10k') as writer:
                writer.write_records(RECORDS * 10)
                # Nothing to make durable in a pipe: not an error.
                writer.flush(riegeli.FlushType.FROM_MACHINE)
                writer.write_records(RECORDS * 10)
            dest.close()

        writer = threading.Thread(target=write)
        writer.start()
        with riegeli.RecordReader(source, owns_src=False) as reader:
            assert list(reader.read_records()) == RECORDS * 20
        writer.join()


def test_file_object_exceptions_from_seekable_tell_and_io_propagate():
    class Failing:
        def __init__(self, fail_in):
            self.fail_in = fail_in

        def seekable(self):
            if self.fail_in == 'seekable':
                raise KeyError('seekable')
            return self.fail_in != 'read' and self.fail_in != 'write'

        def tell(self):
            raise KeyError('tell')

        def read(self, size=-1):
            raise KeyError('read')

        def write(self, data):
            raise KeyError('write')

    for fail_in in ['seekable', 'tell', 'read']:
        with pytest.raises(KeyError, match=fail_in):
            with riegeli.RecordReader(Failing(fail_in), owns_src=False) as reader:
                reader.read_record()
    for fail_in in ['seekable', 'tell', 'write']:
        with pytest.raises(KeyError, match=fail_in):
            with riegeli.RecordWriter(Failing(fail_in), owns_dest=False) as writer:
                writer.write_record(b'x' * 10000)


def test_positions_answer_after_close(tmp_path):
    for dest in [io.BytesIO(), str(tmp_path / 'f.riegeli')]:
        writer = riegeli.RecordWriter(dest, owns_dest=False, options='uncompressed,chunk_size:2k')
        for record in RECORDS:
            writer.write_record(record)
        last = writer.last_pos
        writer.close()
        assert writer.last_pos == last
        end = writer.pos
        assert end.record_index == 0 and end.chunk_begin > last.chunk_begin
        data = dest.getvalue() if isinstance(dest, io.BytesIO) else open(dest, 'rb').read()
        assert end.chunk_begin == len(data)

        reader = riegeli.RecordReader(io.BytesIO(data))
        assert list(reader.read_records()) == RECORDS
        assert reader.pos == end
        reader.close()
        assert reader.pos == end
        with pytest.raises(riegeli.FailedPreconditionError, match='No record was read'):
            reader.last_pos

    reader = riegeli.RecordReader(io.BytesIO(data))
    reader.seek(last)
    reader.close()
    assert reader.pos == last

    writer = riegeli.RecordWriter(io.BytesIO(), options='final_padding:64k')
    writer.close()
    assert writer.pos == riegeli.RecordPosition(65536, 0)
    with pytest.raises(riegeli.FailedPreconditionError, match='No record was written'):
        writer.last_pos


INVALID_METADATA = b'\xff' * 100  # An unfinished varint.


def test_serialized_metadata_is_written_as_given():
    data = write_file([b'a', b'b'], serialized_metadata=INVALID_METADATA)
    reader = riegeli.RecordReader(io.BytesIO(data))
    assert reader.read_serialized_metadata() == INVALID_METADATA
    with pytest.raises(message.DecodeError):
        reader.read_metadata()
    assert list(reader.read_records()) == [b'a', b'b']

    skipped = []
    reader = riegeli.RecordReader(io.BytesIO(data), recovery=skipped.append)
    assert reader.read_metadata() == riegeli.RecordsMetadata()
    assert len(skipped) == 1 and skipped[0].message.startswith('DecodeError')
    assert list(reader.read_records()) == [b'a', b'b']

    def stop(region):
        raise StopIteration

    assert riegeli.RecordReader(io.BytesIO(data), recovery=stop).read_metadata() is None

    # Any bytes-like object; an empty one is an empty metadata chunk, as Google's.
    assert write_file([], serialized_metadata=memoryview(INVALID_METADATA)) == write_file(
        [], serialized_metadata=INVALID_METADATA)
    assert len(write_file([], serialized_metadata=b'')) > len(write_file([]))
    assert write_file([], metadata=riegeli.RecordsMetadata()) == write_file([], serialized_metadata=b'')


def test_metadata_and_serialized_metadata_conflict():
    with pytest.raises(TypeError, match="conflicting keyword arguments 'metadata' and 'serialized_metadata'"):
        riegeli.RecordWriter(io.BytesIO(), metadata=riegeli.RecordsMetadata(), serialized_metadata=b'')
    # None means not given.
    write_file([], metadata=None, serialized_metadata=b'')
    write_file([], metadata=riegeli.RecordsMetadata(), serialized_metadata=None)


def damaged_file() -> bytes:
    """RECORDS with the header of a chunk in the middle damaged."""
    positions = write_with_positions(io.BytesIO(), RECORDS, owns_dest=False)[1]
    data = bytearray(write_file(RECORDS, 'uncompressed,chunk_size:3k'))
    data[positions[20].chunk_begin + 20] ^= 1
    return bytes(data)


def test_a_failed_reader_raises_the_same_exception_again():
    reader = riegeli.RecordReader(io.BytesIO(damaged_file()))
    read = []
    with pytest.raises(riegeli.RiegeliError) as first:
        while True:
            read.append(reader.read_record())
    assert 0 < len(read) < len(RECORDS)
    for again in (reader.read_record, reader.read_metadata, lambda: reader.seek_numeric(0), reader.close,
                  reader.close):
        with pytest.raises(riegeli.RiegeliError) as raised:
            again()
        assert raised.value is first.value

    # The exception of a file object too.
    class Broken(io.BytesIO):
        def read(self, size=-1):
            raise ConnectionResetError('gone')

    reader = riegeli.RecordReader(Broken(write_file(RECORDS)))
    with pytest.raises(ConnectionResetError) as first:
        reader.read_record()
    with pytest.raises(ConnectionResetError) as again:
        reader.close()
    assert again.value is first.value

    # Within `with`, the exception leaving the block wins over close()'s.
    with pytest.raises(riegeli.RiegeliError):
        with riegeli.RecordReader(io.BytesIO(damaged_file())) as reader:
            list(reader.read_records())


def test_a_recovery_function_ending_reading_does_not_fail_the_reader():
    data = damaged_file()

    def stop(region):
        raise StopIteration

    reader = riegeli.RecordReader(io.BytesIO(data), recovery=stop)
    read = list(reader.read_records())
    assert 0 < len(read) < len(RECORDS)
    assert reader.size() == len(data)
    reader.close()


def test_a_failed_reader_left_to_the_garbage_collector_is_collected():
    # The exception it keeps holds, through its traceback, the frame holding the reader.
    class Source(io.BytesIO):
        pass

    def read_and_forget():
        source = Source(damaged_file())
        reader = riegeli.RecordReader(source)
        try:
            list(reader.read_records())
        except riegeli.RiegeliError:
            pass
        return weakref.ref(source)

    source = read_and_forget()
    gc.collect()
    assert source() is None


def test_a_failed_writer_raises_the_same_exception_again():
    class Refusing(io.RawIOBase):
        def writable(self):
            return True

        def seekable(self):
            return False

        def write(self, data):
            raise ConnectionResetError('gone')

    writer = riegeli.RecordWriter(Refusing(), owns_dest=False)
    with pytest.raises(ConnectionResetError) as first:
        writer.write_records([b'x' * 1000] * 100)
        writer.flush()
    for again in (lambda: writer.write_record(b'y'), writer.flush, writer.close, writer.close):
        with pytest.raises(ConnectionResetError) as raised:
            again()
        assert raised.value is first.value


def test_a_failed_writer_left_to_the_garbage_collector_is_collected():
    class Refusing(io.BytesIO):
        def write(self, data):
            raise ConnectionResetError('gone')

    def write_and_forget():
        dest = Refusing()
        writer = riegeli.RecordWriter(dest, owns_dest=False)
        try:
            writer.write_record(b'x')
            writer.flush()
        except ConnectionResetError:
            pass
        return weakref.ref(dest)

    dest = write_and_forget()
    gc.collect()
    assert dest() is None


def test_a_cut_tail_reads_as_the_end_then_close_raises_every_time():
    data = write_file(RECORDS, 'uncompressed,chunk_size:3k')
    reader = riegeli.RecordReader(io.BytesIO(data[:-100]))
    read = list(reader.read_records())
    assert read == RECORDS[:len(read)] and len(read) < len(RECORDS)
    assert reader.read_record() is None
    # C++'s class and words: InvalidArgument, the chunk's beginning and the bytes there are.
    with pytest.raises(riegeli.InvalidArgumentError) as first:
        reader.close()
    found = re.fullmatch(r'Truncated Riegeli/records file, incomplete chunk at (\d+) with length (\d+)',
                         str(first.value))
    assert found and int(found[1]) + int(found[2]) == len(data) - 100, first.value
    assert isinstance(first.value, riegeli.DataLossError) and first.value.code == 3
    with pytest.raises(riegeli.InvalidArgumentError) as again:
        reader.close()
    assert again.value is first.value
    # With recovery, the tail is a skipped region and close() succeeds.
    skipped = []
    with riegeli.RecordReader(io.BytesIO(data[:-100]), recovery=skipped.append) as reader:
        assert list(reader.read_records()) == read
    assert [(region.end) for region in skipped] == [len(data) - 100]


def invalid_message_file():
    """Messages 0..5 with record 2 not a message; the positions of all six."""
    dest = io.BytesIO()
    positions = []
    with riegeli.RecordWriter(dest, owns_dest=False, options='uncompressed,chunk_size:100') as writer:
        for i in range(6):
            if i == 2:
                writer.write_record(b'\xff' * 50)
            else:
                writer.write_message(Message(name='%02d' % i))
            positions.append(writer.last_pos)
    return dest.getvalue(), positions


def test_unparsable_messages_are_reported_where_they_are():
    data, positions = invalid_message_file()
    skipped = []
    reader = riegeli.RecordReader(io.BytesIO(data), recovery=skipped.append)
    assert [m.name for m in reader.read_messages(Message)] == ['00', '01', '03', '04', '05']
    assert [(r.begin, r.end) for r in skipped] == [(positions[2].numeric, positions[3].numeric)]
    assert skipped[0].message.startswith('DecodeError')


def test_a_record_that_does_not_parse_fails_that_read_only():
    data, _ = invalid_message_file()
    reader = riegeli.RecordReader(io.BytesIO(data))
    assert [reader.read_message(Message).name for _ in range(2)] == ['00', '01']
    with pytest.raises(message.DecodeError):
        reader.read_message(Message)
    assert [m.name for m in reader.read_messages(Message)] == ['03', '04', '05']
    reader.close()


def test_field_projection_changes_between_records():
    messages = [Message(name='%02d' % i, package='p' * 100) for i in range(30)]
    dest = io.BytesIO()
    with riegeli.RecordWriter(dest, owns_dest=False, options='transpose,chunk_size:2k') as writer:
        writer.write_messages(messages)
    name_only = [[Message.DESCRIPTOR.fields_by_name['name'].number]]
    reader = riegeli.RecordReader(io.BytesIO(dest.getvalue()))
    assert [reader.read_message(Message) for _ in range(5)] == messages[:5]
    reader.set_field_projection(name_only)
    assert [reader.read_message(Message) for _ in range(15)] == [Message(name=m.name) for m in messages[5:20]]
    reader.set_field_projection(None)
    assert list(reader.read_messages(Message)) == messages[20:]


def test_recovery_reports_the_region_between_the_records_read():
    # 200 KB: a damaged chunk header loses the records up to the chunk that the next block
    # header (every 64 KiB) points to.
    records = [b'%d ' % i * 2500 for i in range(40)]
    positions = write_with_positions(io.BytesIO(), records, owns_dest=False)[1]
    data = bytearray(write_file(records, 'uncompressed,chunk_size:3k'))
    data[positions[5].chunk_begin + 20] ^= 1
    skipped = []
    reader = riegeli.RecordReader(io.BytesIO(bytes(data)), recovery=skipped.append)
    read = []
    while (record := reader.read_record()) is not None:
        read.append(records.index(record))
    lost = sorted(set(range(len(records))) - set(read))
    assert lost[0] == 5 and lost == list(range(5, lost[-1] + 1)) and lost[-1] < len(records) - 1
    assert [(r.begin, r.end) for r in skipped] == [(positions[5].numeric, positions[lost[-1] + 1].numeric)]


def test_search_for_message_skips_unparsable_messages_with_recovery():
    # Three chunks: messages 0 and 2 around a record that is not a message.
    dest = io.BytesIO()
    positions = []
    with riegeli.RecordWriter(dest, owns_dest=False, options='uncompressed,chunk_size:1k') as writer:
        for record in [Message(name='0', package='p' * 1000), b'\xff' * 1000, Message(name='2', package='p' * 1000)]:
            writer.write_message(record) if isinstance(record, Message) else writer.write_record(record)
            positions.append(writer.last_pos)
    data = dest.getvalue()
    assert len({pos.chunk_begin for pos in positions}) == 3

    def is_at(name):
        return lambda m: (m.name > name) - (m.name < name)

    with pytest.raises(message.DecodeError):
        riegeli.RecordReader(io.BytesIO(data)).search_for_message(Message, is_at('1'))

    skipped = []
    reader = riegeli.RecordReader(io.BytesIO(data), recovery=skipped.append)
    assert reader.search_for_message(Message, is_at('1')) == 1
    assert reader.pos == positions[2]
    assert [(r.begin, r.end) for r in skipped] == [(positions[1].numeric, positions[2].numeric)]
    assert reader.read_message(Message).name == '2'

    def stop(region):
        raise StopIteration

    assert riegeli.RecordReader(io.BytesIO(data), recovery=stop).search_for_message(Message, is_at('1')) is None

    def fail(region):
        raise KeyError('from recovery')

    with pytest.raises(KeyError, match='from recovery'):
        riegeli.RecordReader(io.BytesIO(data), recovery=fail).search_for_message(Message, is_at('1'))


def test_stop_iteration_in_search_tests():
    data = write_file([b'%04d' % i for i in range(100)])

    def stop(_):
        raise StopIteration

    assert riegeli.RecordReader(io.BytesIO(data)).search_for_record(stop) is None
    assert riegeli.RecordReader(io.BytesIO(data)).search_for_message(Message, stop) is None
    # search() lets it through, as Google's.
    with pytest.raises(StopIteration):
        riegeli.RecordReader(io.BytesIO(data)).search(stop)


NOT_BYTES_LIKE = [5, 10**8, -1, 1.5, [1, 2], {1: 2}, range(3), 'text', None, object()]


@pytest.mark.parametrize('record', NOT_BYTES_LIKE, ids=lambda r: type(r).__name__)
def test_records_that_are_not_bytes_like_are_refused(record):
    dest = io.BytesIO()
    with riegeli.RecordWriter(dest, owns_dest=False) as writer:
        with pytest.raises(TypeError, match=f"a bytes-like object is required, not '{type(record).__name__}'"):
            writer.write_record(record)
        with pytest.raises(TypeError):
            writer.write_records([b'first', record])
    # Records before the refused one are written.
    assert list(riegeli.RecordReader(io.BytesIO(dest.getvalue())).read_records()) == [b'first']
    with pytest.raises(TypeError):
        riegeli.RecordWriter(io.BytesIO(), serialized_metadata=record if record is not None else 7)


def test_bytes_like_records_are_accepted():
    records = [b'bytes', bytearray(b'bytearray'), memoryview(b'memoryview'), array.array('B', b'array'),
               memoryview(b'sliced memoryview')[2:8]]
    assert list(riegeli.RecordReader(io.BytesIO(write_file(records))).read_records()) == [bytes(r) for r in records]


@pytest.mark.parametrize('record', [5, 'text', bytearray(b'x'), memoryview(b'x'), None], ids=repr)
def test_array_record_writer_takes_bytes_only(tmp_path, record):
    # As array_record's: only bytes.
    writer = ArrayRecordWriter(str(tmp_path / 'f'))
    with pytest.raises(TypeError):
        writer.write(record)
    writer.close()


def test_writer_option_errors_are_cpp_words():
    valid = ('default, transpose, uncompressed, brotli, zstd, snappy, window_log, brotli_encoder, chunk_size, '
             'bucket_fraction, padding, initial_padding, final_padding, parallelism')
    for options, words in [
        ('chunk_sise:1M', f'Unknown option chunk_sise, valid options: {valid}'),
        ('zstd:30', 'Option zstd: invalid value: 30, valid values: (empty), integers in the range [-131072..22]'),
        ('zstd,snappy', 'Option snappy conflicts with option zstd'),
        ('parallelism:2,parallelism:3', 'Option parallelism is present more than once'),
        (b'transpose:yes', 'Option transpose: invalid value: yes, valid values: (empty), true, false'),
    ]:
        with pytest.raises(riegeli.InvalidArgumentError) as raised:
            riegeli.RecordWriter(io.BytesIO(), options=options)
        assert str(raised.value) == words


def test_seeking_past_the_end_fails_as_googles():
    data = write_file(RECORDS)
    for seek in (lambda r: r.seek(riegeli.RecordPosition(2**63, 0)), lambda r: r.seek_numeric(len(data) + 1)):
        reader = riegeli.RecordReader(io.BytesIO(data))
        with pytest.raises(riegeli.InvalidArgumentError, match=f'^Position [0-9]+ exceeds file size: {len(data)}$'):
            seek(reader)
        # The reader has failed, as Google's.
        with pytest.raises(riegeli.InvalidArgumentError):
            reader.read_record()
    reader = riegeli.RecordReader(io.BytesIO(data))
    reader.seek_numeric(len(data))
    assert reader.read_record() is None


def test_version_is_the_package_version():
    assert riegeli.__version__ == importlib.metadata.version('riegeli-rs')
    assert riegeli.__version__[0].isdigit()


def public_callables():
    for cls in (riegeli.RecordWriter, riegeli.RecordReader, riegeli.RecordPosition,
                ArrayRecordWriter, ArrayRecordReader):
        yield cls.__name__, cls
        for name, member in vars(cls).items():
            if callable(member) and (not name.startswith('_') or name in ('__enter__', '__exit__')):
                yield f'{cls.__name__}.{name}', getattr(cls, name)


@pytest.mark.parametrize('name,function', list(public_callables()), ids=lambda x: x if isinstance(x, str) else '')
def test_signatures_show_real_defaults(name, function):
    signature = inspect.signature(function)
    assert all(p.default is not Ellipsis for p in signature.parameters.values()), f'{name}{signature}'


def test_constructor_signatures_are_googles():
    assert str(inspect.signature(riegeli.RecordWriter)) == (
        "(dest, *, owns_dest=True, assumed_pos=None, min_buffer_size=4096, max_buffer_size=65536, "
        "buffer_size=None, options='', metadata=None, serialized_metadata=None)")
    assert str(inspect.signature(riegeli.RecordReader)) == (
        '(src, *, owns_src=True, assumed_pos=None, min_buffer_size=4096, max_buffer_size=65536, '
        'buffer_size=None, field_projection=None, recovery=None)')
