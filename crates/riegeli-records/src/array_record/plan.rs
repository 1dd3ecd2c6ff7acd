//! Planning ArrayRecord reads: the loaded index of data chunks
//! ([`ChunkIndex`], chunks named by [`ChunkId`]), and which chunks a
//! selection of records needs and which records of each ([`Plan`]).
//!
//! A plan does no I/O; the reader fetches and decodes its chunks (serially,
//! or as tasks on the decode stream) and hands each chunk's records back with
//! the picks the plan gives for it.

use std::ops::Range;

use super::compact::{Cursor, EliasFano};
use crate::error::{Error, ErrorKind, Result};
use crate::indexed::ChunkEntry;

/// The records a batch read ([`ArrayRecordReader::read_batch`](super::ArrayRecordReader::read_batch)) reads.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Selection<'a> {
    /// Every record, in order.
    All,
    /// The records with indices in a range, in order (an empty range reads
    /// nothing; one past the end is an error).
    Range(Range<u64>),
    /// The records with the given indices, in the order given, repeats allowed.
    Indices(&'a [u64]),
}

impl From<Range<u64>> for Selection<'_> {
    fn from(range: Range<u64>) -> Self {
        Self::Range(range)
    }
}

impl<'a> From<&'a [u64]> for Selection<'a> {
    fn from(indices: &'a [u64]) -> Self {
        Self::Indices(indices)
    }
}

impl<'a, const N: usize> From<&'a [u64; N]> for Selection<'a> {
    fn from(indices: &'a [u64; N]) -> Self {
        Self::Indices(indices)
    }
}

impl<'a> From<&'a Vec<u64>> for Selection<'a> {
    fn from(indices: &'a Vec<u64>) -> Self {
        Self::Indices(indices)
    }
}

/// A data chunk's place in its file's index: the `n`th data chunk.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub(crate) struct ChunkId(pub(crate) usize);

impl ChunkId {
    /// The chunk after this one.
    pub(crate) fn next(self) -> Self {
        Self(self.0 + 1)
    }
}

/// The data chunks of an ArrayRecord file, in file order, and its record count.
///
/// From a footer (checked by `load`: offsets increase, every chunk but the
/// last holds the same number of records, the counts add up), only the
/// offsets are kept, compressed ([`EliasFano`]: about 12 bits a chunk of
/// 1 KiB), with the group size: a record's chunk is a division, its room
/// ends where the next chunk begins, and the decoded sizes the footer gives
/// are left to the chunk headers (one average ratio is kept, for planning).
/// From a scan, each chunk's entry as its header gave it. Offloaded
/// (`index_storage_option:offloaded`), only where the footer is: a read
/// that needs entries reads it again ([`load::reload`](super::load::reload)).
#[derive(Debug)]
pub(crate) struct ChunkIndex {
    storage: Storage,
    num_records: u64,
}

#[derive(Debug)]
enum Storage {
    /// Chunk offsets, then the footer's offset (where the last chunk's room
    /// ends); every chunk but the last holds `group` records.
    Footer { bounds: EliasFano, group: u64, decoded_per_raw: f64 },
    /// Each chunk's entry (`first_record` the sum of the counts before it).
    Scanned(Vec<ChunkEntry>),
    /// Nothing but where the footer is (checked when the file was opened).
    Offloaded(Offloaded),
}

/// Where an offloaded index is: the footer, read again by each read that
/// needs chunk entries, and what it held when the file was opened.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Offloaded {
    pub(crate) footer_offset: u64,
    /// Where the footer must end (the postscript's block).
    pub(crate) end: u64,
    pub(crate) group: u64,
    pub(crate) num_chunks: usize,
}

impl Default for ChunkIndex {
    fn default() -> Self {
        Self::scanned(Vec::new(), 0)
    }
}

