//! ArrayRecord's trailer: the messages ArrayRecord adds to a Riegeli/records
//! file (google/array_record `cpp/layout.proto`), the checks that recognise
//! them, and [`TrailerDetector`], the one place that decides whether the last
//! data chunks of a file are a footer and a postscript rather than records.
//!
//! All fields are proto2 `optional`, so prost encodes every field that is set,
//! zero values included, in field-number order: byte for byte what C++ writes.

use std::borrow::Borrow;

use bytes::Bytes;
use riegeli_codec::{ChunkType, DecodedRecords};
use riegeli_framing::ChunkHeader;

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
pub(crate) fn parse_postscript(record: &[u8]) -> Option<u64> {
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

/// What to do with a data chunk fed to a [`TrailerDetector`], and with the
/// chunk it held back before (if any).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[must_use]
pub struct TrailerStep {
    /// Whether the chunk held back by an earlier step holds records after all
    /// (they come before this chunk's); if false, a held chunk is dropped.
    pub release_held: bool,
    /// What to do with this chunk.
    pub this: Disposition,
}

/// What a [`TrailerDetector`] says of one data chunk.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Disposition {
    /// Its records are records.
    Keep,
    /// It may be an ArrayRecord footer: hold it back until the next data
    /// chunk (or the end of the file) decides.
    Hold,
    /// It is part of the trailer: its records are not records.
    Drop,
}

/// Recognises an ArrayRecord trailer among a file's data chunks (chunks with
/// records), fed one at a time in file order: a possible footer is held back
/// until the next data chunk says whether it is the postscript naming it
/// (then both are dropped); a postscript whose footer lies before it (the
/// footer damaged or skipped) is dropped; a footer the file ends after (the
/// postscript lost or damaged) is dropped at [`finish`](Self::finish).
/// Damaged regions between chunks change nothing, but for a reader that must
/// report damage before it can look past it (which this crate's readers do).
///
/// Records are asked for only when needed, and only of simple chunks (a
/// footer or postscript is always one): an eager detector (the [`Default`] one), fed
/// by a reader that decodes every chunk anyway, holds back only chunks whose
/// records look like a footer; a [lazy](Self::lazy) one, fed by a scan of
/// chunk headers, holds back every simple chunk and decodes records only to
/// confirm a trailer (a chunk followed by a small chunk that may be a
/// postscript, or the last one).
#[derive(Debug, Default, Clone)]
pub struct TrailerDetector {
    lazy: bool,
    /// Where the chunk held back begins.
    held: Option<u64>,
}

/// Bytes of a serialized postscript record: two varint fields, the magic
/// taking 9 bytes, the footer offset 1 to 10.
const POSTSCRIPT_RECORD: std::ops::RangeInclusive<u64> = 12..=22;

impl TrailerDetector {
    /// A detector for a scan that decodes chunks only to confirm a trailer.
    pub fn lazy() -> Self {
        Self { lazy: true, held: None }
    }

    /// Feeds the next data chunk: where it begins, its header, its records
    /// (`records` is called at most once, and only for a simple chunk; `None`
    /// when they cannot be decoded: such a chunk is kept), and the records of
    /// the chunk held back, should a lazy detector need them.
    pub fn feed<A: Borrow<DecodedRecords>, B: Borrow<DecodedRecords>>(
        &mut self,
        begin: u64,
        header: &ChunkHeader,
        records: impl FnOnce() -> Option<A>,
        held_records: impl FnOnce() -> Option<B>,
    ) -> TrailerStep {
        let held = self.held.take();
        let step = |release_held, this| TrailerStep { release_held, this };
        if header.chunk_type() != ChunkType::Simple.to_byte() || header.num_records() == 0 {
            return step(held.is_some(), Disposition::Keep);
        }
        let mut records = Lazy::new(records);
        let (n, size) = (header.num_records(), header.decoded_data_size());
        let may_be_postscript = n.checked_mul(*POSTSCRIPT_RECORD.start()).is_some_and(|least| least <= size)
            && n.checked_mul(*POSTSCRIPT_RECORD.end()).is_some_and(|most| size <= most);
        if may_be_postscript && let Some(footer) = records.get().and_then(|r| looks_like_postscript(r.iter())) {
            if held == Some(footer)
                && (!self.lazy || held_records().is_some_and(|r| looks_like_footer(r.borrow().iter())))
            {
                return step(false, Disposition::Drop);
            }
            if footer < begin {
                return step(held.is_some(), Disposition::Drop);
            }
        }
        if self.lazy || records.get().is_some_and(|r| looks_like_footer(r.iter())) {
            self.held = Some(begin);
            return step(held.is_some(), Disposition::Hold);
        }
        step(held.is_some(), Disposition::Keep)
    }

