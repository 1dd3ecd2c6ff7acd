//! How the C++ encoder lays out the state machine and encodes transitions
//! (spec §12.4–§12.5), reproduced decision for decision.

use std::cmp::Ordering;
use std::collections::{BinaryHeap, HashMap};
use std::hash::BuildHasherDefault;

use super::fxhash::FxHasher;

/// "No such position/tag/base".
pub(crate) const INVALID: u32 = u32::MAX;
/// The largest transition offset.
const MAX_TRANSITION: u32 = 63;
/// The smallest count that puts a destination in its source's private list.
const MIN_COUNT_FOR_STATE: u64 = 10;
/// Marks a destination as going into its source's private list.
const IN_LIST: u32 = 0;

/// A transition destination of an encoded tag.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Dest {
    /// The destination tag.
    pub(crate) to: u32,
    /// How often the transition happens.
    pub(crate) count: u64,
    /// Its slot in the source's private list, or [`INVALID`].
    pub(crate) pos: u32,
}

/// The transition statistics and layout of one encoded tag.
#[derive(Debug, Clone)]
pub(crate) struct TagStates {
    pub(crate) dests: Vec<Dest>,
    /// Index in `dests` of the last destination looked up (a cache).
    last: u32,
    pub(crate) incoming: u64,
    /// Slot in the public list, or [`INVALID`].
    pub(crate) public_pos: u32,
    /// Slot of the private list's no-op into the public list, or [`INVALID`].
    pub(crate) public_noop_pos: u32,
    /// Base of its transitions, or [`INVALID`] if it has none.
    pub(crate) base: u32,
    /// Whether a dummy destination makes its transitions explicit (§12.4 step 8).
    pub(crate) dummy: bool,
}

impl TagStates {
    pub(crate) fn new() -> Self {
        Self {
            dests: Vec::new(),
            last: 0,
            incoming: 0,
            public_pos: INVALID,
            public_noop_pos: INVALID,
            base: INVALID,
            dummy: false,
        }
    }

    /// Number of destinations, the dummy included.
    pub(crate) fn num_dests(&self) -> usize {
        self.dests.len() + usize::from(self.dummy)
    }
}

/// One slot of the node table.
#[derive(Debug, Clone, Copy)]
pub(crate) struct State {
    /// The encoded tag, or [`INVALID`] for a no-op.
    pub(crate) etag: u32,
    pub(crate) base: u32,
    /// The no-op that leads to this slot's block, or [`INVALID`].
    pub(crate) canonical_source: u32,
}

impl State {
    const EMPTY: State = State { etag: INVALID, base: INVALID, canonical_source: INVALID };
}

/// An entry of a list being laid out. The heap pops the smallest count
/// first, ties broken by the largest key (the C++ `priority_queue` order).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Entry {
    count: u64,
    key: u32,
}

impl Ord for Entry {
    fn cmp(&self, other: &Self) -> Ordering {
        other.count.cmp(&self.count).then(self.key.cmp(&other.key))
    }
}

impl PartialOrd for Entry {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

type EdgeMap = HashMap<u64, u32, BuildHasherDefault<FxHasher>>;

/// Builds the state machine of the encoded tag sequence.
#[derive(Debug, Default)]
pub(crate) struct Builder {
    /// `(from << 32 | to)` → index in `tags[from].dests`, for lookups that miss the cache.
    edges: EdgeMap,
    heap: BinaryHeap<Entry>,
    noop_base: Vec<u32>,
    public_noops: Vec<(u32, u32)>,
}

fn to_u32(i: usize) -> u32 {
    u32::try_from(i).unwrap_or(INVALID)
}

impl Builder {
    pub(crate) fn clear(&mut self) {
        self.edges.clear();
        self.heap.clear();
        self.noop_base.clear();
        self.public_noops.clear();
    }

