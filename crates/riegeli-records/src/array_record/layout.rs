//! The messages ArrayRecord adds to a Riegeli/records file (google/array_record
//! `cpp/layout.proto`) and the checks that recognise them.
//!
//! All fields are proto2 `optional`, so prost encodes every field that is set,
//! zero values included, in field-number order: byte for byte what C++ writes.

use bytes::Bytes;

/// `RiegeliPostscript.magic`.
pub(crate) const MAGIC: u64 = 0x71930e704fdae05e;
/// `ArrayRecordMetadata.version` this implementation reads and writes.
pub(crate) const VERSION: u32 = 1;
/// The postscript chunk begins this many bytes before the end of the file.
pub(crate) const POSTSCRIPT_SPAN: u64 = 1 << 16;
/// How many copies of the postscript the writer stores.
pub(crate) const POSTSCRIPT_COPIES: usize = 3;

/// `RiegeliPostscript`: the first record of the chunk at `size - 65536`.
#[derive(Clone, PartialEq, prost::Message)]
pub(crate) struct Postscript {
    /// Where the footer chunk begins.
    #[prost(uint64, optional, tag = "1")]
    pub(crate) footer_offset: Option<u64>,
    /// [`MAGIC`].
    #[prost(uint64, optional, tag = "2")]
    pub(crate) magic: Option<u64>,
}

/// `RiegeliFooterMetadata.ArrayRecordMetadata`.
#[derive(Clone, PartialEq, prost::Message)]
pub(crate) struct ArrayRecordMetadata {
    /// Must be [`VERSION`].
    #[prost(uint32, optional, tag = "1")]
    pub(crate) version: Option<u32>,
    /// Number of data chunks.
    #[prost(uint64, optional, tag = "2")]
    pub(crate) num_chunks: Option<u64>,
    /// Number of records in the file.
    #[prost(uint64, optional, tag = "3")]
    pub(crate) num_records: Option<u64>,
    /// The writer's options (informational).
    #[prost(string, optional, tag = "4")]
    pub(crate) writer_options: Option<String>,
}

/// `RiegeliFooterMetadata`: record 0 of the footer chunk. The `oneof metadata`
/// with its single member is wire-identical to an optional field.
#[derive(Clone, PartialEq, prost::Message)]
pub(crate) struct FooterMetadata {
    /// The only kind of metadata there is.
    #[prost(message, optional, tag = "1")]
    pub(crate) array_record_metadata: Option<ArrayRecordMetadata>,
}

/// `ArrayRecordFooter`: records 1..=K of the footer chunk, one per data chunk.
#[derive(Clone, PartialEq, prost::Message)]
pub(crate) struct FooterEntry {
    /// Where the data chunk begins.
    #[prost(uint64, optional, tag = "1")]
    pub(crate) chunk_offset: Option<u64>,
    /// The data chunk's `decoded_data_size`.
    #[prost(uint64, optional, tag = "2")]
    pub(crate) decoded_data_size: Option<u64>,
    /// The data chunk's `num_records`.
    #[prost(uint64, optional, tag = "3")]
    pub(crate) num_records: Option<u64>,
}

/// The footer offset of a serialized `RiegeliPostscript` record, if it is one
/// (field 1 first, as C++ writes it, and the ArrayRecord magic).
pub fn parse_postscript(record: &[u8]) -> Option<u64> {
    // Two varint fields: at most 22 bytes, field 1 first as C++ writes it.
    if record.len() > 22 || record.first() != Some(&0x08) {
        return None;
    }
    let postscript = <Postscript as prost::Message>::decode(record).ok()?;
    if postscript.magic != Some(MAGIC) {
        return None;
    }
    postscript.footer_offset
}

/// The footer's `(num_chunks, num_records, writer_options)`, if `record`
/// parses as `RiegeliFooterMetadata` with version 1.
pub(crate) fn parse_footer_metadata(record: &[u8]) -> Option<(u64, u64, Option<String>)> {
    // Field 1, length-delimited, as C++ writes it.
    if record.first() != Some(&0x0a) {
        return None;
    }
    let metadata = <FooterMetadata as prost::Message>::decode(record).ok()?.array_record_metadata?;
    if metadata.version != Some(VERSION) {
        return None;
    }
    Some((metadata.num_chunks.unwrap_or(0), metadata.num_records.unwrap_or(0), metadata.writer_options))
}

/// Whether the records of a simple chunk look like an ArrayRecord footer:
/// record 0 is footer metadata (version 1) counting one chunk per further record.
pub(crate) fn looks_like_footer(records: impl ExactSizeIterator<Item = Bytes>) -> bool {
    let n = records.len() as u64;
    let mut records = records;
    let Some(first) = records.next() else { return false };
    parse_footer_metadata(&first).is_some_and(|(num_chunks, _, _)| num_chunks.checked_add(1) == Some(n))
}

/// The footer offset a chunk's records name, if they look like a postscript
/// (at least one record; every record a postscript with the magic, all equal).
pub(crate) fn looks_like_postscript(records: impl Iterator<Item = Bytes>) -> Option<u64> {
    let mut offset = None;
    for record in records {
        let this = parse_postscript(&record)?;
        if offset.is_some_and(|o| o != this) {
            return None;
        }
        offset = Some(this);
    }
    offset
}

/// One serialized postscript record.
pub(crate) fn encode_postscript(footer_offset: u64) -> Vec<u8> {
    prost::Message::encode_to_vec(&Postscript { footer_offset: Some(footer_offset), magic: Some(MAGIC) })
}

#[cfg(test)]
mod tests {
    use super::*;
    use prost::Message;

    #[test]
    fn wire_format_matches_the_spec() {
        // §2: footer_offset 163.
        assert_eq!(encode_postscript(163), b"\x08\xa3\x01\x10\xde\xc0\xeb\xfe\x84\xce\xc3\xc9\x71");
        assert_eq!(parse_postscript(b"\x08\xa3\x01\x10\xde\xc0\xeb\xfe\x84\xce\xc3\xc9\x71"), Some(163));
        assert_eq!(parse_postscript(b"\x08\xa3\x01\x10\xde\xc0\xeb\xfe\x84\xce\xc3\xc9\x72"), None);
        assert_eq!(parse_postscript(b"\x08\xa3\x01"), None, "no magic");
        // §3: an empty file's metadata, zero values written.
        let metadata = FooterMetadata {
            array_record_metadata: Some(ArrayRecordMetadata {
                version: Some(1),
                num_chunks: Some(0),
                num_records: Some(0),
                writer_options: Some("x".into()),
            }),
        };
        assert_eq!(metadata.encode_to_vec(), b"\x0a\x09\x08\x01\x10\x00\x18\x00\x22\x01x");
        let entry = FooterEntry { chunk_offset: Some(64), decoded_data_size: Some(5), num_records: Some(2) };
        assert_eq!(entry.encode_to_vec(), b"\x08\x40\x10\x05\x18\x02");
    }
}