    /// Reading stopped before the next data chunk (an error to report before
    /// reading on): a held chunk is not known to be a footer, so it holds
    /// records. Returns whether one was held.
    pub(crate) fn interrupt(&mut self) -> bool {
        self.held.take().is_some()
    }

    /// The file ended. Returns whether a chunk was held back and is dropped
    /// (a footer whose postscript was lost); a lazy detector asks for its
    /// records to tell, and a held chunk that is not a footer must be kept
    /// (there was one if the last step said [`Disposition::Hold`]).
    pub fn finish<B: Borrow<DecodedRecords>>(&mut self, held_records: impl FnOnce() -> Option<B>) -> bool {
        if self.held.is_none() {
            return false;
        }
        let drop = !self.lazy || held_records().is_some_and(|r| looks_like_footer(r.borrow().iter()));
        if drop {
            self.held = None;
        }
        drop
    }
}

/// A value computed on first use.
struct Lazy<T, F> {
    value: Option<Option<T>>,
    make: Option<F>,
}

impl<T: Borrow<DecodedRecords>, F: FnOnce() -> Option<T>> Lazy<T, F> {
    fn new(make: F) -> Self {
        Self { value: None, make: Some(make) }
    }

    fn get(&mut self) -> Option<&DecodedRecords> {
        if self.value.is_none() {
            self.value = Some(self.make.take().and_then(|make| make()));
        }
        self.value.as_ref().and_then(Option::as_ref).map(Borrow::borrow)
    }
}

/// One serialized postscript record.
pub(crate) fn encode_postscript(footer_offset: u64) -> Vec<u8> {
    prost::Message::encode_to_vec(&Postscript { footer_offset: Some(footer_offset), magic: Some(MAGIC) })
}

#[cfg(test)]
mod tests {
    use super::*;
    use prost::Message;
    use riegeli_codec::SimpleChunkEncoder;

    /// The records of a simple chunk holding `records`.
    fn decoded(records: &[Vec<u8>]) -> DecodedRecords {
        let mut encoder = SimpleChunkEncoder::new(riegeli_codec::CompressorOptions::uncompressed());
        for record in records {
            encoder.add_record(record);
        }
        let mut data = Vec::new();
        let (num_records, size) = (encoder.num_records(), encoder.decoded_data_size());
        encoder.encode(&mut data).unwrap();
        let limits = riegeli_codec::DecodeLimits { max_decoded_size: 1 << 20, max_num_records: 1 << 20 };
        riegeli_codec::SimpleChunkDecoder::new().decode(data.into(), num_records, size, &limits).unwrap()
    }

    fn footer(num_chunks: u64) -> Vec<Vec<u8>> {
        let metadata = FooterMetadata {
            array_record_metadata: Some(ArrayRecordMetadata {
                version: Some(VERSION),
                num_chunks: Some(num_chunks),
                num_records: Some(num_chunks),
                writer_options: None,
            }),
        };
        let entry = FooterEntry { chunk_offset: Some(64), decoded_data_size: Some(1), num_records: Some(1) };
        std::iter::once(metadata.encode_to_vec()).chain((0..num_chunks).map(|_| entry.encode_to_vec())).collect()
    }

