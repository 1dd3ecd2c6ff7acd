//! riegeli-rs against riegeli 0.2.1 serially, in memory, on the workloads where an
//! independent harness found riegeli 0.2.1 ahead (issue 17, item 0): 100 B uncompressed
//! records read from memory, and zstd:3 writes of 1 KiB text records to memory. Both
//! crates get the same records, C++'s defaults besides compression and a 1 MiB chunk size,
//! and no second thread (riegeli-rs: `parallelism` 0).
//!
//! `cd xtask/bench/peers && cargo bench --bench serial -- --warm-up-time 1 --measurement-time 3`

use std::io::Cursor;

use criterion::{BenchmarkId, Criterion, Throughput};
use rand::{Rng, SeedableRng, rngs::SmallRng};

const CHUNK: u64 = 1 << 20;

/// `n` records of `size` bytes of text-like data (words from a seeded vocabulary).
fn records(n: usize, size: usize) -> Vec<Vec<u8>> {
    let mut rng = SmallRng::seed_from_u64(17);
    let vocab: Vec<String> =
        (0..2000).map(|_| (0..rng.gen_range(2..10)).map(|_| rng.gen_range(b'a'..=b'z') as char).collect()).collect();
    (0..n)
        .map(|_| {
            let mut record = Vec::with_capacity(size + 12);
            while record.len() < size {
                record.extend_from_slice(vocab[rng.gen_range(0..vocab.len())].as_bytes());
                record.push(b' ');
            }
            record.truncate(size);
            record
        })
        .collect()
}

fn ours_options(compression: &str) -> riegeli_records::RecordWriterOptions {
    format!("{compression},chunk_size:{CHUNK},parallelism:0").parse().expect("options")
}

fn rr_options(compression: riegeli::CompressionType, level: Option<i32>) -> riegeli::WriterOptions {
    let options = riegeli::WriterOptions::new().compression(compression).chunk_size(CHUNK);
    match level {
        Some(level) => options.compression_level(level),
        None => options,
    }
}

fn reads(c: &mut Criterion) {
    let records = records(1_000_000, 100);
    let mut writer = riegeli_records::RecordWriter::new(Vec::new(), ours_options("uncompressed")).expect("writer");
    for record in &records {
        writer.write_record(record).expect("write");
    }
    let file = writer.close().expect("close");
    let mut group = c.benchmark_group("read 100 B uncompressed from memory");
    group.throughput(Throughput::Elements(records.len() as u64));
    group.sample_size(10);
    let serial = riegeli_records::RecordReaderOptions { parallelism: 0, ..Default::default() };
    group.bench_function(BenchmarkId::new("riegeli-rs", "read_record"), |b| {
        b.iter(|| {
            let mut reader = riegeli_records::RecordReader::with_options(Cursor::new(&file[..]), serial.clone());
            let mut n = 0usize;
            while let Some(record) = reader.read_record().expect("read") {
                n += record.len();
            }
            assert_eq!(n, 100 * records.len());
        });
    });
    group.bench_function(BenchmarkId::new("riegeli-rs", "read_record_ref"), |b| {
        b.iter(|| {
            let mut reader = riegeli_records::RecordReader::with_options(Cursor::new(&file[..]), serial.clone());
            let mut n = 0usize;
            while let Some(record) = reader.read_record_ref().expect("read") {
                n += record.len();
            }
            assert_eq!(n, 100 * records.len());
        });
    });
    group.bench_function(BenchmarkId::new("riegeli 0.2.1", "read_record"), |b| {
        b.iter(|| {
            let mut reader =
                riegeli::RecordReader::new(Cursor::new(&file[..]), riegeli::ReaderOptions::new()).expect("reader");
            let mut n = 0usize;
            while let Some(record) = reader.read_record().expect("read") {
                n += record.len();
            }
            assert_eq!(n, 100 * records.len());
        });
    });
    group.finish();
}

fn writes(c: &mut Criterion) {
    let records = records(50_000, 1024);
    let mut group = c.benchmark_group("write 1 KiB text to memory");
    group.throughput(Throughput::Bytes(records.iter().map(|r| r.len() as u64).sum()));
    group.sample_size(10);
    for (name, rr_compression, level) in
        [("uncompressed", riegeli::CompressionType::None, None), ("zstd:3", riegeli::CompressionType::Zstd, Some(3))]
    {
        group.bench_function(BenchmarkId::new("riegeli-rs", name), |b| {
            b.iter(|| {
                let mut writer = riegeli_records::RecordWriter::new(Vec::new(), ours_options(name)).expect("writer");
                for record in &records {
                    writer.write_record(record).expect("write");
                }
                writer.close().expect("close").len()
            });
        });
        group.bench_function(BenchmarkId::new("riegeli 0.2.1", name), |b| {
            b.iter(|| {
                let mut writer =
                    riegeli::RecordWriter::new(Vec::new(), rr_options(rr_compression, level)).expect("writer");
                for record in &records {
                    writer.write_record(record).expect("write");
                }
                writer.close().expect("close")
            });
        });
    }
    group.finish();
}

// A plain `main` rather than `criterion_group!`, whose generated function has no docs.
fn main() {
    let mut c = Criterion::default().configure_from_args();
    reads(&mut c);
    writes(&mut c);
    c.final_summary();
}
