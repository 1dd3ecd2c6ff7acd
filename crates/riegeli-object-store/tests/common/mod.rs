//! What the fetch-plan tests share.

use std::io::Cursor;

use riegeli_records::{ChunkReadOptions, ChunkReader};

/// (begin, end) of every chunk of `file` holding records, in file order (an ArrayRecord
/// file's footer and postscript last).
pub(crate) fn data_chunks(file: &[u8]) -> Vec<(u64, u64)> {
    let mut reader = ChunkReader::new(Cursor::new(file), ChunkReadOptions::default(), 0);
    let mut out = Vec::new();
    while let Some(chunk) = reader.read_chunk().unwrap() {
        if chunk.header.num_records() > 0 {
            out.push((chunk.begin, chunk.end));
        }
    }
    out
}
