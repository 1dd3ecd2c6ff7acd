//! The chunk types of Riegeli/records (the `chunk_type` byte of a chunk header).

/// What a chunk holds: the `chunk_type` byte of its header (spec "Chunk").
///
/// The framing layer treats this byte as opaque; this crate gives it meaning.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum ChunkType {
    /// `'s'` (0x73): the file signature, the first chunk of every file.
    FileSignature,
    /// `'m'` (0x6d): file metadata, a serialized `RecordsMetadata` proto.
    FileMetadata,
    /// `'p'` (0x70): padding, ignored by readers.
    Padding,
    /// `'r'` (0x72): a simple chunk with records.
    Simple,
    /// `'t'` (0x74): a transposed chunk with records.
    Transposed,
}

impl ChunkType {
    /// The byte that stands for this chunk type in a chunk header.
    pub const fn to_byte(self) -> u8 {
        match self {
            Self::FileSignature => b's',
            Self::FileMetadata => b'm',
            Self::Padding => b'p',
            Self::Simple => b'r',
            Self::Transposed => b't',
        }
    }

    /// The chunk type a header byte stands for, or `None` for an unknown byte.
    pub fn from_byte(byte: u8) -> Option<Self> {
        match byte {
            b's' => Some(Self::FileSignature),
            b'm' => Some(Self::FileMetadata),
            b'p' => Some(Self::Padding),
            b'r' => Some(Self::Simple),
            b't' => Some(Self::Transposed),
            _ => None,
        }
    }

    /// Whether chunks of this type hold records (simple and transposed chunks).
    pub const fn is_data(self) -> bool {
        matches!(self, Self::Simple | Self::Transposed)
    }

    /// Whether a chunk whose header says `chunk_type` and `num_records`
    /// holds records: a simple or transposed chunk with at least one.
    pub fn holds_records(chunk_type: u8, num_records: u64) -> bool {
        Self::from_byte(chunk_type).is_some_and(Self::is_data) && num_records > 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bytes_match_the_spec() {
        // Values from the spec (and C++ `chunk_encoding/constants.h`).
        let table = [
            (ChunkType::FileSignature, 0x73),
            (ChunkType::FileMetadata, 0x6d),
            (ChunkType::Padding, 0x70),
            (ChunkType::Simple, 0x72),
            (ChunkType::Transposed, 0x74),
        ];
        for (chunk_type, byte) in table {
            assert_eq!(chunk_type.is_data(), matches!(byte, 0x72 | 0x74));
            assert_eq!(chunk_type.to_byte(), byte);
            assert_eq!(ChunkType::from_byte(byte), Some(chunk_type));
        }
        let known: Vec<u8> = table.iter().map(|&(_, b)| b).collect();
        for byte in 0..=u8::MAX {
            if !known.contains(&byte) {
                assert_eq!(ChunkType::from_byte(byte), None, "byte {byte:#x}");
            }
        }
    }

    #[test]
    fn only_simple_and_transposed_chunks_with_records_hold_records() {
        use ChunkType as T;
        assert!(T::holds_records(b'r', 1) && T::holds_records(b't', 5));
        assert!(!T::holds_records(b'r', 0) && !T::holds_records(b't', 0));
        for byte in [b's', b'm', b'p', b'x', 0] {
            assert!(!T::holds_records(byte, 3), "{byte:#x}");
        }
    }
}
