"""riegeli.RecordWriter and riegeli.RecordReader: Google's Python API on riegeli-rs."""

from __future__ import annotations

import io
import os
import pathlib
import pickle
import threading

import pytest
from google.protobuf import descriptor_pb2, message

import riegeli
from conftest import write_file

OPTIONS = ['', 'uncompressed', 'zstd', 'snappy', 'brotli:1', 'transpose', 'transpose,zstd,chunk_size:4k']


@pytest.mark.parametrize('options', OPTIONS)
def test_round_trip_file_object(records, options):
    data = write_file(records, options)
    with riegeli.RecordReader(io.BytesIO(data)) as reader:
        assert reader.check_file_format()
        assert list(reader.read_records()) == records
        assert reader.read_record() is None


@pytest.mark.parametrize('make_path', [str, pathlib.Path, os.fsencode])
def test_round_trip_path(tmp_path, records, make_path):
    path = make_path(tmp_path / 'f.riegeli')
    with riegeli.RecordWriter(path, options='zstd') as writer:
        for record in records:
            writer.write_record(record)
        assert writer.dest == path
    with riegeli.RecordReader(path) as reader:
        assert reader.read_record() == records[0]
        assert list(reader.read_records()) == records[1:]
    with open(tmp_path / 'f.riegeli', 'rb') as f:
        assert list(riegeli.RecordReader(f, owns_src=False).read_records()) == records


def test_record_types_accepted():
    data = write_file([b'a', bytearray(b'b'), memoryview(b'c'), b''])
    assert list(riegeli.RecordReader(io.BytesIO(data)).read_records()) == [b'a', b'b', b'c', b'']
    with pytest.raises(TypeError):
        riegeli.RecordWriter(io.BytesIO()).write_record('text')


def test_messages():
    messages = [descriptor_pb2.FileDescriptorProto(name=f'f{i}.proto', package='p') for i in range(50)]
    dest = io.BytesIO()
    with riegeli.RecordWriter(dest, owns_dest=False, options='transpose') as writer:
        writer.write_message(messages[0])
        writer.write_messages(messages[1:])
    with riegeli.RecordReader(io.BytesIO(dest.getvalue())) as reader:
        assert reader.read_message(descriptor_pb2.FileDescriptorProto) == messages[0]
        assert list(reader.read_messages(descriptor_pb2.FileDescriptorProto)) == messages[1:]
        assert reader.read_message(descriptor_pb2.FileDescriptorProto) is None
    # Field projection: only `name` (field 1), and `package` (2) as existence only.
    projection = [[1], [2, riegeli.EXISTENCE_ONLY]]
    with riegeli.RecordReader(io.BytesIO(dest.getvalue()), field_projection=projection) as reader:
        first = reader.read_message(descriptor_pb2.FileDescriptorProto)
        assert first.name == 'f0.proto' and first.HasField('package') and first.package == ''
        reader.set_field_projection(None)
        assert reader.read_message(descriptor_pb2.FileDescriptorProto) == messages[1]


def test_unparsable_message_raises_decode_error_or_is_skipped_with_recovery():
    good = descriptor_pb2.FileDescriptorProto(name='good.proto')
    data = write_file([b'\xff\xff\xff', good.SerializeToString()])
    with pytest.raises(message.DecodeError):
        riegeli.RecordReader(io.BytesIO(data)).read_message(descriptor_pb2.FileDescriptorProto)
    skipped = []
    reader = riegeli.RecordReader(io.BytesIO(data), recovery=skipped.append)
    assert list(reader.read_messages(descriptor_pb2.FileDescriptorProto)) == [good]
    assert len(skipped) == 1 and skipped[0].end == skipped[0].begin + 1 and skipped[0].message

    def stop(region):
        raise StopIteration

    reader = riegeli.RecordReader(io.BytesIO(data), recovery=stop)
    assert reader.read_message(descriptor_pb2.FileDescriptorProto) is None
    assert reader.read_record() is None


def test_unparsable_metadata_is_empty_with_recovery():
    # As C++'s, the writer writes metadata bytes as given, whether they parse or not.
    data = write_file([b'r'], serialized_metadata=b'\x0a\x09short')  # A field cut short.
    with pytest.raises(message.DecodeError):
        riegeli.RecordReader(io.BytesIO(data)).read_metadata()
    skipped = []
    reader = riegeli.RecordReader(io.BytesIO(data), recovery=skipped.append)
    assert reader.read_metadata() == riegeli.RecordsMetadata()
    assert len(skipped) == 1 and 'DecodeError' in skipped[0].message
    assert reader.read_record() == b'r'


