"""riegeli.beam: splittable sources and file sinks, on Beam's DirectRunner with 2 processes."""

from __future__ import annotations

import collections
import os
import sys
import uuid

import apache_beam as beam
import pytest
from apache_beam.internal import cloudpickle_pickler
from apache_beam.io.range_trackers import OffsetRangeTracker
from apache_beam.options.pipeline_options import PipelineOptions
from apache_beam.testing.util import assert_that, equal_to

from conftest import read_array_record_cxx, read_array_record_ours, read_riegeli
import riegeli
from riegeli import beam as riegeli_beam

# Bundles of 16 KiB split each input file (100-300 KiB) 7 to 20 ways.
BUNDLE = 16 << 10

# The worker processes cannot import this test module: pickle its classes by value, with the
# cloudpickle Beam uses (its own copy from 2.65, the cloudpickle package before), the pickler
# the pipeline below asks for (Beam's default before 2.65 was dill).
cloudpickle_pickler.cloudpickle.register_pickle_by_value(sys.modules[__name__])


class RecordingSource(riegeli_beam.RiegeliSource):
    """RiegeliSource that leaves a file in `log_dir` for each range it reads."""

    def __init__(self, file_pattern, log_dir, **kwargs):
        super().__init__(file_pattern, **kwargs)
        self._log_dir = log_dir

    def read_records(self, file_name, range_tracker):
        start = range_tracker.start_position()
        name = f'{os.path.basename(file_name)}@{start}@{uuid.uuid4().hex}'
        open(os.path.join(self._log_dir, name), 'w').close()
        yield from super().read_records(file_name, range_tracker)


def _read_bundles(source) -> tuple[int, collections.Counter]:
    """Splits `source` into bundles of BUNDLE bytes and reads each in this process."""
    bundles = list(source.split(BUNDLE))
    records: collections.Counter = collections.Counter()
    for bundle in bundles:
        tracker = bundle.source.get_range_tracker(bundle.start_position, bundle.stop_position)
        records.update(bundle.source.read(tracker))
    return len(bundles), records


def test_initial_splits_read_each_record_once(inputs):
    source = riegeli_beam.RiegeliSource(str(inputs.riegeli_dir / '*.riegeli'))
    count, records = _read_bundles(source)
    assert count > 3 * len(inputs.riegeli_files)
    assert records == inputs.riegeli_records
    # desired_bundle_size overrides what the runner asks for.
    source = riegeli_beam.RiegeliSource(str(inputs.array_record_dir / '*.array_record'), desired_bundle_size=BUNDLE)
    count = len(list(source.split(64 << 20)))
    assert count > 3 * len(inputs.array_record_files)
    _, records = _read_bundles(source)
    assert records == inputs.array_records


def _last_chunk_begin(path) -> int:
    with riegeli.RecordReader(str(path)) as reader:
        begin = 0
        for _ in reader.read_records():
            begin = reader.last_pos.chunk_begin
        return begin


@pytest.mark.parametrize('fraction', [0.0, 0.3, 0.9])
def test_dynamic_split_while_reading(inputs, fraction):
    """Beam splits a range being read: the primary stops at the split, the residual reads the
    rest, and together they read the file once."""
    source = riegeli_beam.RiegeliSource(str(inputs.array_record_dir / '*.array_record'))
    for path in inputs.array_record_files + inputs.riegeli_files:
        size = os.path.getsize(path)
        tracker = OffsetRangeTracker(0, size)
        reader = source.read_records(str(path), tracker)
        primary = [next(reader) for _ in range(5)]
        # Between the chunk being read and the last one (C++ pads the footer of an ArrayRecord
        # file to whole blocks: the records end well before the file).
        claimed, last = tracker.last_record_start, _last_chunk_begin(path)
        split = tracker.try_split(claimed + 1 + int(fraction * (last - claimed - 1)))
        assert split is not None, path
        primary.extend(reader)
        residual = list(source.read_records(str(path), OffsetRangeTracker(split[0], size)))
        assert primary and residual, (path, split)
        expected = read_riegeli(path)
        assert collections.Counter(primary + residual) == collections.Counter(expected)
        assert primary + residual == expected  # Ranges keep the order of the file.


