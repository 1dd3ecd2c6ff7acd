//! Parallel decoding (`RecordReaderOptions::parallelism`) against serial
//! reading: the same records, positions, errors and skipped regions, on every
//! golden and corrupt file and on generated ones. Expected values come from
//! the manifest or from serial mode, never from the parallel code itself.

use std::cmp::Ordering;
use std::io::{Cursor, Read};
use std::sync::{Arc, Mutex};

use proptest::prelude::*;
use riegeli_records::{FieldProjection, RecordPosition, RecordReader, RecordReaderOptions, RecordWriterOptions};

use crate::common::{OneByteReader, layout, sample_records, write_file};
use crate::golden::{expected_records, files, record_set, testdata};

/// What a reader did, step by step.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Event {
    /// A record, with `pos()` before reading it and `last_pos()` after.
    Record { before: RecordPosition, record: Vec<u8>, last: Option<RecordPosition> },
    /// An error, with its position and message, and what `recover()` then skipped.
    Error { before: RecordPosition, at: Option<u64>, message: String, skipped: Option<(u64, u64, String)> },
    /// The end of the file, with `pos()` there.
    End(RecordPosition),
}

/// Skipped regions reported to a recovery callback.
type Regions = Arc<Mutex<Vec<(u64, u64, String)>>>;

fn options(parallelism: usize) -> RecordReaderOptions {
    // Every data chunk to the workers: the test files' chunks are small.
    RecordReaderOptions { parallelism, parallel_min_chunk_size: 0, ..Default::default() }
}

/// Reads everything, recovering from errors with `recover()` (or with the
/// recovery callback if `callback`), and returns what happened.
fn trace_reader<R: Read>(mut reader: RecordReader<R>, callback: bool) -> (Vec<Event>, Vec<(u64, u64, String)>) {
    let regions: Regions = Arc::default();
    if callback {
        let sink = Arc::clone(&regions);
        reader.set_recovery(move |region| {
            sink.lock().unwrap().push((region.begin, region.end, region.message.to_owned()));
            true
        });
    }
    let mut events = Vec::new();
    let mut errors = 0;
    loop {
        let before = reader.pos();
        match reader.read_record() {
            Ok(Some(record)) => events.push(Event::Record { before, record: record.to_vec(), last: reader.last_pos() }),
            Ok(None) => {
                events.push(Event::End(reader.pos()));
                break;
            }
            Err(e) => {
                let skipped = reader.recover().unwrap().map(|r| (r.begin, r.end, r.message.to_owned()));
                let stop = skipped.is_none();
                events.push(Event::Error { before, at: e.position(), message: e.to_string(), skipped });
                errors += 1;
                if stop || errors > 1000 {
                    break;
                }
            }
        }
    }
    let regions = regions.lock().unwrap().clone();
    (events, regions)
}

fn trace(file: &[u8], read_options: RecordReaderOptions, callback: bool) -> (Vec<Event>, Vec<(u64, u64, String)>) {
    trace_reader(RecordReader::with_options(Cursor::new(file), read_options), callback)
}

fn records_of(events: &[Event]) -> Vec<Vec<u8>> {
    events
        .iter()
        .filter_map(|e| if let Event::Record { record, .. } = e { Some(record.clone()) } else { None })
        .collect()
}

/// Parallel reads of `file` (1, 2 and 3 threads) behave exactly as the serial read.
fn assert_same_as_serial(file: &[u8], base: &RecordReaderOptions, what: &str) -> Vec<Event> {
    for callback in [false, true] {
        let serial = trace(file, base.clone(), callback);
        for n in 1..=3 {
            // Small chunks to the workers too (0), and the default limit.
            for min in [0, RecordReaderOptions::default().parallel_min_chunk_size] {
                let options = RecordReaderOptions { parallelism: n, parallel_min_chunk_size: min, ..base.clone() };
                let parallel = trace(file, options, callback);
                assert_eq!(parallel, serial, "{what}: parallelism {n}, min chunk {min}, recovery callback {callback}");
            }
        }
    }
    trace(file, base.clone(), true).0
}

