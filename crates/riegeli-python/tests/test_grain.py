"""`riegeli.grain` against Grain's own pipelines, and the native multi-file data source."""

from __future__ import annotations

import inspect
import pickle
import random

import pytest

import riegeli
from riegeli.array_record import ArrayRecordDataSource
from riegeli.array_record import ArrayRecordWriter

grain = pytest.importorskip('grain')
riegeli_grain = pytest.importorskip('riegeli.grain')
ArrayRecordIterDataset = riegeli_grain.ArrayRecordIterDataset
RiegeliIterDataset = riegeli_grain.RiegeliIterDataset


def write_array_record(path, records, options):
    writer = ArrayRecordWriter(str(path), options)
    for record in records:
        writer.write(record)
    writer.close()
    return str(path)


@pytest.fixture
def shards(tmp_path):
    """Files of 100, 57 and 1 records (group sizes 1, 10 and 1); their paths and records in
    key order (the first file's records 0..100, then the second's 3..57, then the third's)."""
    paths, flat = [], []
    for n, (count, group) in enumerate([(100, 1), (57, 10), (1, 1)]):
        records = [b'shard %d record %d ' % (n, i) + b'x' * (i % 13) for i in range(count)]
        paths.append(write_array_record(tmp_path / f'shard-{n}', records, f'group_size:{group}'))
        flat.extend(records[3:] if n == 1 else records)
    paths[1] = f'{paths[1]}[3:57]'
    return paths, flat


def grain_records(source, build):
    """Grain's own pipeline: `build` applied to `MapDataset.source(source)`, iterated."""
    return list(build(grain.MapDataset.source(source)))


def ours(source, build, num_records, **kwargs):
    """Ours: the same `build` applied to a MapDataset of keys, read ahead natively."""
    return list(ArrayRecordIterDataset(source, build(grain.MapDataset.range(num_records)), **kwargs))


PIPELINES = {
    'in order': lambda ds: ds,
    'shuffled': lambda ds: ds.shuffle(seed=7),
    'three epochs': lambda ds: ds.shuffle(seed=3).repeat(3),
    'sliced': lambda ds: ds.shuffle(seed=5).repeat(2)[5:300:3],
    'a shard of four': lambda ds: ds.shuffle(seed=9)[1::4],
    'sliced again': lambda ds: ds[10:150].shuffle(seed=1)[::-2],
}


@pytest.mark.parametrize('window_size', [1, 7, 1024])
@pytest.mark.parametrize('name', PIPELINES)
def test_read_ahead_matches_grains_pipeline(shards, name, window_size):
    paths, flat = shards
    source = ArrayRecordDataSource(paths)
    build = PIPELINES[name]
    want = grain_records(source, build)
    assert want and set(want) <= set(flat)
    assert ours(source, build, len(flat), window_size=window_size) == want
    # From paths too.
    assert ours(paths, build, len(flat), window_size=window_size) == want


def test_read_ahead_skips_what_a_filter_drops(shards):
    paths, flat = shards
    source = ArrayRecordDataSource(paths)
    want = list(grain.MapDataset.source(source).shuffle(seed=4).filter(lambda r: not r.endswith(b'x')))
    order = grain.MapDataset.range(len(source)).shuffle(seed=4).filter(lambda i: not flat[i].endswith(b'x'))
    assert 0 < len(want) < len(flat)
    for window_size in (1, 5, 100):
        assert list(ArrayRecordIterDataset(source, order, window_size=window_size)) == want


def test_the_default_order_is_every_record_once(shards):
    paths, flat = shards
    assert list(ArrayRecordIterDataset(paths)) == flat
    assert list(ArrayRecordIterDataset(ArrayRecordDataSource(paths), window_size=3)) == flat


