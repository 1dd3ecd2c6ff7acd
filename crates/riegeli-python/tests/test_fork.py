"""Readers and writers used in processes forked from the one that made them.

PyTorch's `DataLoader` (and Grain, and `multiprocessing`'s 'fork' context) forks worker
processes from a parent that has built a data source, often already read from it, and maybe
still reads from it on another thread. Every worker must read exactly the records it asks for:
no process moves a file position another one reads at, and nothing a forked child inherited (a
lock another thread of the parent held, threads that do not exist in the child) is waited on.
A writer belongs to the process that made it: a forked child writes nothing through it.

Each child runs under a deadline, so that a child that hangs fails the test instead of hanging it.
"""

from __future__ import annotations

import multiprocessing
import os
import random
import signal
import threading
import time
import traceback
import warnings
from unittest import mock

import pytest

import riegeli
from riegeli.array_record import ArrayRecordDataSource
from riegeli.array_record import ArrayRecordReader
from riegeli.array_record import ArrayRecordWriter
from riegeli.array_record import array_record_data_source

pytestmark = pytest.mark.skipif(not hasattr(os, 'fork'), reason='needs os.fork')

NUM_RECORDS = 20_000
# How long a child may take before it counts as hung.
DEADLINE = 60.0

# Reader options of the data source and the reader: the default (decoding threads) and none.
OPTIONS = ['', 'max_parallelism:0']


def record(i: int) -> bytes:
    """Record `i`: its index, then filler of a size that varies with it."""
    return b'%07d|' % i + b'%d.' % (i * 7919) * (i % 17)


@pytest.fixture(scope='module')
def files(tmp_path_factory):
    """An ArrayRecord file as data sources have them (group_size:1), and one with larger chunks."""
    directory = tmp_path_factory.mktemp('fork')
    paths = {}
    for name, options in [('single', 'group_size:1'), ('grouped', 'group_size:100')]:
        path = str(directory / f'{name}.array_record')
        writer = ArrayRecordWriter(path, options)
        for i in range(NUM_RECORDS):
            writer.write(record(i))
        writer.close()
        paths[name] = path
    return paths


def parse_options(options: str) -> dict[str, str]:
    return dict(option.split(':') for option in options.split(',') if option)


def check_reads(source, reader, seed: int, rounds: int) -> list[str]:
    """Reads random records through `source` (a data source) and `reader` (an
    `ArrayRecordReader`) in every way they offer; returns what came back wrong."""
    rng = random.Random(seed)
    wrong = []

    def expect(what: str, got, indices) -> None:
        want = [record(i) for i in indices]
        if got != want:
            first = next(k for k, (g, w) in enumerate(zip(got, want)) if g != w) if len(got) == len(want) else 0
            got_head = got[first][:8] if first < len(got) else None
            wrong.append(f'{what}: asked for record {indices[first]}, got {got_head!r}')

    for round_ in range(rounds):
        try:
            i = rng.randrange(NUM_RECORDS)
            expect('source[i]', [source[i]], [i])
            if round_ % 8 == 0:
                keys = [rng.randrange(NUM_RECORDS) for _ in range(rng.choice([2, 64, 512]))]
                expect('source.__getitems__', source.__getitems__(keys), keys)
                expect('reader.read(indices)', reader.read(keys), keys)
                begin = rng.randrange(NUM_RECORDS - 300)
                expect('reader.read(begin, end)', reader.read(begin, begin + 300), list(range(begin, begin + 300)))
            if round_ % 8 == 4:
                reader.seek(i)
                expect('reader.read()', [reader.read(), reader.read()], [i, i + 1] if i + 1 < NUM_RECORDS else [i])
        except Exception as e:  # noqa: BLE001 - every failure is reported
            wrong.append(f'{type(e).__name__}: {e}')
        if len(wrong) >= 5:
            break
    return wrong


def _worker(source, reader, seed: int, results) -> None:
    results.put((seed, check_reads(source, reader, seed, rounds=400)))


def join_or_kill(process, deadline: float) -> bool:
    """Waits for a multiprocessing child until `deadline` (a `time.monotonic()`); kills it
    then. Returns whether it finished in time."""
    process.join(max(0.0, deadline - time.monotonic()))
    if process.is_alive():
        process.kill()
        process.join()
        return False
    return True