#[test]
fn golden_files_read_as_serially() {
    for kind in ["valid", "array_record"] {
        for file in files(kind) {
            let path = file["path"].as_str().unwrap();
            let bytes = std::fs::read(testdata().join(path)).unwrap();
            let events = assert_same_as_serial(&bytes, &RecordReaderOptions::default(), path);
            assert_eq!(records_of(&events), record_set(file["records"].as_str().unwrap()), "{path}");
            // The trailer is a record too when asked for.
            let with_trailer = RecordReaderOptions { read_array_record_trailer: true, ..Default::default() };
            assert_same_as_serial(&bytes, &with_trailer, path);
        }
    }
}

#[test]
fn corrupt_files_fail_and_recover_as_serially() {
    let corrupt = files("corrupt");
    assert!(corrupt.len() >= 10);
    for file in corrupt {
        let path = file["path"].as_str().unwrap();
        let bytes = std::fs::read(testdata().join(path)).unwrap();
        let expected = expected_records(&file);
        let events = assert_same_as_serial(&bytes, &RecordReaderOptions::default(), path);
        assert_eq!(records_of(&events), expected, "{path}");
    }
}

#[test]
fn one_byte_reads_in_parallel() {
    for path in
        ["valid/transposed_zstd.riegeli", "array_record/simple_brotli.array_record", "corrupt/zeroed_block.riegeli"]
    {
        let bytes = std::fs::read(testdata().join(path)).unwrap();
        let serial = trace(&bytes, RecordReaderOptions::default(), true);
        let parallel = trace_reader(RecordReader::with_options(OneByteReader(Cursor::new(&bytes)), options(2)), true);
        assert_eq!(parallel, serial, "{path}");
    }
}

/// A file of many compressed chunks, and its chunks that hold records.
fn many_chunks(options: &str) -> (Vec<Vec<u8>>, Vec<u8>) {
    let records = sample_records(1500, 7);
    let file = write_file(&records, options);
    assert!(layout(&file).iter().filter(|c| c.num_records > 0).count() > 20, "{options}");
    (records, file)
}

#[test]
fn damage_among_many_chunks_is_met_in_order() {
    // Hash failures of compressed and of uncompressed chunks, both found by the workers.
    for options in ["zstd:1,chunk_size:8k", "uncompressed,chunk_size:8k"] {
        damage_among_many_chunks(options);
    }
}

fn damage_among_many_chunks(options: &str) {
    let (records, file) = many_chunks(options);
    let chunks: Vec<_> = layout(&file).into_iter().filter(|c| c.num_records > 0).collect();
    let no_hashes = RecordReaderOptions {
        chunks: riegeli_records::ChunkReadOptions { verify_hashes: false, ..Default::default() },
        ..Default::default()
    };
    for (step, victims) in [(0, [3usize, 4]), (1, [7, 15]), (2, [1, 20])] {
        let mut damaged = file.clone();
        // Data damage (a hash failure found by a worker, or with hashes off a
        // decoding failure, or none for uncompressed data) and, in step 1, a
        // chunk header.
        for (i, &victim) in victims.iter().enumerate() {
            let chunk = chunks[victim];
            let at = if step == 1 && i == 1 { chunk.begin as usize + 20 } else { chunk.data_end as usize - 3 };
            damaged[at] ^= 0x5a;
        }
        let what = format!("{options}: victims {victims:?}");
        let events = assert_same_as_serial(&damaged, &RecordReaderOptions::default(), &what);
        let lost: usize = victims.iter().map(|&v| chunks[v].num_records as usize).sum();
        let read = records_of(&events);
        assert!(read.len() < records.len() && read.len() + lost >= records.len() - 100, "{what}: {}", read.len());
        let events = assert_same_as_serial(&damaged, &no_hashes, &format!("{what} without hashes"));
        if !options.starts_with("uncompressed") {
            // (Bytes changed in uncompressed records, unhashed, go unnoticed.)
            assert!(records_of(&events).len() < records.len(), "{what}: damage not noticed");
        }
    }
    // A truncated file: every complete chunk, then the error at the same place.
    let truncated = &file[..file.len() * 2 / 3];
    assert_same_as_serial(truncated, &RecordReaderOptions::default(), "truncated");
}

