//! Sizes and position arithmetic: the formulas of the specification's
//! "Implementation notes", as checked `const fn`s.
//!
//! A *position* is a physical byte offset in the file. Block headers occupy the
//! first [`BLOCK_HEADER_SIZE`] bytes of every [`BLOCK_SIZE`]-byte block. A
//! position at a block boundary is *before* that block's header. Every function
//! here returns [`PositionOverflow`] instead of wrapping when a result would
//! not fit in a `u64`.

/// Size of a block: a block header begins at every multiple of it.
pub const BLOCK_SIZE: u64 = 1 << 16;
/// Size of a block header: `header_hash`, `previous_chunk`, `next_chunk`.
pub const BLOCK_HEADER_SIZE: u64 = 24;
/// Bytes of a block left for chunks after its header.
pub const USABLE_BLOCK_SIZE: u64 = BLOCK_SIZE - BLOCK_HEADER_SIZE;
/// Size of a chunk header: `header_hash`, `data_size`, `data_hash`,
/// `chunk_type` + `num_records`, `decoded_data_size`.
pub const CHUNK_HEADER_SIZE: u64 = 40;

/// [`BLOCK_HEADER_SIZE`] as a `usize`, for array lengths.
pub(crate) const BLOCK_HEADER_LEN: usize = 24;
/// [`CHUNK_HEADER_SIZE`] as a `usize`, for array lengths.
pub(crate) const CHUNK_HEADER_LEN: usize = 40;

/// Converts a length that fits in memory (checked by the caller or bounded by
/// a slice length) to `usize`, saturating so that a later `get` fails cleanly.
#[inline]
pub(crate) fn to_usize(x: u64) -> usize {
    usize::try_from(x).unwrap_or(usize::MAX)
}

/// A position computation whose result does not fit in a `u64`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("file position arithmetic overflows u64")]
pub struct PositionOverflow;

/// `?` for `Option` inside `const fn`.
macro_rules! checked {
    ($e:expr) => {
        match $e {
            Some(v) => v,
            None => return Err(PositionOverflow),
        }
    };
}

/// `?` for `Result<_, PositionOverflow>` inside `const fn`.
macro_rules! tri {
    ($e:expr) => {
        match $e {
            Ok(v) => v,
            Err(e) => return Err(e),
        }
    };
}

/// Bytes from `pos` to the next block boundary, 0 at a boundary.
///
/// Spec: `RemainingInBlock(pos) = (-pos) % kBlockSize` (unsigned arithmetic
/// modulo 2^64). Never overflows.
#[inline]
pub const fn remaining_in_block(pos: u64) -> u64 {
    pos.wrapping_neg() % BLOCK_SIZE
}

/// Whether `pos` is the beginning of a block (and of its block header).
#[inline]
pub const fn is_block_boundary(pos: u64) -> bool {
    pos.is_multiple_of(BLOCK_SIZE)
}

/// Whether a chunk may begin at `pos`: not inside a block header nor
/// immediately after one (a block boundary itself is allowed).
///
/// C++: `IsPossibleChunkBoundary(pos) = RemainingInBlock(pos) < kUsableBlockSize`.
#[inline]
pub const fn is_possible_chunk_boundary(pos: u64) -> bool {
    remaining_in_block(pos) < USABLE_BLOCK_SIZE
}

/// The number of block headers met when `size` bytes of chunk are laid out
/// from `pos`.
///
/// Spec: `NumOverheadBlocks(pos, size) = (size + (pos + kUsableBlockSize - 1) %
/// kBlockSize) / kUsableBlockSize`. Meaningful when `pos` is a possible chunk
/// boundary (or inside chunk contents, past a block header).
#[inline]
pub const fn num_overhead_blocks(pos: u64, size: u64) -> Result<u64, PositionOverflow> {
    // `(pos + kUsableBlockSize - 1) % kBlockSize`, computed without overflowing `pos + ...`.
    let phase = (pos % BLOCK_SIZE + USABLE_BLOCK_SIZE - 1) % BLOCK_SIZE;
    Ok(checked!(size.checked_add(phase)) / USABLE_BLOCK_SIZE)
}

/// The position reached after laying out `size` bytes of chunk from `pos`,
/// counting the block headers in between.
///
/// Spec: `AddWithOverhead(pos, size) = pos + size + NumOverheadBlocks(pos, size) *
/// kBlockHeaderSize`.
#[inline]
pub const fn add_with_overhead(pos: u64, size: u64) -> Result<u64, PositionOverflow> {
    let overhead = checked!(tri!(num_overhead_blocks(pos, size)).checked_mul(BLOCK_HEADER_SIZE));
    Ok(checked!(checked!(pos.checked_add(size)).checked_add(overhead)))
}

/// The inverse of [`add_with_overhead`]: the number of chunk bytes (block
/// headers excluded) between positions `begin` and `end`.
///
/// C++: `DistanceWithoutOverhead(begin, end)`. Errors if `end < begin`.
#[inline]
pub const fn distance_without_overhead(begin: u64, end: u64) -> Result<u64, PositionOverflow> {
    if end < begin {
        return Err(PositionOverflow);
    }
    // Block-header bytes in [0, x): full headers before x's block, plus the
    // part of x's own block header that lies before x.
    const fn header_bytes_before(x: u64) -> u64 {
        let in_block = x % BLOCK_SIZE;
        let partial = if in_block < BLOCK_HEADER_SIZE { in_block } else { BLOCK_HEADER_SIZE };
        // (x / BLOCK_SIZE) * 24 <= x, so this cannot overflow.
        x / BLOCK_SIZE * BLOCK_HEADER_SIZE + partial
    }
    Ok(end - begin - (header_bytes_before(end) - header_bytes_before(begin)))
}

