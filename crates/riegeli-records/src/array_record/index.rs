//! Turning a plain Riegeli/records file into an ArrayRecord file.

use std::io::{Read, Seek, Write};

use riegeli_codec::{ChunkType, FieldProjection};

use super::layout::{looks_like_footer, looks_like_postscript};
use super::options::ArrayRecordWriterOptions;
use super::writer::ArrayRecordWriter;
use crate::chunk_reader::{RawChunk, ReadError, read_chunk};
use crate::error::{Error, Result};
use crate::options::RecordReaderOptions;
use crate::reader::ChunkDecoder;
use crate::source::Source;

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
fn next_chunk<R: Read>(source: &mut Source<R>, options: &RecordReaderOptions) -> Result<Option<RawChunk>> {
    match read_chunk(source, options) {
        Ok(chunk) => Ok(chunk),
        Err(ReadError::Io(e)) => Err(e),
        Err(ReadError::Damage(d)) => Err(d.error),
    }
}

fn is_data(chunk: &RawChunk) -> bool {
    matches!(ChunkType::from_byte(chunk.header.chunk_type()), Some(ChunkType::Simple | ChunkType::Transposed))
        && chunk.header.num_records() > 0
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
/// use riegeli_records::array_record::index_riegeli_file;
///
/// let mut writer = RecordWriter::new(Vec::new(), RecordWriterOptions::new().set_chunk_size(Some(100)))?;
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
    let read_options = RecordReaderOptions::default();
    let mut source = Source::new(input, 0);
    let first = next_chunk(&mut source, &read_options)?
        .ok_or_else(|| Error::invalid(0, "empty file: missing file signature"))?;
    if first.header.chunk_type() != ChunkType::FileSignature.to_byte() {
        return Err(Error::invalid(0, "missing file signature: not a Riegeli/records file"));
    }

    // Pass 1: the data chunks' record counts, and the last two data chunks
    // (which may be an old ArrayRecord footer and postscript).
    let mut chunks: Vec<u64> = Vec::new();
    let mut last_two: Vec<RawChunk> = Vec::new();
    let mut metadata: Option<RawChunk> = None;
    while let Some(chunk) = next_chunk(&mut source, &read_options)? {
        if chunk.header.chunk_type() == ChunkType::FileMetadata.to_byte() && chunks.is_empty() && metadata.is_none() {
            metadata = Some(chunk);
            continue;
        }
        if !is_data(&chunk) {
            continue;
        }
        chunks.push(chunk.header.num_records());
        if last_two.len() == 2 {
            last_two.remove(0);
        }
        last_two.push(chunk);
    }
    let mut decoder = ChunkDecoder::new(FieldProjection::all());
    let mut dropped_old_trailer = false;
    if let [footer, postscript] = last_two.as_slice() {
        let simple = |c: &RawChunk| c.header.chunk_type() == ChunkType::Simple.to_byte();
        let records_of = |decoder: &mut ChunkDecoder, c: &RawChunk| decoder.decode(c, &read_options).ok().flatten();
        let is_postscript = simple(postscript)
            && records_of(&mut decoder, postscript)
                .is_some_and(|r| looks_like_postscript(r.iter()) == Some(footer.begin));
        let is_footer = simple(footer) && records_of(&mut decoder, footer).is_some_and(|r| looks_like_footer(r.iter()));
        if is_postscript && is_footer {
            chunks.truncate(chunks.len() - 2);
            dropped_old_trailer = true;
        }
    }
    let end_of_data = if dropped_old_trailer { last_two.first().map(|c| c.begin) } else { None };

    let group = chunks.first().copied().unwrap_or(options.group_size());
    let body = chunks.get(..chunks.len().saturating_sub(1)).unwrap_or_default();
    let copy =
        group <= i32::MAX as u64 && body.iter().all(|&n| n == group) && chunks.last().is_none_or(|&n| n <= group);
    let options = if copy { options.set_group_size(group) } else { options };
    let metadata = if options.metadata().is_some() { None } else { metadata };
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
        group_size: writer.options().group_size(),
        dropped_old_trailer,
    };
    while let Some(chunk) = next_chunk(&mut source, &read_options)? {
        if end_of_data.is_some_and(|end| chunk.begin >= end) {
            break;
        }
        if !is_data(&chunk) {
            continue;
        }
        if copy {
            writer.write_encoded_chunk(&chunk.header, &chunk.data)?;
            report.copied_chunks += 1;
        } else {
            let records = decoder
                .decode(&chunk, &read_options)
                .map_err(|e| Error::codec(chunk.begin, e))?
                .ok_or_else(|| Error::invalid(chunk.begin, "not a data chunk"))?;
            for record in records.iter() {
                writer.write_record(&record)?;
            }
            report.reencoded_records += records.len() as u64;
        }
    }
    report.num_records = writer.num_records();
    Ok((writer.close()?, report))
}