#[test]
fn a_callback_that_stops_stops_at_the_same_place() {
    let (_, file) = many_chunks("snappy,chunk_size:8k");
    let chunks: Vec<_> = layout(&file).into_iter().filter(|c| c.num_records > 0).collect();
    let mut damaged = file.clone();
    for victim in [5, 9] {
        damaged[chunks[victim].data_end as usize - 1] ^= 1;
    }
    let run = |parallelism| {
        let mut reader = RecordReader::with_options(Cursor::new(&damaged), options(parallelism));
        let calls = Arc::new(Mutex::new(0));
        let counter = Arc::clone(&calls);
        reader.set_recovery(move |_| {
            *counter.lock().unwrap() += 1;
            false
        });
        let mut count = 0;
        let error = loop {
            match reader.read_record() {
                Ok(Some(_)) => count += 1,
                Ok(None) => panic!("the callback said stop"),
                Err(e) => break e,
            }
        };
        // Reading on after the stop continues past the skipped chunk.
        let after = reader.read_record().unwrap().map(|r| r.to_vec());
        let calls = *calls.lock().unwrap();
        (count, error.position(), error.to_string(), reader.pos(), after, calls)
    };
    let serial = run(0);
    assert_eq!(serial.5, 1);
    for n in 1..=3 {
        assert_eq!(run(n), serial, "parallelism {n}");
    }
}

#[test]
fn seeking_after_partial_parallel_reads() {
    for file_options in ["zstd:3,chunk_size:6k", "transpose,snappy,chunk_size:6k,padding:20k"] {
        let (records, file) = many_chunks(file_options);
        // Positions from a serial reader.
        let mut serial = RecordReader::new(Cursor::new(&file));
        let mut positions = Vec::new();
        while serial.read_record().unwrap().is_some() {
            positions.push(serial.last_pos().unwrap());
        }
        for n in [1, 3] {
            let mut reader = RecordReader::with_options(Cursor::new(&file), options(n));
            for (i, record) in records.iter().enumerate().take(300) {
                assert_eq!(reader.read_record().unwrap().unwrap(), record, "{file_options} {i}");
            }
            for &i in &[1200usize, 5, 299, 300, 301, 1499, 0, 750] {
                reader.seek(positions[i]).unwrap();
                assert_eq!(reader.pos(), positions[i]);
                assert_eq!(reader.read_record().unwrap().unwrap(), records[i], "{file_options} seek {i}");
                assert_eq!(reader.last_pos(), Some(positions[i]));
                // A few more in parallel, then a numeric seek.
                for record in records.iter().skip(i + 1).take(39) {
                    assert_eq!(reader.read_record().unwrap().unwrap(), record, "{file_options} after seek {i}");
                }
                let k = (i * 7 + 11) % records.len();
                reader.seek_numeric(positions[k].numeric()).unwrap();
                assert_eq!(reader.read_record().unwrap().unwrap(), records[k], "{file_options} seek_numeric {k}");
                assert!(reader.seek_back().unwrap());
                assert!(reader.seek_back().unwrap() == (k > 0));
                let back = k.saturating_sub(1);
                assert_eq!(reader.read_record().unwrap().unwrap(), records[back], "{file_options} seek_back {k}");
            }
            // Search finds what serial search finds, then reading goes on in order.
            let target = records[900].clone();
            let mut serial = RecordReader::new(Cursor::new(&file));
            let judge = |r: &bytes::Bytes| Some(if r[..] == target[..] { Ordering::Equal } else { Ordering::Less });
            let serial_found = serial.search(|r| Ok(r.read_record()?.and_then(|record| judge(&record)))).unwrap();
            for _ in 0..10 {
                reader.read_record().unwrap();
            }
            assert_eq!(
                reader.search(|r| Ok(r.read_record()?.and_then(|record| judge(&record)))).unwrap(),
                serial_found,
                "{file_options} search"
            );
            assert_eq!(reader.pos(), serial.pos(), "{file_options} search");
            let rest_serial: Vec<_> = serial.by_ref().map(|r| r.unwrap()).collect();
            let rest: Vec<_> = reader.by_ref().map(|r| r.unwrap()).collect();
            assert_eq!(rest, rest_serial, "{file_options} after search");
            // Dropped mid-file, with chunks being decoded: drop returns.
            let mut reader = RecordReader::with_options(Cursor::new(&file), options(n));
            reader.read_record().unwrap();
            drop(reader);
        }
    }
}

