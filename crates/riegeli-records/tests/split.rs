//! The split rule (`RecordReader::set_byte_range`): the ranges of any partition
//! of a file read its records exactly once between them, with the positions a
//! whole-file read gives, for every golden file written by C++ (ArrayRecord
//! files included: their footer and postscript are never records).

use std::io::Cursor;
use std::ops::Range;

use proptest::prelude::*;
use riegeli_records::{RecordPosition, RecordReader, RecordReaderOptions, byte_ranges};

use crate::golden::{files, record_set, testdata};

type Read = Vec<(Option<RecordPosition>, Vec<u8>)>;

fn options(parallelism: usize) -> RecordReaderOptions {
    RecordReaderOptions { parallelism, parallel_min_chunk_size: 0, ..RecordReaderOptions::default() }
}

/// Every record of `range`, with its position.
fn read_range(file: &[u8], range: Range<u64>, parallelism: usize) -> Read {
    let mut reader = RecordReader::with_options(Cursor::new(file), options(parallelism));
    reader.set_byte_range(range.clone()).unwrap_or_else(|e| panic!("{range:?}: {e}"));
    let mut out = Vec::new();
    while let Some(record) = reader.read_record().unwrap_or_else(|e| panic!("{range:?}: {e}")) {
        out.push((reader.last_pos(), record.to_vec()));
    }
    assert_eq!(reader.read_record().unwrap(), None, "{range:?}: the end stays the end");
    out
}

/// Every record of the file read whole, with its position.
fn read_whole(file: &[u8]) -> Read {
    read_range(file, 0..u64::MAX, 0)
}

/// The partition of `0..size` at `cuts` (any offsets, sorted here).
fn partition(size: u64, mut cuts: Vec<u64>) -> Vec<Range<u64>> {
    cuts.retain(|&c| c > 0 && c < size);
    cuts.sort_unstable();
    cuts.dedup();
    let mut bounds = vec![0];
    bounds.extend(cuts);
    bounds.push(size);
    bounds.windows(2).map(|w| w[0]..w[1]).collect()
}

fn read_partition(file: &[u8], ranges: &[Range<u64>], parallelism: usize) -> Read {
    ranges.iter().flat_map(|range| read_range(file, range.clone(), parallelism)).collect()
}

/// The golden files: (path, bytes, expected records).
fn golden() -> Vec<(String, Vec<u8>, Vec<Vec<u8>>)> {
    let mut out = Vec::new();
    for kind in ["valid", "array_record"] {
        for file in files(kind) {
            let path = file["path"].as_str().unwrap().to_owned();
            let bytes = std::fs::read(testdata().join(&path)).unwrap();
            let expected = record_set(file["records"].as_str().unwrap());
            out.push((path, bytes, expected));
        }
    }
    assert!(out.len() >= 26);
    out
}

#[test]
fn every_golden_file_split_at_every_chunk_boundary_and_block() {
    for (path, file, expected) in golden() {
        let whole = read_whole(&file);
        assert_eq!(whole.iter().map(|(_, r)| r.clone()).collect::<Vec<_>>(), expected, "{path}");
        let size = file.len() as u64;
        // Cuts at every chunk boundary, one byte on either side of it, and at block boundaries.
        let mut boundaries = Vec::new();
        let mut reader = RecordReader::new(Cursor::new(&file));
        while reader.read_record().unwrap().is_some() {
            let chunk = reader.last_pos().unwrap().chunk_begin();
            boundaries.extend([chunk.saturating_sub(1), chunk, chunk + 1]);
        }
        for cuts in [boundaries.clone(), (1..=size / 65536).map(|b| b * 65536).collect(), vec![size / 2]] {
            let ranges = partition(size, cuts);
            assert_eq!(read_partition(&file, &ranges, 0), whole, "{path}: {} ranges", ranges.len());
        }
        for target in [1, 65536, 200_000] {
            let ranges: Vec<_> = byte_ranges(size, target).collect();
            assert_eq!(read_partition(&file, &ranges, 1), whole, "{path}: byte_ranges(.., {target}) with read-ahead");
        }
        // A range with no chunk beginning in it, and one past the end, read nothing.
        assert!(read_range(&file, 1..2, 0).is_empty(), "{path}");
        assert!(read_range(&file, size..size + 10, 0).is_empty(), "{path}");
    }
}

/// A file that notes the lowest and highest offsets read.
struct Counting<'a> {
    inner: Cursor<&'a [u8]>,
    lowest: u64,
    highest: u64,
}

impl<'a> Counting<'a> {
    fn new(file: &'a [u8]) -> Self {
        Self { inner: Cursor::new(file), lowest: u64::MAX, highest: 0 }
    }
}

