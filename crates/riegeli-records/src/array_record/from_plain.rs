//! Turning a plain Riegeli/records file into an ArrayRecord file.

use std::io::{Read, Seek, Write};

use riegeli_codec::ChunkType;

use super::options::ArrayRecordWriterOptions;
use super::writer::ArrayRecordWriter;
use crate::chunk_reader::{RawChunk, ReadError, read_chunk};
use crate::decode::{ChunkDecoder, check_signature};
use crate::error::{Corruption, Error, Result};
use crate::options::ChunkReadOptions;
use crate::source::Source;
use crate::trailer::{Disposition, TrailerDetector};

/// What [`index_riegeli_file`] did.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct IndexReport {
    /// Records in the output.
    pub num_records: u64,
    /// Data chunks copied without re-encoding.
    pub copied_chunks: u64,
    /// Records decoded and encoded again (0 when every chunk was copied).
    pub reencoded_records: u64,
    /// The output's group size.
    pub group_size: u64,
    /// Whether the input was itself an ArrayRecord file whose old footer and
    /// postscript were dropped.
    pub dropped_old_trailer: bool,
}

/// Reads the chunk at the source's position; `None` at the end of the file.
fn next_chunk<R: Read>(source: &mut Source<R>, options: &ChunkReadOptions) -> Result<Option<RawChunk>> {
    match read_chunk(source, options) {
        Ok(chunk) => Ok(chunk),
        Err(ReadError::Io(e)) => Err(e),
        Err(ReadError::Damage(d)) => Err(d.error),
    }
}

/// Writes an ArrayRecord file holding the records of the Riegeli/records file
/// `input`, in order, to `output`; returns the output (flushed) and a report.
///
/// When the input's data chunks all hold the same number of records G except
/// the last, which holds at most G, the chunks are copied as they are (no
/// decoding or re-encoding; only their block headers change, as chunks move
/// to new positions) and the output's group size is G, whatever `options`
/// says. Otherwise every record is decoded and written again in groups of
/// `options.group_size()`. `options` also chooses the footer's compression,
/// padding and, when re-encoding, the chunks' encoding. An input that is
/// already an ArrayRecord file loses its old footer and postscript. The
/// input's metadata chunk is copied unless `options` carry metadata.
///
/// The input is read twice (once to check the record counts) and must be
/// intact: damage is an error naming its position.
///
/// ```
/// use std::io::Cursor;
/// use riegeli_records::{ArrayRecordReader, RecordWriter, RecordWriterOptions};
/// use riegeli_records::index_riegeli_file;
///
/// let mut writer = RecordWriter::new(Vec::new(), RecordWriterOptions { chunk_size: Some(100), ..Default::default() })?;
/// for i in 0..50 {
///     writer.write_record(format!("record {i}").as_bytes())?;
/// }
/// let plain = writer.close()?;
/// let (file, report) = index_riegeli_file(Cursor::new(plain), Vec::new(), "zstd".parse()?)?;
/// assert_eq!(report.num_records, 50);
/// let mut reader = ArrayRecordReader::new(Cursor::new(file))?;
/// assert_eq!(reader.read(49)?, &b"record 49"[..]);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub fn index_riegeli_file<R: Read + Seek, W: Write>(
    input: R,
    output: W,
    options: ArrayRecordWriterOptions,
) -> Result<(W, IndexReport)> {
    let read_options = ChunkReadOptions::default();
    let mut source = Source::new(input, 0);
    let first = next_chunk(&mut source, &read_options)?.ok_or(Error::corrupt(0, Corruption::MissingSignature))?;
    check_signature(&first)?;

    // Pass 1: the data chunks' record counts, less an old ArrayRecord footer
    // and postscript.
    let decode = |chunk: &RawChunk| ChunkDecoder::new(&read_options).data_records(chunk, false).ok();
    let mut trailer = TrailerDetector::lazy();
    let mut held: Option<RawChunk> = None;
    // Where each data chunk to keep begins, and its record count.
    let mut kept: Vec<(u64, u64)> = Vec::new();
    let mut dropped_old_trailer = false;
    let mut metadata: Option<RawChunk> = None;
    let count = |chunk: &RawChunk| (chunk.begin, chunk.header.num_records());
    while let Some(chunk) = next_chunk(&mut source, &read_options)? {
        if chunk.chunk_type() == Some(ChunkType::FileMetadata) && kept.is_empty() && metadata.is_none() {
            metadata = Some(chunk);
            continue;
        }
        if !chunk.holds_records() {
            continue;
        }
        let step = trailer.feed(chunk.begin, &chunk.header, || decode(&chunk), || held.as_ref().and_then(decode));
        if let Some(previous) = held.take() {
            if step.release_held {
                kept.push(count(&previous));
            } else {
                dropped_old_trailer = true;
            }
        }
        match step.this {
            Disposition::Keep => kept.push(count(&chunk)),
            Disposition::Hold => held = Some(chunk),
            Disposition::Drop => dropped_old_trailer = true,
        }
    }
    if let Some(last) = held.take() {
        if trailer.finish(|| decode(&last)) {
            dropped_old_trailer = true;
        } else {
            kept.push(count(&last));
        }
    }
    let chunks: Vec<u64> = kept.iter().map(|&(_, n)| n).collect();

    let group = chunks.first().copied().unwrap_or(options.group_size);
    let body = chunks.get(..chunks.len().saturating_sub(1)).unwrap_or_default();
    let copy =
        group <= i32::MAX as u64 && body.iter().all(|&n| n == group) && chunks.last().is_none_or(|&n| n <= group);
    let options = if copy { ArrayRecordWriterOptions { group_size: group, ..options } } else { options };
    let metadata = if options.metadata.is_some() { None } else { metadata };
    let mut writer = ArrayRecordWriter::new(output, options)?;
    if let Some(metadata) = metadata {
        writer.write_metadata_chunk(&metadata.header, &metadata.data)?;
    }

    // Pass 2: copy or re-encode the data chunks.
    source.seek(first.end)?;
    let mut report = IndexReport {
        num_records: 0,
        copied_chunks: 0,
        reencoded_records: 0,
        group_size: writer.options().group_size,
        dropped_old_trailer,
    };
    let mut decoder = ChunkDecoder::new(&read_options);
    let mut wanted = kept.iter().map(|&(begin, _)| begin).peekable();
    while let Some(chunk) = next_chunk(&mut source, &read_options)? {
        if wanted.peek() != Some(&chunk.begin) {
            // Not a data chunk, or a dropped trailer chunk.
            continue;
        }
        wanted.next();
        if copy {
            writer.write_encoded_chunk(&chunk.header, &chunk.data)?;
            report.copied_chunks += 1;
        } else {
            let records = decoder.data_records(&chunk, false)?;
            for record in records.iter() {
                writer.write_record(&record)?;
            }
            report.reencoded_records += records.len() as u64;
        }
    }
    report.num_records = writer.num_records();
    Ok((writer.close()?, report))
}
