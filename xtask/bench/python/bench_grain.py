"""Grain over ArrayRecord files: array_record's data source (C++), ours, our native read-ahead.

Run by `cargo xtask bench grain [--shards N] [--records-per-shard N] [--record-size B]
[--options STR] [--batch N] [--rounds R] [--workers W] [--out PATH]` in the oracle venv
(array-record 0.8.6 and grain installed, our package built in release). The C++ writer writes
the shards (text-like records from a seeded vocabulary; default 4 shards of 250,000 records of
about 1 KiB, `group_size:1,zstd:3`) into a temp dir; then one shuffled epoch (seed 0) batched
by `--batch` is read, records/s, in each of:

(a) `MapDataset.source(array_record's ArrayRecordDataSource).shuffle(0)`, Grain's iterator;
(b) the same over our `ArrayRecordDataSource`;
(c) our `riegeli.grain.ArrayRecordIterDataset` over `MapDataset.range(n).shuffle(0)`;
(d) `MapDataset.source(list of the records).shuffle(0)` (Grain's own floor: no I/O at all);

in process, and with `mp_prefetch` over `--workers` worker processes (the mechanism under
Grain's `DataLoader(worker_count=W)`). Every pipeline is run `--rounds` times, the four
alternately, and the median is reported; the first round's batches are compared with (d)'s
(same records in the same order), so a fast pipeline cannot be a wrong one.

Then the index memory of one open reader, bytes per record, ours and C++'s, for
`group_size:1` and `group_size:100` (1,000,000 records of 16 bytes, uncompressed): the growth
of a fresh process's resident set over 10 readers opened on the same file, divided by 10 and by
the record count (glibc's `malloc_trim` before each reading, so that memory freed after
reading the footer is not counted as held).

The markdown table goes to stdout and to `--out` (default target/bench-grain/table.md).
"""

import argparse
import logging
import os
import pathlib
import random
import statistics
import subprocess
import sys
import tempfile
import time

logging.disable(logging.CRITICAL)  # C++'s data source logs an error for group_size != 1.

import grain  # noqa: E402
from array_record.python import array_record_data_source as cpp_ds  # noqa: E402
from array_record.python import array_record_module as cpp_m  # noqa: E402
from riegeli.array_record import array_record_data_source as ours_ds  # noqa: E402
from riegeli import grain as ours_grain  # noqa: E402


def make_records(n, size, seed):
    rng = random.Random(seed)
    vocab = [''.join(rng.choices('abcdefghijklmnopqrstuvwxyz', k=rng.randint(2, 10))) for _ in range(5000)]
    records = []
    for _ in range(n):
        words = []
        length = 0
        while length < size:
            word = rng.choice(vocab)
            words.append(word)
            length += len(word) + 1
        records.append(' '.join(words)[:size].encode())
    return records


def write_file(path, records, options):
    writer = cpp_m.ArrayRecordWriter(str(path), options)
    for record in records:
        writer.write(record)
    writer.close()


def epoch(dataset):
    """Iterates `dataset` once: (records, seconds, batches)."""
    start = time.perf_counter()
    batches = []
    count = 0
    for batch in dataset:
        count += len(batch)
        batches.append(batch)
    return count, time.perf_counter() - start, batches


def pipelines(paths, records, batch, workers):
    """name -> a function making a fresh dataset of one shuffled epoch."""
    n = len(records)

    def mp(ds):
        if workers <= 0:
            return ds
        return ds.mp_prefetch(grain.MultiprocessingOptions(num_workers=workers))

    def over(source):
        return lambda: mp(grain.MapDataset.source(source).shuffle(seed=0).to_iter_dataset().batch(batch))

    return {
        '(a) array_record source': over(cpp_ds.ArrayRecordDataSource(paths)),
        '(b) our source': over(ours_ds.ArrayRecordDataSource(paths)),
        '(c) our native read-ahead': lambda: mp(
            ours_grain.ArrayRecordIterDataset(
                ours_ds.ArrayRecordDataSource(paths), grain.MapDataset.range(n).shuffle(seed=0), batch_size=batch
            )
        ),
        '(d) in-memory list': over(records),
    }


def run_pipelines(paths, records, args, workers):
    makers = pipelines(paths, records, args.batch, workers)
    times = {name: [] for name in makers}
    expected = None
    for round_ in range(args.rounds):
        for name, make in makers.items():
            count, seconds, batches = epoch(make())
            if count != len(records):
                sys.exit(f'{name}: {count} records, not {len(records)}')
            if round_ == 0:
                flat = [bytes(r) for b in batches for r in b]
                if expected is None:
                    expected = flat
                elif flat != expected:
                    sys.exit(f'{name}: other records or another order than the first pipeline')
            del batches
            times[name].append(seconds)
            print(f'  {name}, {workers} workers, round {round_ + 1}: {count / seconds:,.0f} records/s', file=sys.stderr)
    return {name: len(records) / statistics.median(t) for name, t in times.items()}


