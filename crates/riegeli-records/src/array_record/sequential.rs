//! The sequential cursor of an `ArrayRecordReader` (`read_next`, C++'s
//! `ReadRecord`): which record comes next, and the records decoded ahead of it.
//!
//! While reading goes on in order, each read-ahead asks for twice as many
//! records as the one before, as long as what it got fits in half of
//! `readahead_buffer_size`; it halves when it did not, and falls back to one
//! record after a jump. So a scan soon decodes whole batches of chunks on the
//! pool, while a reader that hops around decodes one chunk at a time.

use std::ops::Range;

use bytes::Bytes;

use crate::error::Result;

/// The most records one read-ahead asks for.
const MAX_WINDOW: u64 = 1 << 16;

/// The cursor and its read-ahead.
#[derive(Debug, Default)]
pub(super) struct Sequential {
    /// The index of the record `next` returns.
    index: u64,
    /// The index of `records[0]`.
    start: u64,
    /// Records decoded ahead: those from `start` on.
    records: Vec<Bytes>,
    /// Records the next read-ahead asks for (0 before the first).
    window: u64,
}

impl Sequential {
    pub(super) fn index(&self) -> u64 {
        self.index
    }

    /// Moves the cursor; records decoded ahead are kept for a jump back into them.
    pub(super) fn seek(&mut self, index: u64) {
        self.index = index;
    }

    /// The next record if it is decoded already (no I/O, no decoding).
    pub(super) fn next_decoded(&mut self) -> Option<Bytes> {
        let offset = usize::try_from(self.index.checked_sub(self.start)?).ok()?;
        let record = self.records.get(offset)?.clone();
        self.index += 1;
        Some(record)
    }

    /// The next record: `None` at `num_records`. `fetch(range, parallel)`
    /// decodes the records of `range`; with `readahead` 0 only one record is
    /// asked for at a time.
    pub(super) fn next(
        &mut self,
        num_records: u64,
        readahead: u64,
        fetch: impl FnOnce(Range<u64>) -> Result<Vec<Bytes>>,
    ) -> Result<Option<Bytes>> {
        if self.index >= num_records {
            return Ok(None);
        }
        if let Some(record) = self.next_decoded() {
            return Ok(Some(record));
        }
        let index = self.index;
        let in_order = index == self.start + self.records.len() as u64;
        let window = if readahead == 0 || !in_order { 1 } else { self.window.max(1) };
        // Dropped before the fetch, so that they are not held twice.
        self.records = Vec::new();
        let records = fetch(index..index.saturating_add(window).min(num_records))?;
        let bytes: u64 = records.iter().map(|record| record.len() as u64).sum();
        self.window =
            if bytes.saturating_mul(2) <= readahead { (window * 2).min(MAX_WINDOW) } else { (window / 2).max(1) };
        self.start = index;
        self.records = records;
        Ok(self.next_decoded())
    }

    /// The range the next [`next`](Self::next) that finds no record decoded
    /// asks for, if reading goes on in order and that is more than one
    /// record: what to start decoding ahead.
    pub(super) fn upcoming(&self, num_records: u64, readahead: u64) -> Option<Range<u64>> {
        let start = self.start.checked_add(self.records.len() as u64)?;
        let end = start.saturating_add(self.window).min(num_records);
        (readahead > 0 && self.index >= self.start && end > start.saturating_add(1)).then_some(start..end)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn record(i: u64) -> Bytes {
        Bytes::from(vec![0u8; 10]).slice(0..(i % 10) as usize)
    }

    /// The ranges each read asks for, reading `order` with `readahead`.
    fn fetches(order: &[u64], num_records: u64, readahead: u64) -> Vec<Range<u64>> {
        let mut cursor = Sequential::default();
        let mut asked = Vec::new();
        for &i in order {
            cursor.seek(i);
            let got = cursor
                .next(num_records, readahead, |range| {
                    asked.push(range.clone());
                    Ok(range.map(record).collect())
                })
                .unwrap();
            assert_eq!(got.map(|r| r.len()), (i < num_records).then_some((i % 10) as usize), "record {i}");
        }
        asked
    }

    #[test]
    fn in_order_the_window_doubles_and_a_jump_resets_it() {
        let order: Vec<u64> = (0..10).chain([50, 51, 52]).collect();
        assert_eq!(fetches(&order, 100, 1 << 20), [0..1, 1..3, 3..7, 7..15, 50..51, 51..53]);
    }

    #[test]
    fn the_window_shrinks_when_the_records_outgrow_the_buffer() {
        // 10 records of 0..9 bytes: 45 bytes; a 40-byte buffer allows about 20 bytes a read.
        let order: Vec<u64> = (0..30).collect();
        let asked = fetches(&order, 30, 40);
        assert!(asked.iter().all(|r| r.end - r.start <= 8), "{asked:?}");
        assert_eq!(asked.first(), Some(&(0..1)));
        assert_eq!(asked.last().map(|r| r.end), Some(30));
    }

    #[test]
    fn no_readahead_reads_one_record_at_a_time_and_the_end_is_none() {
        assert_eq!(fetches(&[0, 1, 2, 100], 100, 0), [0..1, 1..2, 2..3]);
    }

    #[test]
    fn a_jump_back_into_decoded_records_fetches_nothing() {
        assert_eq!(fetches(&[0, 1, 2, 1, 2], 100, 1 << 20), [0..1, 1..3]);
    }
}
