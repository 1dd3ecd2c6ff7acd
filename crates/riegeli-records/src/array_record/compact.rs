//! [`EliasFano`]: a non-decreasing sequence of `u64`s in about
//! `2 + log2(universe / len)` bits each, any element read in constant time.
//! What an ArrayRecord index keeps of its chunk offsets: at `group_size:1`
//! with records of about 1 KiB, 12 bits a chunk where a `u64` is 64.
//!
//! Each value is split into its low `low_bits` bits, stored packed, and its
//! high part `h`, stored in unary: element `i` sets bit `h + i` of `highs`.
//! Reading element `i` finds the `i`th set bit of `highs` from a sampled
//! position of every [`SAMPLE`]th one, then a few words on.

/// Every this many set bits of `highs`, the position of one is kept: a read
/// counts the bits of about `SAMPLE / 2` elements' high bits (16 words at
/// `group_size:1`, a popcount each), and the samples cost `64 / SAMPLE` bits
/// an element (at 256, records of 15 KiB would take over 2 bytes a chunk).
const SAMPLE: usize = 1024;

/// A non-decreasing sequence of `u64`s, compressed; see the module docs.
#[derive(Debug, Default, Clone)]
pub(crate) struct EliasFano {
    len: usize,
    low_bits: u32,
    lows: Vec<u64>,
    highs: Vec<u64>,
    /// The position in `highs` of set bit `k * SAMPLE`, for each `k`.
    samples: Vec<u64>,
}

/// Where a reader of an [`EliasFano`] was left: an element's index and the
/// position of its set bit in `highs` (nothing yet by default).
#[derive(Debug, Default, Clone, Copy)]
pub(crate) struct Cursor(Option<(usize, u64)>);

/// Builds an [`EliasFano`] of a known number of values, none above a known bound.
#[derive(Debug)]
pub(crate) struct EliasFanoBuilder {
    sequence: EliasFano,
    universe: u64,
    capacity: usize,
    last: u64,
}

/// Why a value was refused by [`EliasFanoBuilder::push`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Refused {
    /// Below the value before it.
    Decreasing,
    /// Above the universe the builder was made for.
    AboveUniverse,
    /// More values than the builder was made for.
    TooMany,
}

impl EliasFanoBuilder {
    /// A builder of `capacity` values in `0..=universe`. Allocates about
    /// `capacity * (2 + log2(universe / capacity))` bits: a caller with an
    /// untrusted `capacity` bounds it first.
    pub(crate) fn new(capacity: usize, universe: u64) -> Self {
        let per_value = universe / (capacity as u64).max(1);
        let low_bits = per_value.max(1).ilog2();
        let low_words = words(capacity.saturating_mul(low_bits as usize));
        let high_bits =
            capacity.saturating_add(usize::try_from(universe >> low_bits).unwrap_or(usize::MAX)).saturating_add(1);
        let sequence = EliasFano {
            len: 0,
            low_bits,
            lows: vec![0; low_words],
            highs: vec![0; words(high_bits)],
            samples: Vec::with_capacity(capacity.div_ceil(SAMPLE)),
        };
        Self { sequence, universe, capacity, last: 0 }
    }

    /// Appends `value`: at least the last one, at most the universe.
    pub(crate) fn push(&mut self, value: u64) -> Result<(), Refused> {
        let s = &mut self.sequence;
        if s.len >= self.capacity {
            return Err(Refused::TooMany);
        }
        if value > self.universe {
            return Err(Refused::AboveUniverse);
        }
        if value < self.last {
            return Err(Refused::Decreasing);
        }
        self.last = value;
        let i = s.len;
        if s.low_bits > 0 {
            set_bits(&mut s.lows, i * s.low_bits as usize, s.low_bits, value & low_mask(s.low_bits));
        }
        // Within `highs`: `(value >> low_bits) + i <= (universe >> low_bits) + capacity - 1`.
        let position = (value >> s.low_bits) + i as u64;
        if let Some(word) = s.highs.get_mut((position / 64) as usize) {
            *word |= 1 << (position % 64);
        }
        if i.is_multiple_of(SAMPLE) {
            s.samples.push(position);
        }
        s.len += 1;
        Ok(())
    }

    /// The sequence of the values pushed (fewer than the capacity is fine).
    pub(crate) fn build(self) -> EliasFano {
        let mut sequence = self.sequence;
        sequence.lows.shrink_to_fit();
        sequence.samples.shrink_to_fit();
        sequence
    }
}

impl EliasFano {
    pub(crate) fn len(&self) -> usize {
        self.len
    }

