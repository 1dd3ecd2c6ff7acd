//! The check behind the `record_reader_recovery` fuzz target: a
//! `RecordReader` with recovery on (every damaged region skipped) over
//! arbitrary file bytes, serially and with read-ahead on a thread.
//!
//! Properties:
//! - reading terminates: records come in strictly increasing positions,
//!   skipped regions in strictly increasing order, and each record is one of
//!   a chunk read on its own (so there are at most as many as the file's
//!   chunks hold);
//! - nothing panics, and with recovery on reading ends cleanly (`Ok(None)`);
//! - every record returned is the record at its position of the chunk that
//!   a [`ChunkReader`] (with recovery) reads there, decoded by
//!   [`Chunk::decode`](riegeli_records::Chunk::decode), and no record comes
//!   from inside a skipped region;
//! - when the build checks hashes (not under `cfg(fuzzing)`, where
//!   riegeli-framing skips them so that mutations reach the parsers), the
//!   chunk of every record returned passes its header and data hashes,
//!   computed here from the file bytes with `riegeli_hash` and the layout of
//!   the format, independently of the reader;
//! - serial reading and read-ahead (parallelism 1, every data chunk decoded
//!   on the thread) return the same records, positions, skipped regions and
//!   result.
//!
//! The same function replays `fuzz/regressions/record_reader_recovery/` in
//! `crates/riegeli-records/tests/fuzz_regressions.rs` (which includes this
//! file with `#[path]`, hash checks on), so this file uses only
//! `riegeli_records`, `riegeli_hash` and `std`.

use std::collections::BTreeMap;
use std::io::Cursor;
use std::sync::{Arc, Mutex, OnceLock, PoisonError};

use riegeli_records::{ChunkReadOptions, ChunkReader, RecordReader, RecordReaderOptions, RecordWriter};

/// Whether riegeli-framing was built with its hash checks off (it follows `cfg(fuzzing)`).
const HASH_CHECKS_DISABLED: bool = cfg!(fuzzing);

/// The format's block size and block header size (the specification's constants).
const BLOCK_SIZE: u64 = 1 << 16;
const BLOCK_HEADER_SIZE: u64 = 24;
const CHUNK_HEADER_SIZE: u64 = 40;

/// Small limits, so that no input makes a run allocate much.
fn chunk_options() -> ChunkReadOptions {
    ChunkReadOptions {
        max_chunk_data_size: 1 << 20,
        // Above every chunk of the seed files; a damaged size is zero-filled
        // up to it before decoding, so it bounds what that costs a run.
        max_decoded_size: 1 << 16,
        max_num_records: 1 << 14,
        ..ChunkReadOptions::default()
    }
}

/// A record of the seed files: a small protobuf message (so that transposed
/// chunks have fields to split) or bytes that compress poorly (so that the
/// compressed files still cross a block boundary).
fn seed_record(i: u32) -> Vec<u8> {
    let mut state = i.wrapping_mul(0x9e37_79b9) | 1;
    let mut noise = |n: usize| -> Vec<u8> {
        (0..n)
            .map(|_| {
                state ^= state << 13;
                state ^= state >> 17;
                state ^= state << 5;
                state.to_le_bytes()[0]
            })
            .collect()
    };
    let len = 20 + (i as usize * 37) % 180;
    if i.is_multiple_of(3) {
        noise(len)
    } else {
        let payload = noise(len.min(120));
        let mut message = vec![0x08, (i % 128) as u8, 0x12, payload.len() as u8];
        message.extend_from_slice(&payload);
        message
    }
}

