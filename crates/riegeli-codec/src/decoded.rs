//! Records decoded from one chunk.

use std::sync::Arc;

use bytes::Bytes;

use crate::recycle::{Homing, Recycler, Reusable};

/// The records of one decoded chunk: a single buffer holding every record's
/// bytes back to back, and where each record ends.
///
/// Records are handed out as [`Bytes`] slices of the one buffer, without
/// copying. Both buffers go back to the decoder that made them (see
/// [`Recycler`]) when the records and the last slice of
/// them are dropped, whatever thread drops them.
#[derive(Debug, Clone)]
pub struct DecodedRecords {
    values: Bytes,
    /// `ends[i]` is the end offset of record `i` in `values`; non-decreasing,
    /// the last equal to `values.len()`.
    ends: Ends,
}

/// Where a chunk's records end: in the decoder's buffers (whose values
/// buffer is what `values` slices, or unused when `values` slices the
/// chunk's data), or, for a few records sliced from the chunk's data, held
/// here (nothing to allocate or send home: a chunk of one record, as
/// ArrayRecord's `group_size:1` writes, costs no more than its bytes).
#[derive(Debug, Clone)]
enum Ends {
    Shared(Arc<Homing<Buffers>>),
    Inline { len: u8, ends: [usize; INLINE_ENDS] },
}

/// The most record ends held inline.
pub(crate) const INLINE_ENDS: usize = 3;

impl Ends {
    fn as_slice(&self) -> &[usize] {
        match self {
            Self::Shared(buffers) => &buffers.ends,
            Self::Inline { len, ends } => ends.get(..usize::from(*len)).unwrap_or_default(),
        }
    }
}

/// The two buffers a decoder decodes a chunk's records into, which go home
/// together (one return to the decoder per chunk, not one per buffer).
#[derive(Debug, Default)]
pub(crate) struct Buffers {
    /// The records' bytes, when they are not slices of the chunk's data.
    pub(crate) values: Vec<u8>,
    /// Where each record ends.
    pub(crate) ends: Vec<usize>,
}

impl Reusable for Buffers {
    fn bytes(&self) -> usize {
        self.values.bytes().saturating_add(self.ends.bytes())
    }
}

/// Where the buffers of decoded records go when the records are dropped, for
/// a decoder to decode a later chunk into: by default each decoder has its
/// own, keeping one idle buffer (enough for a reader that lets go of a
/// chunk's records before the next is decoded). Decoders given the same
/// (clones share) pool their buffers, up to its bounds: what a reader needs
/// that decodes many chunks on several threads and lets go of all their
/// records at once (a batch of an ArrayRecord file), so that the next batch
/// decodes into them rather than into fresh pages.
#[derive(Debug, Clone, Default)]
pub struct RecordBuffers(pub(crate) Arc<Recycler<Buffers>>);

impl RecordBuffers {
    /// Buffers shared by the decoders given clones of it, at most
    /// `max_buffers` of them idle, holding at most `max_bytes` in all.
    pub fn new(max_buffers: usize, max_bytes: usize) -> Self {
        Self(Recycler::new(max_buffers, max_bytes))
    }

    /// How many idle buffers it holds (0 while another thread holds them).
    pub fn idle(&self) -> usize {
        self.0.idle()
    }
}

/// The values buffer of shared [`Buffers`], as the owner of [`Bytes`].
struct Values(Arc<Homing<Buffers>>);

impl AsRef<[u8]> for Values {
    fn as_ref(&self) -> &[u8] {
        &self.0.values
    }
}

impl Default for DecodedRecords {
    fn default() -> Self {
        Self { values: Bytes::new(), ends: Ends::Inline { len: 0, ends: [0; INLINE_ENDS] } }
    }
}

impl PartialEq for DecodedRecords {
    fn eq(&self, other: &Self) -> bool {
        self.values == other.values && self.ends() == other.ends()
    }
}

impl Eq for DecodedRecords {}

impl DecodedRecords {
    /// Records from a buffer and the end offset of each record.
    ///
    /// Returns `None` unless `ends` is non-decreasing and its last entry (if
    /// any) equals `values.len()` (and `values` is empty when `ends` is).
    pub fn new(values: Bytes, ends: Vec<usize>) -> Option<Self> {
        if !ends.windows(2).all(|w| matches!(w, [a, b] if a <= b)) {
            return None;
        }
        Self::decoded(Homing::stray(Buffers { values: Vec::new(), ends }), Some(values), 0)
    }

    /// Records a decoder made: their ends in `buffers` and their bytes
    /// `values`, or if none, `buffers`' values from `values_start` on; the
    /// buffers go home when the records and every slice of them are dropped.
    /// `None` unless the last end is where the values end.
    ///
    /// The ends are non-decreasing by construction (sums of sizes), which
    /// debug builds check; should a bug break that, records read as `None`
    /// or empty rather than panicking (see [`range`](Self::range)).
    pub(crate) fn decoded(buffers: Homing<Buffers>, values: Option<Bytes>, values_start: usize) -> Option<Self> {
        debug_assert!(buffers.ends.windows(2).all(|w| matches!(w, [a, b] if a <= b)), "record ends out of order");
        let buffers = Arc::new(buffers);
        let values = match values {
            Some(values) => values,
            None if values_start <= buffers.values.len() => {
                Bytes::from_owner(Values(Arc::clone(&buffers))).slice(values_start..)
            }
            None => return None,
        };
        let complete = buffers.ends.last().copied().unwrap_or(0) == values.len();
        complete.then_some(Self { values, ends: Ends::Shared(buffers) })
    }

