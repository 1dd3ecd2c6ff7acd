//! The writer's background threads (`parallelism`, `with_io_thread`) against
//! the serial writer: the same bytes, the same positions, and errors that
//! are reported rather than lost.

use std::io::{self, Cursor, Write};
use std::sync::{Arc, Mutex};

use riegeli_records::{RecordPosition, RecordReader, RecordWriter, RecordWriterOptions};

use crate::common::{read_all, sample_records};

/// Protocol-buffer-like records (varint, string and nested message fields),
/// so that transposed chunks take the message path, mixed with other records.
fn mixed_records(n: usize) -> Vec<Vec<u8>> {
    let text = sample_records(n, 11);
    (0..n)
        .map(|i| {
            if i % 5 == 4 {
                return text[i].clone();
            }
            let name = format!("name {i} {}", "x".repeat(i % 37));
            let mut inner = vec![0x08, (i % 128) as u8];
            inner.extend_from_slice(&[0x12, 3, b'a', b'b', b'c']);
            let mut record = vec![0x08, (i % 100) as u8 + 1, 0x12, name.len() as u8];
            record.extend_from_slice(name.as_bytes());
            record.extend_from_slice(&[0x1a, inner.len() as u8]);
            record.extend_from_slice(&inner);
            record
        })
        .collect()
}

/// How the writer under test is made.
#[derive(Debug, Clone, Copy)]
enum Kind {
    Serial,
    Parallel(usize),
    IoThread(usize),
}

/// A `Vec` shared with the test, so an I/O thread can write into it.
#[derive(Clone, Default)]
struct Shared(Arc<Mutex<Vec<u8>>>);

impl Shared {
    fn bytes(&self) -> Vec<u8> {
        self.0.lock().unwrap().clone()
    }
}

impl Write for Shared {
    fn write(&mut self, data: &[u8]) -> io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(data);
        Ok(data.len())
    }
    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

/// Writes `records`, noting `last_pos` after each; returns the file and the positions.
fn write(records: &[Vec<u8>], options: &str, kind: Kind) -> (Vec<u8>, Vec<RecordPosition>) {
    let with = |parallelism: usize| -> RecordWriterOptions {
        let text = if parallelism > 0 { format!("{options},parallelism:{parallelism}") } else { options.to_owned() };
        text.parse().unwrap()
    };
    let dest = Shared::default();
    let mut writer = match kind {
        Kind::Serial => RecordWriter::new(dest.clone(), with(0)),
        Kind::Parallel(n) => RecordWriter::new(dest.clone(), with(n)),
        Kind::IoThread(n) => RecordWriter::with_io_thread(dest.clone(), with(n)),
    }
    .unwrap();
    let mut positions = Vec::new();
    for (i, record) in records.iter().enumerate() {
        writer.write_record(record).unwrap();
        // Asking for positions now and then waits for chunks still being encoded.
        if i % 13 == 0 {
            positions.push(writer.last_pos().unwrap().unwrap());
        }
    }
    writer.close().unwrap();
    (dest.bytes(), positions)
}

const OPTION_SETS: &[&str] = &[
    // 4 KiB chunks: many chunks per batch handed to the threads.
    "uncompressed",
    "uncompressed,chunk_size:1",
    "zstd:1,chunk_size:3k",
    "snappy,chunk_size:40k",
    "brotli:1,chunk_size:20k,padding:30k",
    "transpose,uncompressed",
    "transpose,zstd:3,chunk_size:5k",
    "transpose,snappy,chunk_size:200k,bucket_fraction:0.25",
];

#[test]
fn background_threads_write_the_serial_bytes() {
    let records = mixed_records(3000);
    for options in OPTION_SETS {
        let (serial, serial_positions) = write(&records, options, Kind::Serial);
        assert_eq!(read_all(&mut RecordReader::new(Cursor::new(&serial))), records, "{options}");
        for kind in [Kind::Parallel(1), Kind::Parallel(3), Kind::IoThread(0), Kind::IoThread(2)] {
            let (file, positions) = write(&records, options, kind);
            assert!(file == serial, "{options}, {kind:?}: {} bytes, serially {}", file.len(), serial.len());
            assert_eq!(positions, serial_positions, "{options}, {kind:?}");
        }
    }
}