@pytest.mark.parametrize('options', OPTIONS)
def test_workers_forked_from_a_parent_that_read_read_their_own_records(files, options):
    """The DataLoader pattern: a data source and a reader built (and read) in the parent, worker
    processes forked from it reading random records at once, and the parent reading too."""
    source = ArrayRecordDataSource(files['single'], reader_options=parse_options(options))
    reader = ArrayRecordReader(files['grouped'], options)
    # The parent reads first: files opened, records decoded, decoding threads started.
    assert check_reads(source, reader, seed=-1, rounds=40) == []
    context = multiprocessing.get_context('fork')
    results = context.Queue()
    with warnings.catch_warnings():
        warnings.simplefilter('ignore', DeprecationWarning)  # fork() with threads (Python 3.12)
        workers = [context.Process(target=_worker, args=(source, reader, seed, results)) for seed in range(3)]
        for worker in workers:
            worker.start()
    parent_wrong = check_reads(source, reader, seed=99, rounds=200)
    deadline = time.monotonic() + DEADLINE
    finished = [join_or_kill(worker, deadline) for worker in workers]
    reports = dict(results.get(timeout=5) for _ in range(sum(finished)))
    assert all(finished), f'{finished.count(False)} worker(s) hung'
    assert [worker.exitcode for worker in workers] == [0, 0, 0]
    assert reports == {0: [], 1: [], 2: []}
    assert parent_wrong == []
    source.__exit__(None, None, None)
    reader.close()


def fork(child) -> int:
    """Forks; the child runs `child()` and exits with the int it returns (3 if it raised).
    Returns the child's pid."""
    with warnings.catch_warnings():
        warnings.simplefilter('ignore', DeprecationWarning)  # fork() with threads (Python 3.12)
        pid = os.fork()
    if pid == 0:
        code = 3
        try:
            code = child()
        except BaseException:  # noqa: BLE001 - reported, and the child must not go on as pytest
            traceback.print_exc()
        finally:
            os._exit(code)
    return pid


def wait(pid: int, timeout: float = DEADLINE) -> int | None:
    """The exit status of child `pid`, or `None` if it was still running after `timeout`
    seconds (it is killed then)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            return os.waitstatus_to_exitcode(status)
        time.sleep(0.005)
    os.kill(pid, signal.SIGKILL)
    os.waitpid(pid, 0)
    return None


def run_forked(child, timeout: float = DEADLINE) -> int | None:
    """`child()` in a forked child: its exit status, `None` if it hung."""
    return wait(fork(child), timeout)


@pytest.mark.parametrize('options', OPTIONS)
def test_a_child_forked_while_another_thread_reads_finishes_its_reads(files, options):
    """Forks while another thread of the parent is in the middle of reads (holding whatever a
    read holds): each child reads the same data source and reader, and must get its records."""
    source = ArrayRecordDataSource(files['single'], reader_options=parse_options(options))
    reader = ArrayRecordReader(files['grouped'], options)
    stop = threading.Event()
    background_wrong: list[str] = []

    def keep_reading() -> None:
        seed = 1000
        while not stop.is_set() and not background_wrong:
            background_wrong.extend(check_reads(source, reader, seed, rounds=16))
            seed += 1

    thread = threading.Thread(target=keep_reading)
    thread.start()
    outcomes = []
    try:
        for attempt in range(6):
            time.sleep(random.Random(attempt).uniform(0.005, 0.05))

            def child(attempt=attempt) -> int:
                wrong = check_reads(source, reader, seed=attempt, rounds=48)
                for line in wrong:
                    print(line, flush=True)
                return 1 if wrong else 0

            outcomes.append(run_forked(child))
    finally:
        stop.set()
        thread.join()
    assert outcomes == [0] * 6, 'exit codes (None: hung)'
    assert background_wrong == []
    source.__exit__(None, None, None)
    reader.close()


def test_a_writer_made_in_a_forked_child_writes_its_file(files, tmp_path):
    """A child makes writers of its own (with a reader inherited from the parent open): they
    write their files as in any process."""
    inherited = ArrayRecordReader(files['grouped'])
    assert inherited.read([5, 6]) == [record(5), record(6)]
    records_path = tmp_path / 'child.riegeli'
    array_path = tmp_path / 'child.array_record'

    def child() -> int:
        with riegeli.RecordWriter(records_path, options='parallelism:2') as writer:
            writer.write_records(record(i) for i in range(3000))
        writer = ArrayRecordWriter(str(array_path), 'group_size:10')
        for i in range(3000):
            writer.write(record(i))
        writer.close()
        return 0 if inherited.read([7]) == [record(7)] else 1

    assert run_forked(child) == 0
    with riegeli.RecordReader(records_path) as reader:
        assert list(reader.read_records()) == [record(i) for i in range(3000)]
    assert ArrayRecordReader(str(array_path)).read_all() == [record(i) for i in range(3000)]


WRITER_USES = {
    'flush': lambda box: box[0].flush(),
    'close': lambda box: box[0].close(),
    # The child's last reference goes: the writer is dropped there, never closed.
    'drop': lambda box: box.clear(),
}


@pytest.mark.parametrize('use', WRITER_USES)
@pytest.mark.parametrize('dest', ['path', 'file object'])
def test_a_parents_record_writer_writes_nothing_from_a_forked_child(tmp_path, use, dest):
    """A parent's `RecordWriter` in a forked child: writes through it fail (flush and close raise
    `FailedPreconditionError`), dropping it there writes nothing and waits for no thread, and the
    parent's file ends up holding exactly what the parent wrote."""
    path = tmp_path / 'parent.riegeli'
    file = open(path, 'wb') if dest == 'file object' else None
    # The writer's only reference, so that a child can drop it.
    box = [riegeli.RecordWriter(file if file else path, options='chunk_size:4096')]
    box[0].write_records(record(i) for i in range(1000))
    box[0].flush()

    def child() -> int:
        try:
            box[0].write_records(record(i) for i in range(5000, 7000))
            WRITER_USES[use](box)
        except riegeli.FailedPreconditionError:
            failed = True
        else:
            failed = False
        return 0 if failed == (use != 'drop') else 1

    assert run_forked(child) == 0
    box[0].write_records(record(i) for i in range(1000, 2000))
    box[0].close()
    if file:
        file.close()
    with riegeli.RecordReader(path) as reader:
        assert list(reader.read_records()) == [record(i) for i in range(2000)]