    /// Records of `values` (a slice of a chunk's data, not of a decoder's
    /// buffer) ending at `ends`, at most [`INLINE_ENDS`] of them, held
    /// without a buffer. `None` if there are more, or unless the last end is
    /// where the values end.
    pub(crate) fn inline(values: Bytes, ends: &[usize]) -> Option<Self> {
        debug_assert!(ends.windows(2).all(|w| matches!(w, [a, b] if a <= b)), "record ends out of order");
        let mut inline = [0; INLINE_ENDS];
        inline.get_mut(..ends.len())?.copy_from_slice(ends);
        let len = u8::try_from(ends.len()).ok()?;
        let complete = ends.last().copied().unwrap_or(0) == values.len();
        complete.then_some(Self { values, ends: Ends::Inline { len, ends: inline } })
    }

    /// The number of records.
    pub fn len(&self) -> usize {
        self.ends().len()
    }

    /// Whether there are no records.
    pub fn is_empty(&self) -> bool {
        self.ends().is_empty()
    }

    /// The sum of the record sizes.
    pub fn decoded_data_size(&self) -> usize {
        self.values.len()
    }

    /// The byte range of record `index` in [`values`](Self::values).
    pub fn range(&self, index: usize) -> Option<std::ops::Range<usize>> {
        let ends = self.ends();
        let end = *ends.get(index)?;
        let begin = match index.checked_sub(1) {
            Some(prev) => *ends.get(prev)?,
            None => 0,
        };
        (begin <= end && end <= self.values.len()).then_some(begin..end)
    }

    /// Record `index`, without copying.
    pub fn get(&self, index: usize) -> Option<Bytes> {
        self.range(index).map(|r| self.values.slice(r))
    }

    /// Record `index` as a borrowed slice.
    pub fn get_slice(&self, index: usize) -> Option<&[u8]> {
        self.range(index).and_then(|r| self.values.get(r))
    }

    /// The buffer holding all records back to back.
    pub fn values(&self) -> &Bytes {
        &self.values
    }

    /// The end offset of each record in [`values`](Self::values).
    pub fn ends(&self) -> &[usize] {
        self.ends.as_slice()
    }

    /// Iterates over the records, without copying.
    pub fn iter(&self) -> impl ExactSizeIterator<Item = Bytes> + '_ {
        let mut begin = 0;
        let len = self.values.len();
        self.ends().iter().map(move |&end| {
            // Always true (see `decoded`): a bug reads as an empty record, not a panic.
            let record = if begin <= end && end <= len { self.values.slice(begin..end) } else { Bytes::new() };
            begin = end;
            record
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slices() {
        let records = DecodedRecords::new(Bytes::from_static(b"abcde"), vec![2, 2, 5]).unwrap();
        assert_eq!(records.len(), 3);
        assert_eq!(records.get(0).unwrap(), &b"ab"[..]);
        assert_eq!(records.get(1).unwrap(), &b""[..]);
        assert_eq!(records.get_slice(2).unwrap(), b"cde");
        assert!(records.get(3).is_none());
        assert_eq!(records.iter().count(), 3);
    }

    #[test]
    fn a_few_records_held_inline_read_as_shared_ones_do() {
        let values = Bytes::from_static(b"abcde");
        let inline = DecodedRecords::inline(values.clone(), &[2, 2, 5]).unwrap();
        let shared = DecodedRecords::new(values.clone(), vec![2, 2, 5]).unwrap();
        assert_eq!(inline, shared);
        assert_eq!(inline.iter().collect::<Vec<_>>(), shared.iter().collect::<Vec<_>>());
        assert_eq!((inline.len(), inline.get(2).unwrap()), (3, Bytes::from_static(b"cde")));
        assert!(inline.get(3).is_none());
        // More than INLINE_ENDS, or ends that miss the values' end, are refused.
        assert!(DecodedRecords::inline(values.clone(), &[1, 2, 3, 5]).is_none());
        assert!(DecodedRecords::inline(values, &[1, 2]).is_none());
        assert!(DecodedRecords::default().is_empty());
    }

    #[test]
    fn rejects_inconsistent_ends() {
        assert!(DecodedRecords::new(Bytes::from_static(b"abc"), vec![2, 1, 3]).is_none());
        assert!(DecodedRecords::new(Bytes::from_static(b"abc"), vec![2]).is_none());
        assert!(DecodedRecords::new(Bytes::from_static(b"abc"), vec![]).is_none());
        assert!(DecodedRecords::new(Bytes::new(), vec![]).is_some());
    }
}
