"""Records as Arrow columns (issue 31): ours (`to_arrow`) against ptars, from Python.

Run by `cargo xtask bench arrow [--records N] [--rounds R] [--columns a,b] [--rust-bench BIN]
[--out PATH]` in the oracle venv (ptars and protobuf installed, our package built in release).

The records: `--records` (default 1,000,000) serialized messages of `riegeli_bench.Row`, 20
fields (integers of every wire type, a double, a float, a bool, an enum, a string, a nested
message, a packed repeated int64), the type defined by a FileDescriptorProto built here (no
protoc), the values seeded. Our `RecordWriter` writes them with `transpose,zstd:3` and the type
in the file's metadata, once per record count (kept in `target/bench-arrow/`, never inside the
timing). Then, in this process, `--rounds` times (default 3), each case in turn, the median
reported:

- our plain reads of every record as bytes: `list(RecordReader.read_records())`, and
  `ArrayRecordReader(path, 'scan_fallback').read_all()` (a batch read decoding on a pool; it
  reads a plain Riegeli/records file by a scan), the faster of the two feeding ptars;
- ptars (`HandlerPool.get_for_message(Row).list_to_record_batch`) converting those records,
  alone and added to that read;
- (a) `RecordReader(path).to_arrow()`: every column;
- (b) `RecordReader(path).to_arrow(columns)`: `--columns` (default `id,name`: an int64 and the
  string);
- with `--rust-bench` (the `arrow_bench` binary), riegeli-arrow timed in Rust alone on the
  same file: a serial plain read, (a), (b), and the parse alone (a `ProtoDecoder` given the
  records in memory, as ptars is given them).

Ours and ptars' columns `id` and `name` (and the projected ones) are compared once, so a fast
conversion cannot be a wrong one. The peak memory of (a), (b) and ptars' read + convert is
measured in fresh processes (the peak resident set `VmHWM` after the call, its result held, reset
to the resident set before it and less that), beside
the projected columns' Arrow size plus the file's largest chunk (compressed and decoded): the
issue's bound for (b); and (b) of the first quarter of the records (`max_rows`), to show what
(b) holds besides its columns does not grow with them. With `--rust-bench`, the heap peak of
(b) in Rust too, as timed and with one chunk decoded at a time (`--arrow-parallelism 0`: each
decoding thread holds a chunk), and the one as timed against the columns plus a chunk for each
thread decoding at once. Records/s and MB/s (10^6 bytes of serialized records per second), and
the ratios against the issue's targets ((a) at least 1.5x ptars; (b) at least 5x ptars and
3x (a)). The markdown table goes to stdout and to `--out` (default
target/bench-arrow/table.md).
"""

import argparse
import json
import pathlib
import statistics
import subprocess
import sys
import time

import numpy as np
import ptars
import pyarrow as pa
from google.protobuf import descriptor_pb2, descriptor_pool, message_factory

import riegeli
from riegeli.array_record import ArrayRecordReader

ROOT = pathlib.Path(__file__).resolve().parents[3]
OPTIONS = 'transpose,zstd:3'
SEED = 31
# Bumped when the records generated change, so that a kept file is written again.
GENERATION = 1


def row_type():
    """The message class of `riegeli_bench.Row` (20 fields), from a FileDescriptorProto."""
    F = descriptor_pb2.FieldDescriptorProto
    file = descriptor_pb2.FileDescriptorProto(name='riegeli_bench/row.proto', package='riegeli_bench', syntax='proto3')
    kind = file.enum_type.add(name='Kind')
    for number, name in enumerate(['KIND_UNSPECIFIED', 'KIND_A', 'KIND_B', 'KIND_C']):
        kind.value.add(name=name, number=number)

    def add(message, name, number, type_, label=F.LABEL_OPTIONAL, type_name=None):
        field = message.field.add(name=name, number=number, type=type_, label=label)
        if type_name:
            field.type_name = type_name

    inner = file.message_type.add(name='Inner')
    add(inner, 'x', 1, F.TYPE_INT64)
    add(inner, 'label', 2, F.TYPE_STRING)
    add(inner, 'score', 3, F.TYPE_DOUBLE)
    row = file.message_type.add(name='Row')
    for number, (name, type_) in enumerate(
        [
            ('id', F.TYPE_INT64),
            ('user_id', F.TYPE_UINT64),
            ('count', F.TYPE_INT32),
            ('flags', F.TYPE_UINT32),
            ('delta', F.TYPE_SINT32),
            ('offset', F.TYPE_SINT64),
            ('code', F.TYPE_FIXED32),
            ('hash', F.TYPE_FIXED64),
            ('small', F.TYPE_SFIXED32),
            ('big', F.TYPE_SFIXED64),
            ('score', F.TYPE_DOUBLE),
            ('weight', F.TYPE_FLOAT),
            ('active', F.TYPE_BOOL),
            ('timestamp_ms', F.TYPE_INT64),
            ('ratio', F.TYPE_DOUBLE),
            ('rank', F.TYPE_INT32),
        ],
        start=1,
    ):
        add(row, name, number, type_)
    add(row, 'kind', 17, F.TYPE_ENUM, type_name='.riegeli_bench.Kind')
    add(row, 'name', 18, F.TYPE_STRING)
    add(row, 'inner', 19, F.TYPE_MESSAGE, type_name='.riegeli_bench.Inner')
    add(row, 'values', 20, F.TYPE_INT64, label=F.LABEL_REPEATED)
    pool = descriptor_pool.DescriptorPool()
    pool.Add(file)
    return message_factory.GetMessageClass(pool.FindMessageTypeByName('riegeli_bench.Row'))