def test_truncated_file_ends_and_close_raises():
    records = [b'x' * 1000] * 10
    truncated = write_file(records, 'uncompressed,chunk_size:2k')[:-5]
    reader = riegeli.RecordReader(io.BytesIO(truncated))
    read = list(reader.read_records())
    assert 0 < len(read) < len(records) and read == records[:len(read)]
    assert reader.read_record() is None
    with pytest.raises(riegeli.InvalidArgumentError, match='^Truncated Riegeli/records file, incomplete chunk at'):
        reader.close()
    with pytest.raises(riegeli.DataLossError):
        with riegeli.RecordReader(io.BytesIO(truncated)) as reader:
            list(reader.read_records())
    # With recovery the cut is a skipped region, and close() succeeds.
    skipped = []
    with riegeli.RecordReader(io.BytesIO(truncated), recovery=skipped.append) as reader:
        assert list(reader.read_records()) == read
    assert len(skipped) == 1


def test_metadata_round_trip():
    metadata = riegeli.RecordsMetadata(file_comment='hello', num_records=2)
    riegeli.set_record_type(metadata, descriptor_pb2.FileDescriptorProto)
    assert metadata.record_type_name == 'google.protobuf.FileDescriptorProto'
    data = write_file([b'x', b'y'], metadata=metadata)
    with riegeli.RecordReader(io.BytesIO(data)) as reader:
        read = reader.read_metadata()
        assert (read.file_comment, read.record_type_name, read.num_records) == ('hello', metadata.record_type_name, 2)
        assert [f.name for f in read.file_descriptor] == [f.name for f in metadata.file_descriptor]
        record_type = riegeli.get_record_type(read)
        assert record_type.DESCRIPTOR.full_name == 'google.protobuf.FileDescriptorProto'
        assert list(reader.read_records()) == [b'x', b'y']
    serialized = riegeli.RecordsMetadata(file_comment='serialized', num_records=1).SerializeToString()
    data = write_file([b'z'], serialized_metadata=serialized)
    reader = riegeli.RecordReader(io.BytesIO(data))
    assert reader.read_serialized_metadata() == serialized
    # Without metadata: an empty message, and no record type.
    reader = riegeli.RecordReader(io.BytesIO(write_file([b'z'])))
    assert reader.read_metadata() == riegeli.RecordsMetadata()
    assert riegeli.get_record_type(reader.read_metadata()) is None
    with pytest.raises(TypeError):
        write_file([], metadata=metadata, serialized_metadata=serialized)


def test_metadata_kept_byte_for_byte():
    metadata = riegeli.RecordsMetadata(file_comment='hello')
    riegeli.set_record_type(metadata, descriptor_pb2.FileDescriptorProto)
    data = write_file([b'x'], metadata=metadata)
    assert riegeli.RecordReader(io.BytesIO(data)).read_metadata() == metadata


def test_record_position():
    pos = riegeli.RecordPosition(65536, 3)
    assert (pos.chunk_begin, pos.record_index, pos.numeric) == (65536, 3, 65539)
    assert str(pos) == '65536/3' and repr(pos) == 'RecordPosition(65536, 3)'
    assert riegeli.RecordPosition.from_str('65536/3') == pos
    assert riegeli.RecordPosition.from_str(b'65536/3') == pos
    assert riegeli.RecordPosition.from_bytes(pos.to_bytes()) == pos
    assert pos.to_bytes() == b'\xc1\x00\x00\x03'
    assert riegeli.RecordPosition(1, 0) < riegeli.RecordPosition(1, 1) < riegeli.RecordPosition(2, 0)
    assert len({riegeli.RecordPosition(1, 2), riegeli.RecordPosition(1, 2)}) == 1
    assert pickle.loads(pickle.dumps(pos)) == pos
    assert pos != (65536, 3)
    with pytest.raises(ValueError):
        riegeli.RecordPosition.from_str('nonsense')
    with pytest.raises(ValueError):
        riegeli.RecordPosition.from_bytes(b'')
    with pytest.raises(OverflowError):
        riegeli.RecordPosition(2**64 - 1, 1)


