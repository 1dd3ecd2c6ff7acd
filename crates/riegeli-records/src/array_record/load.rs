//! Loading an ArrayRecord file's index: the postscript (the chunk at
//! `size - 65536`, each of its three copies tried), the footer it names,
//! checked more strictly than C++ checks it, or without a usable one a scan
//! of the chunk headers ([`load`]); and recognising an ArrayRecord file
//! cheaply ([`find_array_record_trailer`]).

use std::io::{Read, Seek};

use riegeli_codec::ChunkType;
use riegeli_framing::CHUNK_HEADER_SIZE;

use super::compact::EliasFanoBuilder;
use super::options::ArrayRecordReaderOptions;
use super::plan::{ChunkIndex, Offloaded};
use crate::chunk_reader::{RawChunk, ReadError, read_chunk, skip_damage};
use crate::decode::ChunkDecoder;
use crate::error::{Corruption, Error, IndexCorruption, Result};
use crate::indexed::{ChunkEntry, chunk_at};
use crate::options::ChunkReadOptions;
use crate::skipped_region::SkippedRegion;
use crate::source::Source;
use crate::trailer::{
    Disposition, FooterEntry, POSTSCRIPT_SPAN, TrailerDetector, looks_like_postscript, parse_footer_metadata,
    parse_postscript,
};

/// Where an [`ArrayRecordReader`](super::ArrayRecordReader)'s chunk index comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum IndexSource {
    /// The ArrayRecord footer, found through the postscript.
    Footer,
    /// A sequential scan of the chunk headers: the postscript or footer is
    /// missing or damaged, so the file was read as plain Riegeli/records, as
    /// [`scan_fallback`](ArrayRecordReaderOptions::scan_fallback) asked (see
    /// [`IndexInfo::fallback_reason`]).
    Scanned,
}

/// How an [`ArrayRecordReader`](super::ArrayRecordReader) found its chunk
/// index, and what the file says of itself
/// ([`ArrayRecordReader::index`](super::ArrayRecordReader::index)).
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct IndexInfo {
    /// Where the index comes from: the footer, or a scan of the file.
    pub index_source: IndexSource,
    /// The number of data chunks.
    pub num_chunks: usize,
    /// The writer options stored in the footer, if any.
    pub writer_options: Option<String>,
    /// Why the file was scanned rather than read through its footer, if it
    /// was: what opening it without
    /// [`scan_fallback`](ArrayRecordReaderOptions::scan_fallback) fails with.
    pub fallback_reason: Option<String>,
    /// Where the scan found an ArrayRecord footer that ends the file with no
    /// postscript after it: an ArrayRecord file cut short after its footer
    /// (also listed in [`skipped_regions`](Self::skipped_regions)). `None`
    /// unless [`IndexSource::Scanned`].
    pub footer_without_postscript: Option<u64>,
    /// Damaged regions the scan skipped (empty unless [`IndexSource::Scanned`]).
    pub skipped_regions: Vec<SkippedRegion>,
}

/// Where an ArrayRecord file's trailer is, as its postscript says.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ArrayRecordTrailer {
    /// Where the footer chunk begins (from the postscript).
    pub footer_offset: u64,
    /// Where the postscript chunk begins (`size - 65536`).
    pub postscript_pos: u64,
}

/// Recognises an ArrayRecord file cheaply: reads only the chunk at
/// `size - 65536` and returns the trailer its postscript names, or `None` for
/// a file without one (a plain Riegeli/records file, or one whose postscript
/// chunk is unreadable). Data hashes are not checked: this recognises, it
/// does not validate ([`ArrayRecordReader`](super::ArrayRecordReader) does,
/// and falls back to a scan). Only a chunk that fits in the last 64 KiB is read.
pub fn find_array_record_trailer<R: Read + Seek>(mut src: R) -> Result<Option<ArrayRecordTrailer>> {
    let size = src.seek(std::io::SeekFrom::End(0))?;
    let Some(postscript_pos) = size.checked_sub(POSTSCRIPT_SPAN) else { return Ok(None) };
    let options = ChunkReadOptions { verify_hashes: false, max_chunk_data_size: POSTSCRIPT_SPAN, ..Default::default() };
    src.seek(std::io::SeekFrom::Start(postscript_pos))?;
    let mut source = Source::new(src, postscript_pos);
    let chunk = match chunk_at(&mut source, postscript_pos, &options) {
        Ok(chunk) => chunk.gather(),
        Err(e) if e.is_corruption() => return Ok(None),
        Err(e) => return Err(e),
    };
    if chunk.chunk_type() != Some(ChunkType::Simple) {
        return Ok(None);
    }
    let Ok(records) = ChunkDecoder::new(&options).data_records(&chunk, false) else { return Ok(None) };
    let footer_offset = records.iter().next().and_then(|record| parse_postscript(&record));
    Ok(footer_offset
        .filter(|&offset| offset < postscript_pos)
        .map(|footer_offset| ArrayRecordTrailer { footer_offset, postscript_pos }))
}