@pytest.mark.parametrize('drop_remainder', [False, True])
@pytest.mark.parametrize('batch_size', [1, 16, 100, 1000])
def test_batches(shards, batch_size, drop_remainder):
    paths, _ = shards
    source = ArrayRecordDataSource(paths)
    records = grain_records(source, lambda ds: ds.shuffle(seed=2).repeat(2))
    want = [records[i : i + batch_size] for i in range(0, len(records), batch_size)]
    if drop_remainder and len(want[-1]) < batch_size:
        want.pop()
    order = grain.MapDataset.range(len(source)).shuffle(seed=2).repeat(2)
    for window_size in (7, 1024):
        dataset = ArrayRecordIterDataset(
            source, order, window_size=window_size, batch_size=batch_size, drop_remainder=drop_remainder
        )
        assert list(dataset) == want
    # Grain's own batching of the records gives the same batches.
    if batch_size == 16:
        theirs = grain.MapDataset.source(source).shuffle(seed=2).repeat(2).batch(16, drop_remainder=drop_remainder)
        assert [batch.tolist() for batch in theirs] == want


def continuation_after_restore(dataset, steps):
    """The elements after `steps` of them, from a fresh iterator restored at that point."""
    iterator = iter(dataset)
    for _ in range(steps):
        next(iterator)
    state = iterator.get_state()
    restored = iter(dataset)
    restored.set_state(state)
    assert restored.get_state() == state
    return list(restored)


@pytest.mark.parametrize('batch_size', [None, 3])
def test_checkpoints_restore_exactly(shards, batch_size):
    paths, _ = shards
    source = ArrayRecordDataSource(paths)
    order = grain.MapDataset.range(len(source)).shuffle(seed=11).repeat(2)[::2]
    dataset = ArrayRecordIterDataset(source, order, window_size=10, batch_size=batch_size)
    everything = list(dataset)
    rng = random.Random(0)
    for steps in [0, 1, 9, 10, 11, len(everything) - 1, len(everything)] + rng.sample(range(len(everything)), 10):
        assert continuation_after_restore(dataset, steps) == everything[steps:], steps
    # A state taken before anything was read, restored after reading some.
    iterator = iter(dataset)
    start = iterator.get_state()
    for _ in range(5):
        next(iterator)
    iterator.set_state(start)
    assert list(iterator) == everything


def test_grain_checks_the_checkpoints(shards):
    paths, _ = shards
    source = ArrayRecordDataSource(paths)
    order = grain.MapDataset.range(len(source)).shuffle(seed=1)[:40]
    grain.experimental.assert_equal_output_after_checkpoint(ArrayRecordIterDataset(source, order, window_size=6))
    grain.experimental.assert_equal_output_after_checkpoint(
        ArrayRecordIterDataset(source, order, window_size=6, batch_size=7)
    )


def test_the_dataset_pickles_and_reads_in_the_copy(shards):
    paths, _ = shards
    source = ArrayRecordDataSource(paths)
    order = grain.MapDataset.range(len(source)).shuffle(seed=8)
    dataset = ArrayRecordIterDataset(source, order, window_size=9, batch_size=4)
    want = list(dataset)
    assert list(pickle.loads(pickle.dumps(dataset))) == want


def multiprocessing_options(num_workers):
    options = getattr(grain, 'MultiprocessingOptions', None) or grain.multiprocessing.MultiprocessingOptions
    return options(num_workers=num_workers)


def test_worker_processes_read_as_grains_pipeline(shards):
    """`mp_prefetch` with two worker processes: each reads its slice of the order."""
    paths, _ = shards
    source = ArrayRecordDataSource(paths)
    theirs = grain.MapDataset.source(source).shuffle(seed=6).repeat(2).to_iter_dataset()
    order = grain.MapDataset.range(len(source)).shuffle(seed=6).repeat(2)
    mine = ArrayRecordIterDataset(source, order, window_size=16)
    want = list(theirs.mp_prefetch(multiprocessing_options(2)))
    assert sorted(want) == sorted(grain_records(source, lambda ds: ds.shuffle(seed=6).repeat(2)))
    assert list(mine.mp_prefetch(multiprocessing_options(2))) == want


