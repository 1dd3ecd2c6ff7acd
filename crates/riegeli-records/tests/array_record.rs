//! ArrayRecord: golden files of the C++ writer read through every access path,
//! round trips, damaged postscripts and footers, and indexing plain files.

use std::io::Cursor;

use proptest::prelude::*;
use riegeli_records::index_riegeli_file;
use riegeli_records::{
    ArrayRecordReader, ArrayRecordReaderOptions, ArrayRecordWriter, ArrayRecordWriterOptions, IndexSource,
    RecordReader, RecordWriter, RecordWriterOptions, Selection,
};

use crate::common::{read_all, sample_records};
use crate::golden::{files, record_set, testdata};

/// Deterministic shuffled indices with repeats.
pub(crate) fn scrambled(n: u64, count: usize, seed: u64) -> Vec<u64> {
    let mut state = seed | 1;
    (0..count)
        .map(|_| {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state % n
        })
        .collect()
}

/// Reads `file` through every access path and compares with `expected`.
pub(crate) fn check_every_path(file: &[u8], expected: &[Vec<u8>], what: &str) {
    let n = expected.len() as u64;
    // Serial, and 2 threads beside the calling one.
    for parallelism in [0, 2] {
        let options = ArrayRecordReaderOptions { parallelism, ..Default::default() };
        let mut reader = ArrayRecordReader::with_options(Cursor::new(file), options).unwrap();
        assert_eq!(
            reader.index().index_source,
            IndexSource::Footer,
            "{what}: {:?}",
            reader.index().fallback_reason.as_deref()
        );
        assert_eq!(reader.num_records(), n, "{what}");
        // read(i), forwards and backwards.
        for i in 0..n {
            assert_eq!(reader.read(i).unwrap(), expected[i as usize], "{what} read({i})");
        }
        for i in (0..n).rev().step_by(3) {
            assert_eq!(reader.read(i).unwrap(), expected[i as usize], "{what} read({i}) backwards");
        }
        assert!(reader.read(n).is_err(), "{what}: read past the end");
        // Everything, serially and in parallel.
        assert_eq!(reader.read_batch(Selection::All).unwrap(), expected, "{what} read_all");
        assert_eq!(reader.read_batch(Selection::All).unwrap(), expected, "{what} read_all_parallel");
        // Ranges.
        for (start, end) in [(0, n), (0, 0), (n / 3, n / 2 + 1), (n.saturating_sub(1), n), (n / 2, n / 2)] {
            let (start, end) = (start.min(n), end.min(n));
            let want = &expected[start as usize..end as usize];
            assert_eq!(reader.read_batch(start..end).unwrap(), want, "{what} range {start}..{end}");
            assert_eq!(reader.read_batch(start..end).unwrap(), want, "{what} par range {start}..{end}");
            let mut each = Vec::new();
            reader
                .read_batch_each(start..end, |records| {
                    for (p, r) in records {
                        assert_eq!(*p, each.len(), "{what}: positions in the range, in order");
                        each.push(r.to_vec());
                    }
                })
                .unwrap();
            assert_eq!(each, want, "{what} range {start}..{end} chunk by chunk");
        }
        assert!(reader.read_batch(0..n + 1).is_err(), "{what}: range past the end");
        // Index lists: scrambled with repeats, sorted, reversed.
        if n > 0 {
            let indices = scrambled(n, 300, n);
            let want: Vec<&[u8]> = indices.iter().map(|&i| &expected[i as usize][..]).collect();
            assert_eq!(reader.read_batch(&indices).unwrap(), want, "{what} read_indices");
            assert_eq!(reader.read_batch(&indices).unwrap(), want, "{what} read_parallel");
            let mut each = vec![None; indices.len()];
            let mut last_position = None;
            reader
                .read_batch_each(&indices, |records| {
                    for (p, record) in records {
                        assert!(each[*p].replace(record.to_vec()).is_none(), "{what}: position {p} twice");
                        last_position = Some(*p);
                    }
                })
                .unwrap();
            let each: Vec<Vec<u8>> = each.into_iter().map(|r| r.expect("every position")).collect();
            assert_eq!(each, want, "{what} read_parallel_each");
            assert!(last_position.is_some(), "{what}");
            let reversed: Vec<u64> = (0..n).rev().collect();
            let want: Vec<&[u8]> = reversed.iter().map(|&i| &expected[i as usize][..]).collect();
            assert_eq!(reader.read_batch(&reversed).unwrap(), want, "{what} reversed");
        }
        // One index at a time (a data source's `source[i]`), in scrambled order.
        for i in scrambled(n.max(1), 40, n + 7).into_iter().filter(|&i| i < n) {
            assert_eq!(reader.read_batch(&[i]).unwrap(), [&expected[i as usize][..]], "{what} read_indices([{i}])");
        }
        assert!(reader.read_batch(&[0, n]).is_err(), "{what}: index past the end");
        assert_eq!(reader.read_batch(&[]).unwrap(), Vec::<bytes::Bytes>::new());
    }
    // A plain RecordReader returns the data records only.
    let mut reader = RecordReader::new(Cursor::new(file));
    assert_eq!(read_all(&mut reader), expected, "{what} plain RecordReader");
}

