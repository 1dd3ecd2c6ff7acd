//! Records decoded from one chunk.

use std::sync::Arc;

use bytes::Bytes;

use crate::recycle::Homing;

/// The records of one decoded chunk: a single buffer holding every record's
/// bytes back to back, and where each record ends.
///
/// Records are handed out as [`Bytes`] slices of the one buffer, without
/// copying. Both buffers go back to the decoder that made them (see
/// [`Recycler`](crate::Recycler)) when the records and the last slice of
/// them are dropped, whatever thread drops them.
#[derive(Debug, Clone)]
pub struct DecodedRecords {
    values: Bytes,
    /// `ends[i]` is the end offset of record `i` in `values`; non-decreasing,
    /// the last equal to `values.len()`.
    ends: Arc<Homing<usize>>,
}

impl Default for DecodedRecords {
    fn default() -> Self {
        Self { values: Bytes::new(), ends: Arc::new(Homing::stray(Vec::new())) }
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
        Self::homing(values, Homing::stray(ends))
    }

    /// [`new`](Self::new) with end offsets in a buffer that goes home when
    /// the records are dropped.
    pub(crate) fn homing(values: Bytes, ends: Homing<usize>) -> Option<Self> {
        let ordered = ends.windows(2).all(|w| matches!(w, [a, b] if a <= b));
        let complete = ends.last().copied().unwrap_or(0) == values.len();
        (ordered && complete).then(|| Self { values, ends: Arc::new(ends) })
    }

    /// The number of records.
    pub fn len(&self) -> usize {
        self.ends.len()
    }

    /// Whether there are no records.
    pub fn is_empty(&self) -> bool {
        self.ends.is_empty()
    }

    /// The sum of the record sizes.
    pub fn decoded_data_size(&self) -> usize {
        self.values.len()
    }

    /// The byte range of record `index` in [`values`](Self::values).
    pub fn range(&self, index: usize) -> Option<std::ops::Range<usize>> {
        let end = *self.ends.get(index)?;
        let begin = match index.checked_sub(1) {
            Some(prev) => *self.ends.get(prev)?,
            None => 0,
        };
        Some(begin..end)
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
        &self.ends[..]
    }

    /// Iterates over the records, without copying.
    pub fn iter(&self) -> impl ExactSizeIterator<Item = Bytes> + '_ {
        let mut begin = 0;
        self.ends.iter().map(move |&end| {
            let record = self.values.slice(begin..end);
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
    fn rejects_inconsistent_ends() {
        assert!(DecodedRecords::new(Bytes::from_static(b"abc"), vec![2, 1, 3]).is_none());
        assert!(DecodedRecords::new(Bytes::from_static(b"abc"), vec![2]).is_none());
        assert!(DecodedRecords::new(Bytes::from_static(b"abc"), vec![]).is_none());
        assert!(DecodedRecords::new(Bytes::new(), vec![]).is_some());
    }
}