# Run in a fresh process per measurement, so that memory freed by earlier work (writing the
# file, other readers) is not what the readers reuse.
MEMORY_CHILD = r"""
import ctypes, os, sys
lib, path, readers = sys.argv[1], sys.argv[2], int(sys.argv[3])
if lib == 'ours':
    from riegeli.array_record import array_record_module as m
else:
    from array_record.python import array_record_module as m
trim = ctypes.CDLL('libc.so.6').malloc_trim
def rss():
    trim(0)  # what was freed (the footer's decoding) is not counted as held
    with open('/proc/self/statm') as f:
        return int(f.read().split()[1]) * os.sysconf('SC_PAGE_SIZE')
m.ArrayRecordReader(path).close()  # libraries loaded, allocator warmed
before = rss()
held = [m.ArrayRecordReader(path) for _ in range(readers)]
assert all(r.ok() for r in held)
print(rss() - before)
"""


def index_bytes_per_record(lib, path, num_records, readers=10):
    """The growth of a fresh process's resident set over `readers` readers of `path`, per
    reader and per record."""
    out = subprocess.run(
        [sys.executable, '-c', MEMORY_CHILD, lib, str(path), str(readers)], check=True, capture_output=True, text=True
    ).stdout
    return int(out.split()[-1]) / readers / num_records


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument('--shards', type=int, default=4)
    parser.add_argument('--records-per-shard', type=int, default=250_000)
    parser.add_argument('--record-size', type=int, default=1024)
    parser.add_argument('--options', default='group_size:1,zstd:3')
    parser.add_argument('--batch', type=int, default=256)
    parser.add_argument('--rounds', type=int, default=3)
    parser.add_argument('--workers', type=int, default=2)
    parser.add_argument('--out', default='target/bench-grain/table.md')
    args = parser.parse_args()

    with tempfile.TemporaryDirectory(prefix='riegeli-bench-grain-', dir='/dev/shm') as tmp:
        tmp = pathlib.Path(tmp)
        records = make_records(args.shards * args.records_per_shard, args.record_size, seed=1)
        paths = []
        for s in range(args.shards):
            path = tmp / f'shard-{s:05d}.array_record'
            write_file(path, records[s * args.records_per_shard : (s + 1) * args.records_per_shard], args.options)
            paths.append(str(path))
        rows = {}
        for workers in (0, args.workers):
            for name, rate in run_pipelines(paths, records, args, workers).items():
                rows.setdefault(name, {})[workers] = rate

        small = make_records(1_000_000, 16, seed=2)
        memory = {}
        for group in (1, 100):
            path = tmp / f'index-{group}.array_record'
            write_file(path, small, f'group_size:{group},uncompressed')
            memory[group] = (
                index_bytes_per_record('ours', path, len(small)),
                index_bytes_per_record('cpp', path, len(small)),
            )

    n = args.shards * args.records_per_shard
    lines = [
        f'{args.shards} shards x {args.records_per_shard:,} records of ~{args.record_size} B, `{args.options}`; '
        f'one shuffled epoch batched by {args.batch}, median of {args.rounds} rounds; records/s',
        '',
        f'| pipeline | in process | {args.workers} workers (mp_prefetch) |',
        '|---|---:|---:|',
    ]
    for name, rates in rows.items():
        lines.append(f'| {name} | {rates[0]:,.0f} | {rates[args.workers]:,.0f} |')
    a, c, d = (rows[k] for k in ('(a) array_record source', '(c) our native read-ahead', '(d) in-memory list'))
    lines += [
        '',
        f'(c)/(a): {c[0] / a[0]:.1f}x in process, {c[args.workers] / a[args.workers]:.1f}x with workers; '
        f'(c)/(d): {c[0] / d[0]:.2f}x in process, {c[args.workers] / d[args.workers]:.2f}x with workers '
        f'({n:,} records)',
        '',
        '| index memory, bytes per record (1,000,000 records) | ours | C++ |',
        '|---|---:|---:|',
    ]
    for group, (ours, cpp) in memory.items():
        lines.append(f'| group_size:{group} | {ours:.2f} | {cpp:.2f} |')
    table = '\n'.join(lines)
    print(table)
    out = pathlib.Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(table + '\n')


if __name__ == '__main__':
    main()
