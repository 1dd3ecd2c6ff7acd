//! Per option set: `RecordWriter` writing the records serially (into
//! `io::sink`, so only the writer is timed), and `RecordReader` reading the
//! file back, serially and with parallel chunk decoding
//! (`RecordReaderOptions::parallelism`).
//!
//! Records: about 50 MB (`RIEGELI_BENCH_MB` to change) of ~1 KiB English-like
//! text (seeded); files are read from memory. Throughput is in record bytes.
//! `cargo bench -p riegeli-records --bench records -- write/` runs the writes only.
#![allow(missing_docs, reason = "criterion's macros generate undocumented public functions")]

use std::io::Cursor;
use std::time::Duration;

use criterion::measurement::WallTime;
use criterion::{BenchmarkGroup, Criterion, Throughput, criterion_group, criterion_main};
use rand::{Rng, SeedableRng, rngs::StdRng};
use riegeli_records::{RecordReader, RecordReaderOptions, RecordWriter, RecordWriterOptions};

const OPTION_SETS: &[&str] = &["zstd:3", "snappy", "brotli:6", "uncompressed", "transpose,zstd:3"];
/// Writes: the codecs' own speed bounds the compressed ones, so the writer's
/// overhead shows in the uncompressed ones.
const WRITE_OPTION_SETS: &[&str] =
    &["uncompressed", "uncompressed,chunk_size:1M", "transpose,uncompressed", "zstd:3", "snappy", "transpose,snappy"];

/// Records of 900 to 1150 bytes of words drawn from a small vocabulary.
fn records(total: usize) -> Vec<Vec<u8>> {
    const WORDS: &[&str] = &[
        "the", "of", "and", "to", "in", "a", "is", "that", "for", "it", "as", "was", "with", "be", "by", "on", "not",
        "he", "this", "are", "or", "his", "from", "at", "which", "but", "have", "an", "had", "they", "you", "were",
        "their", "one", "all", "we", "can", "her", "has", "there", "been", "if", "more", "when", "will", "would",
        "who", "so", "no", "record", "chunk", "block", "header", "reader", "writer", "file",
    ];
    let mut rng = StdRng::seed_from_u64(0);
    let mut out = Vec::new();
    let mut size = 0;
    while size < total {
        let len = rng.gen_range(900..1150);
        let mut record = Vec::with_capacity(len + 16);
        while record.len() < len {
            record.extend_from_slice(WORDS[rng.gen_range(0..WORDS.len())].as_bytes());
            record.push(if rng.gen_range(0..12) == 0 { b'.' } else { b' ' });
        }
        record.truncate(len);
        size += record.len();
        out.push(record);
    }
    out
}

fn write(records: &[Vec<u8>], options: &str) -> Vec<u8> {
    let options: RecordWriterOptions = format!("{options},parallelism:2").parse().unwrap();
    let mut writer = RecordWriter::new(Vec::new(), options).unwrap();
    for record in records {
        writer.write_record(record).unwrap();
    }
    writer.close().unwrap()
}

fn write_serially(records: &[Vec<u8>], options: &RecordWriterOptions) {
    let mut writer = RecordWriter::new(std::io::sink(), options.clone()).unwrap();
    for record in records {
        writer.write_record(record).unwrap();
    }
    writer.close().unwrap();
}

fn read_all(file: &[u8], parallelism: usize) -> usize {
    let options = RecordReaderOptions { parallelism, ..Default::default() };
    let mut reader = RecordReader::with_options(Cursor::new(file), options);
    let mut bytes = 0;
    while let Some(record) = reader.read_record().unwrap() {
        bytes += record.len();
    }
    bytes
}

/// A group of few, short samples (each reads or writes the whole set), counting `total` record bytes.
fn short_group<'a>(c: &'a mut Criterion, name: &str, total: usize) -> BenchmarkGroup<'a, WallTime> {
    let mut group = c.benchmark_group(name);
    group.sample_size(10);
    group.warm_up_time(Duration::from_secs(1));
    group.measurement_time(Duration::from_secs(4));
    group.throughput(Throughput::Bytes(total as u64));
    group
}

fn bench(c: &mut Criterion) {
    let megabytes: usize = std::env::var("RIEGELI_BENCH_MB").ok().and_then(|v| v.parse().ok()).unwrap_or(50);
    let records = records(megabytes * 1_000_000);
    let total: usize = records.iter().map(Vec::len).sum();
    let mut group = short_group(c, "write", total);
    for options in WRITE_OPTION_SETS {
        let parsed: RecordWriterOptions = options.parse().unwrap();
        group.bench_function(*options, |b| b.iter(|| write_serially(&records, &parsed)));
    }
    group.finish();

    let mut group = short_group(c, "read", total);
    for options in OPTION_SETS {
        let file = write(&records, options);
        for parallelism in [0, 1, 2] {
            group.bench_function(format!("{options}/parallelism:{parallelism}"), |b| {
                b.iter(|| assert_eq!(read_all(&file, parallelism), total));
            });
        }
    }
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