/// A record read alone decodes its chunk only as far as it ends: with the end
/// of a zstd chunk's values damaged (and hashes not checked), the records
/// before the damage still read one at a time, and a read of all of them fails.
#[test]
fn a_record_read_alone_decodes_its_chunk_only_up_to_it() {
    // Chunks of 20 records of 8 KB of random letters of a 4-letter alphabet:
    // 160 KB decoded, in two zstd blocks (the first ends after record 16), about
    // 40 KB compressed, so that the first chunk stays inside the first 64 KiB
    // block of the file. The second chunk lets the parallel reads use threads.
    let mut state = 0x9e37_79b9_7f4a_7c15u64;
    let mut letter = move || {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        b"acgt"[(state >> 60) as usize % 4]
    };
    let records: Vec<Vec<u8>> = (0..40).map(|_| (0..8000).map(|_| letter()).collect()).collect();
    let mut writer = ArrayRecordWriter::new(Vec::new(), "group_size:20,zstd:3".parse().unwrap()).unwrap();
    for record in &records {
        writer.write_record(record).unwrap();
    }
    let mut file = writer.close().unwrap();
    let mut chunks = riegeli_records::ChunkReader::new(&file[..], Default::default(), 0);
    let data_chunk =
        std::iter::from_fn(|| chunks.read_chunk().unwrap()).find(|chunk| chunk.header.num_records() == 20).unwrap();
    let end = (data_chunk.begin + 40 + data_chunk.data.len() as u64) as usize;
    assert!(end < 1 << 16, "the chunk is not split by a block header");
    for byte in &mut file[end - 40..end - 4] {
        *byte ^= 0x5a;
    }
    let mut options = ArrayRecordReaderOptions { parallelism: 1, ..Default::default() };
    options.chunks.verify_hashes = false;
    let open = || ArrayRecordReader::with_options(Cursor::new(&file[..]), options.clone()).unwrap();
    for i in [0, 3, 15] {
        assert_eq!(open().read(i).unwrap(), records[i as usize], "read({i})");
        assert_eq!(open().read_batch(&[i, 1]).unwrap(), [&records[i as usize][..], &records[1][..]]);
    }
    assert_eq!(open().read_batch(0..5).unwrap(), &records[..5]);
    let (first, second) = (&records[..16], &records[20..]);
    let want: Vec<&[u8]> = first.iter().chain(second).map(Vec::as_slice).collect();
    let indices: Vec<u64> = (0..16).chain(20..40).collect();
    assert_eq!(open().read_batch(&indices).unwrap(), want, "on decoding threads");
    let mut reader = open();
    assert!(reader.read_batch(Selection::All).is_err(), "the damage is seen by a read of the whole chunk");
    assert!(open().read(19).is_err(), "and by a read of its last record");
    assert!(open().read_batch(&[0, 19, 20]).is_err(), "on decoding threads too");
    // Record by record, in order: each read fails exactly when decoding as far as it does
    // (as a batch read of it would), whatever was decoded before.
    let mut reader = open();
    for i in 0..20 {
        assert_eq!(reader.read(i).ok(), open().read_batch(&[i]).ok().map(|r| r[0].clone()), "read({i})");
        assert_eq!(reader.read(i).is_ok(), i < 16, "read({i})");
    }
    assert_eq!(reader.read(2).unwrap(), records[2], "decoded already");
}

#[test]
fn golden_files_every_access_path() {
    let golden = files("array_record");
    assert_eq!(golden.len(), 13);
    for file in golden {
        let path = file["path"].as_str().unwrap();
        let bytes = std::fs::read(testdata().join(path)).unwrap();
        let expected = record_set(file["records"].as_str().unwrap());
        check_every_path(&bytes, &expected, path);
        let reader = ArrayRecordReader::new(Cursor::new(&bytes)).unwrap();
        // One data chunk per manifest chunk with records, less the footer and postscript.
        let with_records = file["chunks"].as_array().unwrap().iter().filter(|c| c["num_records"] != 0).count();
        assert_eq!(reader.index().num_chunks, with_records - 2, "{path}");
        // The stored options are C++'s ToString() of the options used.
        let stored = reader.index().writer_options.as_deref().unwrap();
        let ours: ArrayRecordWriterOptions = file["options"].as_str().unwrap().parse().unwrap();
        let ours = ArrayRecordWriterOptions { parallelism: Some(0), ..ours }.to_string();
        assert_eq!(stored, ours, "{path}");
    }
}

#[test]
fn find_trailer_recognises_the_golden_files() {
    use riegeli_records::{ArrayRecordTrailer, find_array_record_trailer as find_trailer};
    for file in files("array_record") {
        let path = file["path"].as_str().unwrap();
        let bytes = std::fs::read(testdata().join(path)).unwrap();
        let want = ArrayRecordTrailer {
            footer_offset: file["footer_offset"].as_u64().unwrap(),
            postscript_pos: file["size"].as_u64().unwrap() - 65536,
        };
        assert_eq!(find_trailer(Cursor::new(&bytes)).unwrap(), Some(want), "{path}");
    }
    for kind in ["valid", "corrupt"] {
        for file in files(kind) {
            let path = file["path"].as_str().unwrap();
            let bytes = std::fs::read(testdata().join(path)).unwrap();
            assert_eq!(find_trailer(Cursor::new(&bytes)).unwrap(), None, "{path}");
        }
    }
    assert_eq!(find_trailer(Cursor::new(&[0u8; 100][..])).unwrap(), None, "shorter than 64 KiB");
}