    /// The index of the destination `to` in `tags[from].dests`, added if new.
    fn dest_index(&mut self, tags: &mut [TagStates], from: u32, to: u32) -> usize {
        let Some(tag) = tags.get_mut(from as usize) else { return usize::MAX };
        if let Some(dest) = tag.dests.get(tag.last as usize)
            && dest.to == to
        {
            return tag.last as usize;
        }
        let key = (u64::from(from) << 32) | u64::from(to);
        let index = *self.edges.entry(key).or_insert_with(|| {
            tag.dests.push(Dest { to, count: 0, pos: INVALID });
            to_u32(tag.dests.len() - 1)
        });
        tag.last = index;
        index as usize
    }

    /// The slot of `to` in `from`'s private list, or [`INVALID`].
    pub(crate) fn dest_pos(&mut self, tags: &mut [TagStates], from: u32, to: u32) -> u32 {
        let index = self.dest_index(tags, from, to);
        tags.get(from as usize).and_then(|t| t.dests.get(index)).map_or(INVALID, |d| d.pos)
    }

    /// Lays out the node table for the encoded sequence `encoded` (§12.4).
    pub(crate) fn build(&mut self, tags: &mut [TagStates], encoded: &[u32], sm: &mut Vec<State>) {
        sm.clear();
        let Some(&first) = encoded.last() else {
            sm.push(State { etag: INVALID, base: 0, canonical_source: INVALID });
            return;
        };
        // 1. Statistics, in decoder order.
        for pair in encoded.windows(2).rev() {
            let &[to, from] = pair else { continue };
            let index = self.dest_index(tags, from, to);
            if let Some(dest) = tags.get_mut(from as usize).and_then(|t| t.dests.get_mut(index)) {
                dest.count += 1;
            }
            if let Some(tag) = tags.get_mut(to as usize) {
                tag.incoming += 1;
            }
        }
        if let Some(tag) = tags.get_mut(first as usize)
            && tag.incoming == 0
        {
            tag.incoming = 1;
        }
        // 2. Frequent destinations go into their source's list.
        for t in 0..tags.len() {
            for d in 0..tags.get(t).map_or(0, |t| t.dests.len()) {
                let Some(dest) = tags.get_mut(t).and_then(|t| t.dests.get_mut(d)) else { continue };
                if dest.count >= MIN_COUNT_FOR_STATE {
                    dest.pos = IN_LIST;
                    let (to, count) = (dest.to, dest.count);
                    if let Some(target) = tags.get_mut(to as usize) {
                        target.incoming = target.incoming.saturating_sub(count);
                    }
                }
            }
        }
        // 3. Private lists.
        let num_tags = to_u32(tags.len());
        for tag_id in 0..tags.len() {
            let size = tags.get(tag_id).map_or(0, |t| t.dests.len());
            let mut excluded = Entry { count: 0, key: 0 };
            let mut num_excluded: u64 = 0;
            for d in 0..size {
                let Some(dest) = tags.get(tag_id).and_then(|t| t.dests.get(d)).copied() else {
                    continue;
                };
                let incoming = tags.get(dest.to as usize).map_or(0, |t| t.incoming);
                if dest.pos == IN_LIST || dest.count == incoming {
                    if dest.pos != IN_LIST
                        && let Some(target) = tags.get_mut(dest.to as usize)
                    {
                        target.incoming = target.incoming.saturating_sub(dest.count);
                    }
                    self.heap.push(Entry { count: dest.count, key: dest.to });
                } else {
                    num_excluded += dest.count;
                    excluded = Entry { count: dest.count, key: dest.to };
                }
            }
            let mut num_states = self.heap.len();
            if num_states == 0 {
                continue;
            }
            if num_states + 1 == size {
                num_states += 1;
                self.heap.push(excluded);
                if let Some(target) = tags.get_mut(excluded.key as usize) {
                    target.incoming = target.incoming.saturating_sub(excluded.count);
                }
            }
            if num_states != size {
                self.heap.push(Entry { count: num_excluded, key: INVALID });
                num_states += 1;
            }
            if let Some(tag) = tags.get_mut(tag_id) {
                tag.base = to_u32(sm.len());
            }
            self.lay_out(tags, sm, num_states, num_tags, Some(tag_id));
        }
        // 4. The public list.
        let public_base = to_u32(sm.len());
        for (i, tag) in tags.iter().enumerate() {
            if tag.incoming != 0 {
                self.heap.push(Entry { count: tag.incoming, key: to_u32(i) });
            }
        }
        let num_states = self.heap.len();
        if num_states > 0 {
            self.lay_out(tags, sm, num_states, num_tags, None);
        }
        // 6. Bases of public no-ops and of tags without a private list.
        let public_noops = std::mem::take(&mut self.public_noops);
        for &(tag_id, slot) in &public_noops {
            let dests = tags.get(tag_id as usize).map(|t| t.dests.as_slice()).unwrap_or_default();
            let min_pos = common_base(tags, dests, sm, public_base);
            if let Some(state) = sm.get_mut(slot as usize) {
                state.base = min_pos;
            }
        }
        self.public_noops = public_noops;
        for t in 0..tags.len() {
            let Some(tag) = tags.get(t) else { continue };
            if tag.base != INVALID {
                continue;
            }
            let min_pos = common_base(tags, &tag.dests, sm, public_base);
            if min_pos != INVALID
                && let Some(tag) = tags.get_mut(t)
            {
                tag.base = min_pos;
            }
        }
    }