/// A file's index, as [`load`] found it.
#[derive(Debug)]
pub(crate) struct Loaded {
    /// Every data chunk, in file order, and the record count.
    pub(crate) index: ChunkIndex,
    pub(crate) index_source: IndexSource,
    /// With [`IndexSource::Scanned`]: why the footer was not used.
    pub(crate) fallback_reason: Option<String>,
    /// The footer's writer options, if it has them.
    pub(crate) writer_options: Option<String>,
    /// Damaged regions a scan skipped.
    pub(crate) skipped: Vec<SkippedRegion>,
    /// Where a scan found a footer ending the file, no postscript after it.
    pub(crate) footer_without_postscript: Option<u64>,
}

impl Loaded {
    /// No chunks yet, from `index_source`.
    fn empty(index_source: IndexSource) -> Self {
        Self {
            index: ChunkIndex::default(),
            index_source,
            fallback_reason: None,
            writer_options: None,
            skipped: Vec::new(),
            footer_without_postscript: None,
        }
    }
}

/// Loads the index of the file in `source`: through its postscript and
/// footer, or when these are missing or damaged, by a scan if
/// [`scan_fallback`](ArrayRecordReaderOptions::scan_fallback) allows it
/// (else an error that is corruption, [`IndexCorruption::NoScanFallback`]).
/// I/O errors are returned as they are.
pub(crate) fn load<R: Read + Seek>(source: &mut Source<R>, options: &ArrayRecordReaderOptions) -> Result<Loaded> {
    let size = source.size()?;
    match read_index(source, &options.chunks, size) {
        Ok(footer) => {
            // Offloaded, the footer checked now is read again by each read that needs it.
            let index = match footer.index.group() {
                Some(group) if options.offload_index => {
                    let (num_chunks, num_records) = (footer.index.num_chunks(), footer.index.num_records());
                    let at = Offloaded { footer_offset: footer.footer_offset, end: footer.end, group, num_chunks };
                    ChunkIndex::offloaded(at, num_records)
                }
                _ => footer.index,
            };
            Ok(Loaded { index, writer_options: footer.writer_options, ..Loaded::empty(IndexSource::Footer) })
        }
        Err(e) if e.is_corruption() && !options.scan_fallback => Err(in_index(e, IndexCorruption::NoScanFallback)),
        Err(e) if e.is_corruption() => {
            let mut loaded = scan(source, &options.chunks)?;
            loaded.fallback_reason = Some(e.to_string());
            Ok(loaded)
        }
        Err(e) => Err(e),
    }
}

/// The index read from the footer.
struct FooterIndex {
    index: ChunkIndex,
    writer_options: Option<String>,
    /// Where the footer is, and where it must end.
    footer_offset: u64,
    end: u64,
}

/// The index an offloaded one stands for, read from its footer again and
/// checked as when the file was opened; a footer that changed since is a
/// corruption of it.
pub(crate) fn reload<R: Read + Seek>(
    source: &mut Source<R>,
    options: &ChunkReadOptions,
    at: Offloaded,
    num_records: u64,
) -> Result<ChunkIndex> {
    let footer = read_footer(source, options, at.footer_offset, at.end)?;
    let index = footer.index;
    let bad = |cause| Err(corrupt(at.footer_offset, cause));
    if index.num_chunks() != at.num_chunks {
        let (announced, present) = (at.num_chunks as u64, index.num_chunks() as u64);
        return bad(IndexCorruption::ChunkCount { announced, present });
    }
    if index.num_records() != num_records || index.group() != Some(at.group) {
        return bad(IndexCorruption::RecordCountMismatch { sum: index.num_records(), footer: num_records });
    }
    Ok(index)
}

/// A corruption of the index at `pos`.
fn corrupt(pos: u64, cause: IndexCorruption) -> Error {
    Error::corrupt(pos, Corruption::Index(cause))
}