/// Options that read a file without a usable footer by a scan.
fn scanning() -> ArrayRecordReaderOptions {
    ArrayRecordReaderOptions { scan_fallback: true, ..Default::default() }
}

/// Opens `file` by a scan if need be.
fn open_scanning(file: &[u8]) -> ArrayRecordReader<Cursor<&[u8]>> {
    ArrayRecordReader::with_options(Cursor::new(file), scanning()).unwrap()
}

/// Opening `file` with the default options fails, saying that it has no usable
/// footer and how to read it anyway.
fn assert_refused(file: &[u8], what: &str) -> riegeli_records::Error {
    let error = ArrayRecordReader::new(Cursor::new(file)).unwrap_err();
    assert!(error.is_corruption(), "{what}: {error}");
    let message = error.to_string();
    assert!(message.contains("ArrayRecord index"), "{what}: {message}");
    assert!(message.contains("scan_fallback"), "{what}: {message}");
    error
}

#[test]
fn golden_plain_cuts_are_scanned() {
    // valid/N.riegeli is N.array_record cut at its footer: no postscript, so the reader
    // refuses it, as C++'s does, and scans it when asked to.
    for file in files("valid") {
        let path = file["path"].as_str().unwrap();
        let bytes = std::fs::read(testdata().join(path)).unwrap();
        let expected = record_set(file["records"].as_str().unwrap());
        assert_refused(&bytes, path);
        let mut plain = RecordReader::new(Cursor::new(&bytes));
        assert_eq!(read_all(&mut plain), expected, "{path}");
        assert_eq!(plain.footer_without_postscript(), None, "{path}: ends with data");
        let mut reader = open_scanning(&bytes);
        assert_eq!(reader.index().index_source, IndexSource::Scanned, "{path}");
        assert!(reader.index().fallback_reason.as_deref().unwrap().contains("ArrayRecord index"), "{path}");
        assert_eq!(reader.num_records(), expected.len() as u64, "{path}");
        assert_eq!(reader.read_batch(Selection::All).unwrap(), expected, "{path}");
        if !expected.is_empty() {
            let indices = scrambled(expected.len() as u64, 50, 7);
            let want: Vec<&[u8]> = indices.iter().map(|&i| &expected[i as usize][..]).collect();
            assert_eq!(reader.read_batch(&indices).unwrap(), want, "{path}");
        }
    }
}

#[test]
fn golden_transposed_with_field_projection() {
    // Projecting no field leaves transposed records empty, as C++ does for records
    // that are all proto fields; compare with the plain RecordReader's projection.
    let bytes = std::fs::read(testdata().join("array_record/transposed_zstd.array_record")).unwrap();
    let projection = riegeli_records::FieldProjection::from_paths([[1u32]]).unwrap();
    let options = ArrayRecordReaderOptions { field_projection: projection.clone(), ..Default::default() };
    let mut reader = ArrayRecordReader::with_options(Cursor::new(&bytes), options).unwrap();
    let mut plain = RecordReader::new(Cursor::new(&bytes));
    plain.set_field_projection(projection).unwrap();
    let want = read_all(&mut plain);
    assert_eq!(reader.read_batch(Selection::All).unwrap(), want);
    assert_eq!(reader.read_batch(Selection::All).unwrap(), want);
    let full = record_set("protos");
    assert_ne!(want, full, "the projection changes some records");
    assert_eq!(reader.read(5).unwrap(), want[5]);
}

fn write(records: &[Vec<u8>], options: &str) -> Vec<u8> {
    let mut writer = ArrayRecordWriter::new(Vec::new(), options.parse().unwrap()).unwrap();
    for record in records {
        writer.write_record(record).unwrap();
    }
    writer.close().unwrap()
}

#[test]
fn layout_invariants_of_our_files() {
    let records = sample_records(200, 3);
    for options in [
        "group_size:7,uncompressed",
        "group_size:100,transpose,zstd:3",
        "pad_to_block_boundary:true,group_size:30,snappy",
    ] {
        let file = write(&records, options);
        assert_eq!(file.len() % 65536, 0, "{options}");
        let chunks = crate::common::layout(&file);
        let postscript = chunks.iter().find(|c| c.begin == file.len() as u64 - 65536).expect("postscript chunk");
        assert_eq!(postscript.num_records, 3);
        assert_eq!(chunks.last().unwrap().chunk_type, b'p');
        if options.contains("pad_to_block_boundary:true") {
            // Every data chunk begins at a block boundary, after the first.
            let data: Vec<_> = chunks.iter().filter(|c| c.num_records > 0).collect();
            assert!(data.iter().skip(1).all(|c| c.begin % 65536 == 0), "{options}");
        }
        check_every_path(&file, &records, options);
    }
    // No records: still two blocks.
    let file = write(&[], "group_size:5");
    assert_eq!(file.len(), 131072);
    check_every_path(&file, &[], "empty");
}

#[test]
fn metadata_chunk_is_written_and_skipped() {
    let metadata = riegeli_records::RecordsMetadata { file_comment: "hello".into(), ..Default::default() };
    let options = ArrayRecordWriterOptions {
        group_size: 4,
        metadata: Some(prost::Message::encode_to_vec(&metadata)),
        ..Default::default()
    };
    let mut writer = ArrayRecordWriter::new(Vec::new(), options).unwrap();
    let records = sample_records(30, 9);
    for r in &records {
        writer.write_record(r).unwrap();
    }
    let file = writer.close().unwrap();
    assert_eq!(crate::common::layout(&file)[1].chunk_type, b'm');
    check_every_path(&file, &records, "with metadata");
    let mut reader = RecordReader::new(Cursor::new(&file));
    assert_eq!(reader.read_metadata().unwrap(), Some(metadata));
}