impl std::io::Read for Counting<'_> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        self.lowest = self.lowest.min(self.inner.position());
        let n = self.inner.read(buf)?;
        self.highest = self.highest.max(self.inner.position());
        Ok(n)
    }
}

impl std::io::Seek for Counting<'_> {
    fn seek(&mut self, pos: std::io::SeekFrom) -> std::io::Result<u64> {
        self.inner.seek(pos)
    }
}

/// Reads what it is asked for: hints change nothing.
impl riegeli_records::ReadHints for Counting<'_> {}

#[test]
fn a_range_does_not_read_the_file_from_its_beginning() {
    // The reader of a late range reads the block header where it starts and what
    // follows, nothing before it (not even the chunk that straddles the block).
    let file = std::fs::read(testdata().join("valid/simple_none.riegeli")).unwrap();
    let size = file.len() as u64;
    assert!(size > 2 * 65536 + 100);
    let start = 2 * 65536 + 100;
    let mut reader = RecordReader::new(Counting::new(&file));
    reader.set_byte_range(start..size).unwrap();
    assert!(reader.read_record().unwrap().is_some());
    let lowest = reader.get_ref().lowest;
    assert!(lowest >= 2 * 65536, "read from {lowest}");
}

#[test]
fn a_range_reads_no_chunk_that_begins_past_its_end() {
    // Chunks of about 1 MiB: the reader of a range reads to the end of the chunk that
    // crosses its end (and at most one minimal read more), serially or reading ahead.
    let mut writer =
        riegeli_records::RecordWriter::new(Vec::new(), "uncompressed,chunk_size:1M".parse().unwrap()).unwrap();
    for i in 0..8000u32 {
        writer.write_record(&i.to_le_bytes().repeat(256)).unwrap();
    }
    let file = writer.close().unwrap();
    let mut chunks = Vec::new();
    let mut scan = riegeli_records::ChunkReader::new(Cursor::new(&file), Default::default(), 0);
    while let Some(chunk) = scan.read_chunk().unwrap() {
        chunks.push((chunk.begin, chunk.end));
    }
    assert!(chunks.len() > 6);
    for parallelism in [0, 2] {
        for range in byte_ranges(file.len() as u64, 3 << 20) {
            let mut reader = RecordReader::with_options(Counting::new(&file), options(parallelism));
            reader.set_byte_range(range.clone()).unwrap();
            while reader.read_record().unwrap().is_some() {}
            let last_end = chunks.iter().filter(|(begin, _)| *begin < range.end).map(|&(_, end)| end).max().unwrap();
            let highest = reader.get_ref().highest;
            assert!(highest <= last_end + (64 << 10), "{range:?}, parallelism {parallelism}: read to {highest}");
        }
    }
}

#[test]
fn damaged_files_split_read_each_record_at_most_once_and_lose_none() {
    for file in files("corrupt") {
        let path = file["path"].as_str().unwrap();
        let bytes = std::fs::read(testdata().join(path)).unwrap();
        let read = |range: Range<u64>| {
            let mut reader = RecordReader::new(Cursor::new(&bytes));
            reader.set_recovery(|_| true);
            let mut out = Vec::new();
            if reader.set_byte_range(range).is_err() {
                return out;
            }
            while let Ok(Some(record)) = reader.read_record() {
                out.push((reader.last_pos().unwrap().numeric(), record.to_vec()));
            }
            out
        };
        let size = bytes.len() as u64;
        let whole = read(0..size);
        let split: Vec<_> = byte_ranges(size, 65536).flat_map(read).collect();
        // In file order, none twice; a range may recover what the whole read skipped
        // (its reader starts past the damage), but loses nothing the whole read returns.
        assert!(split.windows(2).all(|w| w[0].0 < w[1].0), "{path}: positions out of order or repeated");
        let missing: Vec<_> = whole.iter().filter(|r| !split.contains(r)).map(|r| r.0).collect();
        assert!(missing.is_empty(), "{path}: records at {missing:?} lost by the split");
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    #[test]
    fn random_partitions_read_every_record_once(
        file_index in 0usize..26,
        cuts in prop::collection::vec(0u64..300_000, 0..12),
        parallelism in 0usize..3,
    ) {
        let golden = golden();
        let (path, file, _) = &golden[file_index % golden.len()];
        let size = file.len() as u64;
        let cuts = cuts.into_iter().map(|c| c % size.max(1)).collect();
        let ranges = partition(size, cuts);
        prop_assert_eq!(read_partition(file, &ranges, parallelism), read_whole(file), "{} {:?}", path, ranges);
    }
}
