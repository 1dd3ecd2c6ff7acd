//! Telling an ArrayRecord reader's source which chunks a plan reads next
//! ([`ReadAt::will_need`]).

use super::compact::Cursor;
use super::plan::{ChunkIndex, Step};
use crate::positional::ReadAt;

/// The fewest bytes of chunks announced at once.
pub(crate) const MIN_PREFETCH: u64 = 8 << 20;

/// Announces to a source the byte ranges of the chunks a read is about to
/// read, in order, a window of up to `budget` raw bytes at a time (a new
/// window once half of the last one is read).
pub(crate) struct Prefetcher<'a> {
    hook: Option<&'a dyn ReadAt>,
    index: &'a ChunkIndex,
    steps: &'a [Step],
    budget: u64,
    /// The chunks of `steps[..announced]` were announced.
    announced: usize,
    /// Announce more when reading reaches `steps[refill_at]`.
    refill_at: usize,
    /// Where the index was left by the last lookup.
    cursor: Cursor,
}

impl<'a> Prefetcher<'a> {
    /// `budget` is the reader's `readahead_buffer_size`, at least [`MIN_PREFETCH`] (with 0,
    /// as array_record's data source asks, every chunk would be a request of its own).
    pub(crate) fn new(hook: Option<&'a dyn ReadAt>, index: &'a ChunkIndex, steps: &'a [Step], budget: u64) -> Self {
        Self {
            hook,
            index,
            steps,
            budget: budget.max(MIN_PREFETCH),
            announced: 0,
            refill_at: 0,
            cursor: Cursor::default(),
        }
    }

    /// Called before reading the chunk of `steps[i]`.
    pub(crate) fn before(&mut self, i: usize) {
        let Some(hook) = self.hook else { return };
        if i < self.refill_at {
            return;
        }
        let from = self.announced.max(i);
        let (mut to, mut bytes) = (from, 0u64);
        let mut ranges = Vec::new();
        while let Some(entry) =
            self.steps.get(to).and_then(|step| self.index.entry_near(step.id, &mut self.cursor).ok())
        {
            if to > from && bytes.saturating_add(entry.raw_bytes()) > self.budget {
                break;
            }
            bytes = bytes.saturating_add(entry.raw_bytes());
            ranges.push(entry.offset..entry.limit);
            to += 1;
        }
        if !ranges.is_empty() {
            hook.will_need(&ranges);
        }
        self.announced = to;
        self.refill_at = i + (to - i).div_ceil(2).max(1);
    }
}
