"""The C++ rows of `cargo xtask bench limits`: Google's Riegeli writer and
ArrayRecord reader through the array-record 0.8.6 wheel (the oracle venv).

Usage:
  cxx_limits.py write RECORDS.delimited OUT CONFIG
      Writes the records with ArrayRecordWriter, CONFIG (Riegeli's option
      grammar) mapped onto ArrayRecord's with a group size that makes chunks of
      about 1 MiB (as `cargo xtask bench records` does). Times the write loop
      and close only: the input is read before the timer starts.
  cxx_limits.py read FILE INDICES
      Times reader.read(indices) on an open reader, INDICES being a file of
      comma-separated record indices.

Prints the seconds measured (time.perf_counter) as its last line.
"""

import sys
import time

from array_record.python import array_record_module

from cxx_records_bench import array_record_options, read_delimited


def write(records_path, out_path, config):
    records = read_delimited(records_path)
    options = array_record_options(config, sum(map(len, records)) / max(1, len(records)))
    start = time.perf_counter()
    writer = array_record_module.ArrayRecordWriter(out_path, options)
    for record in records:
        writer.write(record)
    writer.close()
    return time.perf_counter() - start


def read(path, indices_path):
    indices = [int(x) for x in open(indices_path).read().split(",")]
    reader = array_record_module.ArrayRecordReader(path)
    start = time.perf_counter()
    got = reader.read(indices)
    elapsed = time.perf_counter() - start
    assert len(got) == len(indices), "C++ read() lost records"
    reader.close()
    return elapsed


def main():
    mode, *args = sys.argv[1:]
    seconds = {"write": write, "read": read}[mode](*args)
    print(f"{seconds:.6f}")


if __name__ == "__main__":
    main()