#[test]
fn field_projection_changes_midway_as_serially() {
    let path = "valid/transposed_zstd.riegeli";
    let bytes = std::fs::read(testdata().join(path)).unwrap();
    let run = |parallelism| {
        let mut reader = RecordReader::with_options(Cursor::new(&bytes), options(parallelism));
        let mut out = Vec::new();
        for i in 0.. {
            if i == 100 {
                reader.set_field_projection(FieldProjection::from_paths([[1u32]]).unwrap()).unwrap();
            }
            if i == 500 {
                reader.set_field_projection(FieldProjection::all()).unwrap();
            }
            match reader.read_record().unwrap() {
                Some(record) => out.push((reader.last_pos(), record.to_vec())),
                None => break,
            }
        }
        out
    };
    let serial = run(0);
    let full = record_set("protos");
    assert_eq!(serial.len(), full.len());
    assert_ne!(serial.iter().map(|(_, r)| r.clone()).collect::<Vec<_>>(), full, "the projection changes records");
    // Each change applies from the next record, also in the middle of a chunk.
    let mut projected_reader = RecordReader::new(Cursor::new(&bytes));
    projected_reader.set_field_projection(FieldProjection::from_paths([[1u32]]).unwrap()).unwrap();
    let projected: Vec<Vec<u8>> = projected_reader.by_ref().map(|r| r.unwrap().to_vec()).collect();
    for (i, (_, record)) in serial.iter().enumerate() {
        let expected = if (100..500).contains(&i) { &projected[i] } else { &full[i] };
        assert_eq!(record, expected, "record {i}");
    }
    assert_ne!(serial[100].1, full[100], "record 100 has fields outside the projection");
    let mid_chunk = |i: usize| serial[i].0.is_some_and(|pos| pos.record_index() > 0);
    assert!(mid_chunk(100) && mid_chunk(500), "the projection changes in the middle of a chunk");
    for n in 1..=3 {
        assert_eq!(run(n), serial, "parallelism {n}");
    }
}

#[test]
fn metadata_in_parallel_mode() {
    let records = sample_records(400, 3);
    let metadata = riegeli_records::RecordsMetadata { file_comment: "parallel".into(), ..Default::default() };
    let write_options: RecordWriterOptions = "zstd,chunk_size:4k".parse().unwrap();
    let write_options =
        RecordWriterOptions { metadata: Some(prost::Message::encode_to_vec(&metadata)), ..write_options };
    let mut writer = riegeli_records::RecordWriter::new(Vec::new(), write_options).unwrap();
    for record in &records {
        writer.write_record(record).unwrap();
    }
    let file = writer.close().unwrap();
    for n in 1..=2 {
        // Metadata first, then every record.
        let mut reader = RecordReader::with_options(Cursor::new(&file), options(n));
        reader.check_file_format().unwrap();
        assert_eq!(reader.read_metadata().unwrap(), Some(metadata.clone()));
        assert_eq!(crate::common::read_all(&mut reader), records);
        // Records first: the metadata chunk has been passed and is still known.
        let mut reader = RecordReader::with_options(Cursor::new(&file), options(n));
        assert_eq!(reader.read_record().unwrap().unwrap(), records[0]);
        assert_eq!(reader.read_metadata().unwrap(), Some(metadata.clone()));
        assert_eq!(reader.read_record().unwrap().unwrap(), records[1]);
    }
}

const OPTION_SETS: &[&str] = &[
    "uncompressed,chunk_size:2k",
    "zstd:3,chunk_size:5k",
    "snappy,chunk_size:3k",
    "brotli:1,chunk_size:4k",
    "transpose,zstd:1,chunk_size:4k",
    "transpose,uncompressed,chunk_size:2k,padding:10k",
];