impl ChunkIndex {
    /// The index of a checked footer: `bounds` holds each chunk's offset and
    /// then the footer's; every chunk but the last holds `group` records.
    /// `decoded_per_raw` estimates a chunk's decoded size from its bytes (0: unknown).
    pub(crate) fn footer(bounds: EliasFano, group: u64, num_records: u64, decoded_per_raw: f64) -> Self {
        Self { storage: Storage::Footer { bounds, group: group.max(1), decoded_per_raw }, num_records }
    }

    /// An index left in the file, at `offloaded`.
    pub(crate) fn offloaded(offloaded: Offloaded, num_records: u64) -> Self {
        Self { storage: Storage::Offloaded(offloaded), num_records }
    }

    /// Where the index is, if it is left in the file.
    pub(crate) fn offloaded_at(&self) -> Option<Offloaded> {
        match self.storage {
            Storage::Offloaded(at) => Some(at),
            _ => None,
        }
    }

    /// The group size of a footer's index (every chunk but the last holds that many).
    pub(crate) fn group(&self) -> Option<u64> {
        match self.storage {
            Storage::Footer { group, .. } | Storage::Offloaded(Offloaded { group, .. }) => Some(group),
            Storage::Scanned(_) => None,
        }
    }

    /// The index a scan found: entries in file order, `first_record` set.
    pub(crate) fn scanned(entries: Vec<ChunkEntry>, num_records: u64) -> Self {
        Self { storage: Storage::Scanned(entries), num_records }
    }

    pub(crate) fn num_chunks(&self) -> usize {
        match &self.storage {
            Storage::Footer { bounds, .. } => bounds.len().saturating_sub(1),
            Storage::Scanned(entries) => entries.len(),
            Storage::Offloaded(at) => at.num_chunks,
        }
    }

    pub(crate) fn num_records(&self) -> u64 {
        self.num_records
    }

    /// The bytes the index holds on the heap.
    pub(crate) fn heap_bytes(&self) -> usize {
        match &self.storage {
            Storage::Footer { bounds, .. } => bounds.heap_bytes(),
            Storage::Scanned(entries) => entries.capacity() * std::mem::size_of::<ChunkEntry>(),
            Storage::Offloaded(_) => 0,
        }
    }

    /// The entry of chunk `id`; an id this index did not give is an internal error.
    pub(crate) fn entry(&self, id: ChunkId) -> Result<ChunkEntry> {
        self.entry_near(id, &mut Cursor::default())
    }

    /// [`entry`](Self::entry), looked up from where `cursor` was left by the
    /// entry before (of a footer's index: chunks read in order take a step
    /// each, not a search).
    pub(crate) fn entry_near(&self, id: ChunkId, cursor: &mut Cursor) -> Result<ChunkEntry> {
        match &self.storage {
            Storage::Footer { bounds, group, .. } => {
                let (offset, limit) = bounds.get_pair_near(id.0, cursor).ok_or_else(not_indexed)?;
                let (first_record, num_records) = self.group_records(id, *group);
                Ok(ChunkEntry { offset, limit, num_records, decoded_data_size: u64::MAX, first_record })
            }
            Storage::Scanned(entries) => entries.get(id.0).copied().ok_or_else(not_indexed),
            // The reader reloads the index before anything that needs an entry.
            Storage::Offloaded(_) => Err(Error::internal("a chunk entry asked of an offloaded index")),
        }
    }

    /// The first record of chunk `id` and its number of records: what
    /// [`entry`](Self::entry) says of them, without reading the chunk's
    /// offsets where the group size tells.
    pub(crate) fn records(&self, id: ChunkId) -> Result<(u64, u64)> {
        match &self.storage {
            Storage::Footer { group, .. } if id.0 < self.num_chunks() => Ok(self.group_records(id, *group)),
            _ => self.entry(id).map(|entry| (entry.first_record, entry.num_records)),
        }
    }

    /// The first record and the number of records of chunk `id` of a footer's
    /// index, whose every chunk but the last holds `group` records.
    fn group_records(&self, id: ChunkId, group: u64) -> (u64, u64) {
        let first_record = (id.0 as u64).saturating_mul(group);
        (first_record, self.num_records.saturating_sub(first_record).min(group))
    }

