//! `RecordWriter` additions for Google's Python API: `estimated_size`,
//! `flush_with(FlushType)` on a `SyncWrite` destination, serialized metadata.

use std::io::{self, Cursor, Write};
use std::sync::{Arc, Mutex};

use riegeli_records::{
    CompressorOptions, FlushType, RecordReader, RecordWriter, RecordWriterOptions, RecordsMetadata, SyncWrite,
};

use crate::common::{read_all, sample_records};

#[test]
fn estimated_size_follows_the_file() {
    let records = sample_records(3000, 7);
    for options in [
        "uncompressed",
        "uncompressed,chunk_size:64k",
        "zstd,chunk_size:64k",
        "transpose,brotli,chunk_size:32k",
        "snappy,chunk_size:16k,padding:4k",
        "zstd,chunk_size:16k,parallelism:2",
    ] {
        let mut writer = RecordWriter::new(Vec::new(), options.parse().unwrap()).unwrap();
        let empty = writer.estimated_size();
        assert!(empty > 0 && empty <= 4096, "{options}: a signature (padded), {empty}");
        let mut previous = empty;
        for (i, record) in records.iter().enumerate() {
            writer.write_record(record).unwrap();
            let estimate = writer.estimated_size();
            if options.starts_with("uncompressed") {
                // Uncompressed, the estimate only grows with records (give
                // or take the padding of a block header).
                assert!(estimate + 64 >= previous, "{options}: {estimate} after {previous} at {i}");
            }
            previous = estimate;
        }
        let estimate = writer.estimated_size();
        let file = writer.close().unwrap();
        let actual = file.len() as u64;
        if options.contains("parallelism") {
            // Before the first chunk is written, chunks being encoded count
            // whole: at most their decoded size (and headers).
            let decoded: u64 = records.iter().map(|r| r.len() as u64 + 8).sum();
            assert!(estimate * 3 >= actual * 2 && estimate <= decoded, "{options}: {estimate}, actual {actual}");
        } else {
            // Compressed data is estimated by the ratio so far: within a few
            // percent of the truth.
            assert!(estimate.abs_diff(actual) * 20 <= actual, "{options}: estimated {estimate}, actual {actual}");
        }
        if options.starts_with("uncompressed") {
            assert!(estimate.abs_diff(actual) <= actual / 50, "{options}: estimated {estimate}, actual {actual}");
        }
    }
}

#[test]
fn estimated_size_after_a_flush_is_the_size() {
    for options in ["uncompressed", "zstd,parallelism:1", "brotli,padding:64k"] {
        let mut writer = RecordWriter::new(Vec::new(), options.parse().unwrap()).unwrap();
        for record in sample_records(500, 1) {
            writer.write_record(&record).unwrap();
        }
        writer.flush().unwrap();
        let estimate = writer.estimated_size();
        assert_eq!(estimate, writer.pos().unwrap().numeric(), "{options}");
        assert_eq!(estimate, writer.close().unwrap().len() as u64, "{options}");
    }
}

/// A destination counting flushes and syncs, its bytes shared with the test.
#[derive(Clone, Default)]
struct Counting {
    bytes: Arc<Mutex<Vec<u8>>>,
    flushes: Arc<Mutex<usize>>,
    syncs: Arc<Mutex<usize>>,
    /// The number of bytes at each sync.
    synced: Arc<Mutex<Vec<usize>>>,
}

impl Write for Counting {
    fn write(&mut self, data: &[u8]) -> io::Result<usize> {
        self.bytes.lock().unwrap().extend_from_slice(data);
        Ok(data.len())
    }
    fn flush(&mut self) -> io::Result<()> {
        *self.flushes.lock().unwrap() += 1;
        Ok(())
    }
}

impl SyncWrite for Counting {
    fn sync(&mut self) -> io::Result<()> {
        *self.syncs.lock().unwrap() += 1;
        let len = self.bytes.lock().unwrap().len();
        self.synced.lock().unwrap().push(len);
        Ok(())
    }
}

impl Counting {
    fn counts(&self) -> (usize, usize, usize) {
        (self.bytes.lock().unwrap().len(), *self.flushes.lock().unwrap(), *self.syncs.lock().unwrap())
    }
}

#[test]
fn flush_types_reach_the_destination_as_far_as_they_say() {
    for io_thread in [false, true] {
        for parallelism in ["", ",parallelism:2"] {
            let dest = Counting::default();
            let options: RecordWriterOptions = format!("zstd{parallelism}").parse().unwrap();
            let mut writer = if io_thread {
                RecordWriter::with_io_thread(dest.clone(), options).unwrap()
            } else {
                RecordWriter::new(dest.clone(), options).unwrap()
            };
            let case = format!("io thread {io_thread}{parallelism}");
            writer.write_record(b"one").unwrap();
            writer.flush_with(FlushType::FromObject).unwrap();
            let (bytes, flushes, syncs) = dest.counts();
            let size = writer.pos().unwrap().numeric() as usize;
            assert_eq!(bytes, size, "{case}: FromObject hands every byte over");
            // Behind an I/O thread, waiting for the thread flushes the destination.
            assert_eq!((flushes, syncs), (usize::from(io_thread), 0), "{case}");

            writer.write_record(b"two").unwrap();
            writer.flush_with(FlushType::FromProcess).unwrap();
            let (bytes, flushes, syncs) = dest.counts();
            assert_eq!((bytes, flushes, syncs), (writer.pos().unwrap().numeric() as usize, flushes, 0), "{case}");
            assert!(flushes >= 1, "{case}");

            writer.write_record(b"three").unwrap();
            writer.flush_with(FlushType::FromMachine).unwrap();
            let size = writer.pos().unwrap().numeric() as usize;
            assert_eq!(dest.counts().2, 1, "{case}: FromMachine syncs");
            assert_eq!(*dest.synced.lock().unwrap(), [size], "{case}: after every byte is written");
            writer.close().unwrap();
            let file = dest.bytes.lock().unwrap().clone();
            let mut reader = RecordReader::new(Cursor::new(file));
            assert_eq!(read_all(&mut reader), [&b"one"[..], b"two", b"three"], "{case}");
        }
    }
}