def make_records(row, n):
    """`n` seeded serialized `Row`s (about 150 bytes each)."""
    rng = np.random.default_rng(SEED)
    words = [''.join(rng.choice(list('abcdefghijklmnopqrstuvwxyz'), size=k)) for k in rng.integers(3, 12, 5000)]
    names = [f'{words[a]} {words[b]}' for a, b in rng.integers(0, len(words), (20_000, 2)).tolist()]
    labels = words[:64]
    columns = {
        'user_id': rng.integers(0, 1 << 40, n),
        'count': rng.geometric(0.01, n),
        'flags': rng.integers(0, 1 << 16, n),
        'delta': rng.normal(0, 1000, n).astype(np.int64),
        'offset': rng.integers(-(1 << 40), 1 << 40, n),
        'code': rng.integers(0, 1 << 32, n),
        'hash': rng.integers(0, 1 << 63, n),
        'small': rng.integers(-(1 << 20), 1 << 20, n),
        'big': rng.integers(-(1 << 62), 1 << 62, n),
        'score': rng.random(n),
        'weight': rng.random(n).astype(np.float32),
        'active': rng.random(n) < 0.5,
        'timestamp_ms': 1_800_000_000_000 + np.arange(n) * 10 + rng.integers(0, 10, n),
        'ratio': rng.normal(1, 0.1, n),
        'rank': rng.integers(0, 100, n),
        'kind': rng.integers(0, 4, n),
    }
    columns = {name: values.tolist() for name, values in columns.items()}
    name_index = rng.integers(0, len(names), n).tolist()
    inner_x = rng.integers(0, 1 << 30, n).tolist()
    inner_label = rng.integers(0, len(labels), n).tolist()
    inner_score = rng.random(n).tolist()
    lengths = rng.integers(0, 9, n).tolist()
    values = rng.integers(0, 1 << 24, int(sum(lengths))).tolist()
    records = []
    start = 0
    keys = list(columns)
    for i in range(n):
        message = row(**{key: columns[key][i] for key in keys})
        message.id = i
        message.name = names[name_index[i]]
        inner = message.inner
        inner.x = inner_x[i]
        inner.label = labels[inner_label[i]]
        inner.score = inner_score[i]
        message.values.extend(values[start : start + lengths[i]])
        start += lengths[i]
        records.append(message.SerializeToString())
    return records


def ensure_file(work, row, n):
    """The file of `n` records (written once): (path, bytes of the records)."""
    path = work / f'rows-{n}.riegeli'
    stamp = work / f'rows-{n}.json'
    wanted = {'records': n, 'options': OPTIONS, 'seed': SEED, 'generation': GENERATION}
    if path.exists() and stamp.exists():
        kept = json.loads(stamp.read_text())
        if {key: kept.get(key) for key in wanted} == wanted:
            return path, kept['record_bytes']
    print(f'generating {n:,} records of {row.DESCRIPTOR.full_name}', file=sys.stderr)
    records = make_records(row, n)
    metadata = riegeli.RecordsMetadata()
    riegeli.set_record_type(metadata, row)
    with riegeli.RecordWriter(str(path), options=OPTIONS, metadata=metadata) as writer:
        writer.write_records(records)
    record_bytes = sum(len(record) for record in records)
    stamp.write_text(json.dumps({**wanted, 'record_bytes': record_bytes}))
    return path, record_bytes


def read_records(path):
    with riegeli.RecordReader(str(path)) as reader:
        return list(reader.read_records())


