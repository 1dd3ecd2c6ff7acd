"""Records as Arrow: arrow_batches() / to_arrow() of the readers, consumed by pyarrow,
polars, DuckDB and pandas, and riegeli.polars.scan_riegeli.

Expected values are what the `protobuf` package decodes from the same records.
"""

from __future__ import annotations

import io
import random

import pytest
from google.protobuf import descriptor_pb2

import riegeli
from riegeli.array_record import ArrayRecordDataSource, ArrayRecordReader, ArrayRecordWriter

pa = pytest.importorskip('pyarrow')

Field = descriptor_pb2.FieldDescriptorProto
NUM_RECORDS = 3000


def make_messages(n: int = NUM_RECORDS, seed: int = 5) -> list[Field]:
    """FieldDescriptorProtos (proto2): strings, int32, enums, a bool and a nested message,
    each field present or not."""
    rng = random.Random(seed)
    messages = []
    for i in range(n):
        m = Field()
        if rng.random() < 0.9:
            m.name = f'field_{i}_' + 'x' * rng.randrange(5)
        if rng.random() < 0.8:
            m.number = rng.randrange(1, 1 << 29)
        if rng.random() < 0.7:
            m.label = rng.choice([1, 2, 3])
        if rng.random() < 0.7:
            m.type = rng.randrange(1, 19)
        if rng.random() < 0.3:
            m.type_name = '.pkg.T%d' % rng.randrange(100)
        if rng.random() < 0.2:
            m.oneof_index = rng.randrange(-5, 5)
        if rng.random() < 0.3:
            m.proto3_optional = rng.random() < 0.5
        if rng.random() < 0.25:
            m.options.packed = rng.random() < 0.5
            if rng.random() < 0.5:
                m.options.deprecated = True
        messages.append(m)
    return messages


SCALARS = ['name', 'number', 'label', 'type', 'type_name', 'oneof_index', 'proto3_optional']


def expected_column(messages: list[Field], name: str) -> list:
    """What the column `name` holds by protobuf's decoding: null where the field is absent."""
    return [getattr(m, name) if m.HasField(name) else None for m in messages]


def check_table(table, messages: list[Field], columns=None) -> None:
    assert table.num_rows == len(messages)
    names = table.column_names
    for name in SCALARS:
        if columns is not None and name not in columns:
            assert name not in names
            continue
        assert table.column(name).to_pylist() == expected_column(messages, name), name
    if columns is None or any(c.startswith('options') for c in columns):
        options = table.column('options').to_pylist()
        for got, m in zip(options, messages):
            if not m.HasField('options'):
                assert got is None
                continue
            for sub in ('packed', 'deprecated'):
                if sub in got:
                    assert got[sub] == (getattr(m.options, sub) if m.options.HasField(sub) else None), sub


def write_records_file(messages, options: str = '', with_type: bool = True, extra=()) -> bytes:
    metadata = riegeli.RecordsMetadata()
    if with_type:
        riegeli.set_record_type(metadata, Field)
    dest = io.BytesIO()
    with riegeli.RecordWriter(dest, owns_dest=False, options=options, metadata=metadata) as writer:
        for m in messages:
            writer.write_message(m)
        for record in extra:
            writer.write_record(record)
    return dest.getvalue()


@pytest.fixture(scope='module')
def messages() -> list[Field]:
    return make_messages()


@pytest.fixture(scope='module', params=['uncompressed', 'transpose', 'transpose,zstd,chunk_size:20000'])
def records_file(request, messages, tmp_path_factory) -> str:
    path = tmp_path_factory.mktemp('arrow') / 'records.riegeli'
    path.write_bytes(write_records_file(messages, request.param))
    return str(path)


def test_to_arrow_matches_protobuf(records_file, messages):
    with riegeli.RecordReader(records_file) as reader:
        table = reader.to_arrow(batch_size=700)
    assert isinstance(table, pa.Table)
    check_table(table, messages)


