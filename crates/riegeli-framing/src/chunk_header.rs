//! The 40-byte chunk header.

use crate::block_header::{HASH_CHECKS_DISABLED, fill, le_u64};
use crate::error::{FramingError, FramingErrorKind, OverflowAt};
use crate::position::{CHUNK_HEADER_LEN, CHUNK_HEADER_SIZE, chunk_end};

/// The largest `num_records` a chunk header can hold (7 bytes).
pub const MAX_NUM_RECORDS: u64 = (1 << 56) - 1;

/// A chunk header.
///
/// Spec "Chunk": `header_hash` (8 bytes, hash of the other 32), `data_size`,
/// `data_hash`, `chunk_type` (1 byte), `num_records` (7 bytes) and
/// `decoded_data_size`. To framing, `chunk_type` is an opaque byte: its meaning
/// belongs to the codec.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct ChunkHeader {
    data_size: u64,
    data_hash: u64,
    chunk_type: u8,
    num_records: u64,
    decoded_data_size: u64,
}

impl ChunkHeader {
    /// A header for chunk data of `data_size` bytes hashing to `data_hash`.
    ///
    /// Errors if `num_records` exceeds [`MAX_NUM_RECORDS`].
    pub fn new(
        chunk_type: u8,
        data_size: u64,
        data_hash: u64,
        num_records: u64,
        decoded_data_size: u64,
    ) -> Result<Self, FramingError> {
        if num_records > MAX_NUM_RECORDS {
            return Err(FramingError::new(
                0,
                FramingErrorKind::InvalidChunkHeader { reason: "num_records does not fit in 7 bytes" },
            ));
        }
        Ok(Self { data_size, data_hash, chunk_type, num_records, decoded_data_size })
    }

    /// A header for `data`, hashing it.
    pub fn for_data(
        chunk_type: u8,
        data: &[u8],
        num_records: u64,
        decoded_data_size: u64,
    ) -> Result<Self, FramingError> {
        Self::new(chunk_type, data.len() as u64, riegeli_hash::hash(data), num_records, decoded_data_size)
    }

    /// Size of the chunk data, block headers excluded.
    pub const fn data_size(&self) -> u64 {
        self.data_size
    }
    /// Hash of the chunk data.
    pub const fn data_hash(&self) -> u64 {
        self.data_hash
    }
    /// The chunk type byte (`'s'`, `'m'`, `'p'`, `'r'`, `'t'`, ...).
    pub const fn chunk_type(&self) -> u8 {
        self.chunk_type
    }
    /// Number of records after decoding.
    pub const fn num_records(&self) -> u64 {
        self.num_records
    }
    /// Sum of record sizes after decoding.
    pub const fn decoded_data_size(&self) -> u64 {
        self.decoded_data_size
    }

    /// The encoded size, [`CHUNK_HEADER_SIZE`].
    pub const fn encoded_len(&self) -> usize {
        CHUNK_HEADER_LEN
    }

    /// The end of this chunk, padding included, if it begins at `chunk_begin`
    /// (spec `chunk_end`).
    pub fn chunk_end(&self, chunk_begin: u64) -> Result<u64, FramingError> {
        chunk_end(chunk_begin, self.data_size, self.num_records).at(chunk_begin, "chunk end")
    }

    /// Encodes the header, hash included.
    pub fn encode(&self) -> [u8; CHUNK_HEADER_LEN] {
        let type_and_records = u64::from(self.chunk_type) | (self.num_records << 8);
        let values = [self.data_size, self.data_hash, type_and_records, self.decoded_data_size];
        let mut fields = [0u8; 32];
        fill(&mut fields, values);
        let [a, b, c, d] = values;
        let mut out = [0u8; CHUNK_HEADER_LEN];
        fill(&mut out, [riegeli_hash::hash(&fields), a, b, c, d]);
        out
    }

    /// Appends the encoded header to `out`.
    pub fn encode_into(&self, out: &mut Vec<u8>) {
        out.extend_from_slice(&self.encode());
    }

    /// Parses and verifies the chunk header at the front of `input` (the 40
    /// header bytes, block headers already removed) of the chunk beginning at
    /// `chunk_begin`. Returns the header and the bytes consumed.
    ///
    /// Checks the header hash and that the chunk's end fits in the 64-bit
    /// position space.
    pub fn parse(input: &[u8], chunk_begin: u64) -> Result<(Self, usize), FramingError> {
        let Some(bytes) = input.first_chunk::<CHUNK_HEADER_LEN>() else {
            return Err(FramingError::incomplete(chunk_begin, "chunk header", CHUNK_HEADER_SIZE, input.len()));
        };
        let stored = le_u64(bytes, 0);
        let computed = riegeli_hash::hash(bytes.get(8..).unwrap_or_default());
        if stored != computed && !HASH_CHECKS_DISABLED {
            return Err(FramingError::hash_mismatch(chunk_begin, "chunk header", stored, computed));
        }
        let type_and_records = le_u64(bytes, 24);
        let [chunk_type, ..] = type_and_records.to_le_bytes();
        let header = Self {
            data_size: le_u64(bytes, 8),
            data_hash: le_u64(bytes, 16),
            chunk_type,
            num_records: type_and_records >> 8,
            decoded_data_size: le_u64(bytes, 32),
        };
        header.chunk_end(chunk_begin)?;
        Ok((header, CHUNK_HEADER_LEN))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The signature chunk header at byte 24 of every Riegeli/records file.
    const SIGNATURE_CHUNK_HEADER: [u8; 40] = [
        0x91, 0xba, 0xc2, 0x3c, 0x92, 0x87, 0xe1, 0xa9, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0xe1, 0x9f,
        0x13, 0xc0, 0xe9, 0xb1, 0xc3, 0x72, 0x73, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
        0x00, 0x00, 0x00, 0x00,
    ];

    #[test]
    fn signature() {
        let header = ChunkHeader::for_data(b's', b"", 0, 0).unwrap();
        assert_eq!(header.encode(), SIGNATURE_CHUNK_HEADER);
        let (parsed, consumed) = ChunkHeader::parse(&SIGNATURE_CHUNK_HEADER, 0).unwrap();
        assert_eq!((parsed, consumed), (header, 40));
        assert_eq!(parsed.chunk_end(0), Ok(64));
    }

    #[test]
    fn num_records_uses_seven_bytes() {
        let header = ChunkHeader::new(b'r', 1, 2, MAX_NUM_RECORDS, 4).unwrap();
        let bytes = header.encode();
        assert_eq!(&bytes[24..32], &[b'r', 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff]);
        assert_eq!(ChunkHeader::parse(&bytes, 64).map(|(h, _)| h.num_records()), Ok(MAX_NUM_RECORDS));
        assert!(ChunkHeader::new(b'r', 1, 2, MAX_NUM_RECORDS + 1, 4).is_err());
    }

    #[test]
    fn rejects_bad_hash_short_input_and_overflow() {
        let mut bytes = SIGNATURE_CHUNK_HEADER;
        bytes[39] = 1;
        assert!(matches!(
            ChunkHeader::parse(&bytes, 0).unwrap_err().kind(),
            FramingErrorKind::HashMismatch { what: "chunk header", .. }
        ));
        assert!(ChunkHeader::parse(&SIGNATURE_CHUNK_HEADER[..39], 0).unwrap_err().is_incomplete());
        let huge = ChunkHeader::new(b'r', u64::MAX - 100, 0, 0, 0).unwrap().encode();
        assert!(matches!(ChunkHeader::parse(&huge, 64).unwrap_err().kind(), FramingErrorKind::Overflow { .. }));
    }
}
