//! The direct path (transposed chunks straight into the columns) against
//! the walker (the same chunks through their serialized records): the same
//! batches, errors and skipped records, whatever the projection, chunk kind,
//! batch size, damage or recovery.

use std::io::Cursor;

use arrow_array::RecordBatch;
use proptest::prelude::*;
use prost::Message;
use prost_reflect::MessageDescriptor;
use riegeli_arrow::{ArrowReader, ArrowReaderOptions, BadRecords};
use riegeli_records::{RecordReader, RecordReaderOptions};

use crate::common::{Rng, message, random_message, write_file};

/// `count` records, each 1 to `parts` random messages concatenated.
fn records(desc: &MessageDescriptor, seed: u64, count: usize, parts: u64) -> Vec<Vec<u8>> {
    let mut rng = Rng(seed);
    (0..count)
        .map(|_| (0..1 + rng.below(parts)).flat_map(|_| random_message(desc, &mut rng, 0).encode_to_vec()).collect())
        .collect()
}

/// Projections of `t.All`: every column the direct path takes (no maps, no
/// real oneofs; proto3 `optional` is fine), two columns, and columns it
/// gives up for (a map, a oneof), or `None` (all, maps and oneofs included).
const PROJECTIONS: &[Option<&[&str]>] = &[
    Some(&[
        "i32",
        "i64",
        "u32",
        "u64",
        "s32",
        "s64",
        "f32",
        "f64",
        "sf32",
        "sf64",
        "fl",
        "db",
        "b",
        "str",
        "byt",
        "color",
        "opt_i32",
        "opt_str",
        "inner",
        "r_i32",
        "r_s64",
        "r_db",
        "r_b",
        "r_str",
        "r_byt",
        "r_color",
        "r_inner",
        "r_f32",
        "r_fl",
        "r_unpacked",
        "e",
    ]),
    Some(&["i64", "r_s64"]),
    // Singular scalars only (a flat plan: rows recorded, not events).
    Some(&["i64", "str", "opt_str", "fl", "byt", "color", "f64"]),
    Some(&["u32"]),
    Some(&["inner.deep.u", "r_inner.r"]),
    // Singular messages whose projected fields are all singular (merged
    // occurrences, presence), with and without a repeated field.
    Some(&["inner.a", "inner.s", "inner.ob", "inner.deep", "e", "r_s64"]),
    Some(&["inner.a", "inner.s", "inner.ob", "inner.deep", "e"]),
    Some(&["i32", "m_si"]),
    Some(&["str", "c_int"]),
    None,
];

const WRITERS: &[&str] = &["transpose", "transpose,uncompressed,chunk_size:2k", "zstd,chunk_size:4k", "uncompressed"];

/// What reading `file` gives: each batch or error (after an error, reading
/// goes on, past damage through `recover()`), the skipped-record messages,
/// and how many chunks went the direct way.
fn outcome(
    file: &[u8],
    options: ArrowReaderOptions,
    reader_options: &RecordReaderOptions,
    recovery: bool,
) -> (Vec<Result<RecordBatch, String>>, Vec<String>, u64) {
    let mut inner = RecordReader::with_options(Cursor::new(file.to_vec()), reader_options.clone());
    if recovery {
        inner.set_recovery(|_| true);
    }
    let mut reader = ArrowReader::new(inner, options).unwrap();
    let mut out = Vec::new();
    for _ in 0..10_000 {
        match reader.next_batch() {
            Ok(Some(batch)) => out.push(Ok(batch)),
            Ok(None) => break,
            Err(e) => {
                out.push(Err(e.to_string()));
                if !e.is_bad_record() {
                    // Damage: skip it, or give up if there is nothing to skip.
                    if reader.get_mut().recover().ok().flatten().is_none() {
                        break;
                    }
                }
            }
        }
    }
    (out, reader.skipped().first_errors.clone(), reader.direct_chunks())
}