def test_stream_through_pyarrow(records_file, messages):
    with riegeli.RecordReader(records_file) as reader:
        batches = reader.arrow_batches(batch_size=1000)
        stream = pa.RecordBatchReader.from_stream(batches)
        got = list(stream)
        assert [b.num_rows for b in got] == [1000, 1000, 1000]
        check_table(pa.Table.from_batches(got), messages)
        assert batches.skipped_records == 0
        # The reader is back, at the end.
        assert reader.read_record() is None


def test_capsule_is_named_and_consumed_once(records_file):
    with riegeli.RecordReader(records_file) as reader:
        batches = reader.arrow_batches()
        capsule = batches.__arrow_c_stream__(requested_schema=None)
        assert 'arrow_array_stream' in repr(capsule)
        with pytest.raises(RuntimeError):
            batches.__arrow_c_stream__()
        # While the stream holds the reader, the reader refuses to read.
        with pytest.raises(riegeli.FailedPreconditionError):
            reader.read_record()
        del capsule
        assert reader.read_record() is not None


def test_reads_from_the_current_record(records_file, messages):
    with riegeli.RecordReader(records_file) as reader:
        for _ in range(123):
            reader.read_record()
        table = reader.to_arrow(['name'])
        assert table.column('name').to_pylist() == expected_column(messages[123:], 'name')
        # Dropping a stream unconsumed gives the reader back where it was.
        reader.seek_numeric(0)
        del_me = reader.arrow_batches(['number'])
        del del_me
        assert Field.FromString(reader.read_record()) == messages[0]


def test_projected_columns_equal_the_unprojected_ones(records_file, messages):
    with riegeli.RecordReader(records_file) as reader:
        full = reader.to_arrow()
    columns = ['type_name', 'number', 'options.packed']
    with riegeli.RecordReader(records_file) as reader:
        projected = reader.to_arrow(columns)
        # The reader's own projection is back: whole records.
        reader.seek_numeric(0)
        assert Field.FromString(reader.read_record()) == messages[0]
    # Fields in the descriptor's order.
    assert projected.column_names == ['number', 'type_name', 'options']
    assert projected.column('number') == full.column('number')
    assert projected.column('type_name') == full.column('type_name')
    packed = [None if o is None else o['packed'] for o in full.column('options').to_pylist()]
    assert [None if o is None else o['packed'] for o in projected.column('options').to_pylist()] == packed
    check_table(projected, messages, columns)


def test_simple_and_transposed_files_give_identical_tables(messages, tmp_path):
    tables = []
    for options in ['uncompressed', 'transpose', 'brotli,chunk_size:5000', 'transpose,snappy']:
        path = tmp_path / f'{options}.riegeli'
        path.write_bytes(write_records_file(messages, options))
        with riegeli.RecordReader(str(path)) as reader:
            tables.append(reader.to_arrow(batch_size=512))
    for table in tables[1:]:
        assert table.equals(tables[0])


def test_polars_duckdb_pandas(records_file, messages):
    pl = pytest.importorskip('polars')
    duckdb = pytest.importorskip('duckdb')
    pd = pytest.importorskip('pandas')
    with riegeli.RecordReader(records_file) as reader:
        frame = pl.from_arrow(reader.arrow_batches(['name', 'number']))
    # Polars reads a C stream as a Series of structs, the columns its fields.
    if isinstance(frame, pl.Series):
        frame = frame.struct.unnest()
    with riegeli.RecordReader(records_file) as reader:
        assert pl.DataFrame(reader.arrow_batches(['name', 'number'])).equals(frame)
    assert frame['name'].to_list() == expected_column(messages, 'name')
    assert frame['number'].to_list() == expected_column(messages, 'number')

    with riegeli.RecordReader(records_file) as reader:
        tbl = pa.RecordBatchReader.from_stream(reader.arrow_batches(['number', 'label']))
        got = duckdb.sql('SELECT count(*), sum(number), count(label) FROM tbl WHERE label = 3').fetchall()
    label3 = [m for m in messages if m.HasField('label') and m.label == 3]
    assert got == [(len(label3), sum(m.number for m in label3 if m.HasField('number')), len(label3))]

    with riegeli.RecordReader(records_file) as reader:
        df = reader.to_arrow(['type_name', 'proto3_optional']).to_pandas()
    assert len(df) == len(messages)
    names = expected_column(messages, 'type_name')
    # pandas shows a null string as NaN (or None).
    assert [None if pd.isna(v) else v for v in df['type_name'].tolist()] == names