    /// Lays out the entries in the heap as a list at the end of `sm` (§12.4 step 5):
    /// a private list of `owner`, or the public list.
    fn lay_out(
        &mut self,
        tags: &mut [TagStates],
        sm: &mut Vec<State>,
        num_states: usize,
        num_tags: u32,
        owner: Option<usize>,
    ) {
        let max = MAX_TRANSITION as usize;
        let noop_nodes = if num_states <= max + 1 { 0 } else { (num_states - 2) / max };
        let num_states = num_states + noop_nodes;
        let mut prev = sm.len() + num_states;
        sm.resize(prev, State::EMPTY);
        let mut block_size = (num_states - 1) % (max + 1) + 1;
        self.noop_base.clear();
        loop {
            let mut total: u64 = 0;
            for _ in 0..block_size {
                let Some(entry) = self.heap.pop() else { break };
                total += entry.count;
                prev -= 1;
                let slot = to_u32(prev);
                let state = if entry.key == INVALID {
                    // The private list's no-op into the public list.
                    if let Some(owner) = owner {
                        if let Some(tag) = tags.get_mut(owner) {
                            tag.public_noop_pos = slot;
                        }
                        self.public_noops.push((to_u32(owner), slot));
                    }
                    State { etag: INVALID, base: INVALID, canonical_source: INVALID }
                } else if entry.key >= num_tags {
                    // A no-op leading to a block of this list.
                    let base = self.noop_base.get((entry.key - num_tags) as usize).copied().unwrap_or(INVALID);
                    for j in 0..=MAX_TRANSITION {
                        let Some(state) = base.checked_add(j).and_then(|i| sm.get_mut(i as usize)) else {
                            break;
                        };
                        state.canonical_source = slot;
                    }
                    State { etag: INVALID, base, canonical_source: INVALID }
                } else {
                    match owner {
                        Some(owner) => {
                            let index = self.dest_index(tags, to_u32(owner), entry.key);
                            if let Some(dest) = tags.get_mut(owner).and_then(|t| t.dests.get_mut(index)) {
                                dest.pos = slot;
                            }
                        }
                        None => {
                            if let Some(tag) = tags.get_mut(entry.key as usize) {
                                tag.public_pos = slot;
                            }
                        }
                    }
                    State { etag: entry.key, base: INVALID, canonical_source: INVALID }
                };
                if let Some(s) = sm.get_mut(prev) {
                    *s = state;
                }
            }
            if self.heap.is_empty() {
                break;
            }
            self.heap.push(Entry { count: total, key: num_tags + to_u32(self.noop_base.len()) });
            self.noop_base.push(to_u32(prev));
            block_size = max + 1;
        }
    }