def test_worker_processes_slice_sequentially_as_grain(shards):
    """`mp_prefetch(sequential_slice=True)`: each worker reads a contiguous part of the keys the
    order starts from (Grain 0.2.18 slices its sources so)."""
    if 'sequential_slice' not in inspect.signature(grain.IterDataset.mp_prefetch).parameters:
        pytest.skip('this Grain has no sequential slices')
    paths, _ = shards
    source = ArrayRecordDataSource(paths)
    theirs = grain.MapDataset.source(source).shuffle(seed=6).to_iter_dataset()
    mine = ArrayRecordIterDataset(source, grain.MapDataset.range(len(source)).shuffle(seed=6), window_size=16)
    want = list(theirs.mp_prefetch(multiprocessing_options(3), sequential_slice=True))
    assert sorted(want) == sorted(grain_records(source, lambda ds: ds))
    assert list(mine.mp_prefetch(multiprocessing_options(3), sequential_slice=True)) == want


def test_keys_out_of_range_raise(shards):
    paths, flat = shards
    source = ArrayRecordDataSource(paths)
    for order in (grain.MapDataset.range(len(flat) + 1), grain.MapDataset.range(-1, 5)):
        for window_size in (1, 1024):
            with pytest.raises(ValueError, match=r'Record key should be in \[0, num_records\)'):
                list(ArrayRecordIterDataset(source, order, window_size=window_size))
    iterator = iter(ArrayRecordIterDataset(source))
    with pytest.raises(ValueError):
        iterator.set_state({'next_index': len(flat) + 1})
    with pytest.raises(ValueError):
        ArrayRecordIterDataset(source, window_size=0)
    with pytest.raises(ValueError):
        ArrayRecordIterDataset(source, batch_size=0)
    with pytest.raises(TypeError):
        ArrayRecordIterDataset(source, [1, 2])


def test_a_data_source_reads_batches_across_files_natively(shards):
    paths, flat = shards
    source = ArrayRecordDataSource(paths)
    rng = random.Random(3)
    keys = [rng.randrange(len(flat)) for _ in range(500)]
    assert source.__getitems__(keys) == [flat[k] for k in keys]
    assert [source[k] for k in keys[:50]] == [flat[k] for k in keys[:50]]
    numpy = pytest.importorskip('numpy')
    assert source.__getitems__(numpy.array(keys[:20])) == [flat[k] for k in keys[:20]]
    assert source[numpy.int64(101)] == flat[101]
    with pytest.raises(TypeError):
        source.__getitems__(['a'])
    with pytest.raises(ValueError):
        source.__getitems__([0, 2**70])


def test_a_file_missing_its_records_raises_runtime_error(shards):
    paths, _ = shards
    source = ArrayRecordDataSource([paths[0], f'{paths[2].rsplit("[", 1)[0]}[0:5]'])
    assert source[99] != b''
    with pytest.raises(RuntimeError, match='has 1 records'):
        source[100]


# ---------------------------------------------------------------------------------------------
# Plain Riegeli files


@pytest.fixture
def riegeli_files(tmp_path):
    """Three Riegeli/records files of 40, 0 and 25 records in small chunks; paths, records."""
    paths, flat = [], []
    for n, count in enumerate([40, 0, 25]):
        path = tmp_path / f'plain-{n}.riegeli'
        records = [b'file %d record %d ' % (n, i) + b'y' * (i % 50) for i in range(count)]
        with riegeli.RecordWriter(path, options='uncompressed,chunk_size:200') as writer:
            writer.write_records(records)
        paths.append(path)
        flat.extend(records)
    return paths, flat


def test_plain_files_are_read_in_order(riegeli_files):
    paths, flat = riegeli_files
    assert list(RiegeliIterDataset(paths)) == flat
    assert list(RiegeliIterDataset(str(paths[0]))) == flat[:40]
    assert list(pickle.loads(pickle.dumps(RiegeliIterDataset(paths)))) == flat


def test_plain_files_restore_after_the_last_record_handed_out(riegeli_files):
    paths, flat = riegeli_files
    dataset = RiegeliIterDataset(paths)
    for steps in [0, 1, 7, 39, 40, 41, 64, 65]:
        assert continuation_after_restore(dataset, steps) == flat[steps:], steps
    iterator = iter(dataset)
    for _ in range(45):
        next(iterator)
    state = iterator.get_state()
    assert state['file_index'] == 2 and state['position'] > 0
    grain.experimental.assert_equal_output_after_checkpoint(RiegeliIterDataset(paths))
    with pytest.raises(ValueError):
        iterator.set_state({'file_index': 4, 'position': 0})
