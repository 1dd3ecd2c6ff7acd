//! ArrayRecord reads: a batch of 10,000 random indices (serial and on every
//! core) and reading every record in order, on one generated file.
//!
//! File: 200,000 text-like records of 20 to 300 bytes (seeded), `group_size:100,zstd:3`.
//! Throughput is in records.
#![allow(missing_docs, reason = "criterion's macros generate undocumented public functions")]

use std::io::Cursor;

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use rand::{Rng, SeedableRng, rngs::StdRng};
use riegeli_records::{ArrayRecordReader, ArrayRecordReaderOptions, ArrayRecordWriter, Selection};

const NUM_RECORDS: u64 = 200_000;
const BATCH: usize = 10_000;

fn file() -> Vec<u8> {
    let mut rng = StdRng::seed_from_u64(1);
    let mut writer = ArrayRecordWriter::new(Vec::new(), "group_size:100,zstd:3".parse().unwrap()).unwrap();
    for i in 0..NUM_RECORDS {
        let len = rng.gen_range(20..300);
        let record: Vec<u8> = (0..len).map(|j| b"abcdefgh ijklmnop"[(j * 7 + i as usize) % 17]).collect();
        writer.write_record(&record).unwrap();
    }
    writer.close().unwrap()
}

fn bench(c: &mut Criterion) {
    let file = file();
    let mut rng = StdRng::seed_from_u64(2);
    let indices: Vec<u64> = (0..BATCH).map(|_| rng.gen_range(0..NUM_RECORDS)).collect();
    let mut group = c.benchmark_group("array_record");
    group.sample_size(10);
    group.throughput(Throughput::Elements(BATCH as u64));
    let open = |parallelism| {
        // `parallelism` threads, the calling one included.
        let options = ArrayRecordReaderOptions { parallelism: parallelism - 1, ..Default::default() };
        ArrayRecordReader::with_options(Cursor::new(&file[..]), options).unwrap()
    };
    let mut serial = open(1);
    group.bench_function("random_10k/serial", |b| b.iter(|| serial.read_batch(&indices).unwrap()));
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    let mut parallel = open(cores);
    group.bench_function("random_10k/parallel", |b| b.iter(|| parallel.read_batch(&indices).unwrap()));
    group.throughput(Throughput::Elements(NUM_RECORDS));
    group.bench_function("read_all/serial", |b| b.iter(|| serial.read_batch(Selection::All).unwrap()));
    group.bench_function("read_all/parallel", |b| b.iter(|| parallel.read_batch(Selection::All).unwrap()));
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