    /// A simple chunk header for `records` at no particular place.
    fn header(records: &DecodedRecords, chunk_type: ChunkType) -> ChunkHeader {
        ChunkHeader::for_data(chunk_type.to_byte(), b"", records.len() as u64, records.decoded_data_size() as u64)
            .unwrap()
    }

    /// Feeds `chunk` at `begin` with `held` as the held chunk's records.
    fn feed(
        detector: &mut TrailerDetector,
        begin: u64,
        chunk: &DecodedRecords,
        held: Option<&DecodedRecords>,
    ) -> TrailerStep {
        detector.feed(begin, &header(chunk, ChunkType::Simple), || Some(chunk), || held)
    }

    #[test]
    fn a_footer_is_held_until_its_postscript_drops_both() {
        for lazy in [false, true] {
            let new = || if lazy { TrailerDetector::lazy() } else { TrailerDetector::default() };
            let data = decoded(&[b"a".to_vec()]);
            let footer1 = decoded(&footer(1));
            let keep_or_hold = if lazy { Disposition::Hold } else { Disposition::Keep };
            let mut detector = new();
            assert_eq!(feed(&mut detector, 64, &data, None).this, keep_or_hold);
            let step = feed(&mut detector, 1000, &footer1, Some(&data));
            assert_eq!(step, TrailerStep { release_held: lazy, this: Disposition::Hold });
            assert!(detector.held.is_some());
            let postscript = decoded(&vec![encode_postscript(1000); 3]);
            let step = feed(&mut detector, 65536, &postscript, Some(&footer1));
            assert_eq!(step, TrailerStep { release_held: false, this: Disposition::Drop }, "lazy {lazy}");
            assert!(detector.held.is_none() && !detector.finish(|| None::<DecodedRecords>));

            // A postscript naming another chunk releases the held one and is dropped
            // (its footer lies before it); one naming a later chunk is a record.
            let mut detector = new();
            let _ = feed(&mut detector, 1000, &decoded(&footer(2)), None);
            let step = feed(&mut detector, 2000, &decoded(&[encode_postscript(64)]), Some(&footer1));
            assert_eq!(step, TrailerStep { release_held: true, this: Disposition::Drop });
            let step = feed(&mut detector, 3000, &decoded(&[encode_postscript(5000)]), None);
            assert_eq!(step, TrailerStep { release_held: false, this: keep_or_hold });
            // Transposed chunks are never asked for records; they release a held chunk.
            let mut detector = new();
            let _ = feed(&mut detector, 4000, &footer1, None);
            let transposed = header(&data, ChunkType::Transposed);
            let step = detector.feed(
                5000,
                &transposed,
                || -> Option<DecodedRecords> { unreachable!() },
                || None::<DecodedRecords>,
            );
            assert_eq!(step, TrailerStep { release_held: true, this: Disposition::Keep });
            // A footer the file ends after is dropped; one cut off by damage is kept;
            // a lazy detector keeps a last chunk that is no footer.
            let _ = feed(&mut detector, 6000, &footer1, None);
            assert!(detector.finish(|| Some(&footer1)));
            let _ = feed(&mut detector, 7000, &footer1, None);
            assert!(detector.interrupt());
            assert!(!detector.finish(|| Some(&footer1)));
            let _ = feed(&mut detector, 8000, &data, None);
            assert_eq!(detector.finish(|| Some(&data)), !lazy && detector.held.is_some());
            // A footer whose count disagrees with its entries is a record.
            let mut lying = footer(2);
            lying.pop();
            let mut detector = new();
            assert_eq!(feed(&mut detector, 9000, &decoded(&lying), None).this, keep_or_hold);
            let step = feed(&mut detector, 10_000, &decoded(&[encode_postscript(9000)]), Some(&decoded(&lying)));
            assert_eq!(step, TrailerStep { release_held: lazy, this: Disposition::Drop }, "lazy {lazy}");
        }
    }

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