    /// Elements `i` and `i + 1`, or `None` if either is past the end: one
    /// search for the set bit of `i` in `highs`, from the sample before it or
    /// from where `cursor` was left if that is nearer (reads in order then
    /// take a step each, not a search); then the next set bit. Leaves
    /// `cursor` at element `i + 1`.
    pub(crate) fn get_pair_near(&self, i: usize, cursor: &mut Cursor) -> Option<(u64, u64)> {
        if i.checked_add(1)? >= self.len {
            return None;
        }
        let position = self.select(i, *cursor)?;
        let next = self.next_one(position + 1)?;
        *cursor = Cursor(Some((i + 1, next)));
        Some((self.value(i, position), self.value(i + 1, next)))
    }

    /// Element `i`, whose set bit in `highs` is at `position`.
    fn value(&self, i: usize, position: u64) -> u64 {
        let high = position - i as u64;
        let low = if self.low_bits > 0 { get_bits(&self.lows, i * self.low_bits as usize, self.low_bits) } else { 0 };
        (high << self.low_bits) | low
    }

    /// The position in `highs` of set bit `i` (counted from 0): from the
    /// sample before it, or from `cursor`'s element if that lies between.
    fn select(&self, i: usize, cursor: Cursor) -> Option<u64> {
        let sampled = (i / SAMPLE) * SAMPLE;
        let (start, rank) = match cursor.0 {
            Some((j, position)) if j == i => return Some(position),
            Some((j, position)) if sampled <= j && j <= i => (position, j),
            _ => (*self.samples.get(i / SAMPLE)?, sampled),
        };
        let mut remaining = u32::try_from(i - rank).ok()?;
        let mut word_index = (start / 64) as usize;
        let mut word = self.highs.get(word_index)? & (!0u64 << (start % 64));
        loop {
            let ones = word.count_ones();
            if remaining < ones {
                return Some(word_index as u64 * 64 + u64::from(select_in_word(word, remaining)));
            }
            remaining -= ones;
            word_index += 1;
            word = *self.highs.get(word_index)?;
        }
    }

    /// The position of the first set bit of `highs` at or after `from`.
    fn next_one(&self, from: u64) -> Option<u64> {
        let mut word_index = (from / 64) as usize;
        let mut word = self.highs.get(word_index)? & (!0u64 << (from % 64));
        while word == 0 {
            word_index += 1;
            word = *self.highs.get(word_index)?;
        }
        Some(word_index as u64 * 64 + u64::from(word.trailing_zeros()))
    }

    /// The bytes the sequence holds on the heap.
    pub(crate) fn heap_bytes(&self) -> usize {
        8 * (self.lows.capacity() + self.highs.capacity() + self.samples.capacity())
    }
}

/// The position of set bit `rank` (from 0) of `word`, which has more than
/// `rank` set bits: a byte at a time, then bit by bit within the byte.
fn select_in_word(mut word: u64, mut rank: u32) -> u32 {
    let mut base = 0;
    loop {
        let ones = (word & 0xff).count_ones();
        if rank < ones || base >= 56 {
            break;
        }
        rank -= ones;
        word >>= 8;
        base += 8;
    }
    for _ in 0..rank {
        word &= word.wrapping_sub(1);
    }
    base + word.trailing_zeros()
}

/// `u64` words holding `bits` bits.
fn words(bits: usize) -> usize {
    bits.div_ceil(64)
}

fn low_mask(bits: u32) -> u64 {
    if bits >= 64 { u64::MAX } else { (1 << bits) - 1 }
}

/// Writes the `width` low bits of `value` at bit `at` of `words` (zeros there before).
fn set_bits(words: &mut [u64], at: usize, width: u32, value: u64) {
    let (word, shift) = (at / 64, (at % 64) as u32);
    if let Some(w) = words.get_mut(word) {
        *w |= value << shift;
    }
    if shift + width > 64
        && let Some(w) = words.get_mut(word + 1)
    {
        *w |= value >> (64 - shift);
    }
}

