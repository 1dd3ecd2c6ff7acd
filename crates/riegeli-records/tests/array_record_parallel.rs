//! ArrayRecord parallel reads: they return what the serial reads return, for
//! records, ranges, index lists and errors, on files large enough (over
//! 128 KiB decoded) that the reader decodes them on its worker threads; both
//! through one `Read + Seek` (the calling thread reads the chunks) and on a
//! `File` (the decoding threads read them by positional reads).
#![cfg(all(feature = "brotli", feature = "zstd", feature = "snappy"))]

use std::io::Cursor;
use std::path::PathBuf;
use std::sync::atomic::{AtomicUsize, Ordering};

use riegeli_records::{
    ArrayRecordReader, ArrayRecordReaderOptions, ArrayRecordWriter, ChunkReader, ErrorKind, PositionalFile, Selection,
};

use crate::array_record::scrambled;
use crate::common::sample_records;

/// Files of about 740 KiB of records in chunks of several kinds.
const CONFIGS: [&str; 4] = [
    "group_size:10,zstd:1",
    "group_size:7,transpose,snappy",
    "group_size:25,uncompressed",
    "group_size:3,brotli:1,pad_to_block_boundary:true",
];

fn write(records: &[Vec<u8>], options: &str) -> Vec<u8> {
    let mut writer = ArrayRecordWriter::new(Vec::new(), options.parse().unwrap()).unwrap();
    for record in records {
        writer.write_record(record).unwrap();
    }
    writer.close().unwrap()
}

fn open(file: &[u8], parallelism: usize) -> ArrayRecordReader<Cursor<&[u8]>> {
    // `parallelism` threads, the calling one included.
    let options = ArrayRecordReaderOptions { parallelism: parallelism - 1, ..Default::default() };
    ArrayRecordReader::with_options(Cursor::new(file), options).unwrap()
}

/// A parallel reader of `file` written to a temporary file, opened with
/// `ArrayRecordReader::open` (positional reads on the decoding threads).
struct OnDisk {
    path: PathBuf,
    reader: ArrayRecordReader<PositionalFile>,
}

impl OnDisk {
    fn new(file: &[u8], parallelism: usize) -> Self {
        static COUNTER: AtomicUsize = AtomicUsize::new(0);
        let n = COUNTER.fetch_add(1, Ordering::Relaxed);
        let path = std::env::temp_dir().join(format!("riegeli-parallel-{}-{n}.array_record", std::process::id()));
        std::fs::write(&path, file).unwrap();
        // `parallelism` threads, the calling one included.
        let options = ArrayRecordReaderOptions { parallelism: parallelism - 1, ..Default::default() };
        let reader = ArrayRecordReader::open(&path, options).unwrap();
        Self { path, reader }
    }
}

impl Drop for OnDisk {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.path);
    }
}

/// Runs `$body` with `$parallel` a parallel reader of `$file` with `$threads`
/// threads, first from memory, then on a file; `$kind` says which.
macro_rules! with_parallel_readers {
    ($file:expr, $threads:expr, |$parallel:ident, $kind:ident| $body:block) => {{
        {
            let mut $parallel = open(&$file, $threads);
            let $kind = "from memory";
            $body
        }
        {
            let mut on_disk = OnDisk::new(&$file, $threads);
            let $parallel = &mut on_disk.reader;
            let $kind = "on a file";
            $body
        }
    }};
}

/// The data chunks of a file: (begin, end, data size).
fn data_chunks(file: &[u8]) -> Vec<(u64, u64, u64)> {
    let mut reader = ChunkReader::new(Cursor::new(file), Default::default(), 0);
    let mut chunks = Vec::new();
    while let Some(chunk) = reader.read_chunk().unwrap() {
        if matches!(chunk.header.chunk_type(), b'r' | b't') && chunk.header.num_records() > 0 {
            chunks.push((chunk.begin, chunk.end, chunk.header.data_size()));
        }
    }
    chunks.pop(); // the postscript
    chunks.pop(); // the footer
    chunks
}