/// Offsets of the postscript records and of the footer chunk, from framing.
fn trailer(file: &[u8]) -> (u64, u64) {
    let chunks = crate::common::layout(file);
    let postscript = file.len() as u64 - 65536;
    let footer = chunks.iter().rfind(|c| c.num_records > 0 && c.begin < postscript).unwrap().begin;
    (postscript, footer)
}

#[test]
fn damaged_postscript_uses_another_copy() {
    let records = sample_records(100, 5);
    let file = write(&records, "group_size:10,uncompressed");
    let (postscript, _) = trailer(&file);
    // Data of the postscript chunk: 24 block header + 40 chunk header + 00 03 L L L, then 3 copies.
    let first_copy = (postscript + 24 + 40 + 5) as usize;
    let len = file[first_copy - 1] as usize;
    for (copy, byte) in [(0, 1), (0, len - 1), (1, 3), (2, 0)] {
        let mut damaged = file.clone();
        damaged[first_copy + copy * len + byte] ^= 0x40;
        let mut reader = ArrayRecordReader::new(Cursor::new(&damaged)).unwrap();
        assert_eq!(reader.index().index_source, IndexSource::Footer, "copy {copy} byte {byte}");
        assert_eq!(reader.read_batch(Selection::All).unwrap(), records);
    }
    // All three copies damaged: the file is refused, or scanned when asked to, every
    // record still there.
    let mut damaged = file.clone();
    for copy in 0..3 {
        damaged[first_copy + copy * len + 1] ^= 0x40;
    }
    let error = assert_refused(&damaged, "three postscript copies damaged");
    assert!(error.to_string().contains("no postscript at size - 65536"), "{error}");
    let mut reader = open_scanning(&damaged);
    assert_eq!(reader.index().index_source, IndexSource::Scanned);
    assert_eq!(reader.read_batch(Selection::All).unwrap(), records);
}

#[test]
fn damaged_footer_or_truncation_is_refused_or_scanned() {
    let records = sample_records(100, 6);
    for options in ["group_size:10,uncompressed", "group_size:9,transpose,zstd:3"] {
        let file = write(&records, options);
        let (_, footer) = trailer(&file);
        let mut cases: Vec<(String, Vec<u8>)> = Vec::new();
        for offset in [10, 45, 60] {
            let mut damaged = file.clone();
            damaged[footer as usize + offset] ^= 0x01;
            cases.push((format!("footer byte {offset}"), damaged));
        }
        for cut in [1, 65536, 65537] {
            if cut < file.len() {
                cases.push((format!("truncated by {cut}"), file[..file.len() - cut].to_vec()));
            }
        }
        let mut longer = file.clone();
        longer.push(0);
        cases.push(("one byte more".into(), longer));
        for (what, damaged) in cases {
            assert_refused(&damaged, &format!("{options} {what}"));
            let mut reader = open_scanning(&damaged);
            assert_eq!(reader.index().index_source, IndexSource::Scanned, "{options} {what}");
            assert!(reader.index().fallback_reason.as_deref().is_some());
            assert_eq!(reader.read_batch(Selection::All).unwrap(), records, "{options} {what}");
            assert_eq!(reader.read_batch(&[99, 0, 50]).unwrap(), [&records[99], &records[0], &records[50]]);
            // The plain reader skipping damage returns the data records first; no trailer
            // record while the postscript is there (without it, a footer is not known as one).
            let mut plain = RecordReader::new(Cursor::new(&damaged));
            plain.set_recovery(|_| true);
            let got = read_all(&mut plain);
            assert_eq!(&got[..records.len()], &records[..], "{options} {what} plain");
            if what.starts_with("footer") || what == "truncated by 1" || what == "one byte more" {
                assert_eq!(got.len(), records.len(), "{options} {what} plain");
            }
        }
    }
}