def test_type_given_and_errors(messages):
    file = write_records_file(messages[:50], with_type=False)
    with riegeli.RecordReader(io.BytesIO(file)) as reader:
        with pytest.raises(riegeli.InvalidArgumentError, match='names none'):
            reader.arrow_batches()
        # The reader is still usable after the failure.
        table = reader.to_arrow(message_type=Field)
        check_table(table, messages[:50])
    fds = descriptor_pb2.FileDescriptorSet()
    descriptor_pb2.DESCRIPTOR.CopyToProto(fds.file.add())
    with riegeli.RecordReader(io.BytesIO(file)) as reader:
        table = reader.to_arrow(
            message_type='google.protobuf.FieldDescriptorProto', file_descriptor_set=fds.SerializeToString()
        )
        check_table(table, messages[:50])
    with riegeli.RecordReader(io.BytesIO(file)) as reader:
        with pytest.raises(riegeli.InvalidArgumentError, match='projection'):
            reader.arrow_batches(['no_such_field'], message_type=Field)
        with pytest.raises(ValueError):
            reader.arrow_batches(format='xml')
        with pytest.raises(TypeError):
            reader.arrow_batches('name', message_type=Field)


def test_bad_records_fail_or_are_skipped(messages):
    bad = [b'\x08\x80', b'\x0a\x05ab']  # a truncated varint, a truncated string
    file = write_records_file(messages[:100], extra=bad + [messages[100].SerializeToString()])
    with riegeli.RecordReader(io.BytesIO(file)) as reader:
        with pytest.raises(riegeli.InvalidArgumentError, match=r'record 100 \(at \d+/\d+\)'):
            reader.to_arrow(batch_size=1000)
    with riegeli.RecordReader(io.BytesIO(file)) as reader:
        stream = pa.RecordBatchReader.from_stream(reader.arrow_batches(batch_size=1000))
        with pytest.raises(Exception, match='record 100'):
            stream.read_all()
    with riegeli.RecordReader(io.BytesIO(file)) as reader:
        batches = reader.arrow_batches(skip_bad_records=True)
        table = pa.RecordBatchReader.from_stream(batches).read_all()
        assert batches.skipped_records == 2
        assert batches.skipped_errors[0].startswith('record 100')
    check_table(table, messages[:101])


def example(features: dict) -> bytes:
    """A serialized tf.train.Example, built by hand (no TensorFlow here): each value a list
    of ints, floats or bytes."""

    def varint(n: int) -> bytes:
        n &= (1 << 64) - 1
        out = bytearray()
        while True:
            b = n & 0x7F
            n >>= 7
            if n:
                out.append(b | 0x80)
            else:
                out.append(b)
                return bytes(out)

    def ld(tag: int, payload: bytes) -> bytes:
        return varint(tag << 3 | 2) + varint(len(payload)) + payload

    import struct

    entries = b''
    for name, values in features.items():
        if values and isinstance(values[0], bytes):
            lst = ld(1, b''.join(ld(1, v) for v in values))
        elif values and isinstance(values[0], float):
            lst = ld(2, ld(1, b''.join(struct.pack('<f', v) for v in values)))
        else:
            lst = ld(3, ld(1, b''.join(varint(v) for v in values)))
        entries += ld(1, ld(1, name.encode()) + ld(2, lst))
    return ld(1, entries)


