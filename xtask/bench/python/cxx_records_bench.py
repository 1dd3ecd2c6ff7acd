"""The C++ column of `cargo xtask bench records`: Google's Riegeli writer and
reader, through the array-record 0.8.6 wheel (the oracle venv).

Usage: cxx_records_bench.py RECORDS.delimited REPEAT JSON_OUT WORKDIR CONFIG...

For each Riegeli option set (the C++ RecordWriter grammar) it writes the records
with ArrayRecordWriter, mapping the options onto ArrayRecord's grammar with a
group size chosen so that chunks hold about as many decoded bytes as the
RecordWriter's chunk_size would give (4 KiB uncompressed, 1 MiB otherwise;
C++ closes a chunk when records plus 8 bytes each reach chunk_size), and
reads them back twice: with read_all() on the reader's default thread pool,
and sequentially (max_parallelism:0, one record at a time via read()). Times
are best of REPEAT, real and process CPU seconds. The Python writer has no
thread pool, so `parallelism:N` has no C++ counterpart here: it is dropped.
"""

import json
import os
import sys
import time

from array_record.python import array_record_module


def read_delimited(path):
    data = open(path, "rb").read()
    records, pos = [], 0
    while pos < len(data):
        length, shift = 0, 0
        while True:
            byte = data[pos]
            pos += 1
            length |= (byte & 0x7F) << shift
            shift += 7
            if byte < 0x80:
                break
        records.append(data[pos : pos + length])
        pos += length
    return records


def array_record_options(config, avg_size):
    compression, transpose = "brotli:6", False
    for token in filter(None, config.split(",")):
        name = token.split(":", 1)[0]
        if name in ("uncompressed", "brotli", "zstd", "snappy"):
            compression = "snappy" if name == "snappy" else token
        elif name == "transpose":
            transpose = token != "transpose:false"
        elif name == "parallelism":
            pass
        else:
            raise ValueError(f"no ArrayRecord counterpart for {token!r}")
    chunk_size = 4 << 10 if compression == "uncompressed" else 1 << 20
    group_size = max(1, round(chunk_size / (avg_size + 8)))
    options = f"group_size:{group_size},{compression}"
    if transpose:
        options += ",transpose"
    return options


def main():
    records_path, repeat, json_out, workdir, *configs = sys.argv[1:]
    repeat = int(repeat)
    records = read_delimited(records_path)
    payload = sum(map(len, records))
    avg = payload / max(1, len(records))
    path = os.path.join(workdir, "cxx_bench.array_record")
    results = []
    for config in configs:
        options = array_record_options(config, avg)
        best = {}

        def keep(key, value):
            best[key] = min(best.get(key, value), value)

        for _ in range(max(1, repeat)):
            c0, t0 = time.process_time(), time.perf_counter()
            writer = array_record_module.ArrayRecordWriter(path, options)
            for record in records:
                writer.write(record)
            writer.close()
            keep("write_real_s", time.perf_counter() - t0)
            keep("write_cpu_s", time.process_time() - c0)

            c0, t0 = time.process_time(), time.perf_counter()
            reader = array_record_module.ArrayRecordReader(path)
            got = reader.read_all()
            reader.close()
            keep("read_real_s", time.perf_counter() - t0)
            keep("read_cpu_s", time.process_time() - c0)
            assert sum(map(len, got)) == payload, "C++ read_all lost bytes"
            del got

            c0, t0 = time.process_time(), time.perf_counter()
            reader = array_record_module.ArrayRecordReader(path, "readahead_buffer_size:16M,max_parallelism:0")
            size = 0
            for _ in range(reader.num_records()):
                size += len(reader.read())
            reader.close()
            keep("seq_read_real_s", time.perf_counter() - t0)
            keep("seq_read_cpu_s", time.process_time() - c0)
            assert size == payload, "C++ sequential read lost bytes"
        entry = {
            "config": config,
            "array_record_options": options,
            "records": len(records),
            "payload_bytes": payload,
            "file_bytes": os.path.getsize(path),
        }
        entry.update(best)
        results.append(entry)
        print(
            f"C++ {config:<36} write {payload / 1e6 / best['write_real_s']:7.0f} MB/s"
            f"  read_all {payload / 1e6 / best['read_real_s']:7.0f} MB/s"
            f"  read() {payload / 1e6 / best['seq_read_real_s']:7.0f} MB/s  ({options})",
            file=sys.stderr,
        )
    os.remove(path)
    with open(json_out, "w") as out:
        json.dump(results, out, indent=1)


if __name__ == "__main__":
    main()