/// `file` (records `expected`) cut short at several places, as an interrupted
/// copy leaves it: each cut is refused (as C++ refuses it), and read by a scan
/// when asked, which gives a prefix of the records and reports the cut.
fn check_cuts(file: &[u8], expected: &[Vec<u8>], what: &str) {
    let chunks = crate::common::layout(file);
    let size = file.len() as u64;
    let (postscript, footer) = trailer(file);
    let footer_end = chunks.iter().find(|c| c.begin == footer).unwrap().end;
    let postscript_end = chunks.iter().find(|c| c.begin == postscript).unwrap().end;
    // A data chunk well inside the file, to cut in its middle and at its beginning.
    let data: Vec<_> = chunks.iter().filter(|c| c.num_records > 0 && c.begin < footer).collect();
    let middle = data[data.len() / 2];
    let cuts = [
        ("in half", size / 2),
        ("mid-chunk", (middle.begin + middle.end) / 2),
        ("between two data chunks", middle.begin),
        ("inside the footer", footer + (footer_end - footer) / 2),
        ("just after the footer", footer_end),
        ("the postscript block missing", postscript),
        ("inside the postscript chunk", postscript + 30),
        ("the last byte missing", size - 1),
    ];
    for (cut, at) in cuts {
        let what = format!("{what}, cut {cut} (at {at} of {size})");
        let short = &file[..at as usize];
        assert_refused(short, &what);
        let mut reader = open_scanning(short);
        assert_eq!(reader.index().index_source, IndexSource::Scanned, "{what}");
        assert!(reader.index().fallback_reason.as_deref().is_some_and(|r| r.contains("ArrayRecord index")), "{what}");
        let got = reader.read_batch(Selection::All).unwrap();
        assert_eq!(got.len() as u64, reader.num_records(), "{what}");
        assert!(got.len() <= expected.len() && got == expected[..got.len()], "{what}: {} records", got.len());
        // Whatever lies past the data chunks read is reported; a cut between two
        // data chunks leaves a valid file of the records before it, nothing to report.
        let skipped = reader.index().skipped_regions.clone();
        if at > footer {
            assert_eq!(got.len(), expected.len(), "{what}");
        }
        // A footer with no whole postscript after it ends the file.
        let orphan = (footer_end..postscript_end).contains(&at);
        assert_eq!(reader.index().footer_without_postscript, orphan.then_some(footer), "{what}");
        if cut == "between two data chunks" {
            assert!(skipped.is_empty(), "{what}: {skipped:?}");
        } else if at <= postscript {
            assert!(!skipped.is_empty(), "{what}: the cut is reported");
        }
        if at == footer_end || at == postscript {
            assert!(skipped.iter().any(|r| r.begin == footer && r.message.contains("no postscript")), "{what}");
            // The plain reader reads every record and tells of the footer it skipped.
            let mut plain = RecordReader::new(Cursor::new(short));
            assert_eq!(read_all(&mut plain), expected, "{what}");
            assert_eq!(plain.footer_without_postscript(), Some(footer), "{what}");
        }
    }
    let mut plain = RecordReader::new(Cursor::new(file));
    assert_eq!(read_all(&mut plain), expected, "{what}");
    assert_eq!(plain.footer_without_postscript(), None, "{what}: whole");
}

#[test]
fn cut_files_are_refused_unless_scanned() {
    // Written by us.
    let records = sample_records(400, 21);
    for options in ["group_size:10,zstd:3", "group_size:1,uncompressed", "group_size:7,transpose,snappy"] {
        let file = write(&records, options);
        check_cuts(&file, &records, options);
    }
    // Written by C++ (array-record 0.8.6).
    for path in ["array_record/simple_none.array_record", "array_record/transposed_zstd.array_record"] {
        let file = files("array_record").into_iter().find(|f| f["path"] == path).unwrap();
        let bytes = std::fs::read(testdata().join(path)).unwrap();
        check_cuts(&bytes, &record_set(file["records"].as_str().unwrap()), path);
    }
}

/// A file read through a counter of the bytes it hands out, by the calling
/// thread and at offsets (by the decoding threads).
#[derive(Clone)]
struct Counted {
    file: Cursor<Vec<u8>>,
    read: std::sync::Arc<std::sync::atomic::AtomicU64>,
}

impl std::io::Read for Counted {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let n = self.file.read(buf)?;
        self.read.fetch_add(n as u64, std::sync::atomic::Ordering::Relaxed);
        Ok(n)
    }
}

impl std::io::Seek for Counted {
    fn seek(&mut self, to: std::io::SeekFrom) -> std::io::Result<u64> {
        self.file.seek(to)
    }
}

impl riegeli_records::ReadAt for Counted {
    fn read_at(&self, buf: &mut [u8], offset: u64) -> std::io::Result<usize> {
        let file = self.file.get_ref();
        let at = usize::try_from(offset).unwrap_or(usize::MAX).min(file.len());
        let n = buf.len().min(file.len() - at);
        buf[..n].copy_from_slice(&file[at..at + n]);
        self.read.fetch_add(n as u64, std::sync::atomic::Ordering::Relaxed);
        Ok(n)
    }

    fn size(&self) -> std::io::Result<u64> {
        Ok(self.file.get_ref().len() as u64)
    }
}

impl riegeli_records::ReadHints for Counted {
    fn positional(&self) -> Option<std::sync::Arc<dyn riegeli_records::ReadAt>> {
        Some(std::sync::Arc::new(self.clone()))
    }
}