def test_example_records():
    rng = random.Random(9)
    rows = []
    for i in range(1500):
        row = {'id': [i], 'vec': [rng.random() for _ in range(3)]}
        if i % 3:
            row['label'] = [b'l%d' % (i % 5)]
        rows.append(row)
    file = riegeli_file([example(r) for r in rows])
    with riegeli.RecordReader(io.BytesIO(file)) as reader:
        table = reader.to_arrow(format='example', batch_size=400)
    assert table.column('id').to_pylist() == [r['id'] for r in rows]
    assert table.column('label').to_pylist() == [r.get('label') for r in rows]
    vec = table.column('vec').to_pylist()
    assert all(v == pytest.approx(r['vec'], rel=1e-6) for v, r in zip(vec, rows))
    with riegeli.RecordReader(io.BytesIO(file)) as reader:
        projected = reader.to_arrow(['label'], format='example')
    assert projected.column_names == ['label']
    assert projected.column('label') == table.column('label')


def riegeli_file(records, options: str = 'transpose') -> bytes:
    dest = io.BytesIO()
    with riegeli.RecordWriter(dest, owns_dest=False, options=options) as writer:
        writer.write_records(records)
    return dest.getvalue()


@pytest.fixture(scope='module', params=['group_size:100', 'group_size:64,transpose'])
def array_record_path(request, messages, tmp_path_factory) -> str:
    path = str(tmp_path_factory.mktemp('ar') / 'records.array_record')
    writer = ArrayRecordWriter(path, request.param)
    for m in messages:
        writer.write(m.SerializeToString())
    writer.close()
    return path


def test_array_record_reader(array_record_path, messages):
    reader = ArrayRecordReader(array_record_path)
    table = reader.to_arrow(message_type=Field, batch_size=333)
    check_table(table, messages)
    part = reader.to_arrow(['name'], indices=range(100, 250), message_type=Field)
    assert part.column('name').to_pylist() == expected_column(messages[100:250], 'name')
    picks = [2999, 0, 17, 17, 1500]
    picked = pa.RecordBatchReader.from_stream(reader.arrow_batches(indices=picks, message_type=Field)).read_all()
    check_table(picked, [messages[i] for i in picks])
    with pytest.raises(IndexError):
        reader.arrow_batches(indices=[3000], message_type=Field)
    # Projected and whole agree.
    projected = reader.to_arrow(['number', 'options.deprecated'], message_type=Field)
    assert projected.column('number') == table.column('number')
    reader.close()


def test_array_record_data_source(array_record_path, messages, tmp_path):
    second = str(tmp_path / 'second.array_record')
    writer = ArrayRecordWriter(second, 'group_size:10')
    for m in messages[:40]:
        writer.write(m.SerializeToString())
    writer.close()
    with ArrayRecordDataSource([array_record_path, second]) as source:
        table = source.to_arrow(['name', 'number'], message_type=Field)
        assert table.num_rows == len(messages) + 40
        both = messages + messages[:40]
        assert table.column('name').to_pylist() == expected_column(both, 'name')
        keys = [3030, 5, 3000, 2999]
        part = source.to_arrow(indices=keys, message_type=Field)
        check_table(part, [both[k] for k in keys])


def test_scan_riegeli(records_file, messages):
    pl = pytest.importorskip('polars')
    from riegeli.polars import scan_riegeli

    lazy = scan_riegeli(records_file)
    assert 'name' in lazy.collect_schema()
    frame = lazy.select('name', 'number').collect()
    assert frame['name'].to_list() == expected_column(messages, 'name')
    head = lazy.select('number').head(10).collect()
    assert head['number'].to_list() == expected_column(messages[:10], 'number')
    filtered = lazy.filter(pl.col('label') == 2).select('number').collect()
    assert filtered['number'].to_list() == [
        m.number if m.HasField('number') else None for m in messages if m.HasField('label') and m.label == 2
    ]
    with_columns = scan_riegeli(records_file, ['name', 'options.packed']).collect()
    assert with_columns.columns == ['name', 'options']