/// Reads `width` bits at bit `at` of `words`.
fn get_bits(words: &[u64], at: usize, width: u32) -> u64 {
    let (word, shift) = (at / 64, (at % 64) as u32);
    let mut value = words.get(word).map_or(0, |w| w >> shift);
    if shift + width > 64 {
        value |= words.get(word + 1).map_or(0, |w| w << (64 - shift));
    }
    value & low_mask(width)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Elements `i` and `i + 1`, looked up afresh.
    fn get_pair(sequence: &EliasFano, i: usize) -> Option<(u64, u64)> {
        sequence.get_pair_near(i, &mut Cursor::default())
    }

    /// Element `i`, or `None` past the end.
    fn get(sequence: &EliasFano, i: usize) -> Option<u64> {
        if i >= sequence.len() {
            return None;
        }
        sequence.select(i, Cursor::default()).map(|position| sequence.value(i, position))
    }

    fn build(values: &[u64], universe: u64) -> EliasFano {
        let mut builder = EliasFanoBuilder::new(values.len(), universe);
        for &v in values {
            builder.push(v).unwrap();
        }
        builder.build()
    }

    /// A xorshift generator: the cases below are the same on every run.
    fn next(state: &mut u64) -> u64 {
        *state ^= *state << 13;
        *state ^= *state >> 7;
        *state ^= *state << 17;
        *state
    }

    #[test]
    fn every_element_reads_back() {
        let mut state = 0x9e37_79b9_7f4a_7c15;
        for case in 0..300 {
            // Lengths across the sampling period, steps from none to large.
            let len = (next(&mut state) % 3000) as usize;
            let max_step = [1, 64, 1100, 100_000, 1 << 40][case % 5];
            let mut values = Vec::with_capacity(len);
            let mut sum = next(&mut state) % 1000;
            for _ in 0..len {
                let step = if next(&mut state).is_multiple_of(8) { 0 } else { next(&mut state) % max_step };
                sum += step;
                values.push(sum);
            }
            let universe = values.last().copied().unwrap_or(0) + next(&mut state) % 1_000_000;
            let sequence = build(&values, universe);
            assert_eq!(sequence.len(), values.len());
            for (i, &v) in values.iter().enumerate() {
                assert_eq!(get(&sequence, i), Some(v), "case {case}, element {i}");
            }
            assert_eq!(get(&sequence, values.len()), None);
            for i in 0..values.len() {
                let pair = values.get(i + 1).map(|&next| (values[i], next));
                assert_eq!(get_pair(&sequence, i), pair, "case {case}, pair {i}");
            }
            // Through one cursor: in order, backwards, and jumping about.
            let mut cursor = Cursor::default();
            let pairs = |i: usize| values.get(i + 1).map(|&next| (values[i], next));
            let mut order: Vec<usize> = (0..values.len()).collect();
            order.extend((0..values.len()).rev());
            order.extend((0..values.len()).map(|_| (next(&mut state) % (values.len() as u64 + 1)) as usize));
            for i in order {
                assert_eq!(sequence.get_pair_near(i, &mut cursor), pairs(i), "case {case}, pair {i} near {cursor:?}");
            }
        }
    }

    #[test]
    fn select_in_word_finds_every_set_bit() {
        let mut state = 0x2545_f491_4f6c_dd1d;
        for _ in 0..2000 {
            let word = next(&mut state) & next(&mut state);
            let positions: Vec<u32> = (0..64).filter(|b| word >> b & 1 == 1).collect();
            for (rank, &position) in positions.iter().enumerate() {
                assert_eq!(select_in_word(word, rank as u32), position, "{word:#x} rank {rank}");
            }
        }
        assert_eq!(select_in_word(u64::MAX, 63), 63);
        assert_eq!(select_in_word(1 << 63, 0), 63);
    }

    #[test]
    fn extremes_read_back() {
        let values = [0, 0, 1, u64::MAX / 2, u64::MAX - 1, u64::MAX, u64::MAX];
        let sequence = build(&values, u64::MAX);
        let got: Vec<u64> = (0..values.len()).map(|i| get(&sequence, i).unwrap()).collect();
        assert_eq!(got, values);
        assert_eq!(get(&build(&[], 0), 0), None);
        assert_eq!(get(&build(&[7], 7), 0), Some(7));
        assert_eq!(get_pair(&build(&[7], 7), 0), None);
        assert_eq!(get_pair(&sequence, values.len() - 2), Some((u64::MAX, u64::MAX)));
        assert_eq!(get_pair(&sequence, usize::MAX), None);
    }

    #[test]
    fn bad_values_are_refused() {
        let mut builder = EliasFanoBuilder::new(2, 100);
        assert_eq!(builder.push(101), Err(Refused::AboveUniverse));
        assert_eq!(builder.push(50), Ok(()));
        assert_eq!(builder.push(49), Err(Refused::Decreasing));
        assert_eq!(builder.push(50), Ok(()));
        assert_eq!(builder.push(60), Err(Refused::TooMany));
        let sequence = builder.build();
        assert_eq!((get(&sequence, 0), get(&sequence, 1), get(&sequence, 2)), (Some(50), Some(50), None));
    }

    /// Chunk offsets of `n` chunks of `stride` bytes each (a chunk a record at `group_size:1`):
    /// bytes per offset held.
    fn bytes_per_chunk(n: u64, stride: u64) -> f64 {
        let values: Vec<u64> = (0..n).map(|i| 64 + i * stride).collect();
        build(&values, 64 + n * stride).heap_bytes() as f64 / n as f64
    }

    #[test]
    fn offsets_of_small_chunks_take_under_two_bytes() {
        // 40-byte chunk headers and records of 100 B, 1 KiB, 4 KiB and 15 KiB.
        for record in [100, 1024, 4096, 15 << 10] {
            let per_chunk = bytes_per_chunk(100_000, record + 40);
            assert!(per_chunk <= 2.0, "{per_chunk} bytes per chunk for records of {record} B");
        }
        let per_chunk = bytes_per_chunk(100_000, 1024 + 40);
        assert!(per_chunk < 1.6, "{per_chunk} bytes per chunk for 1 KiB records");
    }
}
