"""Ours (`riegeli.array_record`, Rust) against Google's `array_record` (C++), from Python.

Run by `cargo xtask bench python [--records N] [--record-size B] [--options STR] [--rounds R]`
in the oracle venv (array-record 0.8.6 and grain 0.2.18 installed, our package built in
release). The C++ writer writes the files (text-like records from a seeded vocabulary) into a
temp dir; both libraries then read the same files, alternately, `--rounds` times, and the
median of each is reported. Workloads:

1. `reader.read_all()`;
2. `reader.read(indices)` of 10,000 seeded random indices;
3. a loop of `reader.read()` over the whole file (a fresh reader each round); C++ on a prefix
   when one round of it over the whole file would take more than a few seconds;
4. a loop of `data_source[i]` over 10,000 random indices (`ArrayRecordDataSource`), and over the
   first 10,000 in order (a fresh data source each round);
5. a Grain pipeline (DataLoader, shuffled IndexSampler, Batch(256), worker_count=0) over a
   data source of the file, on a prefix of the records;
6. two threads each `read_all()` of its own file against one thread reading one file, with
   default reader options (read_all already decodes on a thread pool in both libraries) and
   with `max_parallelism:0` (one decoding thread per reader).

Both libraries' records are compared once (first round) for each workload. The markdown table
goes to stdout and to target/bench-python/table.md.
"""

import argparse
import logging
import os
import pathlib
import random
import shutil
import statistics
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor

logging.disable(logging.CRITICAL)  # C++'s data source logs an error for group_size != 1.

import grain  # noqa: E402
from array_record.python import array_record_data_source as cpp_ds  # noqa: E402
from array_record.python import array_record_module as cpp_m  # noqa: E402
from riegeli.array_record import array_record_data_source as ours_ds  # noqa: E402
from riegeli.array_record import array_record_module as ours_m  # noqa: E402

LIBS = {'C++': (cpp_m, cpp_ds), 'ours': (ours_m, ours_ds)}
NUM_INDICES = 10_000
CPP_LOOP_BUDGET_S = 3.0  # Longer per round than this: C++'s read() loop runs on a prefix.
GRAIN_RECORDS = 10_000


def write_file(path, records, options):
    writer = cpp_m.ArrayRecordWriter(str(path), options)
    for record in records:
        writer.write(record)
    writer.close()