#[test]
fn a_random_read_reads_its_chunk_not_a_block() {
    use std::sync::atomic::Ordering::Relaxed;
    // One record of about 300 bytes per chunk, as Grain's files have them.
    let records: Vec<Vec<u8>> = (0..2000u32).map(|i| format!("{i:>6} {}", "record ".repeat(42)).into_bytes()).collect();
    let file = write(&records, "group_size:1,zstd:3");
    let chunks: Vec<_> = crate::common::layout(&file).into_iter().filter(|c| c.num_records > 0).collect();
    // What the index gives each record's chunk: up to the next chunk.
    let extent = |i: usize| chunks[i + 1].begin - chunks[i].begin;
    let read = std::sync::Arc::new(std::sync::atomic::AtomicU64::new(0));
    let counted = |parallelism: usize| {
        let source = Counted { file: Cursor::new(file.clone()), read: read.clone() };
        // `parallelism` threads, the calling one included.
        let options = ArrayRecordReaderOptions { parallelism: parallelism - 1, ..Default::default() };
        ArrayRecordReader::with_options(source, options).unwrap()
    };
    let mut reader = counted(1);
    for i in [1234, 7, 1999 - 1, 500, 13] {
        read.store(0, Relaxed);
        assert_eq!(reader.read(i as u64).unwrap(), records[i]);
        let bytes = read.load(Relaxed);
        assert!(bytes <= extent(i), "record {i}: {bytes} bytes read for a chunk of {}", extent(i));
    }
    // Reading on in order reads ahead by blocks: the next records cost no read.
    reader.read(14).unwrap();
    read.store(0, Relaxed);
    for i in 15..40 {
        assert_eq!(reader.read(i).unwrap(), records[i as usize]);
    }
    assert_eq!(read.load(Relaxed), 0, "records 15..40 were read with 14");
    // A batch of records far apart (more than a block) reads their chunks, serially and on
    // the threads (positional reads); neighbours are read by blocks, which serve several.
    let records: Vec<Vec<u8>> = (0..1000u32).map(|i| format!("{i:>4000}").into_bytes()).collect();
    let file = write(&records, "group_size:1,uncompressed");
    let chunks: Vec<_> = crate::common::layout(&file).into_iter().filter(|c| c.num_records > 0).collect();
    let extent = |i: usize| chunks[i + 1].begin - chunks[i].begin;
    let scattered: Vec<u64> = (0..1000u32).step_by(20).rev().map(u64::from).collect();
    let want: u64 = scattered.iter().map(|&i| extent(i as usize)).sum();
    for parallelism in [1, 3] {
        let source = Counted { file: Cursor::new(file.clone()), read: read.clone() };
        // `parallelism` threads, the calling one included.
        let options = ArrayRecordReaderOptions { parallelism: parallelism - 1, ..Default::default() };
        let mut reader = ArrayRecordReader::with_options(source, options).unwrap();
        read.store(0, Relaxed);
        let got = reader.read_batch(&scattered).unwrap();
        assert!(got.iter().zip(&scattered).all(|(r, &i)| *r == records[i as usize]));
        let bytes = read.load(Relaxed);
        assert!(bytes <= want, "{parallelism} threads: {bytes} bytes read for chunks of {want}");
    }
}

#[test]
fn not_a_riegeli_file_is_a_clear_error() {
    for bytes in [vec![], vec![0u8; 10], vec![0u8; 200_000], b"hello world".repeat(10_000)] {
        assert_refused(&bytes, &format!("{} bytes", bytes.len()));
        let err = ArrayRecordReader::with_options(Cursor::new(&bytes), scanning()).unwrap_err();
        assert!(err.to_string().contains("not an ArrayRecord or Riegeli/records file"), "{err}");
        assert!(err.position().is_some());
    }
}

#[test]
fn inconsistent_footers_are_rejected_then_scanned() {
    // Write a file whose footer lies: hand-build one with non-uniform groups by indexing
    // a file of chunks 2, 3 records through the writer's chunk copy is refused, so
    // damage the footer entries instead: the reader's stricter checks send it to a scan.
    let records: Vec<Vec<u8>> = (0..20u8).map(|i| vec![i; usize::from(i)]).collect();
    let file = write(&records, "group_size:4,uncompressed");
    let (_, footer) = trailer(&file);
    // The footer is uncompressed: the first entry is 08 40 10 <decoded: 0+1+2+3 = 6> 18 04.
    let start = footer as usize + 40;
    let entry = file[start..start + 300].windows(6).position(|w| w == [0x08, 0x40, 0x10, 0x06, 0x18, 0x04]).unwrap();
    let mut damaged = file.clone();
    damaged[start + entry + 5] = 5;
    // The data hash now fails too; turn hash checks off to reach the footer checks.
    let options = ArrayRecordReaderOptions {
        chunks: riegeli_records::ChunkReadOptions { verify_hashes: false, ..Default::default() },
        ..Default::default()
    };
    let error = ArrayRecordReader::with_options(Cursor::new(&damaged), options.clone()).unwrap_err();
    assert!(error.to_string().contains("the footer at"), "{error}");
    let options = ArrayRecordReaderOptions { scan_fallback: true, ..options };
    let mut reader = ArrayRecordReader::with_options(Cursor::new(&damaged), options).unwrap();
    assert_eq!(reader.index().index_source, IndexSource::Scanned);
    let reason = reader.index().fallback_reason.as_deref().unwrap();
    assert!(reason.contains("footer"), "{reason}");
    assert_eq!(reader.read_batch(Selection::All).unwrap(), records);
}

#[test]
fn random_damage_never_panics() {
    let records = sample_records(60, 11);
    let file = write(&records, "group_size:6,transpose,zstd:1");
    let mut state = 12345u64;
    for _ in 0..60 {
        state = state.wrapping_mul(6364136223846793005).wrapping_add(1);
        let mut damaged = file.clone();
        let pos = (state >> 20) as usize % damaged.len();
        damaged[pos] ^= 1 << (state % 8);
        let Ok(mut reader) = ArrayRecordReader::new(Cursor::new(&damaged)) else { continue };
        let n = reader.num_records();
        if let Ok(all) = reader.read_batch(Selection::All) {
            // Whatever is read is right (hashes protect every chunk), in order.
            assert!(all.len() as u64 == n);
            assert!(all.iter().all(|r| records.contains(&r.to_vec())), "damage at {pos}");
        }
        for i in 0..n {
            let _ = reader.read(i);
        }
        let _ = reader.read_batch(&(0..n).collect::<Vec<_>>());
    }
}

