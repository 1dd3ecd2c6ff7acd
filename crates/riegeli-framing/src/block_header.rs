//! The 24-byte block header at the start of every 64 KiB block.

use crate::error::{FramingError, FramingErrorKind, OverflowAt};
use crate::position::{BLOCK_HEADER_LEN, BLOCK_HEADER_SIZE, BLOCK_SIZE, USABLE_BLOCK_SIZE, is_block_boundary};

/// Hash checks are skipped when fuzzing, so that mutations reach the parsers behind them.
pub(crate) const HASH_CHECKS_DISABLED: bool = cfg!(fuzzing);

/// A block header: where the chunk it interrupts begins and ends.
///
/// Spec "Block header": `header_hash` (8 bytes, hash of the other 16),
/// `previous_chunk` (distance from the chunk's beginning to the block's
/// beginning) and `next_chunk` (distance from the block's beginning to the
/// chunk's end).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct BlockHeader {
    /// Distance from the beginning of the interrupted chunk to the beginning of the block.
    pub previous_chunk: u64,
    /// Distance from the beginning of the block to the end of the interrupted chunk.
    pub next_chunk: u64,
}

impl BlockHeader {
    /// The encoded size, [`BLOCK_HEADER_SIZE`].
    pub const fn encoded_len(&self) -> usize {
        BLOCK_HEADER_LEN
    }

    /// The header of the block at `block_begin` interrupting the chunk
    /// `[chunk_begin, chunk_end)`.
    pub fn for_chunk(block_begin: u64, chunk_begin: u64, chunk_end: u64) -> Result<Self, FramingError> {
        let (previous_chunk, next_chunk) = crate::position::block_header_fields(block_begin, chunk_begin, chunk_end)
            .at(block_begin, "block header fields (block outside its chunk)")?;
        Ok(Self { previous_chunk, next_chunk })
    }

    /// Encodes the header, hash included.
    pub fn encode(&self) -> [u8; BLOCK_HEADER_LEN] {
        let mut fields = [0u8; 16];
        fill(&mut fields, [self.previous_chunk, self.next_chunk]);
        let mut out = [0u8; BLOCK_HEADER_LEN];
        fill(&mut out, [riegeli_hash::hash(&fields), self.previous_chunk, self.next_chunk]);
        out
    }

    /// Appends the encoded header to `out`.
    pub fn encode_into(&self, out: &mut Vec<u8>) {
        out.extend_from_slice(&self.encode());
    }

    /// Parses and verifies the block header at the front of `input`, which
    /// begins at file position `block_begin`. Returns the header and the bytes
    /// consumed ([`BLOCK_HEADER_SIZE`]).
    ///
    /// Checks the hash, the spec's constraints on the fields, and that the
    /// chunk boundaries they point to lie inside the 64-bit position space.
    pub fn parse(input: &[u8], block_begin: u64) -> Result<(Self, usize), FramingError> {
        let Some(bytes) = input.first_chunk::<BLOCK_HEADER_LEN>() else {
            return Err(FramingError::incomplete(block_begin, "block header", BLOCK_HEADER_SIZE, input.len()));
        };
        let stored = le_u64(bytes, 0);
        let computed = riegeli_hash::hash(bytes.get(8..).unwrap_or_default());
        if stored != computed && !HASH_CHECKS_DISABLED {
            return Err(FramingError::hash_mismatch(block_begin, "block header", stored, computed));
        }
        let header = Self { previous_chunk: le_u64(bytes, 8), next_chunk: le_u64(bytes, 16) };
        header.validate(block_begin)?;
        Ok((header, BLOCK_HEADER_LEN))
    }