/// Reads `file` both ways and checks they agree; returns the direct
/// chunks.
fn check_same(
    file: &[u8],
    projection: Option<&[&str]>,
    batch_size: usize,
    bad_records: BadRecords,
    reader_options: &RecordReaderOptions,
    recovery: bool,
) -> u64 {
    let options = |direct| ArrowReaderOptions {
        batch_size,
        projection: projection.map(|p| p.iter().map(|s| s.to_string()).collect()),
        bad_records,
        direct,
        parallelism: 0,
        ..Default::default()
    };
    let (walked, walked_skipped, none) = outcome(file, options(false), reader_options, recovery);
    assert_eq!(none, 0);
    let (direct, direct_skipped, taken) = outcome(file, options(true), reader_options, recovery);
    assert_eq!(direct.len(), walked.len(), "{projection:?}");
    for (i, (d, w)) in direct.iter().zip(&walked).enumerate() {
        assert_eq!(d, w, "{projection:?}, batch {i}");
    }
    assert_eq!(direct_skipped, walked_skipped);
    // Every chunk decoded into columns on the reader's decoding thread (and
    // on this one while it waits): the same again.
    let threaded = RecordReaderOptions { parallelism: 1, parallel_min_chunk_size: 0, ..reader_options.clone() };
    let (on_threads, threads_skipped, taken_on_threads) = outcome(file, options(true), &threaded, recovery);
    assert_eq!(on_threads.len(), walked.len(), "{projection:?}, threaded");
    for (i, (t, w)) in on_threads.iter().zip(&walked).enumerate() {
        assert_eq!(t, w, "{projection:?}, batch {i}, threaded");
    }
    assert_eq!(threads_skipped, walked_skipped);
    assert_eq!(taken_on_threads, taken);
    taken
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 24, ..ProptestConfig::default() })]

    #[test]
    fn direct_and_walker_paths_give_the_same_batches(
        seed in any::<u64>(),
        parts in 1u64..4,
        projection in 0..PROJECTIONS.len(),
        writer in 0..WRITERS.len(),
        batch_size in prop_oneof![Just(1usize), 7usize..200, Just(100_000usize)],
    ) {
        let desc = message("t.All");
        let records = records(&desc, seed, 150, parts);
        let file = write_file(&desc, &records, WRITERS[writer]);
        let projection = PROJECTIONS[projection];
        let taken = check_same(&file, projection, batch_size, BadRecords::Fail, &RecordReaderOptions::default(), false);
        // The direct path takes every transposed chunk exactly when the
        // columns have no map and no real oneof.
        let direct_columns = projection.is_some_and(|p| !p.iter().any(|c| c.starts_with("m_") || c.starts_with("c_")));
        let transposed = WRITERS[writer].starts_with("transpose");
        prop_assert_eq!(taken > 0, direct_columns && transposed);
    }

    #[test]
    fn damage_that_reaches_the_decoders_gives_the_same_outcome_every_way(
        seed in any::<u64>(),
        flips in proptest::collection::vec((any::<prop::sample::Index>(), 1u8..=255), 1..4),
        projection in 0..PROJECTIONS.len(),
        skip in any::<bool>(),
    ) {
        // Hashes unchecked: bytes flipped anywhere in the file reach the
        // chunk decoders, the direct path's as the walker's, on the
        // threads as here; every way gives the same batches and errors,
        // and none panics.
        let desc = message("t.All");
        let records = records(&desc, seed, 200, 2);
        let mut file = write_file(&desc, &records, "transpose,chunk_size:2k");
        // After the metadata chunk: the type must still be read from it.
        let first = usize::try_from(chunk_begins(&file)[0]).unwrap();
        for (at, xor) in flips {
            let at = first + at.index(file.len() - first);
            file[at] ^= xor;
        }
        let mut unchecked = RecordReaderOptions::default();
        unchecked.chunks.verify_hashes = false;
        let bad_records = if skip { BadRecords::Skip } else { BadRecords::Fail };
        check_same(&file, PROJECTIONS[projection], 61, bad_records, &unchecked, true);
    }

    #[test]
    fn proto2_records_the_same_both_ways(seed in any::<u64>(), parts in 1u64..4, batch_size in 1usize..300) {
        let desc = message("t.P2");
        let records = records(&desc, seed, 120, parts);
        let file = write_file(&desc, &records, "transpose,chunk_size:1k");
        for projection in [None, Some(&["a", "b"][..])] {
            let taken =
                check_same(&file, projection, batch_size, BadRecords::Fail, &RecordReaderOptions::default(), false);
            prop_assert!(taken > 0);
        }
    }
}

/// The chunk beginnings of the data chunks of `file`, as a reader finds them.
fn chunk_begins(file: &[u8]) -> Vec<u64> {
    let mut reader = RecordReader::new(Cursor::new(file));
    let mut begins = Vec::new();
    while reader.read_record().unwrap().is_some() {
        let begin = reader.last_pos().unwrap().chunk_begin();
        if begins.last() != Some(&begin) {
            begins.push(begin);
        }
    }
    begins
}

