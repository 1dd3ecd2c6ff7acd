//! Splitting a file among workers: byte ranges that partition it, each read
//! with [`RecordReader::set_byte_range`](crate::RecordReader::set_byte_range).
//!
//! Any partition of `0..file size` works (a range's records are those of the
//! chunks that begin in it); these ranges are whole 64 KiB blocks, so that a
//! range's reader finds its first chunk from the block header where it starts.

use std::ops::Range;

use riegeli_framing::BLOCK_SIZE;

/// Ranges of about `target` bytes (at least one block, rounded up to whole
/// blocks) that partition `0..file_size`, in order; none for an empty file.
///
/// ```
/// let ranges: Vec<_> = riegeli_records::byte_ranges(300_000, 100_000).collect();
/// assert_eq!(ranges, [0..131_072, 131_072..262_144, 262_144..300_000]);
/// ```
pub fn byte_ranges(file_size: u64, target: u64) -> impl Iterator<Item = Range<u64>> {
    let step = target.max(1).div_ceil(BLOCK_SIZE).saturating_mul(BLOCK_SIZE);
    (0..file_size.div_ceil(step)).map(move |i| {
        let start = i * step;
        start..start.saturating_add(step).min(file_size)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ranges_partition_the_file_in_whole_blocks() {
        for (size, target) in [(0, 1), (1, 1), (BLOCK_SIZE, BLOCK_SIZE), (BLOCK_SIZE + 1, 1), (10 << 20, 3 << 20)] {
            let ranges: Vec<_> = byte_ranges(size, target).collect();
            let mut next = 0;
            for range in &ranges {
                assert_eq!(range.start, next, "{size} {target}");
                assert!(range.start < range.end && range.start % BLOCK_SIZE == 0, "{size} {target}: {range:?}");
                next = range.end;
            }
            assert_eq!(next, size, "{size} {target}");
        }
        assert_eq!(byte_ranges(u64::MAX, u64::MAX).count(), 1);
    }
}