def make_records(n, size, seed=0):
    rng = random.Random(seed)
    vocab = [''.join(rng.choices('abcdefghijklmnopqrstuvwxyz', k=rng.randint(2, 10))) for _ in range(5000)]
    records = []
    for _ in range(n):
        text = ' '.join(rng.choices(vocab, k=size // 5 + 8)).encode()
        records.append(text[:size])
    return records


def read_all_len(reader):
    return len(reader.read_all())


def timed(f):
    start = time.perf_counter()
    result = f()
    return time.perf_counter() - start, result


class Bench:
    def __init__(self, rounds):
        self.rounds, self.rows = rounds, []

    def row(self, label, target, run):
        """`run(lib_name, module, ds_module, first)` -> (seconds, records, result for checking)."""
        secs = {name: [] for name in LIBS}
        counts = {}
        for rnd in range(self.rounds):
            results = {}
            for name, (m, ds) in LIBS.items():
                seconds, count, result = run(name, m, ds, rnd == 0)
                secs[name].append(seconds)
                counts[name] = count
                results[name] = result
            if rnd == 0:
                c, o = results['C++'], results['ours']
                n = min(len(c), len(o))
                assert c[:n] == o[:n], f'{label}: the libraries return different records'
        med = {name: statistics.median(s) for name, s in secs.items()}
        rate = {name: counts[name] / med[name] for name in LIBS}
        speedup = rate['ours'] / rate['C++']
        self.rows.append((label, med, rate, speedup, target))
        print(f'  {label}: C++ {rate["C++"]:,.0f} rec/s, ours {rate["ours"]:,.0f} rec/s, {speedup:.2f}x',
              file=sys.stderr, flush=True)

    def table(self):
        lines = [
            '| workload | C++ time | C++ rec/s | ours time | ours rec/s | ours/C++ | target | verdict |',
            '|---|---:|---:|---:|---:|---:|---:|---|',
        ]
        for label, med, rate, speedup, target in self.rows:
            verdict = '-' if target is None else ('meets' if speedup >= target else 'misses')
            tgt = '-' if target is None else f'≥{target:.1f}×'
            lines.append(
                f'| {label} | {med["C++"] * 1e3:.1f} ms | {rate["C++"]:,.0f} | {med["ours"] * 1e3:.1f} ms '
                f'| {rate["ours"]:,.0f} | {speedup:.2f}× | {tgt} | {verdict} |'
            )
        return lines


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('--records', type=int, default=100_000)
    parser.add_argument('--record-size', type=int, default=1024)
    parser.add_argument('--options', default='group_size:100,zstd:3')
    parser.add_argument('--rounds', type=int, default=5)
    parser.add_argument('--out', default=pathlib.Path(__file__).resolve().parents[3] / 'target/bench-python/table.md')
    args = parser.parse_args()

    tmp = tempfile.mkdtemp(prefix='riegeli-bench-python-', dir='/dev/shm' if os.path.isdir('/dev/shm') else None)
    try:
        print(f'writing {args.records} records of {args.record_size} B ({args.options}) in {tmp}',
              file=sys.stderr, flush=True)
        records = make_records(args.records, args.record_size)
        paths = [os.path.join(tmp, 'a.array_record'), os.path.join(tmp, 'b.array_record')]
        write_file(paths[0], records, args.options)
        shutil.copyfile(paths[0], paths[1])
        lines = run_all(args, paths, records)
        lines.insert(0, f'{args.records} records of {args.record_size} B, `{args.options}`, '
                        f'{os.path.getsize(paths[0]):,} bytes on disk; median of {args.rounds} rounds, '
                        f'C++ and ours alternating; {os.cpu_count()} CPUs. C++ = array-record 0.8.6.\n')
    finally:
        shutil.rmtree(tmp)
    text = '\n'.join(lines) + '\n'
    print(text)
    out = pathlib.Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(text)
    print(f'table written to {out}', file=sys.stderr)


def run_all(args, paths, records):
    n = len(records)
    path = paths[0]
    bench = Bench(args.rounds)
    indices = random.Random(1).choices(range(n), k=NUM_INDICES)
    readers = {name: m.ArrayRecordReader(path) for name, (m, _) in LIBS.items()}

    def read_all(name, m, ds, first):
        secs, got = timed(readers[name].read_all)
        if first:
            assert got == records
        return secs, len(got), got[:1000]

    bench.row('read_all()', 1.0, read_all)

    def read_indices(name, m, ds, first):
        secs, got = timed(lambda: readers[name].read(indices))
        return secs, len(got), got

    bench.row(f'read(indices), {NUM_INDICES:,} random', 1.0, read_indices)

    # C++'s read() loop: on a prefix if the whole file would take too long.
    probe = min(n, 20_000)
    reader = cpp_m.ArrayRecordReader(path)
    secs, _ = timed(lambda: [reader.read() for _ in range(probe)])
    cpp_loop = n if secs * n / probe <= CPP_LOOP_BUDGET_S else probe

    def read_loop(name, m, ds, first):
        # The timed loop keeps no records (as a consuming loop would); the check reads again.
        count = cpp_loop if name == 'C++' else n
        read = m.ArrayRecordReader(path).read
        secs, _ = timed(lambda: [read() and None for _ in range(count)])
        got = []
        if first:
            read = m.ArrayRecordReader(path).read
            got = [read() for _ in range(count)]
        return secs, count, got

    label = 'loop of read(), whole file' if cpp_loop == n else f'loop of read() (C++ on first {cpp_loop:,})'
    bench.row(label, 1.5, read_loop)

    sources = {name: ds.ArrayRecordDataSource(path) for name, (_, ds) in LIBS.items()}

    def getitem_loop(name, m, ds, first):
        source = sources[name]
        secs, got = timed(lambda: [source[i] for i in indices])
        return secs, len(got), got

    bench.row(f'loop of data_source[i], {NUM_INDICES:,} random', 1.5, getitem_loop)

    in_order = range(min(n, NUM_INDICES))

    def getitem_in_order(name, m, ds, first):
        source = ds.ArrayRecordDataSource(path)
        secs, got = timed(lambda: [source[i] for i in in_order])
        return secs, len(got), got

    bench.row(f'loop of data_source[i], first {len(in_order):,} in order', None, getitem_in_order)

    grain_n = min(n, GRAIN_RECORDS)

    def grain_pipeline(name, m, ds, first):
        sampler = grain.samplers.IndexSampler(
            num_records=grain_n, shuffle=True, seed=0, num_epochs=1, shard_options=grain.sharding.NoSharding()
        )
        loader = grain.DataLoader(data_source=sources[name], sampler=sampler,
                                  operations=[grain.transforms.Batch(batch_size=256)], worker_count=0)
        secs, got = timed(lambda: [r for batch in loader for r in batch.tolist()])
        return secs, len(got), got

    bench.row(f'Grain DataLoader, Batch(256), {grain_n:,} shuffled', None, grain_pipeline)

    # Two threads, each read_all() of its own file, against one thread reading one file; both
    # on the same two pool threads (fresh threads would also time a fresh malloc arena).
    lines = bench.table()
    pool = ThreadPoolExecutor(2)
    for opts in ['', 'max_parallelism:0']:
        one, two = {name: [] for name in LIBS}, {name: [] for name in LIBS}
        for _ in range(args.rounds):
            for name, (m, _) in LIBS.items():
                rs = [m.ArrayRecordReader(p, opts) for p in paths]
                one[name].append(timed(lambda: pool.submit(read_all_len, rs[0]).result())[0])
                two[name].append(timed(lambda: list(pool.map(read_all_len, rs)))[0])
        cells = {}
        for name in LIBS:
            t1, t2 = statistics.median(one[name]), statistics.median(two[name])
            cells[name] = (t1, t2, 2 * n / t2, 2 * t1 / t2)
        (c1, c2, c_rate, c_ratio), (o1, o2, o_rate, o_ratio) = cells['C++'], cells['ours']
        lines.append(
            f'| 2 threads × read_all() of own file vs 1 thread, options `{opts or "(default)"}`; '
            f'rec/s of 2 threads (2-vs-1 ratio) | {c1 * 1e3:.1f} → {c2 * 1e3:.1f} ms | {c_rate:,.0f} ({c_ratio:.2f}×) '
            f'| {o1 * 1e3:.1f} → {o2 * 1e3:.1f} ms | {o_rate:,.0f} ({o_ratio:.2f}×) | {o_rate / c_rate:.2f}× '
            f'| ours 2-vs-1 ≥1.7× | {"meets" if o_ratio >= 1.7 else "misses"} |'
        )
    pool.shutdown()
    return lines


if __name__ == '__main__':
    main()
