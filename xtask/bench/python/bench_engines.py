"""Beam and Ray reading the same records: `riegeli.beam` against Beam's TFRecord reader, and
`riegeli.ray` on 1 and 2 CPUs.

Run by `cargo xtask bench engines [--megabytes N] [--files N] [--record-size B] [--rounds R]
[--out PATH] [--dir DIR] [--options STR] [--ray-blocks N] [--no-multiprocessing] [--no-beam]
[--no-ray]` in `target/engines-venv` (apache-beam 2.77.0, ray[data] 2.60.0, google-crc32c; our
package built in release). A default run takes about 3 minutes, writing the dataset included.

The dataset is written once into a directory under `--dir` (default
/dev/shm/riegeli-bench-engines: memory, so that every round reads the same bytes at the same
cost, never the disk) and reused while its parameters stay the same (datasets of other
parameters are left there: remove them by hand). It is `--megabytes` of record payload
(default 1000) in records of `--record-size` bytes (default 4096), text-like (slices at seeded
random offsets of a 32 MB text of words drawn from a seeded vocabulary: every record differs,
and compresses about as English text does), written three times, the same records in the same
order:

- `riegeli/`: `--files` (default 3) Riegeli/records files written by `riegeli.RecordWriter` with
  `--options` (default `snappy`: fast to decode, a common choice, files about 55% of the
  payload; RecordWriter's default, brotli, writes about 10 MB/s, minutes for the dataset);
- `tfrecord/`: `--files` TFRecord files (uncompressed, the usual way), framed by Beam's own
  `_TFRecordUtil.write_record` (masked crc32c, no TensorFlow). Beam's TFRecord reader checks
  two crc32c per record, through python-snappy, google-crc32c or crcmod, whichever is
  installed; the venv has google-crc32c (C, hardware crc32c), the fastest of them;
- `single/`: all the records in ONE Riegeli file (same options), for Ray: fewer files than CPUs,
  so any scaling comes from reading parts of one file in parallel.

Measurements, each the median of `--rounds` (default 3) rounds:

1. Beam DirectRunner, the same runner options for both readers, the two alternating within a
   round: a pipeline `ReadFromRiegeli(pattern)` or
   `beam.io.ReadFromTFRecord(pattern, coder=BytesCoder())`, then
   `beam.combiners.Count.Globally()` (the count is checked against what was written). Once in
   process (`direct_num_workers=1`, `direct_running_mode='in_memory'`) and once with
   `direct_num_workers=2`, `direct_running_mode='multi_processing'` (unless
   `--no-multiprocessing`), after a warm-up pipeline of each reader on a small file. Times are
   of the whole pipeline, construction and runner start included: both readers pay those alike.
2. Ray, in a child process (a Beam pipeline can leave gRPC threads behind that make forking
   Ray's processes hang): `ray.init(num_cpus=1)` and `ray.init(num_cpus=2)`, alternating
   within a round (each after a `ray.shutdown()`, then a warm-up read of a small file in
   several tasks so that every worker process has imported our package before the timing), after an untimed round
   on 2 CPUs (the first read of a process was often much slower): `read_riegeli` of the
   single file with `override_num_blocks=--ray-blocks` (default 8: byte ranges of 1/8 of the
   file, rounded down to 64 KiB blocks, and the small rest, 9 read tasks, so that 2 CPUs each
   get several; 0 leaves Ray's default, 200 read tasks for 1 GB, about 2× slower: Ray's cost
   per task, not the reading, dominates then),
   consumed fully by `ds.iter_batches(batch_size=None, batch_format='pyarrow')` in the driver,
   which sums the record count and record bytes (Arrow compute, no Python loop over records),
   checked against what was written. This measures reading (the read tasks produce the blocks)
   plus Ray moving the blocks to the driver through the object store (zero-copy on one node).
   Then, in the same cluster, the same consumption of a dataset of 8 read tasks that read
   nothing (each yields 1/8 of the records as one ready Arrow table, one memset of fresh
   memory): Ray's own cost for those bytes, the floor under any reader's time and the ceiling
   on its scaling from 1 to 2 CPUs.

MB/s counts record payload bytes (1 MB = 10^6 bytes), not file bytes. `CPU s` is the CPU time
of the benchmark's process (`time.process_time()`, median), given for Beam in process only,
where it is all the work: it varies much less than wall time when other work competes for the
cores, and the ratio column has it too.

Other work on the machine slows every row, and caps what a second CPU can give: Linux shares
CPU time between sessions first (autogroup scheduling), so while other sessions are busy, this
one gets about its share however many processes it runs. The table header has the load average
(`os.getloadavg()`) before and after, and how much work a busy loop did in 2 processes against
1 at the start; the 2-CPU Ray row has that ratio measured before each Ray round (median). Near
1 it means that a second process got little more CPU then: a hint, not a bound, as the load
changes from second to second (and Ray with 1 CPU also waits, between tasks, on more than the
CPU). The markdown table goes to stdout and to `--out` (default target/bench-engines/table.md).
"""