/// `e`, if a corruption, as a problem of the ArrayRecord index at the same
/// position: `wrap` of what `e` says.
fn in_index(e: Error, wrap: impl FnOnce(Box<Corruption>) -> IndexCorruption) -> Error {
    let (Some(pos), Some(cause)) = (e.position(), e.corruption()) else { return e };
    corrupt(pos, wrap(Box::new(cause.clone())))
}

/// Reads the postscript and the footer.
fn read_index<R: Read + Seek>(source: &mut Source<R>, strict: &ChunkReadOptions, size: u64) -> Result<FooterIndex> {
    let Some(postscript_pos) = size.checked_sub(POSTSCRIPT_SPAN) else {
        return Err(corrupt(size, IndexCorruption::TooShort { size }));
    };
    let (offsets, first_error) = match postscript_offsets(source, postscript_pos, strict) {
        Ok(offsets) => (offsets, None),
        Err(e) if e.is_corruption() => {
            // The chunk is damaged: its records may still hold an intact copy.
            let lenient = ChunkReadOptions { verify_hashes: false, ..strict.clone() };
            let offsets = postscript_offsets(source, postscript_pos, &lenient).unwrap_or_default();
            (offsets, Some(in_index(e, IndexCorruption::Postscript)))
        }
        Err(e) => return Err(e),
    };
    // The first problem is reported: a damaged postscript before the footer a damaged copy names.
    let mut first_error = first_error;
    for offset in offsets {
        match read_footer(source, strict, offset, postscript_pos) {
            Ok(index) => return Ok(index),
            Err(e) if e.is_corruption() => {
                first_error.get_or_insert_with(|| in_index(e, |cause| IndexCorruption::Footer { offset, cause }));
            }
            Err(e) => return Err(e),
        }
    }
    Err(first_error.unwrap_or_else(|| corrupt(postscript_pos, IndexCorruption::NoPostscriptRecord)))
}

/// The distinct footer offsets named by postscript records of the chunk at `pos`.
fn postscript_offsets<R: Read + Seek>(
    source: &mut Source<R>,
    pos: u64,
    options: &ChunkReadOptions,
) -> Result<Vec<u64>> {
    let chunk = chunk_at(source, pos, options)?.gather();
    let records = ChunkDecoder::new(options).data_records(&chunk, false)?;
    let mut offsets = Vec::new();
    for record in records.iter() {
        if let Some(offset) = looks_like_postscript(std::iter::once(record))
            && !offsets.contains(&offset)
        {
            offsets.push(offset);
        }
    }
    if offsets.is_empty() {
        return Err(corrupt(pos, IndexCorruption::NotPostscript));
    }
    Ok(offsets)
}

/// Reads and checks the footer at `footer_offset`, which must end by `end`.
fn read_footer<R: Read + Seek>(
    source: &mut Source<R>,
    options: &ChunkReadOptions,
    footer_offset: u64,
    end: u64,
) -> Result<FooterIndex> {
    let bad = |cause| corrupt(footer_offset, cause);
    if footer_offset >= end {
        return Err(bad(IndexCorruption::FooterNotBeforePostscript { offset: footer_offset, postscript: end }));
    }
    let chunk = chunk_at(source, footer_offset, options)?.gather();
    if chunk.end > end {
        return Err(bad(IndexCorruption::FooterPastPostscript { end: chunk.end }));
    }
    if chunk.chunk_type() != Some(ChunkType::Simple) {
        return Err(bad(IndexCorruption::FooterNotSimpleChunk));
    }
    let records = ChunkDecoder::new(options).data_records(&chunk, false)?;
    let (num_chunks, num_records, writer_options) =
        records.get_slice(0).and_then(parse_footer_metadata).ok_or_else(|| bad(IndexCorruption::FooterMetadata))?;
    let present = records.len().saturating_sub(1) as u64;
    if num_chunks != present {
        return Err(bad(IndexCorruption::ChunkCount { announced: num_chunks, present }));
    }
    let mut entries = FooterEntries::new(footer_offset, records.len(), options.max_num_records);
    for (k, record) in records.iter().enumerate().skip(1) {
        let entry = (k - 1) as u64;
        let parsed = <FooterEntry as prost::Message>::decode(record)
            .map_err(|error| bad(IndexCorruption::EntryNotParsed { entry, error }))?;
        entries.push(entry, &parsed).map_err(bad)?;
    }
    let index = entries.finish(num_records, bad)?;
    Ok(FooterIndex { index, writer_options, footer_offset, end })
}