/// Valid files the structure-aware mode mutates, each over one block
/// boundary (block headers inside and between chunks): simple uncompressed
/// chunks, transposed snappy, zstd with a metadata chunk, transposed brotli
/// (with a window of 2^16: the pure-Rust decoder zero-fills a ring buffer of
/// the whole window for each buffer it decodes, 4 MiB at the default 2^22).
fn seeds() -> &'static [Vec<u8>] {
    static SEEDS: OnceLock<Vec<Vec<u8>>> = OnceLock::new();
    SEEDS.get_or_init(|| {
        [
            ("uncompressed,chunk_size:3000", false),
            ("transpose,snappy,chunk_size:5000", false),
            ("zstd:1,chunk_size:9000", true),
            ("transpose,brotli:1,window_log:16,chunk_size:7000", false),
        ]
        .iter()
        .map(|&(options, metadata)| {
            let mut options: riegeli_records::RecordWriterOptions =
                options.parse().unwrap_or_else(|e| panic!("{options}: {e}"));
            if metadata {
                // A serialized `RecordsMetadata` whose `file_comment` (field 1) is "fuzz seed".
                options.metadata = Some(b"\x0a\x09fuzz seed".to_vec());
            }
            let mut writer = RecordWriter::new(Vec::new(), options).expect("writer");
            for i in 0..800u32 {
                writer.write_record(&seed_record(i)).expect("write");
            }
            writer.close().expect("close")
        })
        .collect()
    })
}

/// Input layout: byte 0 picks the mode. Even: the rest of the input is the
/// file. Odd: seed file `byte 0 / 2 % 4`; then bytes 1 and 2 (little-endian)
/// truncate it to `len - value` bytes when byte 3 is odd; the rest is 4-byte
/// patches `[offset u24 LE, byte]` writing `byte` at `offset % len`.
pub fn record_reader_recovery(data: &[u8]) {
    let Some((&mode, rest)) = data.split_first() else { return };
    if mode % 2 == 0 {
        check_recovery(rest);
        return;
    }
    let seeds = seeds();
    let Some(seed) = seeds.get(usize::from(mode / 2) % seeds.len()) else { return };
    let file = super::seeds::mutated(seed, rest);
    check_recovery(&file);
}

/// What one reading with recovery returned.
#[derive(Debug, PartialEq, Eq)]
struct Reading {
    /// `(chunk_begin, record_index, record)`, in the order read.
    records: Vec<(u64, u64, Vec<u8>)>,
    /// The skipped regions, in the order reported.
    skipped: Vec<(u64, u64)>,
    /// How reading ended.
    end: Result<(), String>,
}

/// Reads `file` serially and with read-ahead, and checks both against the
/// chunks read one by one.
fn check_recovery(file: &[u8]) {
    let chunks = reference_chunks(file);
    let serial = read_with_recovery(file, 0, &chunks);
    let parallel = read_with_recovery(file, 1, &chunks);
    assert_eq!(serial, parallel, "serial and read-ahead reading differ");
    assert_eq!(serial.end, Ok(()), "reading with recovery ended in an error");
    if !HASH_CHECKS_DISABLED {
        let mut checked = None;
        for &(begin, _, _) in &serial.records {
            if checked != Some(begin) {
                assert!(hashes_verify(file, begin), "records returned from the chunk at {begin}, whose hashes fail");
                checked = Some(begin);
            }
        }
    }
}

/// The records of each data chunk a `ChunkReader` reads with recovery, by
/// chunk begin (`None`: the chunk does not decode).
fn reference_chunks(file: &[u8]) -> BTreeMap<u64, Option<Vec<Vec<u8>>>> {
    let options = chunk_options();
    let mut reader = ChunkReader::new(Cursor::new(file), options.clone(), 0);
    let mut chunks = BTreeMap::new();
    // Every chunk takes at least its header, every recovery moves on.
    let bound = file.len() + 16;
    for _ in 0..bound {
        match reader.read_chunk() {
            Ok(Some(chunk)) => {
                if riegeli_codec::ChunkType::holds_records(chunk.header.chunk_type(), chunk.header.num_records()) {
                    let records = chunk.decode(&options).ok().flatten().map(|r| r.iter().map(|b| b.to_vec()).collect());
                    chunks.insert(chunk.begin, records);
                }
            }
            Ok(None) => return chunks,
            Err(_) => match reader.recover() {
                Ok(Some(_)) => {}
                Ok(None) | Err(_) => return chunks,
            },
        }
    }
    panic!("ChunkReader with recovery did not finish a {}-byte file in {bound} steps", file.len());
}

