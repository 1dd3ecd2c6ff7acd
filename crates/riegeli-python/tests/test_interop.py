"""Interop with Google's C++ implementation through array-record 0.8.6 (in the CI venv)."""

from __future__ import annotations

import pytest

import riegeli

array_record_module = pytest.importorskip('array_record.python.array_record_module')


@pytest.mark.parametrize('options', ['group_size:1', 'group_size:10,zstd', 'transpose,brotli:6', 'snappy'])
def test_cpp_writes_we_read(tmp_path, options):
    path = str(tmp_path / 'cpp.array_record')
    records = [b'%d ' % i * (i % 13) for i in range(1000)]
    writer = array_record_module.ArrayRecordWriter(path, options)
    for record in records:
        writer.write(record)
    writer.close()
    # An ArrayRecord file is a Riegeli/records file; our reader skips its footer by default.
    with riegeli.RecordReader(path) as reader:
        assert reader.check_file_format()
        assert list(reader.read_records()) == records
        # Seeking by the positions it reports.
        reader.seek_numeric(0)
        positions = []
        while reader.read_record() is not None:
            positions.append(reader.last_pos)
        reader.seek(positions[777])
        assert reader.read_record() == records[777]
    with open(path, 'rb') as f:
        assert list(riegeli.RecordReader(f).read_records()) == records


def test_cpp_cannot_read_plain_riegeli(tmp_path):
    # C++ ArrayRecordReader needs an ArrayRecord footer: our RecordWriter's plain files are
    # not for it (riegeli.array_record writes files it reads: test_array_record.py).
    path = str(tmp_path / 'plain.riegeli')
    with riegeli.RecordWriter(path) as writer:
        writer.write_record(b'x')
    try:
        num_records = array_record_module.ArrayRecordReader(path).num_records()
    except RuntimeError:
        num_records = None
    assert num_records != 1
