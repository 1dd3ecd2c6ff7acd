//! The check behind the `array_record_reader` fuzz target: an
//! `ArrayRecordReader` over arbitrary file bytes, asked for arbitrary record
//! indices (in range, at the end, far past it, repeated, out of order) by
//! every read it has: `read`, `read_batch` and `read_batch_each` of indices
//! and of ranges (with one thread and with two), `seek_record` + `read_next`.
//!
//! Properties: nothing panics; an index at or past `num_records` is an
//! error; an empty or reversed range is no records; a batch succeeds exactly
//! when each of its records reads alone and then holds those records, in the
//! order asked; a range holds `end - start` records, those read alone; the
//! serial and the parallel reads agree; `read_next` from `seek_record(i)`
//! gives records `i, i + 1, ...` and `None` at the end.
//!
//! The same function replays `fuzz/regressions/array_record_reader/` in
//! `crates/riegeli-records/tests/fuzz_regressions.rs` (which includes this
//! file with `#[path]`), so this file uses only `riegeli_records` and `std`.

use std::io::Cursor;
use std::ops::Range;
use std::sync::OnceLock;

use riegeli_records::{ArrayRecordReader, ArrayRecordReaderOptions, ChunkReadOptions};

/// At most this many indices are asked.
const MAX_INDICES: usize = 24;

/// Ranges are read between consecutive indices of the first this many: a
/// range reads up to the whole file three times (serially, in parallel, and
/// chunk by chunk), which made 23 of them most of a run's time.
const RANGE_INDICES: usize = 6;

/// Small limits, so that no input makes a run allocate much.
fn options(parallelism: usize, readahead_buffer_size: u64) -> ArrayRecordReaderOptions {
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
        readahead_buffer_size,
        // A damaged trailer sends the reader to a scan, which is fuzzed too.
        scan_fallback: true,
        ..ArrayRecordReaderOptions::default()
    }
}

/// Valid files the structure-aware mode mutates: snappy chunks of 5
/// records, transposed zstd chunks of 3, padded uncompressed chunks of 11;
/// 300 records of up to 1 KiB, so that batches use the threads. No brotli:
/// its decoder (fuzzed by `decompress_brotli` and `simple_chunk`) took most
/// of a run here, under coverage instrumentation, for no reader code.
fn seeds() -> &'static [Vec<u8>] {
    static SEEDS: OnceLock<Vec<Vec<u8>>> = OnceLock::new();
    SEEDS.get_or_init(|| {
        let options = [
            "group_size:5,snappy",
            "group_size:3,transpose,zstd:1",
            "group_size:11,uncompressed,pad_to_block_boundary:true",
        ];
        super::seeds::array_record_seeds(&options, 300, |i| {
            let len = (i as usize * 53) % 1024;
            (0..len).map(|j| (i as usize * 31 + j * 7 + j / 5) as u8).collect()
        })
    })
}

/// An index request: `[selector, low, high]`; the selector picks how the
/// 16-bit value maps to an index, given the file's `n` records.
fn index(request: [u8; 3], n: u64) -> u64 {
    let [selector, low, high] = request;
    let value = u64::from(u16::from_le_bytes([low, high]));
    match selector % 5 {
        // In range (and the two past the end), most often.
        0 | 1 => value % (n + 2),
        // Counted back from the end.
        2 => n.saturating_sub(value % 8),
        // Far past the end, up to `u64::MAX`.
        3 => u64::MAX - value,
        // The raw value.
        _ => value,
    }
}

/// Input layout: byte 0 picks the mode (even: raw file, odd: seed file
/// `byte 0 / 2 % 3`); byte 1: the number of index requests (`% 25`) and,
/// in its top bits, the read-ahead budget; then 3 bytes per request (see
/// [`index`]); then the raw file, or for a seed file: bytes 0 and 1 of the
/// rest (little-endian) truncate it to `len - value` bytes when byte 2 is
/// odd, and the rest is 4-byte patches `[offset u24 LE, byte]` writing
/// `byte` at `offset % len`.
pub fn array_record_reader(data: &[u8]) {
    let [mode, counts, rest @ ..] = data else { return };
    let count = usize::from(*counts) % (MAX_INDICES + 1);
    let readahead = match counts >> 6 {
        0 => 64 << 20,
        1 => 0,
        2 => 1,
        _ => 4096,
    };
    let (requests, rest) = rest.split_at(rest.len().min(3 * count));
    let requests: Vec<[u8; 3]> = requests.chunks_exact(3).map(|r| [r[0], r[1], r[2]]).collect();
    let file = if mode % 2 == 0 {
        rest.to_vec()
    } else {
        let Some(seed) = seeds().get(usize::from(mode / 2) % 3) else { return };
        super::seeds::mutated(seed, rest)
    };
    // The high bit of `mode` leaves the parallel reader's index in the file
    // (`index_storage_option:offloaded`), compared with the serial one's in memory.
    check_reads(&file, &requests, readahead, *mode >= 0x80);
}