@pytest.mark.parametrize('use', ['close', 'drop'])
def test_a_parents_array_record_writer_writes_nothing_from_a_forked_child(tmp_path, use):
    """As for `RecordWriter`: in the child, writing raises `RuntimeError` (array_record's class)
    by `close()` at the latest, dropping the writer waits for nothing, and nothing reaches the
    file; the parent finishes it."""
    path = str(tmp_path / 'parent.array_record')
    box = [ArrayRecordWriter(path, 'group_size:10')]
    for i in range(1000):
        box[0].write(record(i))

    def child() -> int:
        try:
            for i in range(5000, 7000):
                box[0].write(record(i))
            if use == 'close':
                box[0].close()
        except RuntimeError:
            return 0
        if use == 'drop':
            box.clear()
            return 0
        return 1

    assert run_forked(child) == 0
    for i in range(1000, 2000):
        box[0].write(record(i))
    box[0].close()
    assert ArrayRecordReader(path).read_all() == [record(i) for i in range(2000)]


def test_a_record_reader_given_a_path_reads_on_in_a_forked_child(files, tmp_path):
    """`RecordReader` of a path, half read in the parent: parent and child each read the rest at
    once, neither moving the other's position."""
    path = tmp_path / 'records.riegeli'
    with riegeli.RecordWriter(path, options='chunk_size:2048') as writer:
        writer.write_records(record(i) for i in range(20_000))
    reader = riegeli.RecordReader(path)
    for i in range(10_000):
        assert reader.read_record() == record(i)

    def rest() -> list[int]:
        """The indices of the records read wrong, then -1 (-2 if reading failed)."""
        try:
            return [i for i, got in enumerate(reader.read_records(), start=10_000) if got != record(i)] + [-1]
        except riegeli.RiegeliError:
            return [-2]

    pid = fork(lambda: 0 if rest() == [-1] else 1)
    wrong = rest()
    assert wait(pid) == 0, 'the child read other records (None: it hung)'
    assert wrong == [-1]


def test_a_data_source_opens_readers_in_a_child_forked_while_the_parent_opened_one(files):
    """A data source opens its files on first use, each under a lock of its own: a child forked
    while a thread of the parent was opening one (holding that file's lock) opens its own."""
    source = ArrayRecordDataSource([files['single'], files['grouped']])
    assert source[0] == record(0)  # the first file is open, the second not yet
    parent = os.getpid()
    opening, release = threading.Event(), threading.Event()

    def check_group_size(filename, reader) -> None:
        """Called as the second file is opened, its lock held: waits in the parent."""
        if os.getpid() == parent:
            opening.set()
            release.wait()

    with mock.patch.object(array_record_data_source, '_check_group_size', check_group_size):
        thread = threading.Thread(target=lambda: source[NUM_RECORDS + 1])
        thread.start()
        assert opening.wait(DEADLINE)
        status = run_forked(lambda: 0 if source[NUM_RECORDS + 5] == record(5) else 1)
        release.set()
        thread.join()
    assert status == 0, 'the child could not open a reader (None: it hung)'
    assert source.__getitems__([NUM_RECORDS + 6, 7]) == [record(6), record(7)]