/// The entries of a footer, checked one by one as they come (each offset
/// after the one before and before the footer, each count at least 1 and at
/// most the limit), their offsets kept compressed; [`finish`](Self::finish)
/// checks them together.
struct FooterEntries {
    footer_offset: u64,
    max_num_records: u64,
    /// The entries' offsets, compressed (at most `max_num_records` of them,
    /// the decoder's output: about `2 + log2(footer_offset / entries)` bits each).
    bounds: EliasFanoBuilder,
    /// The sum of the counts so far.
    num_records: u64,
    /// The first entry's count, and the last's.
    group: u64,
    last_count: u64,
    /// The first entry before the last whose count is not the first's: (entry, offset, count).
    odd: Option<(u64, u64, u64)>,
    /// The last entry's offset, and its decoded size if it gave one.
    previous: Option<(u64, Option<u64>)>,
    /// Raw and decoded bytes of the entries that gave a decoded size.
    raw_with_size: u64,
    decoded: u64,
}

impl FooterEntries {
    fn new(footer_offset: u64, capacity: usize, max_num_records: u64) -> Self {
        Self {
            footer_offset,
            max_num_records,
            bounds: EliasFanoBuilder::new(capacity, footer_offset),
            num_records: 0,
            group: 0,
            last_count: 0,
            odd: None,
            previous: None,
            raw_with_size: 0,
            decoded: 0,
        }
    }

    /// Checks and keeps entry number `entry`.
    fn push(&mut self, entry: u64, parsed: &FooterEntry) -> std::result::Result<(), IndexCorruption> {
        let missing = |field| IndexCorruption::EntryField { entry, field };
        let offset = parsed.chunk_offset.ok_or_else(|| missing("chunk_offset"))?;
        let count = parsed.num_records.ok_or_else(|| missing("num_records"))?;
        if count == 0 || count > self.max_num_records {
            return Err(IndexCorruption::EntryRecordCount { entry, offset, count, max: self.max_num_records });
        }
        let lowest = self.previous.map_or(CHUNK_HEADER_SIZE, |(p, _)| p + 1);
        let out_of_order = IndexCorruption::OffsetsOutOfOrder { entry, offset, previous: lowest };
        if offset < lowest || offset >= self.footer_offset {
            return Err(out_of_order);
        }
        self.bounds.push(offset).map_err(|_| out_of_order)?;
        self.count_size(offset);
        if entry == 0 {
            self.group = count;
        } else if self.last_count != self.group && self.odd.is_none() {
            let previous = self.previous.map_or(0, |(p, _)| p);
            self.odd = Some((entry - 1, previous, self.last_count));
        }
        (self.previous, self.last_count) = (Some((offset, parsed.decoded_data_size)), count);
        self.num_records = self.num_records.checked_add(count).ok_or(IndexCorruption::RecordCountOverflow)?;
        Ok(())
    }

    /// Counts the chunk before `end` (where the next one, or the footer, begins)
    /// towards the decoded-per-raw ratio, if its entry gave a decoded size.
    fn count_size(&mut self, end: u64) {
        if let Some((begin, Some(size))) = self.previous {
            self.raw_with_size = self.raw_with_size.saturating_add(end - begin);
            self.decoded = self.decoded.saturating_add(size);
        }
    }

    /// The index, if the counts add up to `num_records` and every chunk but
    /// the last holds as many records as the first (the last no more); what
    /// is wrong is a corruption made by `bad`.
    fn finish(mut self, num_records: u64, bad: impl Fn(IndexCorruption) -> Error) -> Result<ChunkIndex> {
        self.count_size(self.footer_offset);
        if self.num_records != num_records {
            return Err(bad(IndexCorruption::RecordCountMismatch { sum: self.num_records, footer: num_records }));
        }
        let group = self.group;
        if let Some((chunk, offset, count)) = self.odd {
            return Err(bad(IndexCorruption::GroupSize { chunk, offset, count, group }));
        }
        if self.last_count > group {
            return Err(bad(IndexCorruption::LastChunkOverGroupSize { group }));
        }
        // Where the last chunk's room ends: after every offset, within the universe.
        self.bounds
            .push(self.footer_offset)
            .map_err(|_| Error::internal("the footer's offset refused by the index"))?;
        let ratio = if self.raw_with_size > 0 { self.decoded as f64 / self.raw_with_size as f64 } else { 0.0 };
        Ok(ChunkIndex::footer(self.bounds.build(), group, num_records, ratio))
    }
}