    /// Appends the transition bytes of the encoded sequence (§12.5).
    pub(crate) fn write_transitions(
        &mut self,
        tags: &mut [TagStates],
        encoded: &[u32],
        sm: &[State],
        out: &mut Vec<u8>,
    ) {
        let Some(&first) = encoded.last() else { return };
        let mut prev = first;
        let mut current_base = tags.get(prev as usize).map_or(INVALID, |t| t.base);
        let mut last: Option<u8> = None;
        let mut offsets = Vec::new();
        for &tag in encoded.iter().rev().skip(1) {
            if tags.get(prev as usize).map_or(0, TagStates::num_dests) != 1 {
                let mut pos = self.dest_pos(tags, prev, tag);
                if pos == INVALID {
                    pos = tags.get(prev as usize).map_or(INVALID, |t| t.public_noop_pos);
                    if pos != INVALID {
                        path(sm, current_base, pos, &mut offsets);
                        emit(&offsets, &mut last, out);
                        current_base = sm.get(pos as usize).map_or(INVALID, |s| s.base);
                    }
                    pos = tags.get(tag as usize).map_or(INVALID, |t| t.public_pos);
                }
                path(sm, current_base, pos, &mut offsets);
                emit(&offsets, &mut last, out);
            }
            prev = tag;
            current_base = tags.get(prev as usize).map_or(INVALID, |t| t.base);
        }
        if let Some(byte) = last {
            out.push(byte);
        }
    }
}

/// The offsets of the bytes that go from `base` to `target`, through no-ops.
fn path(sm: &[State], base: u32, mut target: u32, offsets: &mut Vec<u8>) {
    offsets.clear();
    // Bounded by the depth of the no-op tree; the bound guards against bugs.
    for _ in 0..sm.len() + 1 {
        if target >= base && target - base <= MAX_TRANSITION {
            break;
        }
        let cs = sm.get(target as usize).map_or(INVALID, |s| s.canonical_source);
        let cs_base = sm.get(cs as usize).map_or(0, |s| s.base);
        offsets.push(u8::try_from(target.wrapping_sub(cs_base)).unwrap_or(0));
        target = cs;
    }
    offsets.push(u8::try_from(target.wrapping_sub(base)).unwrap_or(0));
    offsets.reverse();
}

/// Appends transition bytes for `offsets`, folding zero offsets into the
/// previous byte's repeat count.
fn emit(offsets: &[u8], last: &mut Option<u8>, out: &mut Vec<u8>) {
    for &offset in offsets {
        match last {
            Some(byte) if offset == 0 && *byte & 3 < 3 => *byte += 1,
            _ => {
                if let Some(byte) = *last {
                    out.push(byte);
                }
                *last = Some(offset << 2);
            }
        }
    }
}

/// The smallest slot from which all `dests` without a private slot are
/// reachable (§12.4 step 6), or [`INVALID`] if there are none.
fn common_base(tags: &[TagStates], dests: &[Dest], sm: &[State], public_base: u32) -> u32 {
    let cs_of = |i: u32| sm.get(i as usize).map_or(INVALID, |s| s.canonical_source);
    let base_of = |i: u32| sm.get(i as usize).map_or(INVALID, |s| s.base);
    let mut base = INVALID;
    let mut min_pos = INVALID;
    for dest in dests {
        if dest.pos != INVALID {
            continue;
        }
        let mut pos = tags.get(dest.to as usize).map_or(INVALID, |t| t.public_pos);
        for _ in 0..2 * sm.len() + 2 {
            if !(base > pos || pos - base > MAX_TRANSITION) {
                break;
            }
            if base > pos {
                let cs = if base == INVALID {
                    cs_of(pos)
                } else {
                    let cs = cs_of(base);
                    min_pos = min_pos.min(cs);
                    cs_of(cs)
                };
                base = if cs == INVALID { public_base } else { base_of(cs) };
            } else {
                pos = cs_of(pos);
            }
        }
        min_pos = min_pos.min(pos);
    }
    min_pos
}