#[test]
fn many_batches_write_the_serial_bytes() {
    // Several MiB, so that batches fill while the threads are busy (and the
    // caller, with a core to spare, encodes some itself).
    let records: Vec<Vec<u8>> = (0..6).flat_map(|_| mixed_records(3000)).collect();
    for options in ["uncompressed", "snappy,chunk_size:64k", "transpose,zstd:1,chunk_size:300k"] {
        let (serial, serial_positions) = write(&records, options, Kind::Serial);
        for kind in [Kind::Parallel(1), Kind::IoThread(1), Kind::Parallel(2)] {
            let (file, positions) = write(&records, options, kind);
            assert!(file == serial, "{options}, {kind:?}: {} bytes, serially {}", file.len(), serial.len());
            assert_eq!(positions, serial_positions, "{options}, {kind:?}");
        }
    }
}

#[test]
fn pos_waits_for_batched_chunks() {
    // Each record closes a chunk, so chunks wait in the pool's open batch.
    let records = sample_records(500, 12);
    let (serial, _) = write(&records, "uncompressed,chunk_size:1", Kind::Serial);
    let mut writer = RecordWriter::new(Vec::new(), "uncompressed,chunk_size:1,parallelism:2".parse().unwrap()).unwrap();
    let mut reader = RecordReader::new(Cursor::new(serial));
    for record in &records {
        writer.write_record(record).unwrap();
        reader.read_record().unwrap().unwrap();
        // The last record's chunk may still be in the batch: this must not wait forever.
        assert_eq!(writer.last_pos().unwrap(), Some(reader.last_pos().unwrap()));
        assert_eq!(writer.pos().unwrap(), reader.pos());
    }
}

#[test]
fn flush_with_an_io_thread_makes_records_readable() {
    let dest = Shared::default();
    let mut writer = RecordWriter::with_io_thread(dest.clone(), "zstd,parallelism:2".parse().unwrap()).unwrap();
    let records = sample_records(200, 13);
    for record in &records {
        writer.write_record(record).unwrap();
    }
    writer.flush().unwrap();
    // Everything is in the destination now, while the writer is still open.
    assert_eq!(read_all(&mut RecordReader::new(Cursor::new(dest.bytes()))), records);
    writer.write_record(b"one more").unwrap();
    writer.close().unwrap();
    assert_eq!(read_all(&mut RecordReader::new(Cursor::new(dest.bytes()))).len(), 201);
}

/// Fails every write once `limit` bytes are written.
struct Full {
    written: usize,
    limit: usize,
}

impl Write for Full {
    fn write(&mut self, data: &[u8]) -> io::Result<usize> {
        if self.written + data.len() > self.limit {
            return Err(io::Error::new(io::ErrorKind::StorageFull, "disk full"));
        }
        self.written += data.len();
        Ok(data.len())
    }
    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

#[test]
fn io_thread_errors_are_reported() {
    for options in ["uncompressed", "zstd:1,parallelism:2"] {
        let dest = Full { written: 0, limit: 200_000 };
        let mut writer = RecordWriter::with_io_thread(dest, options.parse().unwrap()).unwrap();
        let records = sample_records(2000, 14);
        // The error surfaces at a later write, or at the latest at close.
        let mut error = None;
        for record in &records {
            if let Err(e) = writer.write_record(record) {
                error = Some(e);
                break;
            }
        }
        let error = error.or_else(|| writer.close().err()).expect("the failed write is reported");
        let io = std::error::Error::source(&error).and_then(|e| e.downcast_ref::<io::Error>());
        assert_eq!(io.map(io::Error::kind), Some(io::ErrorKind::StorageFull), "{options}: {error}");
    }
}

#[test]
fn array_record_io_thread_writes_the_same_bytes() {
    use riegeli_records::{ArrayRecordReader, ArrayRecordWriter};
    let records = mixed_records(700);
    for options in ["group_size:10,uncompressed", "group_size:100,transpose,zstd:1", "group_size:7,snappy"] {
        let direct = {
            let mut writer = ArrayRecordWriter::new(Vec::new(), options.parse().unwrap()).unwrap();
            for record in &records {
                writer.write_record(record).unwrap();
            }
            writer.close().unwrap()
        };
        let dest = Shared::default();
        let mut writer = ArrayRecordWriter::with_io_thread(dest.clone(), options.parse().unwrap()).unwrap();
        for record in &records {
            writer.write_record(record).unwrap();
        }
        writer.close().unwrap();
        let behind = dest.bytes();
        assert!(behind == direct, "{options}: {} bytes, directly {}", behind.len(), direct.len());
        let reader = ArrayRecordReader::new(Cursor::new(behind)).unwrap();
        assert_eq!(reader.num_records(), records.len() as u64, "{options}");
    }
}