def test_positions_and_seeking(records):
    dest = io.BytesIO()
    positions = []
    with riegeli.RecordWriter(dest, owns_dest=False, options='uncompressed,chunk_size:1k') as writer:
        with pytest.raises(riegeli.FailedPreconditionError):
            writer.last_pos
        for record in records:
            writer.write_record(record)
            positions.append(writer.last_pos)
    reader = riegeli.RecordReader(io.BytesIO(dest.getvalue()))
    with pytest.raises(riegeli.FailedPreconditionError):
        reader.last_pos
    read_positions = []
    while (record := reader.read_record()) is not None:
        read_positions.append(reader.last_pos)
    assert read_positions == positions
    assert reader.pos.numeric == reader.size() == len(dest.getvalue())
    for i in [1500, 0, 999, len(records) - 1]:
        reader.seek(positions[i])
        assert reader.read_record() == records[i]
        reader.seek_numeric(positions[i].numeric)
        assert reader.read_record() == records[i]
    reader.seek(positions[10])
    assert reader.seek_back()
    assert reader.read_record() == records[9]
    reader.seek_numeric(0)
    assert not reader.seek_back()
    assert reader.read_record() == records[0]
    with pytest.raises(TypeError):
        reader.seek(5)


def test_search(records):
    keyed = [b'%08d' % (2 * i) for i in range(3000)]
    data = write_file(keyed, 'zstd,chunk_size:2k')
    reader = riegeli.RecordReader(io.BytesIO(data))

    def compare(target):
        return lambda record: (int(record) > target) - (int(record) < target)

    assert reader.search_for_record(compare(1000)) == 0
    assert reader.read_record() == b'%08d' % 1000
    assert reader.search_for_record(compare(1001)) == 1
    assert reader.read_record() == b'%08d' % 1002
    assert reader.search_for_record(compare(10**7)) == -1
    assert reader.read_record() is None
    assert reader.search_for_record(lambda record: None) is None
    assert reader.search(lambda probe: compare(4000)(probe.read_record())) == 0
    assert reader.read_record() == b'%08d' % 4000

    def cancel(record):
        raise StopIteration

    assert reader.search_for_record(cancel) is None

    def fail(record):
        raise KeyError('from test')

    with pytest.raises(KeyError, match='from test'):
        reader.search_for_record(fail)
    with pytest.raises(TypeError):
        reader.search_for_record(lambda record: 'no')

    messages = [descriptor_pb2.FileDescriptorProto(name='%05d' % i) for i in range(500)]
    dest = io.BytesIO()
    with riegeli.RecordWriter(dest, owns_dest=False, options='chunk_size:1k') as writer:
        writer.write_messages(messages)
    reader = riegeli.RecordReader(io.BytesIO(dest.getvalue()))
    result = reader.search_for_message(
        descriptor_pb2.FileDescriptorProto, lambda m: (m.name > '00250') - (m.name < '00250'))
    assert result == 0
    assert reader.read_message(descriptor_pb2.FileDescriptorProto).name == '00250'


def damaged(records) -> bytes:
    data = bytearray(write_file(records, 'uncompressed,chunk_size:4k'))
    middle = len(data) // 2
    data[middle:middle + 100] = b'\xaa' * 100
    return bytes(data)


def test_corruption_raises_invalid_argument_as_cpp_and_data_loss(records):
    reader = riegeli.RecordReader(io.BytesIO(damaged(records)))
    with pytest.raises(riegeli.InvalidArgumentError) as info:
        list(reader.read_records())
    # C++ reports damage as InvalidArgument (code 3); DataLossError is what this package
    # raised before, kept as a base class.
    assert isinstance(info.value, riegeli.DataLossError) and info.value.code == 3
    assert type(info.value) is riegeli.CorruptedFileError


def test_recovery(records):
    skipped = []
    reader = riegeli.RecordReader(io.BytesIO(damaged(records)), recovery=skipped.append)
    read = list(reader.read_records())
    assert skipped and all(isinstance(region, riegeli.SkippedRegion) for region in skipped)
    region = skipped[0]
    assert region.begin < region.end and region.length == region.end - region.begin and region.message
    assert str(region).startswith(f'[{region.begin}..{region.end}): ')
    assert 0 < len(read) < len(records)
    # Every record read is in order and intact.
    it = iter(records)
    assert all(any(record == want for want in it) for record in read)


