//! The index entries of a plan's chunks, looked up in order a window at a
//! time, and announced to the reader's source as they are
//! ([`ReadAt::will_need`]).

use std::collections::VecDeque;

use super::compact::Cursor;
use super::plan::{ChunkIndex, Step, not_indexed};
use crate::array_record::ArrayRecordReaderOptions;
use crate::error::Result;
use crate::indexed::ChunkEntry;
use crate::positional::ReadAt;

/// The fewest bytes of chunks announced at once.
pub(crate) const MIN_PREFETCH: u64 = 8 << 20;

/// The most entries looked up at once (a window of tiny chunks is cut here).
const MAX_WINDOW: usize = 4096;

/// Walks the steps of a plan in order: looks up their chunks' entries a
/// window of up to `budget` raw bytes at a time (a new window once half of
/// the last one is read), each entry once, and announces each window's byte
/// ranges to the source, if it listens.
pub(crate) struct Prefetcher<'a> {
    hook: Option<&'a dyn ReadAt>,
    /// Whether the chunks' hashes are checked as they are read (see
    /// [`ReadAt::will_need`]).
    checked: bool,
    index: &'a ChunkIndex,
    steps: &'a [Step],
    budget: u64,
    /// The entries of `steps[first..first + window.len()]`.
    window: VecDeque<ChunkEntry>,
    first: usize,
    /// Look up more when reading reaches `steps[refill_at]`.
    refill_at: usize,
    /// Where the index was left by the last lookup.
    cursor: Cursor,
}

impl<'a> Prefetcher<'a> {
    /// `budget` is the reader's `readahead_buffer_size`, at least [`MIN_PREFETCH`] (with 0,
    /// as array_record's data source asks, every chunk would be a request of its own).
    /// Whether hashes are checked is the options' `verify_hashes`.
    pub(crate) fn new(
        hook: Option<&'a dyn ReadAt>,
        index: &'a ChunkIndex,
        steps: &'a [Step],
        options: &ArrayRecordReaderOptions,
    ) -> Self {
        Self {
            hook,
            checked: options.chunks.verify_hashes,
            index,
            steps,
            budget: options.readahead_buffer_size.max(MIN_PREFETCH),
            window: VecDeque::new(),
            first: 0,
            refill_at: 0,
            cursor: Cursor::default(),
        }
    }

    /// The entry of `steps[i]`, and of `steps[i + 1]` if there is one (reading
    /// a chunk needs to know whether the next is read after it), announcing
    /// the next window first when reading reaches it. Steps are asked for in
    /// order, each once or more, never one before an earlier one.
    pub(crate) fn entries(&mut self, i: usize) -> Result<(ChunkEntry, Option<ChunkEntry>)> {
        if i >= self.refill_at || i + 1 >= self.first + self.window.len() {
            self.refill(i);
        }
        let this = self.window.get(i.wrapping_sub(self.first)).copied().ok_or_else(not_indexed)?;
        Ok((this, self.window.get((i + 1).wrapping_sub(self.first)).copied()))
    }

    /// Called before reading the chunk of `steps[i]`: announces the next
    /// window when reading reaches it.
    pub(crate) fn before(&mut self, i: usize) {
        if i >= self.refill_at {
            self.refill(i);
        }
    }

    /// Drops the entries before `steps[i]` and looks up (and announces) the
    /// next window after those held, keeping at least the entries of
    /// `steps[i]` and `steps[i + 1]`.
    fn refill(&mut self, i: usize) {
        let drop = i.saturating_sub(self.first).min(self.window.len());
        self.window.drain(..drop);
        self.first += drop;
        if self.window.is_empty() {
            self.first = i;
        }
        let from = self.first + self.window.len();
        let mut to = from;
        let mut bytes = 0u64;
        let mut ranges = Vec::new();
        while to - from < MAX_WINDOW || to <= i + 1 {
            let Some(entry) = self.steps.get(to).and_then(|step| self.index.entry_near(step.id, &mut self.cursor).ok())
            else {
                break;
            };
            if to > i + 1 && bytes.saturating_add(entry.raw_bytes()) > self.budget {
                break;
            }
            bytes = bytes.saturating_add(entry.raw_bytes());
            if self.hook.is_some() {
                ranges.push(entry.offset..entry.limit);
            }
            self.window.push_back(entry);
            to += 1;
        }
        if let Some(hook) = self.hook
            && !ranges.is_empty()
        {
            hook.will_need(&ranges, self.checked);
        }
        self.refill_at = i + (to - i).div_ceil(2).max(1);
    }
}