#[test]
fn index_copies_uniform_chunks() {
    // Records of one size fill chunks alike: the counts are uniform, so chunks are copied.
    let records: Vec<Vec<u8>> = (0..1000u32).map(|i| format!("{i:08}").repeat(4).into_bytes()).collect();
    for writer_options in
        ["uncompressed,chunk_size:1000", "zstd:3,chunk_size:5000", "transpose,brotli:3,chunk_size:3000"]
    {
        let plain = crate::common::write_file(&records, writer_options);
        let (file, report) =
            index_riegeli_file(Cursor::new(&plain), Vec::new(), "uncompressed".parse().unwrap()).unwrap();
        assert!(report.copied_chunks > 1, "{writer_options}: {report:?}");
        assert_eq!(report.reencoded_records, 0);
        assert_eq!(report.num_records, 1000);
        check_every_path(&file, &records, writer_options);
        let reader = ArrayRecordReader::new(Cursor::new(&file)).unwrap();
        assert_eq!(reader.index().num_chunks as u64, report.copied_chunks);
        assert!(
            reader.index().writer_options.as_deref().unwrap().starts_with(&format!("group_size:{}", report.group_size))
        );
    }
}

#[test]
fn index_reencodes_uneven_chunks() {
    let records = sample_records(300, 21);
    let plain = crate::common::write_file(&records, "zstd:1,chunk_size:20000");
    let (file, report) =
        index_riegeli_file(Cursor::new(&plain), Vec::new(), "group_size:16,snappy".parse().unwrap()).unwrap();
    assert_eq!(report.copied_chunks, 0, "{report:?}");
    assert_eq!(report.reencoded_records, 300);
    assert_eq!(report.group_size, 16);
    check_every_path(&file, &records, "re-encoded");
    let reader = ArrayRecordReader::new(Cursor::new(&file)).unwrap();
    assert_eq!(reader.index().num_chunks, 300usize.div_ceil(16));
}

#[test]
fn index_of_golden_cuts_rebuilds_the_cpp_files() {
    // valid/N.riegeli is N.array_record cut at its footer. Indexing it copies every data
    // chunk; for uncompressed footers the result is the C++ file, byte for byte.
    let mut identical = 0;
    for file in files("valid") {
        let path = file["path"].as_str().unwrap();
        let source = testdata().join(file["source"].as_str().unwrap());
        let cut = std::fs::read(testdata().join(path)).unwrap();
        let original = std::fs::read(&source).unwrap();
        let options: ArrayRecordWriterOptions = file["options"].as_str().unwrap().parse().unwrap();
        let uncompressed = options.compression.compression_type == riegeli_records::CompressionType::None;
        let (rebuilt, report) = index_riegeli_file(Cursor::new(&cut), Vec::new(), options).unwrap();
        let expected = record_set(file["records"].as_str().unwrap());
        assert_eq!(report.reencoded_records, 0, "{path}");
        check_every_path(&rebuilt, &expected, path);
        if uncompressed {
            assert!(rebuilt == original, "{path}: not byte-identical to {}", source.display());
            identical += 1;
        }
        // Indexing an ArrayRecord file drops its old trailer and gives the same file again.
        let (again, report) =
            index_riegeli_file(Cursor::new(&rebuilt), Vec::new(), file["options"].as_str().unwrap().parse().unwrap())
                .unwrap();
        assert!(report.dropped_old_trailer || expected.is_empty(), "{path}");
        assert!(again == rebuilt, "{path}: indexing twice");
    }
    assert_eq!(identical, 4);
}

fn options_strategy() -> impl Strategy<Value = String> {
    (
        1u64..12,
        any::<bool>(),
        prop_oneof![Just("uncompressed"), Just("brotli:1"), Just("zstd:1"), Just("snappy")],
        any::<bool>(),
        1u32..4,
        prop_oneof![Just(""), Just(",transpose_bucket_size:64")],
    )
        .prop_map(|(group, transpose, compression, pad, parallelism, bucket)| {
            format!(
                "group_size:{group},transpose:{transpose},{compression},pad_to_block_boundary:{pad},max_parallelism:{parallelism}{bucket}"
            )
        })
}

fn record_strategy() -> impl Strategy<Value = Vec<u8>> {
    prop_oneof![
        proptest::collection::vec(any::<u8>(), 0..200),
        // Proto-like: field 1 varint, field 2 bytes.
        (any::<u32>(), proptest::collection::vec(any::<u8>(), 0..30)).prop_map(|(v, b)| {
            let mut r = vec![0x08];
            riegeli_codec::varint::encode_u64(u64::from(v), &mut r);
            r.push(0x12);
            r.push(b.len() as u8);
            r.extend(b);
            r
        }),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 24, ..ProptestConfig::default() })]

    #[test]
    fn round_trip(options in options_strategy(), records in proptest::collection::vec(record_strategy(), 0..80)) {
        let file = write(&records, &options);
        prop_assert_eq!(file.len() % 65536, 0);
        check_every_path(&file, &records, &options);
        // Indexing our own file back copies every chunk and gives the same records.
        let (again, report) = index_riegeli_file(Cursor::new(&file), Vec::new(), options.parse().unwrap()).unwrap();
        prop_assert_eq!(report.reencoded_records, 0);
        let mut reader = ArrayRecordReader::new(Cursor::new(&again)).unwrap();
        prop_assert_eq!(reader.read_batch(Selection::All).unwrap(), records);
    }
}