/// Builds the index from the chunk headers, reading the file from the
/// beginning; what remains of an ArrayRecord trailer is left out.
fn scan<R: Read + Seek>(source: &mut Source<R>, options: &ChunkReadOptions) -> Result<Loaded> {
    source.seek(0)?;
    let not_riegeli = |e: Error| {
        let pos = e.position().unwrap_or(0);
        in_index(e, |cause| IndexCorruption::NotRiegeli { pos, cause })
    };
    let first = chunk_at(source, 0, options).map_err(not_riegeli)?;
    if first.header().chunk_type() != ChunkType::FileSignature.to_byte() {
        return Err(not_riegeli(Error::corrupt(0, Corruption::MissingSignature)));
    }
    let entry = |chunk: &RawChunk| ChunkEntry {
        offset: chunk.begin,
        limit: chunk.end,
        num_records: chunk.header.num_records(),
        decoded_data_size: chunk.header.decoded_data_size(),
        first_record: 0,
    };
    let decode = |chunk: &RawChunk| ChunkDecoder::new(options).data_records(chunk, false).ok();
    let mut trailer = TrailerDetector::lazy();
    let mut held: Option<RawChunk> = None;
    let mut loaded = Loaded::empty(IndexSource::Scanned);
    let mut chunks = Vec::new();
    loop {
        match read_chunk(source, options) {
            Ok(Some(chunk)) if chunk.holds_records() => {
                let step =
                    trailer.feed(chunk.begin, &chunk.header, || decode(&chunk), || held.as_ref().and_then(decode));
                let previous = held.take();
                if step.release_held {
                    chunks.extend(previous.as_ref().map(entry));
                }
                match step.this {
                    Disposition::Keep => chunks.push(entry(&chunk)),
                    Disposition::Hold => held = Some(chunk),
                    Disposition::Drop => {}
                }
            }
            Ok(Some(_)) => {}
            Ok(None) => break,
            Err(ReadError::Io(e)) => return Err(e),
            Err(ReadError::Damage(damage)) => {
                // A held chunk stays held: the data chunk after the damage
                // (or the end of the file) decides what it is.
                let message = damage.error.to_string();
                let resumed = skip_damage(source, damage.resume)?;
                let end = resumed.unwrap_or(source.pos());
                loaded.skipped.push(SkippedRegion::new(damage.begin, end, message));
                if resumed.is_none() {
                    break;
                }
            }
        }
    }
    // The file ends after a footer that no postscript follows: it was cut short.
    if trailer.finish(|| held.as_ref().and_then(decode)) {
        if let Some(footer) = &held {
            let message = "an ArrayRecord footer that no postscript follows (the file was cut short after it)";
            loaded.skipped.push(SkippedRegion::new(footer.begin, footer.end, message.into()));
            loaded.footer_without_postscript = Some(footer.begin);
        }
    } else {
        chunks.extend(held.as_ref().map(entry));
    }
    let mut first_record = 0u64;
    for chunk in &mut chunks {
        chunk.first_record = first_record;
        first_record = first_record.saturating_add(chunk.num_records);
    }
    loaded.index = ChunkIndex::scanned(chunks, first_record);
    Ok(loaded)
}

#[cfg(test)]
mod tests {
    use std::io::Cursor;

    use super::*;
    use crate::array_record::plan::ChunkId;
    use crate::{ArrayRecordWriter, RecordWriter};

    /// `records` records of 3 bytes each, `group_size:4`, uncompressed.
    fn array_record_file(records: u8) -> Vec<u8> {
        let mut writer = ArrayRecordWriter::new(Vec::new(), "group_size:4,uncompressed".parse().unwrap()).unwrap();
        for i in 0..records {
            writer.write_record(&[i; 3]).unwrap();
        }
        writer.close().unwrap()
    }

    fn load_bytes(bytes: &[u8], scan_fallback: bool, verify_hashes: bool) -> Result<Loaded> {
        let mut options = ArrayRecordReaderOptions { scan_fallback, ..Default::default() };
        options.chunks.verify_hashes = verify_hashes;
        load(&mut Source::new(Cursor::new(bytes), 0), &options)
    }

    /// The index problem of `error`, and the one it wraps, if any.
    fn causes(error: &Error) -> (&IndexCorruption, Option<&IndexCorruption>) {
        let Some(Corruption::Index(cause)) = error.corruption() else { panic!("not an index problem: {error}") };
        let inner = match cause {
            IndexCorruption::NoScanFallback(inner)
            | IndexCorruption::Postscript(inner)
            | IndexCorruption::Footer { cause: inner, .. }
            | IndexCorruption::NotRiegeli { cause: inner, .. } => match &**inner {
                Corruption::Index(inner) => Some(inner),
                _ => None,
            },
            _ => None,
        };
        (cause, inner)
    }

