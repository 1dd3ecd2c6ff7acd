"""riegeli.ray: datasources split into many read tasks, and the datasink, on a local cluster."""

from __future__ import annotations

import collections
import inspect
import re

import pyarrow.fs as pafs
import pytest
import ray

from ray.data.datasource import Datasink, Datasource

from conftest import read_array_record_cxx, read_array_record_ours, read_riegeli
from riegeli import ray as riegeli_ray


@pytest.fixture(scope='module')
def cluster():
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
    try:
        yield
    finally:
        ray.shutdown()


def _read_tasks(ds) -> int:
    """How many read tasks ran for a materialized dataset (from its stats)."""
    counts = re.findall(r'Read\w*(?:->\S+)?: (\d+) tasks executed', ds.stats())
    assert counts, ds.stats()
    return sum(int(count) for count in counts)


def _records(ds) -> collections.Counter:
    assert ds.schema().names == ['record']
    return collections.Counter(row['record'] for row in ds.iter_rows())


def test_read_tasks_are_parts_of_files(inputs):
    source = riegeli_ray.RiegeliDatasource(inputs.riegeli_files, min_bytes_per_task=64 << 10)
    tasks = source.get_read_tasks(20)
    # Ranges of one block (64 KiB) at least: fewer than 20 for these small files.
    assert len(tasks) == sum(-(-path.stat().st_size // (64 << 10)) for path in inputs.riegeli_files)
    assert len(tasks) > 2 * len(inputs.riegeli_files)
    assert len(source.get_read_tasks(1)) == len(inputs.riegeli_files)
    # By default, tasks of 16 MiB at least: one per small file.
    assert len(riegeli_ray.RiegeliDatasource(inputs.riegeli_files).get_read_tasks(20)) == len(inputs.riegeli_files)
    source = riegeli_ray.RiegeliDatasource(inputs.array_record_dir, file_format='array_record')
    tasks = source.get_read_tasks(20)
    assert 20 <= len(tasks) <= 20 + len(inputs.array_record_files)
    assert sum(task.metadata.num_rows for task in tasks) == sum(inputs.array_records.values())
    with pytest.raises(ValueError):
        riegeli_ray.RiegeliDatasource(inputs.riegeli_files, file_format='tfrecord')


def test_the_installed_rays_arguments_are_taken(inputs, tmp_path):
    """get_read_tasks and on_write_start take what the installed Ray's base classes declare
    (each release passes its own: per_task_row_limit, data_context, schema), nothing else."""
    source = riegeli_ray.RiegeliDatasource(inputs.riegeli_files, min_bytes_per_task=1)
    declared = list(inspect.signature(Datasource.get_read_tasks).parameters)[2:]
    assert len(source.get_read_tasks(4, *[None] * len(declared))) >= len(inputs.riegeli_files)
    assert len(source.get_read_tasks(4, **{name: None for name in declared})) >= len(inputs.riegeli_files)
    with pytest.raises(TypeError):
        source.get_read_tasks(4, no_such_argument=None)
    with pytest.raises(TypeError):
        source.get_read_tasks(4, *[None] * (len(declared) + 1))
    if 'per_task_row_limit' in declared:  # Ray 2.50 on: the tasks stop at the limit.
        for task in source.get_read_tasks(4, per_task_row_limit=7):
            assert task.per_task_row_limit == 7
            assert sum(table.num_rows for table in task()) == 7
    sink = riegeli_ray.RiegeliDatasink(tmp_path / 'out')
    sink.on_write_start(**{name: None for name in list(inspect.signature(Datasink.on_write_start).parameters)[1:]})
    assert (tmp_path / 'out').is_dir()
    with pytest.raises(TypeError):
        sink.on_write_start(no_such_argument=None)


@pytest.mark.parametrize('file_format', ['riegeli', 'array_record'])
def test_read_tasks_in_this_process(inputs, monkeypatch, file_format):
    """Each read task yields tables of about _BLOCK_BYTES of records; together they read each
    record once."""
    monkeypatch.setattr(riegeli_ray, '_BLOCK_BYTES', 4 << 10)
    paths = inputs.riegeli_files if file_format == 'riegeli' else inputs.array_record_files
    expected = inputs.riegeli_records if file_format == 'riegeli' else inputs.array_records
    tasks = riegeli_ray.RiegeliDatasource(paths, file_format=file_format, min_bytes_per_task=1).get_read_tasks(8)
    records: collections.Counter = collections.Counter()
    tables = 0
    for task in tasks:
        for table in task():
            assert table.schema == riegeli_ray._SCHEMA
            records.update(table.column('record').to_pylist())
            tables += 1
    assert records == expected
    assert tables > 3 * len(tasks)


def test_read_riegeli(cluster, inputs):
    ds = riegeli_ray.read_riegeli(
        [str(p) for p in inputs.riegeli_files], min_bytes_per_task=64 << 10, override_num_blocks=12
    ).materialize()
    assert _read_tasks(ds) > 2 * len(inputs.riegeli_files)
    assert _records(ds) == inputs.riegeli_records


def test_read_array_record(cluster, inputs):
    ds = riegeli_ray.read_array_record(inputs.array_record_dir, override_num_blocks=12).materialize()
    assert _read_tasks(ds) > 2 * len(inputs.array_record_files)
    assert _records(ds) == inputs.array_records


def test_read_through_a_pyarrow_filesystem(cluster, inputs):
    """A filesystem other than the local one is read through pyarrow file objects (ArrayRecord
    files by byte ranges too)."""
    fs = pafs.SubTreeFileSystem(str(inputs.array_record_dir.parent), pafs.LocalFileSystem())
    ds = riegeli_ray.read_array_record(
        'array_record', filesystem=fs, min_bytes_per_task=64 << 10, override_num_blocks=12
    ).materialize()
    assert _read_tasks(ds) > 2 * len(inputs.array_record_files)
    assert _records(ds) == inputs.array_records
    ds = riegeli_ray.read_riegeli('riegeli', filesystem=fs, override_num_blocks=12).materialize()
    assert _records(ds) == inputs.riegeli_records


def test_write_array_record(cluster, inputs, tmp_path):
    ds = riegeli_ray.read_array_record(inputs.array_record_dir, override_num_blocks=6)
    for i, options in enumerate(['', 'group_size:10,zstd:1']):
        sink = riegeli_ray.RiegeliDatasink(tmp_path / f'out-{i}', file_format='array_record', options=options)
        ds.write_datasink(sink)
        assert len(sink.written_paths) > 1
        assert all(path.endswith('.array_record') for path in sink.written_paths)
        for read in (read_array_record_cxx, read_array_record_ours):
            assert collections.Counter(r for path in sink.written_paths for r in read(path)) == inputs.array_records
        ds_back = riegeli_ray.read_array_record(tmp_path / f'out-{i}', override_num_blocks=8)
        assert _records(ds_back) == inputs.array_records


def test_write_riegeli(cluster, inputs, tmp_path):
    ds = riegeli_ray.read_riegeli(inputs.riegeli_dir, override_num_blocks=6)
    sink = riegeli_ray.RiegeliDatasink(str(tmp_path / 'out'), options='zstd:1,chunk_size:16k')
    ds.write_datasink(sink)
    assert len(sink.written_paths) > 1
    assert collections.Counter(r for path in sink.written_paths for r in read_riegeli(path)) == inputs.riegeli_records
    # min_rows_per_file gathers the blocks: one file here.
    sink = riegeli_ray.RiegeliDatasink(str(tmp_path / 'one'), min_rows_per_file=1 << 20)
    ds.write_datasink(sink)
    assert len(sink.written_paths) == 1
    assert collections.Counter(read_riegeli(sink.written_paths[0])) == inputs.riegeli_records
    # Through a pyarrow filesystem: the writers write to pyarrow's output streams.
    fs = pafs.SubTreeFileSystem(str(tmp_path), pafs.LocalFileSystem())
    for file_format in ['riegeli', 'array_record']:
        sink = riegeli_ray.RiegeliDatasink(f'fs-{file_format}', file_format=file_format, filesystem=fs)
        ds.write_datasink(sink)
        paths = [tmp_path / path for path in sink.written_paths]
        assert paths and all(path.exists() for path in paths)
        read = read_riegeli if file_format == 'riegeli' else read_array_record_cxx
        assert collections.Counter(r for path in paths for r in read(path)) == inputs.riegeli_records
