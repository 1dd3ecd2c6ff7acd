"""Reading and writing through URLs: `RecordReader`, `ArrayRecordReader` and `ArrayRecordDataSource` given
`s3://BUCKET/key` (an S3-compatible server, moto), `az://CONTAINER/key` (Azure Blob Storage's
emulator, Azurite), `http://host/name` (a static server with range requests, nginx) and
`gs://BUCKET/key` (object_store's GCS client reading anonymously from nginx, at GCS's XML API
paths: no GCS emulator runs here), compared with reading the same files locally.

Run by `cargo xtask objects`, which starts the servers and sets the environment:
`AWS_ENDPOINT`, `AWS_ALLOW_HTTP`, `AWS_ACCESS_KEY_ID`, `AWS_SECRET_ACCESS_KEY`, `AWS_REGION`
(read by the readers, as object_store reads them, and by boto3 here), `RIEGELI_TEST_S3_BUCKET`
(an existing bucket), `RIEGELI_TEST_HTTP_URL` and `RIEGELI_TEST_HTTP_ROOT` (the URL of the
static server and the directory it serves), `AZURE_STORAGE_USE_EMULATOR`,
`AZURITE_BLOB_STORAGE_URL`, `RIEGELI_TEST_AZ_CONTAINER` and `RIEGELI_TEST_AZ_CONNECTION` (its
connection string, for uploading). Skipped without `RIEGELI_TEST_S3_BUCKET`; the HTTP and
Azure cases are skipped without their variables.
"""

from __future__ import annotations

import dataclasses
import multiprocessing
import os
import pickle
import random
import shutil
import signal
import subprocess
import sys
import threading
import time
import uuid
import warnings

import pytest

BUCKET = os.environ.get('RIEGELI_TEST_S3_BUCKET')
if not BUCKET:
    pytest.skip('RIEGELI_TEST_S3_BUCKET is not set (run by `cargo xtask objects`)', allow_module_level=True)

import boto3  # noqa: E402  (moto[server] brings it; only needed when the module runs)

import riegeli  # noqa: E402
from riegeli.array_record import ArrayRecordDataSource  # noqa: E402
from riegeli.array_record import ArrayRecordReader  # noqa: E402
from riegeli.array_record import ArrayRecordWriter  # noqa: E402

HTTP_URL = os.environ.get('RIEGELI_TEST_HTTP_URL', '').rstrip('/')
HTTP_ROOT = os.environ.get('RIEGELI_TEST_HTTP_ROOT', '')
# Azure Blob Storage's emulator (Azurite): the readers find it through
# `AZURE_STORAGE_USE_EMULATOR` and `AZURITE_BLOB_STORAGE_URL`, this module uploads through
# azure-storage-blob with the connection string.
AZ_CONTAINER = os.environ.get('RIEGELI_TEST_AZ_CONTAINER', '')
AZ_CONNECTION = os.environ.get('RIEGELI_TEST_AZ_CONNECTION', '')
# GCS: object_store's GCS client reads `gs://GS_BUCKET/key` anonymously (`GOOGLE_BASE_URL`,
# `GOOGLE_SKIP_SIGNATURE`) from the static server, which serves `HTTP_ROOT/GS_BUCKET/key`
# at GCS's XML API path `/GS_BUCKET/key`.
GS_BUCKET = os.environ.get('RIEGELI_TEST_GS_BUCKET', '')
# `gs://GS_WRITE_BUCKET/key` is written through the static server to the S3 server's bucket of
# that name (GCS's XML API is S3's for the requests object_store's GCS client makes).
GS_WRITE_BUCKET = os.environ.get('RIEGELI_TEST_GS_WRITE_BUCKET', '')

# Every object and served file of this run under a prefix of its own.
PREFIX = f'riegeli-tests-{uuid.uuid4().hex}'

REMOTES = [
    's3',
    pytest.param(
        'az',
        marks=pytest.mark.skipif(
            not (AZ_CONTAINER and AZ_CONNECTION), reason='RIEGELI_TEST_AZ_CONTAINER or RIEGELI_TEST_AZ_CONNECTION unset'
        ),
    ),
    pytest.param(
        'http',
        marks=pytest.mark.skipif(
            not (HTTP_URL and HTTP_ROOT), reason='RIEGELI_TEST_HTTP_URL or RIEGELI_TEST_HTTP_ROOT unset'
        ),
    ),
    pytest.param(
        'gs',
        marks=pytest.mark.skipif(
            not (GS_BUCKET and HTTP_ROOT), reason='RIEGELI_TEST_GS_BUCKET or RIEGELI_TEST_HTTP_ROOT unset'
        ),
    ),
]


