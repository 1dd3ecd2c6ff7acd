//! The check behind the `array_record_open` fuzz target: open an ArrayRecord
//! file made of the fuzz input, read it whole and by index, serially and in
//! parallel (from memory, and from a file whose chunks the decoding threads
//! read themselves), and assert that nothing panics and every way agrees.
//!
//! The same function replays `fuzz/regressions/array_record_open/` in
//! `crates/riegeli-records/tests/fuzz_regressions.rs` (which includes this
//! file with `#[path]`), so this file uses only `riegeli_records` and `std`.
//! Under `cfg(fuzzing)` hash checks are off, so mutated bytes reach the
//! footer, postscript and chunk parsers.

use std::io::{Cursor, Read, Seek};
use std::sync::OnceLock;
use std::sync::atomic::{AtomicU64, Ordering};

use riegeli_records::{ArrayRecordReader, ArrayRecordReaderOptions, ChunkReadOptions, PositionalFile, Selection};

/// Small limits, so that no input makes a run allocate much.
fn options(parallelism: usize) -> ArrayRecordReaderOptions {
    ArrayRecordReaderOptions {
        chunks: ChunkReadOptions {
            max_chunk_data_size: 1 << 20,
            // Above every chunk of the seed files; a damaged size is zero-filled
            // up to it before decoding, so it bounds what that costs a run.
            max_decoded_size: 1 << 16,
            max_num_records: 1 << 14,
            ..ChunkReadOptions::default()
        },
        // `parallelism` threads, the calling one included.
        parallelism: parallelism - 1,
        // A damaged trailer sends the reader to a scan, which is fuzzed too.
        scan_fallback: true,
        ..ArrayRecordReaderOptions::default()
    }
}

/// Valid files the structure-aware mode mutates: simple chunks with zstd,
/// transposed chunks with snappy, uncompressed with padding. Each holds
/// 160 KiB of records, so that the parallel reads use their workers.
fn seeds() -> &'static [Vec<u8>] {
    static SEEDS: OnceLock<Vec<Vec<u8>>> = OnceLock::new();
    SEEDS.get_or_init(|| {
        let options = [
            "group_size:16,zstd:3",
            "group_size:7,transpose,snappy",
            "group_size:40,uncompressed,pad_to_block_boundary:true",
        ];
        super::seeds::array_record_seeds(&options, 160, |i| {
            (0..1024u32).map(|j| b"riegeli array record "[((i + j) % 21) as usize]).collect()
        })
    })
}

/// Input layout: byte 0 picks the mode. Even: the rest of the input is the
/// file. Odd: seed file `byte 0 / 2 % 3` with patches; then byte 1 and 2
/// (little-endian) truncate the file to `len - value` bytes when byte 3 is
/// odd; the rest is 4-byte patches `[offset u24 LE, byte]` writing `byte` at
/// `offset % len`. The last 8 bytes of the input (when it has more than 12)
/// choose record indices to read.
pub fn array_record_open(data: &[u8]) {
    let Some((&mode, rest)) = data.split_first() else { return };
    let (file, picks) = if mode % 2 == 0 {
        (rest.to_vec(), rest.get(rest.len().saturating_sub(8)..).unwrap_or_default())
    } else {
        let Some(seed) = seeds().get(usize::from(mode / 2) % 3) else { return };
        let file = super::seeds::mutated(seed, rest);
        let patches = rest.get(3..).unwrap_or_default();
        (file, patches.get(patches.len().saturating_sub(8)..).unwrap_or_default())
    };
    check_file(&file, picks);
}

/// Opens `file` serially and with two threads; every read must agree.
fn check_file(file: &[u8], picks: &[u8]) {
    let Ok(mut serial) = ArrayRecordReader::with_options(Cursor::new(file), options(1)) else {
        // Opening failed: so must it in parallel (opening does not decode in parallel).
        assert!(ArrayRecordReader::with_options(Cursor::new(file), options(2)).is_err());
        return;
    };
    let mut parallel = ArrayRecordReader::with_options(Cursor::new(file), options(2)).expect("opened once already");
    let n = serial.num_records();
    assert_eq!(n, parallel.num_records());
    assert_eq!(serial.index().num_chunks, parallel.index().num_chunks);

    // Indices from the input, some past the end.
    let indices: Vec<u64> =
        picks.chunks(2).map(|p| u64::from(p.iter().fold(0u16, |acc, &b| acc << 8 | u16::from(b))) % (n + 2)).collect();
    agree(&mut serial, &mut parallel, &indices);
    if let Some(mut on_disk) = on_disk(file) {
        assert_eq!(on_disk.num_records(), n);
        agree(&mut serial, &mut on_disk, &indices);
    }
    for &index in &indices {
        if let Err(e) = serial.read(index) {
            let message = e.to_string();
            assert!(!message.is_empty() && !message.ends_with('.'), "{message:?}");
        }
    }
}

/// `file` written to a scratch file of its own and opened there with two
/// threads (positional reads on the decoding threads); `None` if the scratch
/// file cannot be written. The file is removed once open (the reader keeps
/// its handle); each call has its own name, as tests replay inputs of
/// several targets at once in one process.
fn on_disk(file: &[u8]) -> Option<ArrayRecordReader<PositionalFile>> {
    static CALLS: AtomicU64 = AtomicU64::new(0);
    let call = CALLS.fetch_add(1, Ordering::Relaxed);
    let name = format!("riegeli-fuzz-{}-{call}.array_record", std::process::id());
    let path = std::env::temp_dir().join(name);
    std::fs::write(&path, file).ok()?;
    let reader = ArrayRecordReader::open(&path, options(2));
    let _ = std::fs::remove_file(&path);
    Some(reader.expect("opened from memory already"))
}

/// Every read of `parallel` (whole, by index list, by range) agrees with `serial`.
fn agree<R: Read + Seek + riegeli_records::ReadHints>(
    serial: &mut ArrayRecordReader<Cursor<&[u8]>>,
    parallel: &mut ArrayRecordReader<R>,
    indices: &[u64],
) {
    let n = serial.num_records();
    let all = serial.read_batch(Selection::All).map_err(|e| e.to_string());
    assert_eq!(all, parallel.read_batch(Selection::All).map_err(|e| e.to_string()), "read_all");
    if let Ok(all) = &all {
        assert_eq!(all.len() as u64, n);
    }
    let batch = serial.read_batch(indices).map_err(|e| e.to_string());
    assert_eq!(batch, parallel.read_batch(indices).map_err(|e| e.to_string()), "read_parallel");
    if let Ok(batch) = &batch {
        for (record, &index) in batch.iter().zip(indices) {
            assert_eq!(serial.read(index).ok().as_ref(), Some(record), "read({index})");
        }
    }
    if let [a, b, ..] = indices[..] {
        let range = a.min(b)..a.max(b);
        let serial_range = serial.read_batch(range.clone()).map_err(|e| e.to_string());
        assert_eq!(serial_range, parallel.read_batch(range).map_err(|e| e.to_string()), "read_range");
    }
}