def test_recovery_stop_iteration_ends_reading(records):
    def stop(region):
        raise StopIteration

    reader = riegeli.RecordReader(io.BytesIO(damaged(records)), recovery=stop)
    read = list(reader.read_records())
    assert 0 < len(read) < len(records) and read == records[:len(read)]
    assert reader.read_record() is None


def test_recovery_exception_propagates(records):
    def fail(region):
        raise ValueError('from recovery')

    reader = riegeli.RecordReader(io.BytesIO(damaged(records)), recovery=fail)
    with pytest.raises(ValueError, match='from recovery'):
        list(reader.read_records())


def test_bad_input_raises():
    with pytest.raises(riegeli.DataLossError):
        riegeli.RecordReader(io.BytesIO(b'not a riegeli file' * 100)).read_record()
    with pytest.raises(riegeli.DataLossError):
        riegeli.RecordReader(io.BytesIO(b'not a riegeli file' * 100)).check_file_format()
    assert not riegeli.RecordReader(io.BytesIO(b'')).check_file_format()
    assert riegeli.RecordReader(io.BytesIO(b'')).read_record() is None
    assert not riegeli.RecordReader(io.BytesIO(write_file([b'x'])[:50])).check_file_format()
    for junk in [bytes(range(256)) * 300, b'\x00' * 70000]:
        with pytest.raises(riegeli.RiegeliError):
            list(riegeli.RecordReader(io.BytesIO(junk)).read_records())
    with pytest.raises(riegeli.InvalidArgumentError):
        riegeli.RecordWriter(io.BytesIO(), options='nonsense:3')
    with pytest.raises(riegeli.InvalidArgumentError):
        riegeli.RecordReader(io.BytesIO(b''), field_projection=[[0, 1]])
    with pytest.raises(FileNotFoundError):
        riegeli.RecordReader('/nonexistent/dir/file.riegeli')
    with pytest.raises(TypeError):
        riegeli.RecordReader(io.BytesIO(b''), unknown_argument=1)


def test_closed_objects_raise_failed_precondition():
    reader = riegeli.RecordReader(io.BytesIO(write_file([b'a'])))
    reader.close()
    reader.close()
    with pytest.raises(riegeli.FailedPreconditionError):
        reader.read_record()
    writer = riegeli.RecordWriter(io.BytesIO())
    writer.close()
    with pytest.raises(riegeli.FailedPreconditionError):
        writer.write_record(b'a')


def test_owns_src_and_dest():
    dest = io.BytesIO()
    riegeli.RecordWriter(dest).close()
    assert dest.closed
    dest = io.BytesIO()
    riegeli.RecordWriter(dest, owns_dest=False).close()
    src = io.BytesIO(dest.getvalue())
    reader = riegeli.RecordReader(src, owns_src=False)
    reader.close()
    assert not src.closed and reader.src is src
    riegeli.RecordReader(src).close()
    assert src.closed


class FailingFile(io.RawIOBase):
    """A file object whose reads and writes raise after a while."""

    def __init__(self, data=b''):
        self.inner = io.BytesIO(data)
        self.calls = 0

    def readable(self):
        return True

    def writable(self):
        return True

    def seekable(self):
        return True

    def seek(self, offset, whence=0):
        return self.inner.seek(offset, whence)

    def tell(self):
        return self.inner.tell()

    def read(self, size=-1):
        self.calls += 1
        if self.calls > 1:
            raise ConnectionError('read failed')
        return self.inner.read(min(size, 100))

    def write(self, data):
        raise ConnectionError('write failed')


def test_file_object_exceptions_reach_the_caller():
    data = write_file([b'x' * 1000] * 100)
    with pytest.raises(ConnectionError, match='read failed'):
        list(riegeli.RecordReader(FailingFile(data)).read_records())
    writer = riegeli.RecordWriter(FailingFile(), owns_dest=False)
    with pytest.raises(ConnectionError, match='write failed'):
        writer.write_records([b'y' * 1000] * 100)
        writer.flush()