proptest! {
    #![proptest_config(ProptestConfig::with_cases(24))]

    #[test]
    fn arbitrary_records_round_trip_in_parallel(
        records in prop::collection::vec(prop::collection::vec(any::<u8>(), 0..2500), 0..60),
        option_index in 0..OPTION_SETS.len(),
        parallelism in 1usize..=3,
    ) {
        let file = write_file(&records, OPTION_SETS[option_index]);
        let (events, regions) = trace(&file, options(parallelism), true);
        prop_assert!(regions.is_empty());
        prop_assert_eq!(records_of(&events), records);
        prop_assert_eq!(events, trace(&file, RecordReaderOptions::default(), true).0);
    }
}

#[test]
fn a_parallel_reader_can_move_between_threads() {
    fn assert_send<T: Send>(_: &T) {}
    let (records, file) = many_chunks("zstd:1,chunk_size:8k");
    let mut reader = RecordReader::with_options(Cursor::new(file), options(2));
    assert_eq!(reader.read_record().unwrap().unwrap(), records[0]);
    assert_send(&reader);
    let rest = std::thread::spawn(move || crate::common::read_all(&mut reader)).join().unwrap();
    assert_eq!(rest, records[1..]);
}

/// What a chunk reader did: per chunk its place and records (or decoding
/// error); per error its message and the region `recover()` skipped.
fn trace_chunks(file: &[u8], threads: usize) -> Vec<String> {
    let options = riegeli_records::ChunkReadOptions::default();
    let mut reader = riegeli_records::ChunkReader::new(Cursor::new(file), options, threads);
    let mut events = Vec::new();
    loop {
        let pos = reader.pos();
        match reader.read_decoded() {
            Ok(Some((chunk, records))) => {
                let records = match records {
                    Ok(records) => format!("{:?}", records.map(|r| r.iter().collect::<Vec<_>>())),
                    Err(e) => format!("cannot decode: {e}"),
                };
                events.push(format!("{pos}: chunk {}..{} {records}", chunk.begin, chunk.end));
            }
            Ok(None) => break,
            Err(e) => {
                let region = reader.recover().unwrap();
                events.push(format!("{pos}: error {e}; skipped {region:?}"));
                if region.is_none() || events.len() > 10_000 {
                    break;
                }
            }
        }
    }
    events.push(format!("end at {}", reader.pos()));
    events
}

#[test]
fn chunk_reader_decodes_on_threads_as_serially() {
    // Chunks of more than 64 KiB decoded (the least a thread gets), compressed and not.
    let records = sample_records(3000, 11);
    let mut cases = Vec::new();
    for options in ["uncompressed,chunk_size:200k", "zstd:1,chunk_size:200k", "snappy,chunk_size:150k"] {
        let file = write_file(&records, options);
        let chunks: Vec<_> = layout(&file).into_iter().filter(|c| c.num_records > 0).collect();
        assert!(chunks.len() > 5, "{options}");
        cases.push((format!("{options}: intact"), file.clone()));
        // Data hash failures in two chunks, and a damaged chunk header.
        let mut damaged = file.clone();
        damaged[chunks[1].data_end as usize - 2] ^= 0x21;
        damaged[chunks[4].data_end as usize - 7] ^= 0x08;
        damaged[chunks[3].begin as usize + 9] ^= 0x40;
        cases.push((format!("{options}: damaged"), damaged));
        cases.push((format!("{options}: truncated"), file[..file.len() * 3 / 4].to_vec()));
    }
    for kind in ["valid", "corrupt"] {
        for file in files(kind) {
            let path = file["path"].as_str().unwrap();
            cases.push((path.to_owned(), std::fs::read(testdata().join(path)).unwrap()));
        }
    }
    for (what, file) in &cases {
        let serial = trace_chunks(file, 0);
        assert!(serial.len() > 1, "{what}");
        for threads in [1, 3] {
            assert_eq!(trace_chunks(file, threads), serial, "{what}: {threads} threads");
        }
    }
    // The damage is seen at all (a test that cannot fail proves nothing).
    let damaged = trace_chunks(&cases[1].1, 1);
    assert_eq!(damaged.iter().filter(|e| e.contains("error")).count(), 3, "{damaged:#?}");
}