#[test]
fn from_machine_syncs_a_file() {
    let path = std::env::temp_dir().join(format!("riegeli-writer-api-{}.riegeli", std::process::id()));
    for io_thread in [false, true] {
        let file = std::fs::File::create(&path).unwrap();
        let options = RecordWriterOptions { compression: CompressorOptions::uncompressed(), ..Default::default() };
        let mut writer = if io_thread {
            RecordWriter::with_io_thread(file, options).unwrap()
        } else {
            RecordWriter::new(file, options).unwrap()
        };
        writer.write_record(b"durable").unwrap();
        writer.flush_with(FlushType::FromMachine).unwrap();
        let size = writer.pos().unwrap().numeric();
        assert_eq!(std::fs::metadata(&path).unwrap().len(), size);
        drop(writer);
        let mut reader = RecordReader::new(std::fs::File::open(&path).unwrap());
        assert_eq!(read_all(&mut reader), [b"durable"]);
    }
    // Through a `&mut` destination and a `BufWriter`.
    let mut file = std::fs::File::create(&path).unwrap();
    let mut writer = RecordWriter::new(io::BufWriter::new(&mut file), RecordWriterOptions::default()).unwrap();
    writer.write_record(b"y").unwrap();
    writer.flush_with(FlushType::FromMachine).unwrap();
    drop(writer);
    let mut reader = RecordReader::new(std::fs::File::open(&path).unwrap());
    assert_eq!(read_all(&mut reader), [b"y"]);
    std::fs::remove_file(&path).unwrap();
}

#[test]
fn serialized_metadata_is_written_unchanged() {
    let metadata = RecordsMetadata { file_comment: "hi".into(), num_records: 3, ..Default::default() };
    // The message, then extension field 1000 (varint 5) and unknown field 6 (string "x").
    let mut serialized = prost::Message::encode_to_vec(&metadata);
    serialized.extend_from_slice(b"\xc0\x3e\x05\x32\x01x");
    for options in ["uncompressed", "brotli", "transpose,zstd"] {
        let options: RecordWriterOptions = options.parse().unwrap();
        let options = RecordWriterOptions { metadata: Some(serialized.clone()), ..options };
        let mut writer = RecordWriter::new(Vec::new(), options).unwrap();
        writer.write_record(b"record").unwrap();
        let file = writer.close().unwrap();
        let mut reader = RecordReader::new(Cursor::new(&file));
        assert_eq!(reader.read_serialized_metadata().unwrap().as_deref(), Some(&serialized[..]));
        assert_eq!(reader.read_metadata().unwrap(), Some(metadata.clone()), "the known fields parse");
        assert_eq!(read_all(&mut reader), [b"record"]);
    }
    // No metadata: no metadata chunk.
    let options = RecordWriterOptions { metadata: None, ..Default::default() };
    let file = RecordWriter::new(Vec::new(), options).unwrap().close().unwrap();
    assert_eq!(RecordReader::new(Cursor::new(file)).read_serialized_metadata().unwrap(), None);
}

#[test]
fn serialized_metadata_that_does_not_parse_is_written_as_given() {
    // As C++: the writer does not check the bytes; reading them as metadata fails.
    let serialized = vec![0xff; 100];
    for options in ["uncompressed", "transpose,zstd"] {
        let options = RecordWriterOptions {
            metadata: Some(serialized.clone()),
            ..options.parse::<RecordWriterOptions>().unwrap()
        };
        let mut writer = RecordWriter::new(Vec::new(), options).unwrap();
        writer.write_record(b"record").unwrap();
        let file = writer.close().unwrap();
        let mut reader = RecordReader::new(Cursor::new(&file));
        assert_eq!(reader.read_serialized_metadata().unwrap().as_deref(), Some(&serialized[..]));
        assert!(reader.read_metadata().unwrap_err().is_corruption());
        assert_eq!(read_all(&mut reader), [b"record"]);
    }
    // Empty bytes are an empty metadata chunk (C++ writes one), read as empty metadata.
    let options = RecordWriterOptions { metadata: Some(Vec::new()), ..Default::default() };
    let file = RecordWriter::new(Vec::new(), options).unwrap().close().unwrap();
    assert!(file.len() > 64, "a metadata chunk follows the signature");
    let mut reader = RecordReader::new(Cursor::new(&file));
    assert_eq!(reader.read_serialized_metadata().unwrap().as_deref(), Some(&b""[..]));
    assert_eq!(reader.read_metadata().unwrap(), Some(RecordsMetadata::default()));
}