def read_all(path):
    reader = ArrayRecordReader(str(path), 'scan_fallback')
    try:
        return reader.read_all()
    finally:
        reader.close()


def to_arrow(path, columns=None, max_rows=None):
    with riegeli.RecordReader(str(path)) as reader:
        return reader.to_arrow(columns, max_rows=max_rows)


def handler_for(row):
    return ptars.HandlerPool([row.DESCRIPTOR.file]).get_for_message(row.DESCRIPTOR)


def timed(f):
    start = time.perf_counter()
    result = f()
    return time.perf_counter() - start, result


def status_bytes(key):
    """A line of /proc/self/status (`VmRSS:`, `VmHWM:`) in bytes."""
    with open('/proc/self/status') as status:
        for line in status:
            if line.startswith(key):
                return int(line.split()[1]) * 1024
    raise SystemExit(f'no {key} in /proc/self/status')


def memory_child(path, case, columns):
    """In a fresh process: the peak resident set during one call (its result held) above the
    resident set before it (Linux)."""
    row = row_type()
    handler = handler_for(row)
    case, _, rows = case.partition(':')
    calls = {
        'all': lambda: to_arrow(path),
        'projected': lambda: to_arrow(path, columns, int(rows) if rows else None),
        'ptars': lambda: handler.list_to_record_batch(read_all(path)),
    }
    # Not ru_maxrss: Linux keeps it across fork and exec, so a child starts with its parent's
    # peak. The peak of this process's own memory (VmHWM), reset to the resident set now.
    with open('/proc/self/clear_refs', 'w') as clear_refs:
        clear_refs.write('5')
    before, file_before = status_bytes('VmRSS:'), status_bytes('RssFile:')
    result = calls[case]()
    after, file_after = status_bytes('VmHWM:'), status_bytes('RssFile:')
    # File-backed pages the call added: the code (the extension's and the libraries') its first
    # run paged in, not data.
    print(json.dumps({'before': before, 'after': after, 'nbytes': result.nbytes, 'file_added': file_after - file_before}))


def peak_growth(path, case, columns):
    out = subprocess.run(
        [sys.executable, __file__, '--memory-child', str(path), case, '--columns', ','.join(columns)],
        check=True,
        capture_output=True,
        text=True,
    ).stdout
    got = json.loads(out.splitlines()[-1])
    return got['after'] - got['before'], got['nbytes'], max(got['file_added'], 0)


def same_columns(ours, theirs, names):
    """Fails unless each column `names` of the two tables holds the same values."""
    for name in names:
        a = ours.column(name).combine_chunks()
        b = theirs.column(name)
        if isinstance(b, pa.ChunkedArray):
            b = b.combine_chunks()
        if b.type != a.type:
            b = b.cast(a.type)
        if not a.equals(b):
            raise SystemExit(f'column {name!r}: ours and ptars differ ({a.type}, {b.type})')


def rust_rows(binary, path, columns, rounds):
    out = subprocess.run(
        [binary, str(path), '--columns', ','.join(columns), '--rounds', str(rounds)],
        check=True,
        capture_output=True,
        text=True,
    ).stdout
    rows = {}
    for line in out.splitlines():
        got = json.loads(line)
        rows[got['case']] = got
    def memory(*extra):
        return json.loads(
            subprocess.run(
                [binary, str(path), '--memory', '--chunk-batches', '--columns', ','.join(columns), *extra],
                check=True,
                capture_output=True,
                text=True,
            ).stdout.splitlines()[-1]
        )

    # As timed (the calling thread and the reader's decoding threads), and with the calling
    # thread alone decoding: one chunk being decoded at a time.
    return rows, {'default': memory(), 'serial': memory('--arrow-parallelism', '0')}