    /// Checks the spec's constraints, and that the header fits a block at `block_begin`.
    pub fn validate(&self, block_begin: u64) -> Result<(), FramingError> {
        let invalid = |reason| Err(FramingError::new(block_begin, FramingErrorKind::InvalidBlockHeader { reason }));
        if !is_block_boundary(block_begin) {
            return invalid("block header not at a multiple of the block size");
        }
        if self.previous_chunk % BLOCK_SIZE >= USABLE_BLOCK_SIZE {
            return invalid("previous_chunk points inside or right after a block header");
        }
        if self.next_chunk == 0 {
            return invalid("next_chunk is 0");
        }
        if (self.next_chunk - 1) % BLOCK_SIZE < BLOCK_HEADER_SIZE {
            return invalid("next_chunk points inside or right after a block header");
        }
        if self.previous_chunk > block_begin {
            return invalid("previous_chunk points before the start of the file");
        }
        if block_begin.checked_add(self.next_chunk).is_none() {
            return invalid("next_chunk points past the 64-bit position space");
        }
        Ok(())
    }

    /// Where the chunk interrupted by this header (at `block_begin`) begins.
    pub fn chunk_begin(&self, block_begin: u64) -> u64 {
        block_begin.saturating_sub(self.previous_chunk)
    }

    /// Where the chunk interrupted by this header (at `block_begin`) ends, which
    /// is where the next chunk begins.
    pub fn chunk_end(&self, block_begin: u64) -> u64 {
        block_begin.saturating_add(self.next_chunk)
    }
}

/// The little-endian `u64` at `offset` of `bytes` (0 if out of range, which
/// callers rule out by taking fixed-size arrays).
#[inline]
pub(crate) fn le_u64(bytes: &[u8], offset: usize) -> u64 {
    bytes.get(offset..offset + 8).and_then(|b| <[u8; 8]>::try_from(b).ok()).map_or(0, u64::from_le_bytes)
}

/// Writes `values` little-endian, back to back, into `out`.
#[inline]
pub(crate) fn fill<const N: usize>(out: &mut [u8], values: [u64; N]) {
    for (dst, src) in out.iter_mut().zip(values.into_iter().flat_map(u64::to_le_bytes)) {
        *dst = src;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The block header at the start of every Riegeli/records file.
    const FILE_START_BLOCK_HEADER: [u8; 24] = [
        0x83, 0xaf, 0x70, 0xd1, 0x0d, 0x88, 0x4a, 0x3f, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x40, 0x00,
        0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
    ];

    #[test]
    fn file_start() {
        let header = BlockHeader { previous_chunk: 0, next_chunk: 64 };
        assert_eq!(header.encode(), FILE_START_BLOCK_HEADER);
        assert_eq!(BlockHeader::parse(&FILE_START_BLOCK_HEADER, 0), Ok((header, 24)));
    }

    #[test]
    fn rejects_bad_hash_and_short_input() {
        let mut bytes = FILE_START_BLOCK_HEADER;
        bytes[16] ^= 1;
        let err = BlockHeader::parse(&bytes, 0).unwrap_err();
        assert!(matches!(err.kind(), FramingErrorKind::HashMismatch { .. }));
        let err = BlockHeader::parse(&FILE_START_BLOCK_HEADER[..23], 65536).unwrap_err();
        assert!(err.is_incomplete());
        assert_eq!(err.position(), 65536);
        assert_eq!(err.needed(), Some(24));
    }

    #[test]
    fn accepts_chunk_ending_one_byte_after_header() {
        let bytes = BlockHeader { previous_chunk: 0, next_chunk: 25 }.encode();
        assert!(BlockHeader::parse(&bytes, 0).is_ok());
    }

    #[test]
    fn rejects_constraint_violations() {
        for (prev, next, block) in [
            (0, 0, 0),                          // next_chunk 0
            (0, 24, 0),                         // next_chunk inside the header
            (USABLE_BLOCK_SIZE, 64, 65536 * 2), // previous chunk begins inside a header
            (65536, 64, 0),                     // previous chunk before the file
            (0, u64::MAX, 65536),               // chunk end overflows
        ] {
            let bytes = BlockHeader { previous_chunk: prev, next_chunk: next }.encode();
            let err = BlockHeader::parse(&bytes, block).unwrap_err();
            assert!(matches!(err.kind(), FramingErrorKind::InvalidBlockHeader { .. }), "{prev} {next}: {err}");
        }
        let bytes = BlockHeader { previous_chunk: 0, next_chunk: 64 }.encode();
        assert!(BlockHeader::parse(&bytes, 5).is_err());
    }
}
