//! Finding chunk boundaries from block headers, for seeking and recovery.

use crate::block_header::BlockHeader;
use crate::error::{FramingError, OverflowAt};
use crate::position::{BLOCK_HEADER_LEN, BLOCK_HEADER_SIZE, BLOCK_SIZE, next_block_boundary};

/// A valid block header found by [`find_block_header`], and the chunk
/// boundaries it points to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BlockLocation {
    /// Position of the block (and its header).
    pub block_begin: u64,
    /// The header found there.
    pub header: BlockHeader,
}

impl BlockLocation {
    /// Where the chunk interrupted by this block header begins (at or before the block).
    pub fn interrupted_chunk_begin(&self) -> u64 {
        self.header.chunk_begin(self.block_begin)
    }

    /// The first chunk boundary at or after the block's beginning: the block
    /// itself if the interrupted chunk begins there (`previous_chunk == 0`),
    /// otherwise the end of the interrupted chunk.
    ///
    /// This is where reading resumes after skipping a damaged region.
    pub fn next_chunk_boundary(&self) -> u64 {
        if self.header.previous_chunk == 0 { self.block_begin } else { self.header.chunk_end(self.block_begin) }
    }
}

/// Scans `input`, the file's physical bytes from position `input_pos` on, for
/// the first valid block header at a block boundary at or after `input_pos`.
///
/// Block headers that fail their hash or constraints are skipped: that is how
/// a reader gets past a damaged region. If no valid header is found in the
/// input, the error is incomplete and says how many bytes (counted from the
/// start of `input`) would let the scan look at one more block header.
pub fn find_block_header(input: &[u8], input_pos: u64) -> Result<BlockLocation, FramingError> {
    let mut block = next_block_boundary(input_pos).at(input_pos, "next block boundary")?;
    loop {
        let offset = block - input_pos;
        let available = usize::try_from(offset).ok().and_then(|offset| input.get(offset..));
        match available {
            Some(bytes) if bytes.len() >= BLOCK_HEADER_LEN => {
                if let Ok((header, _)) = BlockHeader::parse(bytes, block) {
                    return Ok(BlockLocation { block_begin: block, header });
                }
            }
            _ => {
                let needed = offset.saturating_add(BLOCK_HEADER_SIZE);
                return Err(FramingError::incomplete(block, "block header", needed, input.len()));
            }
        }
        block = block.checked_add(BLOCK_SIZE).ok_or_else(|| FramingError::overflow(block, "block position"))?;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn skips_damaged_headers() {
        let mut file = vec![0u8; 3 * BLOCK_SIZE as usize + 24];
        let good = BlockHeader { previous_chunk: 100, next_chunk: 300 }.encode();
        file[2 * BLOCK_SIZE as usize..][..24].copy_from_slice(&good);
        let found = find_block_header(&file[10..], 10).unwrap();
        assert_eq!(found.block_begin, 2 * BLOCK_SIZE);
        assert_eq!(found.interrupted_chunk_begin(), 2 * BLOCK_SIZE - 100);
        assert_eq!(found.next_chunk_boundary(), 2 * BLOCK_SIZE + 300);
        let err = find_block_header(&file[2 * BLOCK_SIZE as usize + 1..], 2 * BLOCK_SIZE + 1).unwrap_err();
        assert!(err.is_incomplete());
        // The zeroed header at 3 * 64 KiB is skipped; the scan needs the one after it.
        assert_eq!(err.position(), 4 * BLOCK_SIZE);
    }

    #[test]
    fn block_beginning_a_chunk_is_the_boundary() {
        let mut file = vec![0u8; 24];
        file.copy_from_slice(&BlockHeader { previous_chunk: 0, next_chunk: 64 }.encode());
        assert_eq!(find_block_header(&file, 0).unwrap().next_chunk_boundary(), 0);
    }
}