def mb(n):
    return f'{n / 1e6:,.1f}'


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('--records', type=int, default=1_000_000)
    parser.add_argument('--rounds', type=int, default=3)
    parser.add_argument('--columns', default='id,name')
    parser.add_argument('--rust-bench', help='the arrow_bench binary: Rust-only rows')
    parser.add_argument('--work', default=ROOT / 'target/bench-arrow')
    parser.add_argument('--out', default=ROOT / 'target/bench-arrow/table.md')
    parser.add_argument('--memory-child', nargs=2, metavar=('PATH', 'CASE'), help=argparse.SUPPRESS)
    args = parser.parse_args()
    columns = args.columns.split(',')
    if args.memory_child:
        memory_child(args.memory_child[0], args.memory_child[1], columns)
        return

    work = pathlib.Path(args.work)
    work.mkdir(parents=True, exist_ok=True)
    row = row_type()
    path, record_bytes = ensure_file(work, row, args.records)
    handler = handler_for(row)
    n = args.records

    cases = {
        'read_records': lambda: read_records(path),
        'read_all': lambda: read_all(path),
        'ptars': None,  # Converts the records of the faster read, timed apart.
        'all': lambda: to_arrow(path),
        'projected': lambda: to_arrow(path, columns),
    }
    times = {name: [] for name in cases}
    for round_ in range(args.rounds):
        print(f'round {round_ + 1}/{args.rounds}', file=sys.stderr)
        records = None
        for name, f in cases.items():
            if name == 'ptars':
                seconds, theirs = timed(lambda: handler.list_to_record_batch(records))
            else:
                seconds, result = timed(f)
            times[name].append(seconds)
            if name in ('read_records', 'read_all'):
                if len(result) != n:
                    raise SystemExit(f'{name}: {len(result)} records, not {n}')
                if name == 'read_all':
                    records = result
                del result
            elif name == 'ptars':
                if round_ == 0:
                    ptars_table = pa.Table.from_batches([theirs])
                del theirs
                records = None
            else:
                if result.num_rows != n:
                    raise SystemExit(f'{name}: {result.num_rows} rows, not {n}')
                if round_ == 0:
                    same_columns(result, ptars_table, ['id', 'name'] if name == 'all' else columns)
                del result
    del ptars_table
    median = {name: statistics.median(values) for name, values in times.items()}
    fastest_read = min(('read_records', 'read_all'), key=median.get)

    print('peak memory, in fresh processes', file=sys.stderr)
    quarter = f'projected:{args.records // 4}'
    memory = {case: peak_growth(path, case, columns) for case in ('projected', quarter, 'all', 'ptars')}
    rust, rust_memory = rust_rows(args.rust_bench, path, columns, args.rounds) if args.rust_bench else ({}, None)

    ptars_total = median[fastest_read] + median['ptars']

    def line(what, seconds, against=None):
        ratio = f'{against / seconds:.2f}x' if against else ''
        return f'| {what} | {seconds:.3f} | {n / seconds / 1e6:.2f} M | {record_bytes / seconds / 1e6:,.0f} | {ratio} |'

    cols = ', '.join(columns)
    file_size = path.stat().st_size
    out = [
        f'# Records as Arrow columns: {n:,} `riegeli_bench.Row` records (20 fields), `{OPTIONS}`',
        '',
        f'{mb(record_bytes)} MB of records ({record_bytes / n:.0f} B each), a file of {mb(file_size)} MB; '
        f'median of {args.rounds} rounds, every case in each round; records/s, and MB/s of serialized records.',
        '',
        '| read | seconds | records/s | MB/s | ptars (read + convert) / this |',
        '|---|---|---|---|---|',
        line('ours: plain read, `list(RecordReader.read_records())`', median['read_records']),
        line("ours: plain read, `ArrayRecordReader(path, 'scan_fallback').read_all()`", median['read_all']),
        line('ptars: `list_to_record_batch` of those records (convert only)', median['ptars']),
        line(f'ptars: fastest plain read (`{fastest_read}`) + convert', ptars_total, ptars_total),
        line('(a) ours: `to_arrow()`, 20 columns', median['all'], ptars_total),
        line(f'(b) ours: `to_arrow([{cols}])`, 2 columns', median['projected'], ptars_total),
    ]
    if rust:
        out += [
            line('Rust: plain read, `read_record_ref` (serial)', rust['plain']['seconds']),
            line('Rust: (a) `ArrowReader`, 20 columns', rust['all']['seconds'], ptars_total),
            line(f'Rust: (b) `ArrowReader`, [{cols}]', rust['projected']['seconds'], ptars_total),
            line('Rust: parse only, `ProtoDecoder` on the records in memory, 20 columns', rust['parse']['seconds']),
        ]
    if rust:
        out += [
            '',
            f"The parse alone: ptars' `list_to_record_batch` takes {median['ptars'] / rust['parse']['seconds']:.2f}x "
            "the time of our `ProtoDecoder` on the same records in memory (above 1: ours is faster).",
        ]
    a_ratio = ptars_total / median['all']
    b_ratio = ptars_total / median['projected']
    b_over_a = median['all'] / median['projected']

    def verdict(ok):
        return 'met' if ok else '**missed**'

    out += [
        '',
        '| target | measured | |',
        '|---|---|---|',
        f'| (a) at least 1.5x ptars | {a_ratio:.2f}x | {verdict(a_ratio >= 1.5)} |',
        f'| (b) at least 5x ptars converting everything | {b_ratio:.2f}x | {verdict(b_ratio >= 5)} |',
        f'| (b) at least 3x our own (a) | {b_over_a:.2f}x | {verdict(b_over_a >= 3)} |',
    ]
    if rust:
        chunks = rust['chunks']
        projected_bytes = memory['projected'][1]
        bound = projected_bytes + chunks['largest_data'] + chunks['largest_decoded']
        growth, _, code = memory['projected']
        data = growth - code
        out.append(
            f'| memory of (b): at most the projected columns + a chunk | {mb(growth)} MB, '
            f'{mb(data)} MB without the {mb(code)} MB of code paged in | '
            f'{verdict(data <= bound)} (code excluded), {verdict(growth <= bound)} (code included): columns '
            f'{mb(projected_bytes)} MB + largest chunk '
            f'{mb(chunks["largest_data"])} MB compressed, {mb(chunks["largest_decoded"])} MB decoded '
            f'= {mb(bound)} MB ({chunks["chunks"]} chunks) |'
        )
        def against(heap, limit):
            # The margin in kB: the peaks land within a few hundred kB of the bounds.
            side = 'under' if heap <= limit else 'over'
            return f'{verdict(heap <= limit)}: {abs(heap - limit) / 1e3:,.0f} kB {side} {mb(limit)} MB'

        # Against the Rust columns' own bytes (their buffers' capacities, as its heap holds
        # them), not pyarrow's count of the Python table's.
        chunk = chunks['largest_data'] + chunks['largest_decoded']
        for label, case in (('as timed', 'default'), ('one chunk decoded at a time', 'serial')):
            heap = rust_memory[case]['heap_peak']
            limit = rust_memory[case]['column_bytes'] + chunk
            out.append(f'| memory of (b), Rust heap peak, {label} | {mb(heap)} MB | {against(heap, limit)} |')
        # Each thread decoding at once holds its chunk and what it decompressed of it.
        threads = rust_memory['default']['decoding_threads']
        heap = rust_memory['default']['heap_peak']
        per_thread = rust_memory['default']['column_bytes'] + threads * chunk
        out.append(
            f'| memory of (b), Rust heap peak as timed, against the columns + a chunk per decoding thread '
            f'({threads}) | {mb(heap)} MB | {against(heap, per_thread)} |'
        )
    out += [
        '',
        'Peak memory: the peak resident set during the call (its result held) above the resident set before it, '
        'in a fresh process; of it, the file-backed pages the call added (the code its first run paged in). The '
        'Rust row adds the heap\'s own peak (the blocks `malloc` handed out, counted by `arrow_bench`: data '
        'alone, without code or what malloc keeps; with what C code allocates itself, such as zstd\'s decoding '
        'context, 96 KB, one per decoding thread).',
        '',
        '| call | peak growth MB | of which code MB | result MB (Arrow) |',
        '|---|---|---|---|',
    ]
    rows = [
        (f'(b) `to_arrow([{cols}])`', 'projected'),
        (f'(b) of the first quarter, `to_arrow([{cols}], max_rows={args.records // 4:,})`', quarter),
        ('(a) `to_arrow()`', 'all'),
        ('ptars: `read_all()` + `list_to_record_batch`', 'ptars'),
    ]
    for label, case in rows:
        growth, nbytes, code = memory[case]
        out.append(f'| {label} | {mb(growth)} | {mb(code)} | {mb(nbytes)} |')
    for label, case in (('', 'default'), (', one chunk decoded at a time', 'serial')):
        if not rust_memory:
            break
        got = rust_memory[case]
        out.append(
            f'| Rust: (b) `ArrowReader`, [{cols}], a batch per chunk{label} | '
            f'{mb(got["peak_after"] - got["rss_before"])} '
            f'(heap peak {mb(got["heap_peak"])}) | {mb(got["file_pages_added"])} '
            f'| {mb(got["column_bytes"])} |'
        )
    overhead = [memory[case][0] - memory[case][1] for case in ('projected', quarter)]
    out += [
        '',
        f'What (b) holds besides its columns (peak growth less the result): {mb(overhead[0])} MB for all the '
        f'records, {mb(overhead[1])} MB for a quarter of them (the code first run, the read-ahead\'s chunks and '
        'buffers, the batch being joined): a constant, not a share of the columns.',
    ]
    text = '\n'.join(out) + '\n'
    print(text)
    out_path = pathlib.Path(args.out)
    out_path.parent.mkdir(parents=True, exist_ok=True)
    out_path.write_text(text)
    print(f'table written to {out_path}', file=sys.stderr)


if __name__ == '__main__':
    main()