def test_sequential_source_with_assumed_pos(records):
    data = write_file(records)

    class Sequential(io.RawIOBase):
        def __init__(self):
            self.inner = io.BytesIO(data)

        def readable(self):
            return True

        def read(self, size=-1):
            return self.inner.read(size)

    assert list(riegeli.RecordReader(Sequential(), assumed_pos=0).read_records()) == records
    dest = io.BytesIO()
    with riegeli.RecordWriter(dest, owns_dest=False, assumed_pos=0) as writer:
        writer.write_records(records)
    assert list(riegeli.RecordReader(io.BytesIO(dest.getvalue())).read_records()) == records


@pytest.mark.parametrize('flush_type', list(riegeli.FlushType) + [None])
def test_flush(tmp_path, flush_type):
    path = tmp_path / 'f.riegeli'
    for dest in [str(path), open(tmp_path / 'g.riegeli', 'wb'), io.BytesIO()]:
        writer = riegeli.RecordWriter(dest, owns_dest=False)
        before = writer.estimated_size()
        writer.write_records([b'x' * 100] * 100)
        if flush_type is None:
            writer.flush()
        else:
            writer.flush(flush_type)
        assert writer.estimated_size() > before
        assert writer.pos.record_index == 0
        writer.close()
        if not isinstance(dest, str):
            dest.close()
    assert riegeli.FlushType.FROM_PROCESS.value == 1
    with pytest.raises(ValueError):
        riegeli.RecordWriter(io.BytesIO()).flush(7)


def test_append_to_file_object(records):
    dest = io.BytesIO()
    with riegeli.RecordWriter(dest, owns_dest=False, options='zstd') as writer:
        writer.write_records(records[:10])
    with riegeli.RecordWriter(dest, owns_dest=False, options='zstd') as writer:
        writer.write_records(records[10:20])
    assert list(riegeli.RecordReader(io.BytesIO(dest.getvalue())).read_records()) == records[:20]


def test_exception_classes():
    # One class per canonical code, as Google's; CorruptedFileError is ours (both
    # InvalidArgumentError and DataLossError).
    special = {'RiegeliError', 'CorruptedFileError'}
    codes = {name: getattr(riegeli, name).code for name in riegeli.__all__ if name.endswith('Error') and name not in special}
    assert len(codes) == 16 and sorted(codes.values()) == list(range(1, 17))
    assert riegeli.CorruptedFileError.__bases__ == (riegeli.InvalidArgumentError, riegeli.DataLossError)
    assert all(issubclass(getattr(riegeli, name), riegeli.RiegeliError) for name in codes)


def test_threads_read_in_parallel(tmp_path, records):
    paths = []
    for i in range(4):
        path = tmp_path / f'{i}.riegeli'
        with riegeli.RecordWriter(path, options='brotli:5') as writer:
            writer.write_records(records)
        paths.append(path)
    results = {}

    def read(path):
        with riegeli.RecordReader(path) as reader:
            results[path] = list(reader.read_records())

    threads = [threading.Thread(target=read, args=(path,)) for path in paths]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert all(results[path] == records for path in paths)


@pytest.mark.parametrize('options', ['uncompressed,chunk_size:2k', 'transpose,zstd,chunk_size:4k'])
def test_byte_ranges_partition_the_records(records, options):
    data = write_file(records, options)
    whole = []
    with riegeli.RecordReader(io.BytesIO(data)) as reader:
        for record in reader.read_records():
            whole.append((reader.last_pos.numeric, record))
    for target in [1, 65536, 100000]:
        ranges = riegeli.byte_ranges(len(data), target)
        assert ranges[0][0] == 0 and ranges[-1][1] == len(data)
        assert all(a[1] == b[0] for a, b in zip(ranges, ranges[1:]))
        split = []
        for start, end in ranges:
            with riegeli.RecordReader(io.BytesIO(data)) as reader:
                reader.set_byte_range(start, end)
                for record in reader.read_records():
                    split.append((reader.last_pos.numeric, record))
        assert split == whole
    # An open end reads to the end of the file; a range past the end reads nothing.
    reader = riegeli.RecordReader(io.BytesIO(data))
    reader.set_byte_range(len(data) // 2)
    assert [r for _, r in whole if _ >= reader.pos.numeric] == list(reader.read_records())
    reader = riegeli.RecordReader(io.BytesIO(data))
    reader.set_byte_range(len(data), len(data) + 5)
    assert reader.read_record() is None
    assert riegeli.byte_ranges(0, 1) == []