#[test]
fn a_damaged_chunk_fails_or_is_skipped_the_same_both_ways() {
    let desc = message("t.All");
    let records = records(&desc, 21, 600, 1);
    let file = write_file(&desc, &records, "transpose,uncompressed,chunk_size:8k");
    let begins = chunk_begins(&file);
    assert!(begins.len() > 4);
    let projection: Option<&[&str]> = PROJECTIONS[0];
    let mut unchecked = RecordReaderOptions::default();
    unchecked.chunks.verify_hashes = false;
    for &victim in begins.iter().skip(1).step_by(2) {
        for offset in [45u64, 300] {
            let at = usize::try_from(victim + offset).unwrap();
            if at % 65536 < 64 {
                continue;
            }
            let mut damaged = file.clone();
            damaged[at] ^= 0x5a;
            for recovery in [false, true] {
                let taken = check_same(&damaged, projection, 97, BadRecords::Fail, &Default::default(), recovery);
                assert_eq!(taken as usize, begins.len() - 1, "every chunk but the damaged one");
                // Hashes unchecked: the damage reaches the decoders.
                check_same(&damaged, projection, 97, BadRecords::Skip, &unchecked, recovery);
                check_same(&damaged, projection, 97, BadRecords::Fail, &unchecked, recovery);
            }
        }
    }
}

#[test]
fn bad_records_in_a_transposed_chunk_are_reported_by_the_walker() {
    let desc = message("t.P2");
    let mut records = records(&desc, 8, 300, 1);
    // Invalid UTF-8 in string `b` (field 2), and a wire type that does not
    // fit field `a` (1, int32, as fixed64).
    records[17].extend_from_slice(&[0x12, 0x02, 0xff, 0xfe]);
    records[201].extend_from_slice(&[0x09, 1, 2, 3, 4, 5, 6, 7, 8]);
    let file = write_file(&desc, &records, "transpose,chunk_size:2k");
    for bad_records in [BadRecords::Fail, BadRecords::Skip] {
        for projection in [None, Some(&["a"][..]), Some(&["b", "d"][..]), Some(&["a", "b"][..])] {
            for recovery in [false, true] {
                check_same(&file, projection, 50, bad_records, &RecordReaderOptions::default(), recovery);
            }
        }
    }
}

#[test]
fn batches_not_joined_hold_the_same_rows_in_batches_of_at_most_the_size() {
    let desc = message("t.All");
    let records = records(&desc, 5, 700, 1);
    let file = write_file(&desc, &records, "transpose,chunk_size:4k");
    let read = |exact_batch_size| {
        let options = ArrowReaderOptions {
            batch_size: 256,
            projection: PROJECTIONS[0].map(|p| p.iter().map(|s| s.to_string()).collect()),
            exact_batch_size,
            ..Default::default()
        };
        let reader_options = RecordReaderOptions { parallelism: 1, parallel_min_chunk_size: 0, ..Default::default() };
        let reader = RecordReader::with_options(Cursor::new(file.clone()), reader_options);
        ArrowReader::new(reader, options).unwrap().collect::<Result<Vec<_>, _>>().unwrap()
    };
    let exact = read(true);
    let loose = read(false);
    let (last, full) = exact.split_last().unwrap();
    assert!(full.iter().all(|b| b.num_rows() == 256) && last.num_rows() <= 256);
    assert!(loose.iter().all(|b| (1..=256).contains(&b.num_rows())));
    assert!(loose.len() > exact.len(), "chunks of fewer rows than a batch come alone");
    let schema = exact[0].schema();
    assert_eq!(
        arrow_select::concat::concat_batches(&schema, &loose).unwrap(),
        arrow_select::concat::concat_batches(&schema, &exact).unwrap()
    );
}

/// Bytes a buffer of `data` or of its children holds past what it uses, the
/// most of any (bitmaps are rounded up to 64 bytes by Arrow itself).
fn most_spare(data: &arrow_data::ArrayData) -> usize {
    let own = data.buffers().iter().chain(data.nulls().map(|n| n.buffer()));
    let own = own.map(|b| b.capacity() - b.len()).max().unwrap_or(0);
    data.child_data().iter().map(most_spare).fold(own, usize::max)
}

#[test]
fn batches_keep_no_spare_capacity_of_their_builders() {
    let desc = message("t.All");
    let records = records(&desc, 9, 900, 1);
    let file = write_file(&desc, &records, "transpose,chunk_size:8k");
    // Chunk by chunk (not joined into batches, which copies them exactly), through the direct
    // path and through the walker.
    for direct in [true, false] {
        let options = ArrowReaderOptions { batch_size: 1 << 20, exact_batch_size: false, direct, ..Default::default() };
        let reader = RecordReader::new(Cursor::new(file.clone()));
        let batches = ArrowReader::new(reader, options).unwrap().collect::<Result<Vec<_>, _>>().unwrap();
        assert_eq!(batches.iter().map(RecordBatch::num_rows).sum::<usize>(), records.len());
        for batch in &batches {
            for (column, field) in batch.columns().iter().zip(batch.schema().fields()) {
                let spare = most_spare(&column.to_data());
                assert!(spare < 64, "direct {direct}: column {}: {spare} bytes spare", field.name());
            }
        }
    }
}
