//! ArrayRecord files (google/array_record): recognising them, and what the
//! commands show of their footer and postscript.
//!
//! An ArrayRecord file is a Riegeli/records file whose last 64 KiB begin with
//! a postscript chunk (three copies of a `RiegeliPostscript` holding the
//! footer's offset and a magic number); the footer chunk indexes every data
//! chunk. The library reads them ([`ArrayRecordReader`]); this module only
//! recognises them cheaply, from the raw bytes at `size - 65536`, so that a
//! plain file costs one small read.

use std::fs::File;
use std::io::{Read, Seek, SeekFrom};
use std::path::Path;

use anyhow::{Context, Result};
use riegeli_records::{ArrayRecordReader, IndexSource};

use crate::{io, progress};

/// `RiegeliPostscript.magic`.
const MAGIC: u64 = 0x71930e704fdae05e;
/// The postscript chunk begins this many bytes before the end of the file.
const POSTSCRIPT_SPAN: u64 = 1 << 16;
/// A block header (24 bytes) and a chunk header (40 bytes) come before the
/// postscript's data when it begins at a block boundary, as writers put it.
const POSTSCRIPT_DATA_AT: usize = 24 + 40;

/// Where the ArrayRecord trailer of a file is, as its postscript says.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Trailer {
    /// Where the footer chunk begins (from the postscript).
    pub(crate) footer_offset: u64,
    /// Where the postscript chunk begins (`size - 65536`).
    pub(crate) postscript_pos: u64,
}

/// Reads a protobuf varint from the front of `input`.
fn take_varint(input: &mut &[u8]) -> Option<u64> {
    let mut value = 0u64;
    for shift in (0..64).step_by(7) {
        let (&byte, rest) = input.split_first()?;
        *input = rest;
        value |= u64::from(byte & 0x7f) << shift;
        if byte < 0x80 {
            return Some(value);
        }
    }
    None
}

/// The footer offset of a serialized `RiegeliPostscript` with the magic
/// (fields 1 and 2 in field order, as C++ writes them), if `record` is one.
pub(crate) fn parse_postscript(mut record: &[u8]) -> Option<u64> {
    let input = &mut record;
    let mut footer_offset = None;
    let mut magic = None;
    while !input.is_empty() {
        match take_varint(input)? {
            0x08 => footer_offset = Some(take_varint(input)?),
            0x10 => magic = Some(take_varint(input)?),
            _ => return None,
        }
    }
    if magic == Some(MAGIC) { footer_offset } else { None }
}

/// The footer offset named by the first record of an uncompressed simple
/// chunk whose data is `data` (no hash is checked: this only recognises).
fn postscript_in_chunk_data(mut data: &[u8]) -> Option<u64> {
    let input = &mut data;
    let (&compression, rest) = input.split_first()?;
    *input = rest;
    if compression != 0 {
        return None;
    }
    let sizes_len = usize::try_from(take_varint(input)?).ok()?;
    let (mut sizes, values) = input.split_at_checked(sizes_len)?;
    let first = usize::try_from(take_varint(&mut sizes)?).ok()?;
    parse_postscript(values.get(..first)?)
}

/// Recognises an ArrayRecord file by the postscript at `size - 65536`: reads
/// a few hundred bytes there. `None` for plain files (and for standard input,
/// which cannot seek).
pub(crate) fn detect(path: &Path) -> Result<Option<Trailer>> {
    if path.as_os_str() == "-" {
        return Ok(None);
    }
    let mut file = io::open_file(path)?;
    detect_in(&mut file).with_context(|| io::name(path))
}

fn detect_in(file: &mut File) -> std::io::Result<Option<Trailer>> {
    let size = file.seek(SeekFrom::End(0))?;
    let Some(postscript_pos) = size.checked_sub(POSTSCRIPT_SPAN) else { return Ok(None) };
    if !postscript_pos.is_multiple_of(POSTSCRIPT_SPAN) {
        return Ok(None);
    }
    file.seek(SeekFrom::Start(postscript_pos))?;
    let mut window = Vec::with_capacity(512);
    file.take(512).read_to_end(&mut window)?;
    let footer_offset = window.get(POSTSCRIPT_DATA_AT..).and_then(postscript_in_chunk_data);
    Ok(footer_offset
        .filter(|&offset| offset < postscript_pos)
        .map(|footer_offset| Trailer { footer_offset, postscript_pos }))
}

/// What the footer says of an ArrayRecord file, read by [`ArrayRecordReader`].
pub(crate) struct Summary {
    pub(crate) num_records: u64,
    pub(crate) num_chunks: usize,
    pub(crate) writer_options: Option<String>,
    pub(crate) index_source: IndexSource,
    pub(crate) fallback_reason: Option<String>,
    /// Damaged regions the scan skipped, other than the footer itself.
    pub(crate) damage: Vec<riegeli_records::SkippedRegion>,
}

impl Summary {
    /// `"footer"` or `"scanned"`.
    pub(crate) fn index_source_name(&self) -> &'static str {
        match self.index_source {
            IndexSource::Footer => "footer",
            _ => "scanned",
        }
    }
}

/// Opens `path` with an [`ArrayRecordReader`] and summarises its index. When
/// the file has an ArrayRecord `trailer` whose footer cannot be used, says so
/// on stderr (one line, the reader's fallback reason); files without one are
/// indexed by a scan, quietly.
pub(crate) fn open(path: &Path, trailer: Option<Trailer>) -> Result<(ArrayRecordReader<File>, Summary)> {
    let (reader, summary) = open_with(path, trailer)?;
    if trailer.is_some()
        && let Some(reason) = &summary.fallback_reason
    {
        progress::note(&format!("riegeli: {}: ArrayRecord footer unusable: {reason}", io::name(path)));
    }
    Ok((reader, summary))
}

/// [`open`] without the notice (for `verify`, which reports problems on stdout).
pub(crate) fn open_with(path: &Path, trailer: Option<Trailer>) -> Result<(ArrayRecordReader<File>, Summary)> {
    let name = io::name(path);
    let reader = ArrayRecordReader::new(io::open_file(path)?).with_context(|| name.clone())?;
    let footer_offset = trailer.map(|t| t.footer_offset);
    let damage = reader.skipped_regions().iter().filter(|r| Some(r.begin()) != footer_offset).cloned().collect();
    let summary = Summary {
        num_records: reader.num_records(),
        num_chunks: reader.num_chunks(),
        writer_options: reader.writer_options().map(str::to_owned),
        index_source: reader.index_source(),
        fallback_reason: reader.fallback_reason().map(str::to_owned),
        damage,
    };
    Ok((reader, summary))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn postscript_bytes_of_the_spec() {
        // array-record.md §2: footer_offset 163.
        let record = b"\x08\xa3\x01\x10\xde\xc0\xeb\xfe\x84\xce\xc3\xc9\x71";
        assert_eq!(parse_postscript(record), Some(163));
        assert_eq!(parse_postscript(b"\x08\xa3\x01\x10\xde\xc0\xeb\xfe\x84\xce\xc3\xc9\x72"), None);
        assert_eq!(parse_postscript(b"\x08\xa3\x01"), None);
        let mut data = b"\x00\x03\x0d\x0d\x0d".to_vec();
        for _ in 0..3 {
            data.extend_from_slice(record);
        }
        assert_eq!(postscript_in_chunk_data(&data), Some(163));
        data[0] = 1;
        assert_eq!(postscript_in_chunk_data(&data), None);
    }
}