    #[test]
    fn a_valid_footer_gives_every_chunk() {
        let loaded = load_bytes(&array_record_file(10), false, true).unwrap();
        assert_eq!(loaded.index_source, IndexSource::Footer);
        assert_eq!(loaded.index.num_records(), 10);
        let chunks: Vec<ChunkEntry> =
            (0..loaded.index.num_chunks()).map(|k| loaded.index.entry(ChunkId(k)).unwrap()).collect();
        let counts: Vec<(u64, u64)> = chunks.iter().map(|c| (c.first_record, c.num_records)).collect();
        assert_eq!(counts, [(0, 4), (4, 4), (8, 2)]);
        // Each chunk's room ends where the next begins, the last's at the footer.
        assert!(chunks.windows(2).all(|w| w[0].offset < w[1].offset && w[0].limit == w[1].offset));
        let trailer = find_array_record_trailer(Cursor::new(&array_record_file(10))).unwrap().unwrap();
        assert_eq!(chunks.last().map(|c| c.limit), Some(trailer.footer_offset));
        assert_eq!(loaded.writer_options.as_deref().map(|o| o.contains("group_size:4")), Some(true));
        assert!(loaded.fallback_reason.is_none() && loaded.skipped.is_empty());
    }

    #[test]
    fn a_short_file_is_too_short_then_not_riegeli() {
        let error = load_bytes(&[0; 10], false, true).unwrap_err();
        assert_eq!(error.position(), Some(10));
        assert!(matches!(
            causes(&error),
            (IndexCorruption::NoScanFallback(_), Some(IndexCorruption::TooShort { size: 10 }))
        ));
        let error = load_bytes(&[0; 10], true, true).unwrap_err();
        assert!(matches!(causes(&error), (IndexCorruption::NotRiegeli { pos: 0, .. }, None)), "{error}");
    }

    #[test]
    fn a_plain_file_has_no_postscript_and_is_scanned() {
        let mut writer = RecordWriter::new(Vec::new(), "uncompressed".parse().unwrap()).unwrap();
        for i in 0..100u32 {
            writer.write_record(&[i as u8; 1000]).unwrap();
        }
        let bytes = writer.close().unwrap();
        let error = load_bytes(&bytes, false, true).unwrap_err();
        assert!(
            matches!(causes(&error), (IndexCorruption::NoScanFallback(_), Some(IndexCorruption::Postscript(_)))),
            "{error}"
        );
        assert!(error.to_string().contains("no postscript at size - 65536"), "{error}");
        let loaded = load_bytes(&bytes, true, true).unwrap();
        assert_eq!(loaded.index_source, IndexSource::Scanned);
        assert_eq!(loaded.index.num_records(), 100);
        assert!(loaded.fallback_reason.unwrap().contains("ArrayRecord index: no postscript"));
    }

    #[test]
    fn a_footer_whose_counts_do_not_add_up_is_refused() {
        let file = array_record_file(10);
        let trailer = find_array_record_trailer(Cursor::new(&file)).unwrap().unwrap();
        // The footer is uncompressed; the first entry is 08 40 10 0c 18 04:
        // chunk_offset 64, decoded_data_size 12, num_records 4.
        let start = trailer.footer_offset as usize + 40;
        let entry = file[start..].windows(6).position(|w| w == [0x08, 0x40, 0x10, 0x0c, 0x18, 0x04]).unwrap();
        let mut damaged = file.clone();
        damaged[start + entry + 5] = 5;
        // The data hash fails too; hash checks off reach the footer checks.
        let error = load_bytes(&damaged, false, false).unwrap_err();
        assert_eq!(error.position(), Some(trailer.footer_offset));
        let (IndexCorruption::NoScanFallback(_), Some(IndexCorruption::Footer { offset, cause })) = causes(&error)
        else {
            panic!("{error}")
        };
        assert_eq!(*offset, trailer.footer_offset);
        assert!(
            matches!(&**cause, Corruption::Index(IndexCorruption::RecordCountMismatch { sum: 11, footer: 10 })),
            "{error}"
        );
        let loaded = load_bytes(&damaged, true, false).unwrap();
        assert_eq!((loaded.index_source, loaded.index.num_records()), (IndexSource::Scanned, 10));
    }
}