import argparse
import glob
import json
import os
import pathlib
import re
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

TEXT_BYTES = 32 << 20
FORMAT_VERSION = 2  # Bumped when the records or the layout change, so that old datasets are not reused.
WARMUP_RECORDS = 256


def parse_args(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split('\n\n')[0])
    parser.add_argument('--megabytes', type=int, default=1000, help='record payload of the dataset, in MB')
    parser.add_argument('--files', type=int, default=3, help='files of the Beam datasets (Riegeli and TFRecord)')
    parser.add_argument('--record-size', type=int, default=4096, help='bytes in each record')
    parser.add_argument('--rounds', type=int, default=3, help='rounds; each row is the median')
    parser.add_argument('--out', default='target/bench-engines/table.md', help='where the markdown table goes')
    parser.add_argument('--dir', default='/dev/shm/riegeli-bench-engines', help='where the dataset is kept')
    parser.add_argument('--options', default='snappy', help="RecordWriter's options for the Riegeli files")
    parser.add_argument('--ray-blocks', type=int, default=8, help='override_num_blocks for Ray (0: Ray default)')
    parser.add_argument('--no-multiprocessing', action='store_true', help='skip Beam with 2 worker processes')
    parser.add_argument('--no-beam', action='store_true', help='skip Beam')
    parser.add_argument('--no-ray', action='store_true', help='skip Ray')
    parser.add_argument('--ray-child', help=argparse.SUPPRESS)  # Internal: the Ray part, in a child.
    return parser.parse_args(argv)


# The dataset.