    /// The chunk holding record `index`, and the record's index within it;
    /// an index past the end is an `InvalidArgument` error.
    pub(crate) fn locate(&self, index: u64) -> Result<(ChunkId, usize)> {
        if index >= self.num_records {
            return Err(ErrorKind::InvalidArgument(format!(
                "record index {index} out of range: the file has {} records",
                self.num_records
            ))
            .into());
        }
        match &self.storage {
            Storage::Footer { group, .. } | Storage::Offloaded(Offloaded { group, .. }) => {
                let k = usize::try_from(index / group).map_err(|_| not_indexed())?;
                Ok((ChunkId(k), (index % group) as usize))
            }
            Storage::Scanned(entries) => {
                let k = entries.partition_point(|c| c.first_record + c.num_records <= index);
                let entry = entries.get(k).ok_or_else(not_indexed)?;
                Ok((ChunkId(k), (index - entry.first_record) as usize))
            }
        }
    }

    /// The decoded size of `steps`' chunks as far as the index tells: a
    /// chunk whose size it does not keep counts as its bytes times the
    /// footer's average ratio, or as `unknown` without one.
    pub(crate) fn decoded_size(&self, steps: &[Step], unknown: u64) -> u64 {
        let mut cursor = Cursor::default();
        steps.iter().map(|step| self.chunk_decoded_size(step.id, unknown, &mut cursor)).fold(0, u64::saturating_add)
    }

    /// [`decoded_size`](Self::decoded_size) of chunk `id` (0 if the index
    /// does not give it), looked up from where `cursor` was left.
    pub(crate) fn chunk_decoded_size(&self, id: ChunkId, unknown: u64, cursor: &mut Cursor) -> u64 {
        let ratio = match &self.storage {
            Storage::Footer { decoded_per_raw, .. } => *decoded_per_raw,
            Storage::Scanned(_) | Storage::Offloaded(_) => 0.0,
        };
        match self.entry_near(id, cursor).map(|c| (c.decoded_data_size, c.raw_bytes())) {
            Ok((u64::MAX, raw)) if ratio > 0.0 => (raw as f64 * ratio) as u64,
            Ok((u64::MAX, _)) => unknown,
            Ok((size, _)) => size,
            Err(_) => 0,
        }
    }
}

/// One chunk of a plan: which, and how many of its first records are needed
/// (simple chunks are decoded no further).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Step {
    pub(crate) id: ChunkId,
    pub(crate) needed: u64,
}

/// The chunks a selection of records needs, ascending, and where each of
/// their records goes in the selection.
#[derive(Debug)]
pub(crate) struct Plan {
    steps: Vec<Step>,
    picks: Picks,
}

/// Where the records of a plan's chunks go in the selection.
#[derive(Debug)]
enum Picks {
    /// Records `range` in order: chunk records in the range, at their offset from its start.
    Range(Range<u64>),
    /// Indices in any order: the positions in the selection, grouped by chunk
    /// in file order (`order`), each with its (chunk, index in the chunk)
    /// (`located`, by position); step `i`'s positions are
    /// `order[starts[i]..starts[i + 1]]`.
    Indices { order: Vec<usize>, located: Vec<(ChunkId, usize)>, starts: Vec<usize> },
}

impl Plan {
    /// Plans `selection`: every index is checked before anything is read.
    pub(crate) fn new(index: &ChunkIndex, selection: &Selection<'_>) -> Result<Self> {
        match *selection {
            Selection::All => Self::range(index, 0..index.num_records()),
            Selection::Range(ref range) => Self::range(index, range.clone()),
            Selection::Indices(indices) => Self::indices(index, indices),
        }
    }

    /// The chunks holding the records of `range`, each needed as far as the range's end.
    pub(crate) fn range(index: &ChunkIndex, range: Range<u64>) -> Result<Self> {
        let mut steps = Vec::new();
        if range.start < range.end {
            let (first, _) = index.locate(range.start)?;
            let (last, _) = index.locate(range.end - 1)?;
            let mut id = first;
            while id <= last {
                let needed = range.end.saturating_sub(index.records(id)?.0);
                steps.push(Step { id, needed });
                id = id.next();
            }
        }
        Ok(Self { steps, picks: Picks::Range(range) })
    }