def test_pipeline_on_two_processes(inputs, tmp_path):
    log_dir = tmp_path / 'ranges'
    log_dir.mkdir()
    out = tmp_path / 'out'
    options = PipelineOptions(
        direct_num_workers=2, direct_running_mode='multi_processing', pickle_library='cloudpickle'
    )
    with beam.Pipeline(options=options) as p:
        riegeli_records = p | 'ReadRiegeli' >> riegeli_beam.ReadFromRiegeli(
            str(inputs.riegeli_dir / '*.riegeli'), desired_bundle_size=BUNDLE
        )
        array_records = p | 'ReadArrayRecord' >> riegeli_beam.ReadFromArrayRecord(
            str(inputs.array_record_dir / '*.array_record'), desired_bundle_size=BUNDLE
        )
        recorded = p | 'ReadRecording' >> beam.io.Read(
            RecordingSource(str(inputs.array_record_dir / '*.array_record'), str(log_dir), desired_bundle_size=BUNDLE)
        )
        assert_that(riegeli_records, equal_to(list(inputs.riegeli_records.elements())), label='CheckRiegeli')
        assert_that(array_records, equal_to(list(inputs.array_records.elements())), label='CheckArrayRecord')
        assert_that(recorded, equal_to(list(inputs.array_records.elements())), label='CheckRecording')
        records = (riegeli_records, array_records) | beam.Flatten()
        records | 'WriteArrayRecord' >> riegeli_beam.WriteToArrayRecord(
            str(out / 'ar'), file_name_suffix='.array_record', num_shards=3
        )
        records | 'WriteArrayRecordGroups' >> riegeli_beam.WriteToArrayRecord(
            str(out / 'ar-groups'), file_name_suffix='.array_record', options='group_size:100,zstd:1'
        )
        records | 'WriteRiegeli' >> riegeli_beam.WriteToRiegeli(
            str(out / 'rg'), file_name_suffix='.riegeli', options='zstd:1,chunk_size:16k'
        )

    # Every file was read in many ranges, by the runner's worker processes.
    ranges = collections.Counter(name.split('@')[0] for name in os.listdir(log_dir))
    assert sorted(ranges) == sorted(path.name for path in inputs.array_record_files)
    assert all(count > 3 for count in ranges.values()), ranges
    assert sum(ranges.values()) > 3 * len(inputs.array_record_files)

    everything = inputs.all_records
    shards = sorted(out.glob('ar-0*.array_record'))
    assert len(shards) == 3
    for read in (read_array_record_cxx, read_array_record_ours, read_riegeli):
        assert collections.Counter(r for shard in shards for r in read(shard)) == everything, read
    shards = sorted(out.glob('ar-groups-*.array_record'))
    assert shards
    assert collections.Counter(r for shard in shards for r in read_array_record_cxx(shard)) == everything
    shards = sorted(out.glob('rg-*.riegeli'))
    assert shards
    assert collections.Counter(r for shard in shards for r in read_riegeli(shard)) == everything


@pytest.mark.parametrize('sink_class', [riegeli_beam.RiegeliSink, riegeli_beam.ArrayRecordSink])
def test_sinks_write_bytes_like_records_and_refuse_others(tmp_path, sink_class):
    sink = sink_class(str(tmp_path / 'out'))
    shard = str(tmp_path / 'shard')
    handle = sink.open(shard)
    sink.write_record(handle, b'bytes')
    sink.write_record(handle, bytearray(b'bytearray'))
    sink.write_record(handle, memoryview(b'memoryview'))
    # bytes(5) would be five zero bytes, bytes([1, 2]) two bytes: refused instead.
    for value in [5, 'text', [1, 2], range(3), None]:
        with pytest.raises(TypeError):
            sink.write_record(handle, value)
    sink.close(handle)
    read = read_riegeli if sink_class is riegeli_beam.RiegeliSink else read_array_record_ours
    assert read(shard) == [b'bytes', b'bytearray', b'memoryview']
