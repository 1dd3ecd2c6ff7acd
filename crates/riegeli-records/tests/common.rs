//! Helpers shared by the tests: file layouts from framing, odd readers, record generators.

use std::io::{self, Read};

use riegeli_framing::parse_chunk;
use riegeli_records::{RecordReader, RecordWriter, RecordWriterOptions};

/// One chunk of a file, as framing (not the reader under test) sees it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct ChunkInfo {
    pub(crate) begin: u64,
    pub(crate) end: u64,
    pub(crate) num_records: u64,
    pub(crate) chunk_type: u8,
    /// One past the physical position of the last data byte.
    pub(crate) data_end: u64,
}

/// Walks the chunks of an intact file with riegeli-framing.
pub(crate) fn layout(file: &[u8]) -> Vec<ChunkInfo> {
    let mut chunks = Vec::new();
    let mut pos = 0u64;
    while (pos as usize) < file.len() {
        let view = parse_chunk(&file[pos as usize..], pos).expect("intact file");
        let h = view.header();
        let records = if matches!(h.chunk_type(), b'r' | b't') { h.num_records() } else { 0 };
        let data_end = riegeli_framing::add_with_overhead(pos, 40 + h.data_size()).unwrap();
        chunks.push(ChunkInfo {
            begin: pos,
            end: view.chunk_end(),
            num_records: records,
            chunk_type: h.chunk_type(),
            data_end,
        });
        pos = view.chunk_end();
    }
    chunks
}

/// The record indices held by each chunk, in file order.
pub(crate) fn record_ranges(chunks: &[ChunkInfo]) -> Vec<std::ops::Range<usize>> {
    let mut next = 0usize;
    chunks
        .iter()
        .map(|c| {
            let range = next..next + c.num_records as usize;
            next = range.end;
            range
        })
        .collect()
}

pub(crate) fn write_file(records: &[Vec<u8>], options: &str) -> Vec<u8> {
    let options: RecordWriterOptions = options.parse().expect("options");
    let mut writer = RecordWriter::new(Vec::new(), options).expect("writer");
    for record in records {
        writer.write_record(record).expect("write");
    }
    writer.close().expect("close")
}

/// Reads every record, failing on any error.
pub(crate) fn read_all<R: Read>(reader: &mut RecordReader<R>) -> Vec<Vec<u8>> {
    let mut out = Vec::new();
    while let Some(record) = reader.read_record().expect("read") {
        out.push(record.to_vec());
    }
    out
}

/// Deterministic records of varied sizes (some empty).
pub(crate) fn sample_records(n: usize, seed: u64) -> Vec<Vec<u8>> {
    let mut state = seed.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
    let mut next = move || {
        state = state.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
        (state >> 33) as u32
    };
    (0..n)
        .map(|i| {
            let len = match next() % 10 {
                0 => 0,
                1..=6 => (next() % 100) as usize,
                7 | 8 => (next() % 2000) as usize,
                _ => (next() % 20_000) as usize,
            };
            let mut r: Vec<u8> = (0..len).map(|j| b"abcdefghij"[(j + i) % 10] ^ (next() % 4) as u8).collect();
            if !r.is_empty() {
                r[0] = i as u8;
            }
            r
        })
        .collect()
}

/// Returns at most one byte per `read`.
pub(crate) struct OneByteReader<R>(pub(crate) R);

impl<R: Read> Read for OneByteReader<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        match buf.first_mut() {
            Some(slot) => self.0.read(std::slice::from_mut(slot)),
            None => Ok(0),
        }
    }
}

/// Fails every other `read` with `Interrupted`.
pub(crate) struct InterruptingReader<R> {
    pub(crate) inner: R,
    pub(crate) flip: bool,
}

impl<R: Read> Read for InterruptingReader<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        self.flip = !self.flip;
        if self.flip {
            return Err(io::Error::new(io::ErrorKind::Interrupted, "try again"));
        }
        let n = buf.len().min(777);
        self.inner.read(&mut buf[..n])
    }
}