    /// The chunks holding `indices` (in any order, repeats allowed), each
    /// needed as far as the last of its records asked for.
    fn indices(index: &ChunkIndex, indices: &[u64]) -> Result<Self> {
        let located = indices.iter().map(|&i| index.locate(i)).collect::<Result<Vec<_>>>()?;
        let mut order: Vec<usize> = (0..indices.len()).collect();
        order.sort_by_key(|&p| located.get(p).map(|l| l.0));
        let mut steps: Vec<Step> = Vec::new();
        let mut starts = Vec::new();
        for (at, &(id, j)) in order.iter().filter_map(|&p| located.get(p)).enumerate() {
            let needed = j as u64 + 1;
            match steps.last_mut() {
                Some(step) if step.id == id => step.needed = step.needed.max(needed),
                _ => {
                    steps.push(Step { id, needed });
                    starts.push(at);
                }
            }
        }
        starts.push(order.len());
        Ok(Self { steps, picks: Picks::Indices { order, located, starts } })
    }

    /// The chunks to decode, in file order.
    pub(crate) fn steps(&self) -> &[Step] {
        &self.steps
    }

    /// The number of records the selection names.
    pub(crate) fn len(&self) -> usize {
        match &self.picks {
            Picks::Range(range) => usize::try_from(range.end.saturating_sub(range.start)).unwrap_or(usize::MAX),
            Picks::Indices { order, .. } => order.len(),
        }
    }

    /// Puts in `out` the (position in the selection, index in the chunk) of
    /// the records of step `i`'s chunk that the selection names, in the
    /// order asked (for a range: the chunk's records in the range).
    pub(crate) fn picks(&self, index: &ChunkIndex, i: usize, out: &mut Vec<(usize, usize)>) {
        out.clear();
        match &self.picks {
            Picks::Range(range) => {
                let Some((first_record, num_records)) = self.steps.get(i).and_then(|step| index.records(step.id).ok())
                else {
                    return;
                };
                let from = range.start.saturating_sub(first_record);
                let to = range.end.saturating_sub(first_record).min(num_records);
                // Position in the range of record `j` of the chunk (`from..to` are in it).
                let position = |j: u64| (first_record + j - range.start) as usize;
                out.extend((from..to).map(|j| (position(j), j as usize)));
            }
            Picks::Indices { order, located, starts } => {
                let (Some(&begin), Some(&end)) = (starts.get(i), starts.get(i + 1)) else { return };
                let positions = order.get(begin..end).unwrap_or_default();
                out.extend(positions.iter().filter_map(|&p| Some((p, located.get(p)?.1))));
            }
        }
    }
}