def _records() -> list[bytes]:
    """Keyed records (sorted, for searching) of varied sizes, some incompressible."""
    rng = random.Random(42)
    records = []
    for i in range(6000):
        size = rng.choice([0, 10, 100, 1000, 5000])
        payload = bytes(rng.getrandbits(8) for _ in range(size // 4)) * 4 if i % 3 else b'x' * size
        records.append(b'%08d' % (2 * i) + payload)
    return records


@dataclasses.dataclass
class _FileInstruction:
    filename: str
    skip: int
    take: int
    examples_in_shard: int


class Remote:
    """Uploads local files and names them by URL (one kind of remote)."""

    def __init__(self, kind: str, s3) -> None:
        self.kind = kind
        self._s3 = s3

    def put(self, local: str, name: str) -> str:
        if self.kind == 's3':
            key = f'{PREFIX}/{name}'
            self._s3.upload_file(local, BUCKET, key)
            return f's3://{BUCKET}/{key}'
        if self.kind == 'az':
            from azure.storage.blob import BlobServiceClient

            key = f'{PREFIX}/{name}'
            service = BlobServiceClient.from_connection_string(AZ_CONNECTION)
            with open(local, 'rb') as data:
                service.get_blob_client(AZ_CONTAINER, key).upload_blob(data, overwrite=True)
            return f'az://{AZ_CONTAINER}/{key}'
        if self.kind == 'gs':
            directory = os.path.join(HTTP_ROOT, GS_BUCKET, PREFIX)
            os.makedirs(directory, exist_ok=True)
            shutil.copyfile(local, os.path.join(directory, name))
            return f'gs://{GS_BUCKET}/{PREFIX}/{name}'
        directory = os.path.join(HTTP_ROOT, PREFIX)
        os.makedirs(directory, exist_ok=True)
        shutil.copyfile(local, os.path.join(directory, name))
        return f'{HTTP_URL}/{PREFIX}/{name}'

    def missing(self, name: str) -> str:
        if self.kind == 's3':
            return f's3://{BUCKET}/{PREFIX}/no-such-dir/{name}'
        if self.kind == 'az':
            return f'az://{AZ_CONTAINER}/{PREFIX}/no-such-dir/{name}'
        if self.kind == 'gs':
            return f'gs://{GS_BUCKET}/{PREFIX}/no-such-dir/{name}'
        return f'{HTTP_URL}/{PREFIX}/no-such-dir/{name}'


@pytest.fixture(scope='module')
def s3():
    client = boto3.client('s3', endpoint_url=os.environ['AWS_ENDPOINT'])
    yield client
    # Best effort: the server is a scratch one anyway.
    listed = client.list_objects_v2(Bucket=BUCKET, Prefix=PREFIX).get('Contents', [])
    for item in listed:
        client.delete_object(Bucket=BUCKET, Key=item['Key'])


@pytest.fixture(scope='module', autouse=True)
def _served_dir():
    yield
    if HTTP_ROOT:
        shutil.rmtree(os.path.join(HTTP_ROOT, PREFIX), ignore_errors=True)
        if GS_BUCKET:
            shutil.rmtree(os.path.join(HTTP_ROOT, GS_BUCKET, PREFIX), ignore_errors=True)


@pytest.fixture(scope='module')
def records() -> list[bytes]:
    return _records()


@pytest.fixture(scope='module')
def ar_records(records) -> list[bytes]:
    """The records of the ArrayRecord files: fewer (one request per chunk is slow on moto)."""
    return records[:2400]


@pytest.fixture(scope='module')
def local_files(tmp_path_factory, records, ar_records) -> dict[str, str]:
    """Local files written by our writers: Riegeli/records files and ArrayRecord files."""
    directory = tmp_path_factory.mktemp('objects')
    files = {}
    for name, options in [
        ('small-chunks.riegeli', 'zstd,chunk_size:16k'),
        # About 12 MB, uncompressed: a sequential read crosses several read-ahead windows.
        ('big.riegeli', 'uncompressed,chunk_size:1M'),
    ]:
        path = str(directory / name)
        with riegeli.RecordWriter(path, options=options) as writer:
            writer.write_records(records)
        files[name] = path
    for name, options in [('grouped.array_record', 'group_size:10,zstd:3'), ('single.array_record', 'group_size:1')]:
        path = str(directory / name)
        writer = ArrayRecordWriter(path, options)
        for record in ar_records:
            writer.write(record)
        writer.close()
        files[name] = path
    return files


@pytest.fixture(scope='module', params=REMOTES)
def urls(request, s3, local_files) -> dict[str, str]:
    """The URL of each local file, uploaded to one kind of remote."""
    remote = Remote(request.param, s3)
    urls = {name: remote.put(path, name) for name, path in local_files.items()}
    urls['missing'] = remote.missing('missing.riegeli')
    return urls


def _read_with_positions(src) -> list[tuple[riegeli.RecordPosition, bytes]]:
    with riegeli.RecordReader(src) as reader:
        assert reader.check_file_format()
        out = []
        for record in reader.read_records():
            out.append((reader.last_pos, record))
        assert reader.pos.numeric == reader.size()
    return out


# RecordReader.


@pytest.mark.parametrize('name', ['small-chunks.riegeli', 'big.riegeli'])
def test_record_reader_reads_what_a_local_read_reads(urls, local_files, records, name):
    local = _read_with_positions(local_files[name])
    assert [record for _, record in local] == records
    assert _read_with_positions(urls[name]) == local
    with riegeli.RecordReader(urls[name]) as reader:
        assert reader.size() == os.path.getsize(local_files[name])
        assert reader.src == urls[name]
        assert reader.read_metadata() == riegeli.RecordsMetadata()


def test_record_reader_seeks(urls, local_files, records):
    name = 'small-chunks.riegeli'
    positions = [pos for pos, _ in _read_with_positions(local_files[name])]
    with riegeli.RecordReader(urls[name]) as reader:
        for i in [4000, 0, 5999, 17, 2999, 3000, 1]:
            reader.seek(positions[i])
            assert reader.read_record() == records[i]
            reader.seek_numeric(positions[i].numeric)
            assert reader.read_record() == records[i]
            assert reader.read_record() == (records[i + 1] if i + 1 < len(records) else None)
        reader.seek(positions[10])
        assert reader.seek_back()
        assert reader.read_record() == records[9]


def test_record_reader_searches(urls, records):
    def compare(target):
        return lambda record: (int(record[:8]) > target) - (int(record[:8]) < target)

    with riegeli.RecordReader(urls['small-chunks.riegeli']) as reader:
        assert reader.search_for_record(compare(5000)) == 0
        assert reader.read_record() == records[2500]
        assert reader.search_for_record(compare(5001)) == 1
        assert reader.read_record() == records[2501]
        assert reader.search(lambda probe: compare(10)(probe.read_record())) == 0
        assert reader.read_record() == records[5]
        assert reader.search_for_record(compare(10**7)) == -1
        assert reader.read_record() is None


def test_record_reader_byte_ranges_partition(urls, local_files, records):
    name = 'small-chunks.riegeli'
    size = os.path.getsize(local_files[name])
    split = []
    for start, end in riegeli.byte_ranges(size, 100_000):
        with riegeli.RecordReader(urls[name]) as reader:
            reader.set_byte_range(start, end)
            split.extend(reader.read_records())
    assert split == records


def test_record_reader_missing_object(urls):
    with pytest.raises(FileNotFoundError) as raised:
        riegeli.RecordReader(urls['missing'])
    assert 'missing.riegeli' in str(raised.value)


def test_record_reader_missing_bucket(s3):
    with pytest.raises(OSError):
        riegeli.RecordReader(f's3://no-such-bucket-{uuid.uuid4().hex[:12]}/x.riegeli')


def test_record_reader_url_rejects_assumed_pos(urls):
    with pytest.raises(riegeli.InvalidArgumentError):
        riegeli.RecordReader(urls['small-chunks.riegeli'], assumed_pos=0)


# Writers given URLs.

WRITABLE = [
    's3',
    pytest.param('gs', marks=pytest.mark.skipif(not GS_WRITE_BUCKET, reason='RIEGELI_TEST_GS_WRITE_BUCKET unset')),
    pytest.param(
        'az',
        marks=pytest.mark.skipif(
            not (AZ_CONTAINER and AZ_CONNECTION), reason='RIEGELI_TEST_AZ_CONTAINER or RIEGELI_TEST_AZ_CONNECTION unset'
        ),
    ),
]


def _writable_url(kind: str, name: str) -> str:
    key = f'{PREFIX}/written/{uuid.uuid4().hex}-{name}'
    if kind == 's3':
        return f's3://{BUCKET}/{key}'
    if kind == 'gs':
        return f'gs://{GS_WRITE_BUCKET}/{key}'
    return f'az://{AZ_CONTAINER}/{key}'


def _s3_key(url: str) -> str:
    return url.removeprefix(f's3://{BUCKET}/')


@pytest.mark.parametrize('kind', WRITABLE)
def test_record_writer_writes_an_object_that_reads_back(kind, records, local_files):
    url = _writable_url(kind, 'written.riegeli')
    with riegeli.RecordWriter(url, options='zstd,chunk_size:16k') as writer:
        writer.write_records(records)
        # A plain flush hands the bytes to the upload; a durable one cannot be promised.
        writer.flush()
        with pytest.raises(Exception, match='(?i)durab|support'):
            writer.flush(riegeli.FlushType.FROM_MACHINE)
        writer.write_records(records[:10])
    stats = writer.io_stats()
    with riegeli.RecordReader(url) as reader:
        assert list(reader.read_records()) == records + records[:10]
        size = reader.size()
    assert stats['requests'] >= 1 and stats['bytes'] == size, stats


@pytest.mark.parametrize('kind', WRITABLE)
def test_array_record_writer_writes_an_object_that_reads_back(kind, ar_records):
    url = _writable_url(kind, 'written.array_record')
    writer = ArrayRecordWriter(url, 'group_size:10,zstd:3')
    for record in ar_records:
        writer.write(record)
    writer.close()
    assert writer.io_stats()['bytes'] > 0
    reader = ArrayRecordReader(url)
    assert reader.num_records() == len(ar_records)
    assert reader.read_all() == ar_records
    assert reader.read([5, 2000, 7]) == [ar_records[5], ar_records[2000], ar_records[7]]
    reader.close()


def test_writer_failing_inside_with_leaves_no_object_and_no_upload(s3, records):
    url = _writable_url('s3', 'failed.riegeli')
    # Big enough for several parts of the multipart upload to be out before the failure.
    big = [os.urandom(1 << 20) for _ in range(20)]
    with pytest.raises(KeyError):
        with riegeli.RecordWriter(url, options='uncompressed') as writer:
            writer.write_records(big)
            raise KeyError('the job fails')
    key = _s3_key(url)
    assert s3.list_objects_v2(Bucket=BUCKET, Prefix=key).get('Contents', []) == []
    assert s3.list_multipart_uploads(Bucket=BUCKET, Prefix=key).get('Uploads', []) == []


def test_writer_dropped_unclosed_leaves_no_object(s3, records):
    url = _writable_url('s3', 'dropped.array_record')
    writer = ArrayRecordWriter(url, 'group_size:1')
    for record in records[:100]:
        writer.write(record)
    del writer
    import gc

    gc.collect()
    key = _s3_key(url)
    assert s3.list_objects_v2(Bucket=BUCKET, Prefix=key).get('Contents', []) == []
    assert s3.list_multipart_uploads(Bucket=BUCKET, Prefix=key).get('Uploads', []) == []


def test_writers_refuse_http_urls():
    with pytest.raises(Exception, match='(?i)http'):
        riegeli.RecordWriter('http://127.0.0.1:9/x.riegeli')
    # As in C++, an ArrayRecordWriter that cannot create its file is not ok() (no raise).
    writer = ArrayRecordWriter('http://127.0.0.1:9/x.array_record', '')
    assert not writer.ok()


# ArrayRecordReader.


@pytest.mark.parametrize('name', ['grouped.array_record', 'single.array_record'])
@pytest.mark.parametrize('options', ['', 'readahead_buffer_size:0', 'max_parallelism:0', 'readahead_buffer_size:64k'])
def test_array_record_reader_reads_what_a_local_read_reads(urls, local_files, ar_records, name, options):
    local = ArrayRecordReader(local_files[name], options)
    remote = ArrayRecordReader(urls[name], options)
    assert remote.ok()
    assert remote.num_records() == local.num_records() == len(ar_records)
    assert remote.writer_options_string() == local.writer_options_string()
    # Sequential reads, and a seek.
    assert [remote.read() for _ in range(25)] == ar_records[:25]
    remote.seek(2390)
    assert remote.record_index() == 2390
    assert [remote.read() for _ in range(10)] == ar_records[2390:]
    with pytest.raises(IndexError):
        remote.read()
    # Batch reads.
    rng = random.Random(7)
    indices = [rng.randrange(len(ar_records)) for _ in range(300)] + [0, len(ar_records) - 1, 5, 5]
    assert remote.read(indices) == [ar_records[i] for i in indices] == local.read(indices)
    assert remote.read(1234, 2345) == ar_records[1234:2345]
    assert remote.read(-10, -1) == ar_records[-10:-1]
    with pytest.raises(IndexError):
        remote.read(10, 5)
    with pytest.raises(RuntimeError):
        remote.read([len(ar_records)])
    assert remote.read_all() == ar_records == local.read_all()
    remote.close()
    local.close()
    assert not remote.is_open()


def test_array_record_reader_local_chunk_cache(urls, ar_records, tmp_path, monkeypatch):
    # The cache is one setting: RIEGELI_CACHE_DIR, read when a reader opens a URL.
    monkeypatch.setenv('RIEGELI_CACHE_DIR', str(tmp_path / 'cache'))
    everything = list(range(len(ar_records)))
    first = ArrayRecordReader(urls['single.array_record'])
    assert first.read(everything) == ar_records
    stats = first.io_stats()
    assert stats['requests'] > 0 and stats['cache_misses'] > 0, stats
    # A second reader (a worker process would do the same): everything from the cache, but
    # for the HEAD request that checks the object's ETag.
    second = ArrayRecordReader(urls['single.array_record'])
    assert second.read(everything) == ar_records
    stats = second.io_stats()
    assert stats['cache_misses'] == 0 and stats['bytes'] == 0 and stats['cache_hits'] > 0, stats
    assert stats['requests'] <= 1, stats


def test_a_process_that_exits_after_reading_leaves_what_it_fetched_in_the_cache(
    urls, ar_records, tmp_path, monkeypatch
):
    # The cache keeps what a read fetched on a thread of its own; the interpreter waits for
    # those writes as it exits, or a script that reads one record would leave it out.
    monkeypatch.setenv('RIEGELI_CACHE_DIR', str(tmp_path / 'cache'))
    indices = [100, 700, 1300, 1900]
    script = 'import sys; from riegeli.array_record import ArrayRecordReader as R; R(sys.argv[1]).read([int(sys.argv[2])])'
    for i in indices:
        subprocess.run([sys.executable, '-c', script, urls['grouped.array_record'], str(i)], check=True)
    for i in indices:
        reader = ArrayRecordReader(urls['grouped.array_record'])
        assert reader.read([i]) == [ar_records[i]]
        stats = reader.io_stats()
        assert stats['cache_misses'] == 0 and stats['bytes'] == 0, (i, stats)


def _read_one_record(url, index):
    ArrayRecordReader(url).read([index])


@pytest.mark.parametrize('start_method', ['fork', 'spawn'])
def test_a_multiprocessing_child_leaves_what_it_fetched_in_the_cache(
    urls, ar_records, tmp_path, monkeypatch, start_method
):
    # A forked multiprocessing child (as Grain's worker processes may be) ends with `os._exit`,
    # which runs no `atexit` handler: the package waits for the cache's writes in a
    # multiprocessing finalizer too, which the child runs first (a spawned child exits as a
    # script does; without the finalizer, the forked cases failed on every remote kind).
    monkeypatch.setenv('RIEGELI_CACHE_DIR', str(tmp_path / 'cache'))
    context = multiprocessing.get_context(start_method)
    indices = [200, 800, 1400, 2000]
    for i in indices:
        child = context.Process(target=_read_one_record, args=(urls['grouped.array_record'], i))
        child.start()
        child.join(60)
        assert child.exitcode == 0, (start_method, i, child.exitcode)
    for i in indices:
        reader = ArrayRecordReader(urls['grouped.array_record'])
        assert reader.read([i]) == [ar_records[i]]
        stats = reader.io_stats()
        assert stats['cache_misses'] == 0 and stats['bytes'] == 0, (start_method, i, stats)


def test_array_record_reader_shared_by_threads(urls, ar_records):
    reader = ArrayRecordReader(urls['single.array_record'], 'readahead_buffer_size:0')
    failures = []

    def work(seed):
        rng = random.Random(seed)
        for _ in range(5):
            indices = [rng.randrange(len(ar_records)) for _ in range(30)]
            if reader.read(indices) != [ar_records[i] for i in indices]:
                failures.append(seed)

    threads = [threading.Thread(target=work, args=(seed,)) for seed in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert not failures
    reader.close()


def test_array_record_reader_missing_object(urls):
    url = urls['missing']
    reader = ArrayRecordReader(url)  # Does not raise, as C++ for a missing file.
    assert not reader.ok()
    assert reader.is_open()
    assert reader.num_records() == 0
    assert reader.writer_options_string() is None
    for method in (reader.read, reader.read_all, lambda: reader.read([0]), lambda: reader.seek(0)):
        with pytest.raises(RuntimeError) as raised:
            method()
        assert url in str(raised.value)
    with pytest.raises(RuntimeError):
        reader.close()
    assert not reader.ok()
    assert not reader.is_open()


# ArrayRecordDataSource.


@pytest.mark.parametrize('name', ['grouped.array_record', 'single.array_record'])
def test_data_source_reads_what_a_local_one_reads(urls, local_files, ar_records, name):
    url = urls[name]
    remote = ArrayRecordDataSource(url)
    local = ArrayRecordDataSource(local_files[name])
    assert len(remote) == len(local) == len(ar_records)
    assert remote._paths == [url]  # Unchanged: no path mangling of the `//`.
    for key in [0, 1, 1999, len(ar_records) - 1]:
        assert remote[key] == ar_records[key] == local[key]
    keys = [5, 2000, 5, 0, 2399, 123]
    assert remote.__getitems__(keys) == [ar_records[k] for k in keys] == local.__getitems__(keys)
    # Pickled (as Grain's workers receive it): readers reopened on use, from the same URL.
    clone = pickle.loads(pickle.dumps(remote))
    assert clone._paths == [url]
    assert len(clone) == len(ar_records)
    assert clone.__getitems__(keys) == [ar_records[k] for k in keys]
    assert clone[1234] == ar_records[1234]
    remote.__exit__(None, None, None)
    local.__exit__(None, None, None)
    clone.__exit__(None, None, None)


def test_data_source_slices_and_several_urls(urls, local_files, ar_records):
    url = urls['grouped.array_record']
    sliced = ArrayRecordDataSource(f'{url}[0:50]')
    assert len(sliced) == 50
    assert sliced._paths == [url]
    assert [sliced[k] for k in range(50)] == ar_records[:50]
    assert sliced.__getitems__([49, 0]) == [ar_records[49], ar_records[0]]
    clone = pickle.loads(pickle.dumps(sliced))
    assert clone.__getitems__(list(range(50))) == ar_records[:50]
    # A URL, a slice of another and a local file, numbered one after the other.
    mixed = ArrayRecordDataSource(
        [url, f'{urls["single.array_record"]}[100:110]', local_files['grouped.array_record']]
    )
    assert len(mixed) == 2 * len(ar_records) + 10
    expected = ar_records + ar_records[100:110] + ar_records
    keys = [0, len(ar_records) - 1, len(ar_records), len(ar_records) + 9, len(ar_records) + 10, len(expected) - 1]
    assert mixed.__getitems__(keys) == [expected[k] for k in keys]
    assert pickle.loads(pickle.dumps(mixed))[len(ar_records) + 3] == ar_records[103]
    # A TFDS FileInstruction naming a URL.
    instruction = _FileInstruction(filename=url, skip=10, take=5, examples_in_shard=len(ar_records))
    from_instruction = ArrayRecordDataSource([instruction])
    assert from_instruction._paths == [url]
    assert from_instruction.__getitems__(list(range(5))) == ar_records[10:15]
    for source in (sliced, clone, mixed, from_instruction):
        source.__exit__(None, None, None)


def _wrong_reads(source, reader, ar_records, seed: int, rounds: int) -> list[str]:
    """Reads random records through a data source and a reader; what came back wrong."""
    rng = random.Random(seed)
    wrong = []
    for round_ in range(rounds):
        try:
            i = rng.randrange(len(ar_records))
            if source[i] != ar_records[i]:
                wrong.append(f'source[{i}]')
            if round_ % 4 == 0:
                keys = [rng.randrange(len(ar_records)) for _ in range(32)]
                if reader.read(keys) != [ar_records[k] for k in keys]:
                    wrong.append(f'reader.read({keys})')
        except Exception as e:  # noqa: BLE001 - every failure is reported
            wrong.append(f'{type(e).__name__}: {e}')
    return wrong


def _fork_and_wait(child, timeout: float = 60.0) -> int | None:
    """Runs `child()` in a forked child (its int is the exit status, 3 if it raised); `None`
    if it was still running after `timeout` seconds (it is killed)."""
    with warnings.catch_warnings():
        warnings.simplefilter('ignore', DeprecationWarning)  # fork() with threads (Python 3.12)
        pid = os.fork()
    if pid == 0:
        code = 3
        try:
            code = child()
        finally:
            os._exit(code)
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            return os.waitstatus_to_exitcode(status)
        time.sleep(0.01)
    os.kill(pid, signal.SIGKILL)
    os.waitpid(pid, 0)
    return None


@pytest.mark.parametrize('options', ['', 'max_parallelism:0'])
def test_children_forked_while_a_parent_thread_reads_read_their_records(urls, ar_records, options):
    """The DataLoader pattern over URLs: a data source and a reader made and read in the parent,
    children forked while another thread of the parent is in the middle of reads (its requests
    in flight, the locks of the object's cache and of the runtime taken): each child reads with
    a runtime, connections and cache of its own, and gets its records."""
    reader_options = dict(option.split(':') for option in options.split(',') if option)
    source = ArrayRecordDataSource(urls['single.array_record'], reader_options=reader_options)
    reader = ArrayRecordReader(urls['grouped.array_record'], options)
    assert _wrong_reads(source, reader, ar_records, seed=-1, rounds=8) == []
    stop = threading.Event()
    background: list[str] = []

    def keep_reading() -> None:
        seed = 100
        while not stop.is_set() and not background:
            background.extend(_wrong_reads(source, reader, ar_records, seed, rounds=4))
            seed += 1

    thread = threading.Thread(target=keep_reading)
    thread.start()
    outcomes = []
    try:
        for attempt in range(4):
            time.sleep(random.Random(attempt).uniform(0.005, 0.05))
            outcomes.append(
                _fork_and_wait(lambda attempt=attempt: 1 if _wrong_reads(source, reader, ar_records, attempt, 12) else 0)
            )
    finally:
        stop.set()
        thread.join()
    assert outcomes == [0] * 4, 'exit codes (None: hung)'
    assert background == []
    source.__exit__(None, None, None)
    reader.close()


def _read_in_child(pickled: bytes, key: int, results) -> None:
    results.put(pickle.loads(pickled)[key])


def test_data_source_in_a_forked_worker(urls, ar_records):
    """A pickled data source read in a worker process forked after the parent read URLs (PyTorch's
    DataLoader on Linux forks its workers)."""
    source = ArrayRecordDataSource(urls['single.array_record'])
    assert source[3] == ar_records[3]
    context = multiprocessing.get_context('fork')
    results = context.Queue()
    worker = context.Process(target=_read_in_child, args=(pickle.dumps(source), 42, results))
    worker.start()
    worker.join(5)
    hung = worker.is_alive()
    if hung:
        worker.kill()
        worker.join()
    source.__exit__(None, None, None)
    assert not hung, 'the forked worker did not finish reading'
    assert results.get(timeout=5) == ar_records[42]