#[test]
fn parallel_reads_equal_serial_reads() {
    let records = sample_records(600, 21);
    for config in CONFIGS {
        let file = write(&records, config);
        let mut serial = open(&file, 1);
        let n = serial.num_records();
        assert_eq!(n, 600);
        for threads in [2, 3, 5] {
            with_parallel_readers!(file, threads, |parallel, kind| {
                let what = format!("{config}, {threads} threads, {kind}");
                assert_eq!(parallel.read_batch(Selection::All).unwrap(), records, "{what}: read_all_parallel");
                assert_eq!(serial.read_batch(Selection::All).unwrap(), records, "{what}: read_all");
                for (start, end) in [(0, n), (1, n - 1), (n / 3, 2 * n / 3), (n - 1, n), (5, 5), (0, 1)] {
                    let want = serial.read_batch(start..end).unwrap();
                    assert_eq!(want, &records[start as usize..end as usize], "{what}: read_range {start}..{end}");
                    assert_eq!(parallel.read_batch(start..end).unwrap(), want, "{what}: {start}..{end}");
                }
                for (count, seed) in [(1, 3), (17, 5), (600, 7), (5000, 11)] {
                    let indices = scrambled(n, count, seed);
                    let want: Vec<&[u8]> = indices.iter().map(|&i| &records[i as usize][..]).collect();
                    assert_eq!(serial.read_batch(&indices).unwrap(), want, "{what}: read_indices {count}");
                    assert_eq!(parallel.read_batch(&indices).unwrap(), want, "{what}: read_parallel {count}");
                }
                // Every index twice, descending.
                let indices: Vec<u64> = (0..n).rev().flat_map(|i| [i, i]).collect();
                let want: Vec<&[u8]> = indices.iter().map(|&i| &records[i as usize][..]).collect();
                assert_eq!(parallel.read_batch(&indices).unwrap(), want, "{what}: descending");
                assert!(parallel.read_batch(&[]).unwrap().is_empty());
            });
        }
    }
}

#[test]
fn parallel_out_of_range_is_a_clear_error() {
    let records = sample_records(600, 22);
    let file = write(&records, CONFIGS[0]);
    let mut parallel = open(&file, 2);
    let mut indices = scrambled(600, 1000, 9);
    indices.insert(500, 600);
    for result in [parallel.read_batch(&indices), open(&file, 1).read_batch(&indices)] {
        let error = result.unwrap_err();
        assert!(matches!(error.kind(), ErrorKind::InvalidArgument(_)), "{error:?}");
        let message = error.to_string();
        assert!(message.contains("600") && message.contains("out of range"), "{message}");
    }
    let error = parallel.read_batch(10..601).unwrap_err();
    assert!(error.to_string().contains("out of range"), "{error}");
    // The reader still works.
    assert_eq!(parallel.read_batch(Selection::All).unwrap(), records);
}

#[test]
fn damaged_chunk_mid_batch_fails_as_serial_and_the_pool_survives() {
    let records = sample_records(600, 23);
    for config in CONFIGS {
        let mut file = write(&records, config);
        let chunks = data_chunks(&file);
        assert!(chunks.len() > 20, "{config}: {} chunks", chunks.len());
        // A byte in the middle of the data of a chunk in the middle of the file
        // (off block headers): its data hash no longer matches.
        let (begin, _, data_size) = chunks[chunks.len() / 2];
        let mut pos = begin + 40 + data_size / 2;
        if pos % 65536 < 24 {
            pos += 24;
        }
        file[pos as usize] ^= 0x40;
        let what = format!("{config}: damage at {pos} in the chunk at {begin}");

        let mut serial = open(&file, 1);
        let damaged: Vec<u64> = (0..600).filter(|&i| serial.read(i).is_err()).collect();
        assert!(!damaged.is_empty() && damaged.len() < 100, "{what}: {damaged:?}");
        let serial_error = serial.read_batch(Selection::All).unwrap_err();
        let position = serial_error.position().unwrap();
        assert!((begin..=pos).contains(&position), "{what}: error at {position}");
        let good: Vec<u64> = (0..600).filter(|i| !damaged.contains(i)).collect();
        for threads in [2, 4] {
            with_parallel_readers!(file, threads, |parallel, kind| {
                let what = format!("{what}, {kind}");
                for _ in 0..3 {
                    // The same error, again and again: no hang, no stale results.
                    let error = parallel.read_batch(Selection::All).unwrap_err();
                    assert_eq!(error.to_string(), serial_error.to_string(), "{what}");
                    assert_eq!(error.position(), Some(position), "{what}");
                    let indices: Vec<u64> = scrambled(600, 2000, 5).into_iter().chain([damaged[0]]).collect();
                    let error = parallel.read_batch(&indices).unwrap_err();
                    assert_eq!(error.to_string(), serial_error.to_string(), "{what}: read_parallel");
                    // What avoids the damaged chunk still reads.
                    let want: Vec<&[u8]> = good.iter().map(|&i| &records[i as usize][..]).collect();
                    assert_eq!(parallel.read_batch(&good).unwrap(), want, "{what}: good indices");
                    let before = damaged[0];
                    assert_eq!(parallel.read_batch(0..before).unwrap(), &records[..before as usize], "{what}");
                }
            });
        }
    }
}