/// Reads every record of `file` with recovery; asserts on the way that
/// reading makes progress and that each record is the reference's.
fn read_with_recovery(file: &[u8], parallelism: usize, chunks: &BTreeMap<u64, Option<Vec<Vec<u8>>>>) -> Reading {
    let options = RecordReaderOptions {
        chunks: chunk_options(),
        parallelism,
        parallel_min_chunk_size: 0,
        ..RecordReaderOptions::default()
    };
    let mut reader = RecordReader::with_options(Cursor::new(file), options);
    let skipped = Arc::new(Mutex::new(Vec::<(u64, u64)>::new()));
    let file_len = file.len() as u64;
    {
        let skipped = Arc::clone(&skipped);
        reader.set_recovery(move |region| {
            let mut skipped = skipped.lock().unwrap_or_else(PoisonError::into_inner);
            let (begin, end) = (region.begin, region.end);
            assert!(begin <= end, "skipped region {begin}..{end} is reversed");
            if let Some(&(_, previous_end)) = skipped.last() {
                assert!(
                    begin >= previous_end && end > previous_end,
                    "skipped region {begin}..{end} does not come after {previous_end}"
                );
            }
            assert!(skipped.len() as u64 <= file_len + 2, "more skipped regions than bytes");
            skipped.push((begin, end));
            true
        });
    }
    let mut records: Vec<(u64, u64, Vec<u8>)> = Vec::new();
    let end = loop {
        match reader.read_record() {
            Ok(Some(record)) => {
                let pos = reader.last_pos().expect("a record read has a position");
                let (begin, index) = (pos.chunk_begin(), pos.record_index());
                if let Some(&(last_begin, last_index, _)) = records.last() {
                    assert!(
                        (begin, index) > (last_begin, last_index),
                        "record at {pos} after one at {last_begin}/{last_index}"
                    );
                }
                let skipped_end =
                    skipped.lock().unwrap_or_else(PoisonError::into_inner).last().map_or(0, |&(_, end)| end);
                assert!(begin >= skipped_end, "record at {pos} inside a region skipped up to {skipped_end}");
                let expected = chunks.get(&begin).unwrap_or_else(|| panic!("record at {pos}: no chunk read there"));
                let expected =
                    expected.as_ref().unwrap_or_else(|| panic!("record at {pos}: its chunk does not decode"));
                let expected = usize::try_from(index).ok().and_then(|i| expected.get(i));
                assert_eq!(Some(&record[..]), expected.map(Vec::as_slice), "record at {pos}");
                records.push((begin, index, record.to_vec()));
            }
            Ok(None) => break Ok(()),
            Err(e) => break Err(e.to_string()),
        }
    };
    let skipped = std::mem::take(&mut *skipped.lock().unwrap_or_else(PoisonError::into_inner));
    Reading { records, skipped, end }
}

/// The `len` bytes of the file from position `pos` on, block headers left
/// out, and the position after them; `None` if the file ends first.
fn logical_bytes(file: &[u8], mut pos: u64, len: u64) -> Option<(Vec<u8>, u64)> {
    let mut out = Vec::new();
    while (out.len() as u64) < len {
        let in_block = pos % BLOCK_SIZE;
        if in_block < BLOCK_HEADER_SIZE {
            pos = pos.checked_add(BLOCK_HEADER_SIZE - in_block)?;
        }
        let room = BLOCK_SIZE - pos % BLOCK_SIZE;
        let take = room.min(len - out.len() as u64);
        let from = usize::try_from(pos).ok()?;
        let to = usize::try_from(pos.checked_add(take)?).ok()?;
        out.extend_from_slice(file.get(from..to)?);
        pos += take;
    }
    Some((out, pos))
}

/// Whether the chunk at `begin` passes its header hash and its data hash,
/// both computed here from the file bytes.
fn hashes_verify(file: &[u8], begin: u64) -> bool {
    let le_u64 = |bytes: &[u8], at: usize| -> u64 {
        let mut value = [0u8; 8];
        value.copy_from_slice(bytes.get(at..at + 8).unwrap_or(&[0; 8]));
        u64::from_le_bytes(value)
    };
    let Some((header, after_header)) = logical_bytes(file, begin, CHUNK_HEADER_SIZE) else { return false };
    if le_u64(&header, 0) != riegeli_hash::hash(header.get(8..).unwrap_or_default()) {
        return false;
    }
    let data_size = le_u64(&header, 8);
    if data_size > file.len() as u64 {
        return false;
    }
    let Some((data, _)) = logical_bytes(file, after_header, data_size) else { return false };
    le_u64(&header, 16) == riegeli_hash::hash(&data)
}