/// The smallest possible chunk boundary at or after `pos`.
///
/// Spec: `RoundUpToPossibleChunkBoundary(pos) = pos +
/// SaturatingSub(RemainingInBlock(pos), kUsableBlockSize - 1)`; it maps
/// 0 → 0, 1..=25 → 25, 26 → 26, …, 64Ki → 64Ki, 64Ki+1..=64Ki+25 → 64Ki+25.
#[inline]
pub const fn round_up_to_possible_chunk_boundary(pos: u64) -> Result<u64, PositionOverflow> {
    let extra = remaining_in_block(pos).saturating_sub(USABLE_BLOCK_SIZE - 1);
    Ok(checked!(pos.checked_add(extra)))
}

/// The end of a chunk (including its padding) that begins at `chunk_begin`.
///
/// Spec: `chunk_end = max(AddWithOverhead(chunk_begin, kChunkHeaderSize +
/// data_size), RoundUpToPossibleChunkBoundary(chunk_begin + num_records))`.
#[inline]
pub const fn chunk_end(chunk_begin: u64, data_size: u64, num_records: u64) -> Result<u64, PositionOverflow> {
    let content_end = tri!(add_with_overhead(chunk_begin, checked!(CHUNK_HEADER_SIZE.checked_add(data_size))));
    let records_end = tri!(round_up_to_possible_chunk_boundary(checked!(chunk_begin.checked_add(num_records))));
    Ok(if content_end > records_end { content_end } else { records_end })
}

/// The block-header fields of the block at `block_begin` that interrupts a
/// chunk spanning `[chunk_begin, chunk_end)`: `(previous_chunk, next_chunk)`.
///
/// Spec: `prev_chunk = block_begin - chunk_begin; next_chunk = chunk_end -
/// block_begin`. Errors unless `chunk_begin <= block_begin < chunk_end`.
#[inline]
pub const fn block_header_fields(
    block_begin: u64,
    chunk_begin: u64,
    chunk_end: u64,
) -> Result<(u64, u64), PositionOverflow> {
    if block_begin < chunk_begin || block_begin >= chunk_end {
        return Err(PositionOverflow);
    }
    Ok((block_begin - chunk_begin, chunk_end - block_begin))
}

/// The first block boundary at or after `pos`.
#[inline]
pub const fn next_block_boundary(pos: u64) -> Result<u64, PositionOverflow> {
    Ok(checked!(pos.checked_add(remaining_in_block(pos))))
}

/// The block boundary at or before `pos`.
#[inline]
pub const fn block_begin(pos: u64) -> u64 {
    pos - pos % BLOCK_SIZE
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_up_table() {
        for (pos, want) in [
            (0, 0),
            (1, 25),
            (24, 25),
            (25, 25),
            (26, 26),
            (65535, 65535),
            (65536, 65536),
            (65537, 65536 + 25),
            (65536 + 25, 65536 + 25),
        ] {
            assert_eq!(round_up_to_possible_chunk_boundary(pos), Ok(want), "pos {pos}");
        }
        // The last block of the position space holds its own possible boundaries.
        assert_eq!(round_up_to_possible_chunk_boundary(u64::MAX), Ok(u64::MAX));
        assert_eq!(round_up_to_possible_chunk_boundary(u64::MAX - 65534), Ok(u64::MAX - 65510));
    }

    #[test]
    fn signature_chunk_end() {
        // The signature chunk: begins at 0, no data, no records, ends at 64.
        assert_eq!(chunk_end(0, 0, 0), Ok(64));
        // An ArrayRecord example chunk of the spec: @64, data_size 9, 2 records -> @113.
        assert_eq!(chunk_end(64, 9, 2), Ok(113));
    }

    #[test]
    fn add_with_overhead_edges() {
        assert_eq!(add_with_overhead(0, 0), Ok(0));
        assert_eq!(add_with_overhead(0, 1), Ok(25));
        assert_eq!(add_with_overhead(0, USABLE_BLOCK_SIZE), Ok(BLOCK_SIZE));
        assert_eq!(add_with_overhead(0, USABLE_BLOCK_SIZE + 1), Ok(BLOCK_SIZE + 25));
        assert_eq!(add_with_overhead(u64::MAX - 10, 100), Err(PositionOverflow));
        assert_eq!(add_with_overhead(0, u64::MAX), Err(PositionOverflow));
    }

    #[test]
    fn distance_edges() {
        assert_eq!(distance_without_overhead(0, 64), Ok(40));
        assert_eq!(distance_without_overhead(64, 65536), Ok(65536 - 64));
        assert_eq!(distance_without_overhead(64, 65536 + 24), Ok(65536 - 64));
        assert_eq!(distance_without_overhead(5, 4), Err(PositionOverflow));
    }
}