/// Every read of the indices `requests` ask for, serially and on 2 threads
/// (with the index `offloaded`, if so).
fn check_reads(file: &[u8], requests: &[[u8; 3]], readahead: u64, offloaded: bool) {
    let Ok(mut serial) = ArrayRecordReader::with_options(Cursor::new(file), options(1, readahead)) else {
        assert!(ArrayRecordReader::with_options(Cursor::new(file), options(2, readahead)).is_err());
        return;
    };
    let parallel_options = ArrayRecordReaderOptions { offload_index: offloaded, ..options(2, readahead) };
    let mut parallel =
        ArrayRecordReader::with_options(Cursor::new(file), parallel_options).expect("opened once already");
    let n = serial.num_records();
    assert_eq!(n, parallel.num_records());
    let indices: Vec<u64> = requests.iter().map(|&r| index(r, n)).collect();

    // Each alone, serially; past the end is an error.
    let alone: Vec<Option<Vec<u8>>> = indices
        .iter()
        .map(|&i| {
            let record = serial.read(i);
            if i >= n {
                assert!(record.is_err(), "read({i}) of {n} records succeeded");
            }
            record.ok().map(|r| r.to_vec())
        })
        .collect();
    let expected: Option<Vec<Vec<u8>>> = alone.iter().cloned().collect();

    // As a batch: it succeeds exactly when every record reads alone.
    let batch = serial.read_batch(&indices).map(to_vecs);
    assert_eq!(batch.as_ref().ok(), expected.as_ref(), "read_batch({indices:?}), one thread");
    let batch_parallel = parallel.read_batch(&indices).map(to_vecs);
    assert_eq!(batch_parallel.as_ref().ok(), expected.as_ref(), "read_batch({indices:?}), two threads");
    // Chunk by chunk: the same records at the same positions, each position once.
    let mut each: Vec<Option<Vec<u8>>> = vec![None; indices.len()];
    let each_result = parallel.read_batch_each(&indices, |records| {
        for (p, record) in records {
            assert!(each.get_mut(*p).is_some_and(|slot| slot.replace(record.to_vec()).is_none()), "position {p}");
        }
    });
    if each_result.is_ok() {
        let each: Option<Vec<Vec<u8>>> = each.into_iter().collect();
        assert_eq!(each.as_ref(), expected.as_ref(), "read_batch_each({indices:?})");
    } else {
        assert!(expected.is_none(), "read_batch_each({indices:?}) failed alone");
    }

    // Ranges between consecutive indices, in either order.
    for pair in indices.get(..RANGE_INDICES).unwrap_or(&indices).windows(2) {
        let &[a, b] = pair else { continue };
        let range = a..b;
        let got = serial.read_batch(range.clone()).map(to_vecs);
        let got_parallel = parallel.read_batch(range.clone()).map(to_vecs);
        assert_eq!(
            got.as_ref().map_err(ToString::to_string),
            got_parallel.as_ref().map_err(ToString::to_string),
            "read_batch({range:?})"
        );
        let mut each = Vec::new();
        let each_result = parallel.read_batch_each(range.clone(), |records| {
            for (p, record) in records {
                assert_eq!(*p, each.len(), "positions in order");
                each.push(record.to_vec());
            }
        });
        assert_eq!(
            each_result.map(|()| each).map_err(|e| e.to_string()),
            got.as_ref().map(Clone::clone).map_err(ToString::to_string),
            "read_batch_each({range:?})"
        );
        check_range(&mut serial, range, got.ok());
    }

    // Sequentially from the first index, a few records.
    if let Some(&first) = indices.first() {
        parallel.seek_record(first);
        assert_eq!(parallel.record_index(), first.min(n));
        for i in first.min(n)..first.min(n).saturating_add(3) {
            match parallel.read_next() {
                Ok(Some(record)) => {
                    assert!(i < n, "read_next gave a record past the end");
                    let alone = serial.read(i).ok();
                    assert_eq!(alone.as_deref(), Some(&record[..]), "read_next at {i}");
                }
                Ok(None) => {
                    assert_eq!(i, n, "read_next ended at {i} of {n}");
                    break;
                }
                Err(_) => break,
            }
        }
    }
}

/// A range read, checked against the records read one by one.
fn check_range(reader: &mut ArrayRecordReader<Cursor<&[u8]>>, range: Range<u64>, got: Option<Vec<Vec<u8>>>) {
    let n = reader.num_records();
    if range.start >= range.end {
        assert_eq!(got, Some(Vec::new()), "an empty range {range:?}");
        return;
    }
    if range.end > n {
        assert_eq!(got, None, "range {range:?} past the end of {n} records");
        return;
    }
    let Some(got) = got else { return };
    assert_eq!(got.len() as u64, range.end - range.start, "range {range:?}");
    // The first and last few, read alone.
    let len = got.len();
    for (offset, record) in got.iter().enumerate().filter(|&(k, _)| k < 3 || k + 3 >= len) {
        let index = range.start + offset as u64;
        let alone = reader.read(index).ok();
        assert_eq!(alone.as_deref(), Some(&record[..]), "read_range({range:?})[{offset}]");
    }
}

fn to_vecs(records: Vec<impl AsRef<[u8]>>) -> Vec<Vec<u8>> {
    records.iter().map(|r| r.as_ref().to_vec()).collect()
}
