//! Memory under hostile input, for the Arrow reader: counting `malloc` (Rust's
//! allocations and C's, as riegeli-records' `tests/memory.rs` counts them)
//! measures the peak while an [`ArrowReader`] reads a file whose transposed
//! chunk claims far more records and decoded bytes than its few stored bytes
//! hold, with valid hashes (an attacker computes them).
//!
//! Every way a chunk reaches the columns is tried: the direct path's flat
//! sink (a projection of singular scalars) and its recorder (all columns), on
//! the calling thread and on a decoding thread, and the walker over the
//! chunk's records (`direct: false`); each without and with recovery. Each
//! read must end without a panic, report the damage, and stay under
//! [`BOUND`] bytes of peak allocation.
//!
//! A binary of its own with a single `#[test]`: the counting is process-wide.
#![allow(unsafe_code, reason = "the counting `malloc`")]

use std::io::Cursor;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::{Arc, Mutex};

use riegeli_arrow::{ArrowReader, ArrowReaderOptions};
use riegeli_framing::{ChunkHeader, frame_chunk};
use riegeli_records::{ChunkReadOptions, ChunkReader, RecordReader};

#[path = "common.rs"]
#[allow(dead_code, reason = "the helpers this test does not use")]
mod common;

#[path = "../../riegeli-records/tests/counting_alloc.rs"]
mod counting_alloc;

/// The most a read of the hostile file may allocate at its peak: the file is
/// a few hundred bytes, and the reader's own buffers and zstd's context are
/// well under a MiB.
const BOUND: usize = 8 << 20;

/// `file` with its first chunk of records framed again under a header that
/// claims `num_records` records of `decoded` bytes (its data and the data's
/// hash unchanged), and nothing after it.
fn reclaimed(file: &[u8], num_records: u64, decoded: u64) -> Vec<u8> {
    let mut chunks = ChunkReader::new(Cursor::new(file), ChunkReadOptions::default(), 0);
    loop {
        let chunk = chunks.read_chunk().unwrap().expect("a chunk of records");
        if chunk.header.num_records() == 0 {
            continue;
        }
        let header = ChunkHeader::for_data(chunk.header.chunk_type(), &chunk.data, num_records, decoded).unwrap();
        let begin = usize::try_from(chunk.begin).unwrap();
        let mut out = file.get(..begin).unwrap().to_vec();
        frame_chunk(chunk.begin, &header, &chunk.data, &mut out).unwrap();
        return out;
    }
}

/// Reads `file` to its end or its first error (with `recovery`, damage is
/// skipped); the batches' rows, and the errors and skipped regions.
fn read(file: &[u8], options: ArrowReaderOptions, recovery: bool) -> (usize, Vec<String>) {
    let mut inner = RecordReader::new(Cursor::new(file.to_vec()));
    let skipped = Arc::new(Mutex::new(Vec::new()));
    if recovery {
        let skipped = Arc::clone(&skipped);
        inner.set_recovery(move |region| {
            skipped.lock().unwrap().push(region.to_string());
            true
        });
    }
    let mut reader = ArrowReader::new(inner, options).unwrap();
    let (mut rows, mut errors) = (0, Vec::new());
    loop {
        match reader.next_batch() {
            Ok(Some(batch)) => rows += batch.num_rows(),
            Ok(None) => break,
            Err(e) => {
                errors.push(e.to_string());
                break;
            }
        }
    }
    errors.extend(reader.skipped().first_errors.iter().cloned());
    errors.extend(skipped.lock().unwrap().iter().cloned());
    (rows, errors)
}

#[test]
fn a_chunk_claiming_a_million_records_stays_under_the_memory_bound() {
    let desc = common::message("t.All");
    let mut rng = common::Rng(7);
    let records: Vec<Vec<u8>> =
        (0..3).map(|_| prost::Message::encode_to_vec(&common::random_message(&desc, &mut rng, 0))).collect();
    let good = common::write_file(&desc, &records, "transpose,zstd:1");
    // Within the reader's default limits (2^28 records, 2 GiB decoded); the
    // decoded size is a MiB, which the record path may allocate before the
    // data shows it false.
    let file = reclaimed(&good, 1 << 20, 1 << 20);
    let scalars: Vec<String> = ["i32", "i64", "u32", "u64", "s64", "f64", "sf64", "str"].map(String::from).to_vec();
    for (projection, direct, parallelism) in
        [(Some(&scalars), true, 0), (Some(&scalars), true, 1), (None, true, 0), (None, true, 1), (None, false, 0)]
    {
        for recovery in [false, true] {
            let options = ArrowReaderOptions {
                projection: projection.cloned(),
                direct,
                parallelism,
                ..ArrowReaderOptions::default()
            };
            let what =
                format!("projection {projection:?}, direct {direct}, parallelism {parallelism}, recovery {recovery}");
            let (outcome, peak) =
                counting_alloc::measure(|| catch_unwind(AssertUnwindSafe(|| read(&file, options, recovery))));
            let (rows, errors) = outcome.unwrap_or_else(|_| panic!("{what}: panicked"));
            assert!(peak < BOUND, "{what}: a peak of {peak} bytes");
            // The chunk's three records cannot be a million: damage, reported.
            assert_eq!(rows, 0, "{what}");
            assert!(!errors.is_empty(), "{what}: no damage reported");
        }
    }
}