/// An index lookup that cannot fail: the index was checked when it was built.
pub(crate) fn not_indexed() -> Error {
    Error::internal("a chunk or record missing from the checked index")
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Three chunks of 3, 3 and 2 records.
    fn index() -> ChunkIndex {
        let entry = |k: u64, first_record, num_records| ChunkEntry {
            offset: 100 * k,
            limit: 100 * (k + 1),
            num_records,
            decoded_data_size: 10 * num_records,
            first_record,
        };
        ChunkIndex::scanned(vec![entry(0, 0, 3), entry(1, 3, 3), entry(2, 6, 2)], 8)
    }

    fn all_picks(plan: &Plan, index: &ChunkIndex) -> Vec<Vec<(usize, usize)>> {
        (0..plan.steps().len())
            .map(|i| {
                let mut out = Vec::new();
                plan.picks(index, i, &mut out);
                out
            })
            .collect()
    }

    #[test]
    fn locate_finds_each_record_and_refuses_past_the_end() {
        let index = index();
        let got: Vec<(ChunkId, usize)> = (0..8).map(|i| index.locate(i).unwrap()).collect();
        let want = [(0, 0), (0, 1), (0, 2), (1, 0), (1, 1), (1, 2), (2, 0), (2, 1)].map(|(k, j)| (ChunkId(k), j));
        assert_eq!(got, want);
        let error = index.locate(8).unwrap_err();
        assert!(matches!(error.kind(), ErrorKind::InvalidArgument(_)), "{error}");
    }

    #[test]
    fn a_range_needs_its_chunks_up_to_its_end() {
        let index = index();
        let plan = Plan::range(&index, 2..7).unwrap();
        let want = [
            Step { id: ChunkId(0), needed: 7 },
            Step { id: ChunkId(1), needed: 4 },
            Step { id: ChunkId(2), needed: 1 },
        ];
        assert_eq!(plan.steps(), want);
        assert_eq!(plan.len(), 5);
        assert_eq!(all_picks(&plan, &index), [vec![(0, 2)], vec![(1, 0), (2, 1), (3, 2)], vec![(4, 0)]]);
        assert!(Plan::range(&index, 5..5).unwrap().steps().is_empty());
        assert!(Plan::range(&index, 5..9).is_err());
    }

    #[test]
    fn indices_are_grouped_by_chunk_in_the_order_asked() {
        let index = index();
        let plan = Plan::new(&index, &Selection::Indices(&[7, 1, 4, 0, 1])).unwrap();
        let want = [
            Step { id: ChunkId(0), needed: 2 },
            Step { id: ChunkId(1), needed: 2 },
            Step { id: ChunkId(2), needed: 2 },
        ];
        assert_eq!(plan.steps(), want);
        assert_eq!(plan.len(), 5);
        assert_eq!(all_picks(&plan, &index), [vec![(1, 1), (3, 0), (4, 1)], vec![(2, 1)], vec![(0, 1)]]);
        assert!(Plan::new(&index, &Selection::Indices(&[3, 8])).is_err());
        assert!(Plan::new(&index, &Selection::Indices(&[])).unwrap().steps().is_empty());
    }

    #[test]
    fn decoded_size_counts_unknown_sizes_as_asked() {
        let Storage::Scanned(mut entries) = index().storage else { unreachable!() };
        entries[1].decoded_data_size = u64::MAX;
        let index = ChunkIndex::scanned(entries, 8);
        let plan = Plan::new(&index, &Selection::All).unwrap();
        assert_eq!(index.decoded_size(plan.steps(), 1000), 30 + 1000 + 20);
    }

    /// The same chunks as [`index`], as a footer gives them.
    fn footer_index(decoded_per_raw: f64) -> ChunkIndex {
        let mut bounds = super::super::compact::EliasFanoBuilder::new(4, 300);
        for offset in [0, 100, 200, 300] {
            bounds.push(offset).unwrap();
        }
        ChunkIndex::footer(bounds.build(), 3, 8, decoded_per_raw)
    }

    #[test]
    fn a_footer_index_gives_the_entries_a_scan_does_without_sizes() {
        let (scanned, footer) = (index(), footer_index(0.0));
        assert_eq!(footer.num_chunks(), 3);
        for k in 0..3 {
            let (s, f) = (scanned.entry(ChunkId(k)).unwrap(), footer.entry(ChunkId(k)).unwrap());
            assert_eq!(
                (f.offset, f.limit, f.num_records, f.first_record),
                (s.offset, s.limit, s.num_records, s.first_record)
            );
            assert_eq!(f.decoded_data_size, u64::MAX);
        }
        assert!(footer.entry(ChunkId(3)).is_err());
        for i in 0..8 {
            assert_eq!(footer.locate(i).unwrap(), scanned.locate(i).unwrap(), "record {i}");
        }
        assert!(footer.locate(8).is_err());
        let all = [Step { id: ChunkId(0), needed: 1 }, Step { id: ChunkId(2), needed: 1 }];
        assert_eq!(footer.decoded_size(&all, 1000), 2000);
        assert_eq!(footer_index(1.5).decoded_size(&all, 1000), 300);
    }
}
