//! Chunks read through an index (ArrayRecord's footer): where each data
//! chunk is ([`ChunkEntry`]), and reading one checked against its entry.

use std::io::{Read, Seek};

use crate::chunk_reader::{LazyChunk, ReadError, read_lazy_chunk};
use crate::error::{Corruption, Error, Result};
use crate::options::ChunkReadOptions;
use crate::source::Source;

/// One data chunk of the index.
#[derive(Debug, Clone, Copy)]
pub(crate) struct ChunkEntry {
    /// Where the chunk begins.
    pub(crate) offset: u64,
    /// Where its byte range ends (the next chunk's offset, or the footer's).
    pub(crate) limit: u64,
    pub(crate) num_records: u64,
    /// From the footer (checked against the chunk header) or the header
    /// itself; `u64::MAX` if the footer does not say.
    pub(crate) decoded_data_size: u64,
    /// Index of the chunk's first record.
    pub(crate) first_record: u64,
}

impl ChunkEntry {
    /// The raw bytes the entry allows its chunk.
    pub(crate) fn raw_bytes(&self) -> u64 {
        self.limit.saturating_sub(self.offset)
    }
}

/// The chunk at `pos`, data hash verified (as the options say), its data
/// left to gather.
pub(crate) fn chunk_at<R: Read + Seek>(
    source: &mut Source<R>,
    pos: u64,
    options: &ChunkReadOptions,
) -> Result<LazyChunk> {
    source.seek(pos)?;
    match read_lazy_chunk(source, options) {
        Ok(Some(chunk)) => Ok(chunk),
        Ok(None) => Err(Error::corrupt(pos, Corruption::Truncated { end: pos })),
        Err(ReadError::Io(e)) => Err(e),
        Err(ReadError::Damage(d)) => Err(d.error),
    }
}

/// The most bytes a chunk read [`Alone`](Reading::Alone) asks for at once:
/// its extent comes from the footer, which may lie (the rest of a larger
/// chunk is read as its header says).
const ALONE_MAX: u64 = 4 << 20;

/// A chunk read is followed by blocks when the next chunk wanted begins
/// within this many bytes of it: one read then serves both.
const NEAR: u64 = 64 << 10;

/// How [`read_entry`] reads a chunk whose bytes are not buffered.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Reading {
    /// The next chunk wanted is the one after it or near it: reads go on
    /// past it, by blocks, so that they serve the next chunks too.
    InOrder,
    /// By itself (a random read): only the bytes the index gives it, as C++
    /// reads a chunk (not a whole block around a 777-byte chunk).
    Alone,
}

impl Reading {
    /// How to read `entry` when `next` is the chunk read after it, if any.
    pub(crate) fn before(entry: &ChunkEntry, next: Option<&ChunkEntry>) -> Self {
        match next {
            Some(next)
                if next.offset == entry.limit
                    || (entry.offset..entry.offset.saturating_add(NEAR)).contains(&next.offset) =>
            {
                Self::InOrder
            }
            _ => Self::Alone,
        }
    }
}

/// Reads the chunk of an index entry and checks it against the entry.
pub(crate) fn read_entry<S: Read + Seek>(
    source: &mut Source<S>,
    options: &ChunkReadOptions,
    entry: &ChunkEntry,
    reading: Reading,
) -> Result<LazyChunk> {
    if reading == Reading::Alone {
        source.seek(entry.offset)?;
        source.fill_exactly(usize::try_from(entry.raw_bytes().min(ALONE_MAX)).unwrap_or(usize::MAX))?;
    }
    let chunk = chunk_at(source, entry.offset, options)?;
    check_against_index(&chunk, entry)?;
    Ok(chunk)
}

/// Checks a chunk's header and extent against its index entry.
fn check_against_index(chunk: &LazyChunk, entry: &ChunkEntry) -> Result<()> {
    let header = chunk.header();
    let mismatch =
        |field, header, index| Error::corrupt(entry.offset, Corruption::IndexMismatch { field, header, index });
    if chunk.end() > entry.limit {
        return Err(mismatch("end", chunk.end(), entry.limit));
    }
    if header.num_records() != entry.num_records {
        return Err(mismatch("num_records", header.num_records(), entry.num_records));
    }
    if entry.decoded_data_size != u64::MAX && header.decoded_data_size() != entry.decoded_data_size {
        return Err(mismatch("decoded_data_size", header.decoded_data_size(), entry.decoded_data_size));
    }
    Ok(())
}