def text_buffer(rng, size):
    vocab = [''.join(rng.choices('abcdefghijklmnopqrstuvwxyz', k=rng.randint(2, 10))) for _ in range(10_000)]
    weights = [1.0 / (rank + 1) for rank in range(len(vocab))]  # Zipf-like word frequencies.
    words = rng.choices(vocab, weights=weights, k=size // 5)
    return ' '.join(words).encode()[:size]


def write_dataset(path, megabytes, files, record_size, options):
    """Writes the dataset into `path` (a fresh directory); returns its manifest."""
    import riegeli
    from apache_beam.io.tfrecordio import _TFRecordUtil

    rng = random.Random(1234)
    text = text_buffer(rng, max(TEXT_BYTES, 4 * record_size))
    num_records = megabytes * 10**6 // record_size
    for sub in ('riegeli', 'tfrecord', 'single', 'warmup'):
        (path / sub).mkdir(parents=True)
    single = riegeli.RecordWriter(str(path / 'single' / 'all.riegeli'), options=options)
    written = 0
    for i in range(files):
        name = f'part-{i:05d}-of-{files:05d}'
        end = num_records * (i + 1) // files
        with riegeli.RecordWriter(str(path / 'riegeli' / f'{name}.riegeli'), options=options) as writer, open(
            path / 'tfrecord' / f'{name}.tfrecord', 'wb', buffering=1 << 20
        ) as tfrecord:
            while written < end:
                offset = rng.randrange(len(text) - record_size)
                record = text[offset : offset + record_size]
                writer.write_record(record)
                single.write_record(record)
                _TFRecordUtil.write_record(tfrecord, record)
                written += 1
    single.close()
    with riegeli.RecordWriter(str(path / 'warmup' / 'warmup.riegeli'), options=options) as writer, open(
        path / 'warmup' / 'warmup.tfrecord', 'wb'
    ) as tfrecord:
        for _ in range(WARMUP_RECORDS):
            offset = rng.randrange(len(text) - record_size)
            writer.write_record(text[offset : offset + record_size])
            _TFRecordUtil.write_record(tfrecord, text[offset : offset + record_size])

    def size(sub):
        return sum(os.path.getsize(p) for p in glob.glob(str(path / sub / '*')))


    return {
        'records': num_records,
        'payload': num_records * record_size,
        'riegeli_bytes': size('riegeli'),
        'tfrecord_bytes': size('tfrecord'),
        'single_bytes': size('single'),
    }


def dataset(args):
    """The dataset for these parameters, written if missing; returns (directory, manifest)."""
    options = ''.join(c if c.isalnum() or c in '-_.' else '_' for c in args.options) or 'default'
    key = f'v{FORMAT_VERSION}-{args.megabytes}mb-{args.files}files-{args.record_size}b-{options}'
    path = pathlib.Path(args.dir) / key
    manifest_path = path / 'manifest.json'
    if manifest_path.exists():
        print(f'reusing the dataset in {path}', file=sys.stderr)
        return path, json.loads(manifest_path.read_text())
    if path.exists():  # Left incomplete.
        shutil.rmtree(path)
    print(f'writing the dataset into {path}', file=sys.stderr)
    start = time.perf_counter()
    manifest = write_dataset(path, args.megabytes, args.files, args.record_size, args.options)
    manifest_path.write_text(json.dumps(manifest))
    print(f'  written in {time.perf_counter() - start:.1f} s', file=sys.stderr)
    return path, manifest


# What the machine gives: other work (other sessions: with the kernel's autogroup scheduling,
# CPU time is shared between sessions first) can leave this benchmark less than 2 cores.


def _spin(seconds):
    end = time.perf_counter() + seconds
    n = 0
    while time.perf_counter() < end:
        for _ in range(1000):
            n += 1
    return n


def cpu_ceiling(seconds=1.0):
    """The work a busy loop does in 2 processes over that in 1, now: how much a second process
    of this session gets from the second core."""
    import multiprocessing

    with multiprocessing.get_context('spawn').Pool(2) as pool:
        pool.map(_spin, [0.05, 0.05], chunksize=1)
        one = pool.map(_spin, [seconds])[0]
        two = sum(pool.map(_spin, [seconds, seconds], chunksize=1))
    return two / one


# Beam.


class _CountTo:
    """Writes the count into a file: the pipeline may run in other processes."""

    def __init__(self, path):
        self.path = path

    def __call__(self, count):
        with open(self.path, 'w') as f:
            f.write(str(count))


def beam_read(reader, pattern, flags, count_path):
    import apache_beam as beam
    from apache_beam.io.filesystem import CompressionTypes
    from apache_beam.options.pipeline_options import PipelineOptions
    from riegeli import beam as riegeli_beam

    if reader == 'riegeli':
        read = riegeli_beam.ReadFromRiegeli(pattern)
    else:
        read = beam.io.ReadFromTFRecord(
            pattern, coder=beam.coders.BytesCoder(), compression_type=CompressionTypes.UNCOMPRESSED
        )
    if os.path.exists(count_path):
        os.remove(count_path)
    start, cpu = time.perf_counter(), time.process_time()
    with beam.Pipeline(options=PipelineOptions(flags)) as p:
        _ = p | 'Read' >> read | 'Count' >> beam.combiners.Count.Globally() | 'Save' >> beam.Map(_CountTo(count_path))
    seconds, cpu = time.perf_counter() - start, time.process_time() - cpu
    with open(count_path) as f:
        return seconds, cpu, int(f.read())


def beam_rows(path, manifest, args, tmp):
    import logging

    logging.getLogger('apache_beam').setLevel(logging.WARNING)
    modes = [('in process (`direct_num_workers=1`, in_memory)', 1, ['--direct_running_mode=in_memory'])]
    if not args.no_multiprocessing:
        label = '2 processes (`direct_num_workers=2`, multi_processing)'
        modes.append((label, 2, ['--direct_running_mode=multi_processing']))
    patterns = {'riegeli': str(path / 'riegeli' / '*.riegeli'), 'tfrecord': str(path / 'tfrecord' / '*.tfrecord')}
    rows = []
    for label, workers, extra in modes:
        flags = ['--runner=DirectRunner', f'--direct_num_workers={workers}'] + extra
        times = {'riegeli': [], 'tfrecord': []}
        cpus = {'riegeli': [], 'tfrecord': []}
        for reader in times:  # Warm-up: imports, the runner's first start.
            beam_read(reader, str(path / 'warmup' / f'warmup.{reader}'), flags, os.path.join(tmp, 'count'))
        for r in range(args.rounds):
            order = ['riegeli', 'tfrecord'] if r % 2 == 0 else ['tfrecord', 'riegeli']
            for reader in order:
                seconds, cpu, count = beam_read(reader, patterns[reader], flags, os.path.join(tmp, 'count'))
                if count != manifest['records']:
                    raise SystemExit(f'Beam {reader} counted {count} records, {manifest["records"]} were written')
                times[reader].append(seconds)
                cpus[reader].append(cpu)
                print(f'  Beam {label}: {reader} round {r + 1}: {seconds:.2f} s, CPU {cpu:.2f} s', file=sys.stderr)
        medians = {reader: statistics.median(t) for reader, t in times.items()}
        # CPU time of this process: all of the work in process, only the driver's otherwise.
        cpu = {reader: statistics.median(t) if workers == 1 else None for reader, t in cpus.items()}
        for reader, name in (('riegeli', '`riegeli.beam.ReadFromRiegeli`'), ('tfrecord', '`beam.io.ReadFromTFRecord`')):
            versus = '-'
            if reader == 'riegeli':
                versus = f'{medians["tfrecord"] / medians["riegeli"]:.2f}× ReadFromTFRecord'
                if cpu['riegeli']:
                    versus += f' (CPU: {cpu["tfrecord"] / cpu["riegeli"]:.2f}×)'
            row = (f'Beam DirectRunner, {label}', name, args.files, medians[reader], cpu[reader], times[reader], versus)
            rows.append(row)
    return rows


# Ray, in a child process.


def _ready_block(rows, record_size):
    """A read task that reads nothing: it yields `rows` records of `record_size` bytes as one
    Arrow table, made from one fresh buffer (a memset, no per-record work)."""
    import array

    import pyarrow as pa

    data = b'a' * (rows * record_size)
    offsets = array.array('i', range(0, (rows + 1) * record_size, record_size)).tobytes()
    array = pa.Array.from_buffers(pa.binary(), rows, [None, pa.py_buffer(offsets), pa.py_buffer(data)])
    yield pa.Table.from_arrays([array], names=['record'])


def _ready_source(tasks, rows, record_size):
    """A Ray datasource of `tasks` read tasks of `_ready_block`: Ray's own cost of moving the
    same bytes from read tasks to the driver (the floor under any reader's)."""
    import functools

    import pyarrow as pa
    from ray.data.block import BlockMetadata
    from ray.data.datasource import Datasource, ReadTask

    schema = pa.schema([('record', pa.binary())])

    class Ready(Datasource):
        def estimate_inmemory_data_size(self):
            return tasks * rows * record_size

        def get_read_tasks(self, parallelism, *args, **kwargs):  # Ray's other arguments: unused.
            meta = BlockMetadata(num_rows=rows, size_bytes=rows * record_size, input_files=None, exec_stats=None)
            read = functools.partial(_ready_block, rows, record_size)
            return [ReadTask(read, meta, schema=schema) for _ in range(tasks)]

    return Ready()


def ray_child(spec):
    import pyarrow.compute as pc
    import ray
    import ray.data
    from riegeli import ray as riegeli_ray

    spec = json.loads(spec)
    kwargs = {'override_num_blocks': spec['blocks']} if spec['blocks'] else {}

    def consume(path, **kw):
        rows = size = 0
        ds = riegeli_ray.read_riegeli(path, **kw)
        for batch in ds.iter_batches(batch_size=None, batch_format='pyarrow'):
            rows += batch.num_rows
            size += pc.sum(pc.binary_length(batch['record'])).as_py() or 0
        return rows, size, ds

    times = {1: [], 2: [], 'ready1': [], 'ready2': [], 'ceiling': [], 'tasks': None}
    ready_rows = spec['records'] // 8

    def consume_ready():
        rows = 0
        ds = ray.data.read_datasource(_ready_source(8, ready_rows, spec['record_size']), override_num_blocks=8)
        for batch in ds.iter_batches(batch_size=None, batch_format='pyarrow'):
            rows += batch.num_rows
        if rows != 8 * ready_rows:
            raise SystemExit(f'Ray read {rows} ready records, {8 * ready_rows} were made')
    for r in range(-1, spec['rounds']):  # Round -1 is a warm-up: the first one was slower.
        if r >= 0:
            times['ceiling'].append(cpu_ceiling())
            print(f'  busy loop, 2 processes against 1: {times["ceiling"][-1]:.2f}×', file=sys.stderr)
        for cpus in (1, 2) if r % 2 == 0 else (2, 1):
            if r < 0 and cpus == 1:
                continue
            ray.init(num_cpus=cpus, include_dashboard=False, log_to_driver=False, logging_level='ERROR')
            try:
                ray.data.DataContext.get_current().enable_progress_bars = False
                # Several small read tasks, so that every worker process imports our package.
                consume(spec['warmup'], override_num_blocks=4 * cpus, min_bytes_per_task=64 << 10)
                start = time.perf_counter()
                rows, size, ds = consume(spec['path'], **kwargs)
                seconds = time.perf_counter() - start
                start = time.perf_counter()
                consume_ready()
                ready = time.perf_counter() - start
                tasks = re.search(r'(\d+) tasks executed', ds.stats())
                times['tasks'] = int(tasks.group(1)) if tasks else '?'
            finally:
                ray.shutdown()
            if (rows, size) != (spec['records'], spec['payload']):
                written = f'{spec["records"]} of {spec["payload"]}'
                raise SystemExit(f'Ray read {rows} records of {size} bytes, {written} were written')
            if r >= 0:
                times[cpus].append(seconds)
                times[f'ready{cpus}'].append(ready)
            which = f'round {r + 1}' if r >= 0 else 'warm-up'
            print(f'  Ray {cpus} CPU(s) {which}: {seconds:.2f} s (no-op read tasks: {ready:.2f} s)', file=sys.stderr)
    print(json.dumps(times))


def ray_rows(path, manifest, args):
    spec = {
        'path': str(path / 'single' / 'all.riegeli'),
        'warmup': str(path / 'warmup' / 'warmup.riegeli'),
        'blocks': args.ray_blocks,
        'rounds': args.rounds,
        'records': manifest['records'],
        'payload': manifest['payload'],
        'record_size': args.record_size,
    }
    child = subprocess.Popen(
        [sys.executable, __file__, '--ray-child', json.dumps(spec)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    for line in child.stderr:  # Ray Data logs each dataset at INFO level.
        if '\tINFO ' not in line:
            sys.stderr.write(line)
    out = child.stdout.read()
    if child.wait() != 0:
        raise SystemExit(f'the Ray part failed (exit status {child.returncode})')
    times = json.loads(out.strip().splitlines()[-1])
    ceiling = statistics.median(times['ceiling'])
    blocks = f'override_num_blocks={args.ray_blocks}' if args.ray_blocks else 'Ray\'s default blocks'
    name = f'`riegeli.ray.read_riegeli`, 1 file, {blocks} ({times["tasks"]} read tasks)'
    one, two = statistics.median(times['1']), statistics.median(times['2'])
    ready_one, ready_two = statistics.median(times['ready1']), statistics.median(times['ready2'])
    ready = '8 read tasks that read nothing (each yields 1/8 of the records as a ready Arrow table): Ray\'s floor'
    return [
        ('Ray, `ray.init(num_cpus=1)`', name, 1, one, None, times['1'], '-'),
        (
            'Ray, `ray.init(num_cpus=2)`',
            name,
            1,
            two,
            None,
            times['2'],
            f'{one / two:.2f}× 1 CPU (a busy loop: {ceiling:.2f}×)',
        ),
        ('Ray, `ray.init(num_cpus=1)`', ready, 0, ready_one, None, times['ready1'], '-'),
        ('Ray, `ray.init(num_cpus=2)`', ready, 0, ready_two, None, times['ready2'], f'{ready_one / ready_two:.2f}× 1 CPU'),
    ]


# The table.


def loadavg():
    return ', '.join(f'{x:.2f}' for x in os.getloadavg())


def table(rows, manifest, args, load_before, ceiling, crc):
    mb = manifest['payload'] / 1e6
    lines = [
        f'## Beam and Ray reading the same records (load average 1/5/15 min: {load_before} before, '
        f'{loadavg()} after; {os.cpu_count()} cores; at the start, a busy loop in 2 processes did '
        f'{ceiling:.2f}× the work of 1)',
        '',
        f'{manifest["records"]} records of {args.record_size} B, text-like ({mb:.0f} MB of payload); '
        f'Riegeli `{args.options}`: {manifest["riegeli_bytes"] / 1e6:.0f} MB in {args.files} files '
        f'(Ray: one file of {manifest["single_bytes"] / 1e6:.0f} MB); TFRecord uncompressed: '
        f'{manifest["tfrecord_bytes"] / 1e6:.0f} MB in {args.files} files (crc32c: {crc}); on /dev/shm. '
        f'Median of {args.rounds} rounds; MB/s of record payload.',
        '',
        '| engine | reader | files | seconds | CPU s | MB/s | records/s | rounds (s) | ratio |',
        '|---|---|---:|---:|---:|---:|---:|---|---|',
    ]
    for engine, reader, files, seconds, cpu, times, versus in rows:
        rounds = ' '.join(f'{t:.2f}' for t in times)
        cpu = '-' if cpu is None else f'{cpu:.2f}'
        lines.append(
            f'| {engine} | {reader} | {files} | {seconds:.2f} | {cpu} | {mb / seconds:.0f} | '
            f'{manifest["records"] / seconds:.0f} | {rounds} | {versus} |'
        )
    return '\n'.join(lines) + '\n'


def main():
    args = parse_args()
    if args.ray_child:
        ray_child(args.ray_child)
        return
    load_before = loadavg()
    path, manifest = dataset(args)
    ceiling = cpu_ceiling()
    rows = []
    crc = '-'
    if not args.no_beam:
        from apache_beam.io import tfrecordio

        tfrecordio._default_crc32c_fn(b'')
        fn = tfrecordio._default_crc32c_fn.fn
        crc = f'`{getattr(fn, "__module__", None) or type(fn).__module__}.{getattr(fn, "__name__", fn)}`'
        with tempfile.TemporaryDirectory() as tmp:
            rows += beam_rows(path, manifest, args, tmp)
    if not args.no_ray:
        rows += ray_rows(path, manifest, args)
    report = table(rows, manifest, args, load_before, ceiling, crc)
    print(report)
    out = pathlib.Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(report)


if __name__ == '__main__':
    main()