#[test]
fn record_writer_chunks_are_the_array_record_writer_chunks() {
    // Independent check of the chunk bytes: a RecordWriter with the same encoding writes
    // the same simple chunk for the same records (a group of 5 fits one 4 KiB chunk).
    let records = sample_records(5, 2).into_iter().map(|mut r| {
        r.truncate(100);
        r
    });
    let records: Vec<Vec<u8>> = records.collect();
    let ours = write(&records, "group_size:5,uncompressed");
    let mut plain = RecordWriter::new(
        Vec::new(),
        RecordWriterOptions { compression: riegeli_records::CompressorOptions::uncompressed(), ..Default::default() },
    )
    .unwrap();
    for r in &records {
        plain.write_record(r).unwrap();
    }
    let plain = plain.close().unwrap();
    assert_eq!(&ours[..plain.len()], &plain[..]);
}

/// A source that logs, in one list with the announcements of the chunks about
/// to be read, where it is read (by the calling thread, and at offsets by the
/// decoding threads).
#[derive(Clone)]
struct Logged {
    inner: Cursor<Vec<u8>>,
    log: std::sync::Arc<std::sync::Mutex<Vec<Event>>>,
}

#[derive(Debug, Clone, PartialEq)]
enum Event {
    Announced(std::ops::Range<u64>),
    Read(u64),
}

impl std::io::Read for Logged {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        self.log.lock().unwrap().push(Event::Read(self.inner.position()));
        self.inner.read(buf)
    }
}

impl std::io::Seek for Logged {
    fn seek(&mut self, pos: std::io::SeekFrom) -> std::io::Result<u64> {
        self.inner.seek(pos)
    }
}

impl riegeli_records::ReadAt for Logged {
    fn read_at(&self, buf: &mut [u8], offset: u64) -> std::io::Result<usize> {
        self.log.lock().unwrap().push(Event::Read(offset));
        let file = self.inner.get_ref();
        let at = usize::try_from(offset).unwrap_or(usize::MAX).min(file.len());
        let n = buf.len().min(file.len() - at);
        buf[..n].copy_from_slice(&file[at..at + n]);
        Ok(n)
    }

    fn size(&self) -> std::io::Result<u64> {
        Ok(self.inner.get_ref().len() as u64)
    }

    fn will_need(&self, ranges: &[std::ops::Range<u64>], _checked: bool) {
        assert!(ranges.windows(2).all(|w| w[0].end <= w[1].start), "in file order: {ranges:?}");
        let bytes: u64 = ranges.iter().map(|r| r.end - r.start).sum();
        assert!(ranges.len() == 1 || bytes <= 8 << 20, "{bytes} bytes announced at once");
        self.log.lock().unwrap().extend(ranges.iter().cloned().map(Event::Announced));
    }
}

impl riegeli_records::ReadHints for Logged {
    fn positional(&self) -> Option<std::sync::Arc<dyn riegeli_records::ReadAt>> {
        Some(std::sync::Arc::new(self.clone()))
    }
}

#[test]
fn prefetch_announces_each_chunk_before_it_is_read_within_the_budget() {
    let records = sample_records(3000, 5);
    let mut writer = ArrayRecordWriter::new(Vec::new(), "group_size:10,zstd".parse().unwrap()).unwrap();
    for record in &records {
        writer.write_record(record).unwrap();
    }
    let file = writer.close().unwrap();
    for parallelism in [1, 2] {
        let log = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
        let options = ArrayRecordReaderOptions {
            // `parallelism` threads, the calling one included.
            parallelism: parallelism - 1,
            // 0, as array_record's data source asks: still at least 8 MiB of chunks at once.
            readahead_buffer_size: 0,
            ..ArrayRecordReaderOptions::default()
        };
        let source = Logged { inner: Cursor::new(file.clone()), log: log.clone() };
        let mut reader = ArrayRecordReader::with_options(source, options).unwrap();
        log.lock().unwrap().clear();
        let indices: Vec<u64> = (0..3000u64).rev().step_by(7).collect();
        let got = reader.read_batch(&indices).unwrap();
        assert!(got.iter().zip(&indices).all(|(r, &i)| r[..] == records[i as usize][..]));
        assert_eq!(reader.read(2999).unwrap(), records[2999][..]);
        let events = log.lock().unwrap().clone();
        let announced: Vec<_> =
            events.iter().filter_map(|e| if let Event::Announced(r) = e { Some(r.clone()) } else { None }).collect();
        // Every chunk the batch touches once (all of them: every 7th record of 10-record
        // chunks), then the single read's chunk again.
        assert_eq!(announced.len(), 301, "parallelism {parallelism}");
        // The whole batch (1.7 MB) in one window, so that a source can coalesce it.
        let first_window = events.iter().take_while(|e| matches!(e, Event::Announced(_))).count();
        assert_eq!(first_window, 300, "parallelism {parallelism}");
        // Each read falls in a range announced before it.
        let mut seen = Vec::new();
        for event in &events {
            match event {
                Event::Announced(range) => seen.push(range.clone()),
                Event::Read(pos) => {
                    assert!(seen.iter().any(|r| r.contains(pos)), "read at {pos} not announced before")
                }
            }
        }
    }
}
