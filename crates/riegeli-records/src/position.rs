//! `RecordPosition`: where a record is in a file.

use std::fmt;
use std::str::FromStr;

/// The position of a record: the beginning of its chunk and its index within
/// the chunk.
///
/// Positions order like the records they point to. The *numeric* form,
/// `chunk_begin + record_index`, resembles a file position and is unique per
/// record because a chunk occupies at least as many bytes as it has records.
/// The text form is `chunk_begin/record_index`; the binary forms are C++'s
/// ordered-varint form ([`to_bytes`](Self::to_bytes)) and its older 16-byte
/// big-endian form.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct RecordPosition {
    chunk_begin: u64,
    record_index: u64,
}

/// A text or binary form that is not a valid [`RecordPosition`].
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("invalid record position: {0}")]
pub struct ParsePositionError(&'static str);

impl RecordPosition {
    /// The position of record `record_index` of the chunk beginning at `chunk_begin`.
    ///
    /// Returns `None` if `chunk_begin + record_index` overflows.
    pub const fn new(chunk_begin: u64, record_index: u64) -> Option<Self> {
        if chunk_begin.checked_add(record_index).is_none() {
            return None;
        }
        Some(Self { chunk_begin, record_index })
    }

    /// Where the record's chunk begins.
    pub const fn chunk_begin(&self) -> u64 {
        self.chunk_begin
    }

    /// The record's index within its chunk.
    pub const fn record_index(&self) -> u64 {
        self.record_index
    }

    /// The numeric form: `chunk_begin + record_index`.
    pub const fn numeric(&self) -> u64 {
        // `new` guarantees no overflow.
        self.chunk_begin.wrapping_add(self.record_index)
    }

    /// The binary form of C++'s current `RecordPosition::ToBytes`: two ordered
    /// varints (which sort bytewise like the positions).
    pub fn to_bytes(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(18);
        write_ordered_varint(self.chunk_begin, &mut out);
        write_ordered_varint(self.record_index, &mut out);
        out
    }

    /// Parses either binary form (16 bytes: big-endian; otherwise ordered varints).
    pub fn from_bytes(bytes: &[u8]) -> Result<Self, ParsePositionError> {
        let (chunk_begin, record_index) = if let Ok(array) = <&[u8; 16]>::try_from(bytes) {
            let (a, b) = array.split_at(8);
            (u64::from_be_bytes(a.try_into().unwrap_or_default()), u64::from_be_bytes(b.try_into().unwrap_or_default()))
        } else {
            let (chunk_begin, used) = read_ordered_varint(bytes)?;
            let (record_index, used2) = read_ordered_varint(bytes.get(used..).unwrap_or_default())?;
            if used + used2 != bytes.len() {
                return Err(ParsePositionError("trailing bytes"));
            }
            (chunk_begin, record_index)
        };
        Self::new(chunk_begin, record_index).ok_or(ParsePositionError("chunk_begin + record_index overflows"))
    }
}

fn write_ordered_varint(value: u64, out: &mut Vec<u8>) {
    let bits = 64 - value.leading_zeros();
    let len = (bits.max(1) as usize).div_ceil(7).min(9);
    if len == 9 {
        out.push(0xff);
        out.extend_from_slice(&value.to_be_bytes());
        return;
    }
    // The first byte starts with `len - 1` one bits and a zero bit.
    let prefix = ((0xff_u64 << (9 - len)) & 0xff) << (8 * (len - 1));
    out.extend_from_slice(&(value | prefix).to_be_bytes()[8 - len..]);
}

fn read_ordered_varint(bytes: &[u8]) -> Result<(u64, usize), ParsePositionError> {
    let first = *bytes.first().ok_or(ParsePositionError("truncated"))?;
    let len = (first.leading_ones() as usize + 1).min(9);
    let body = bytes.get(..len).ok_or(ParsePositionError("truncated"))?;
    let value = if len == 9 {
        body.iter().skip(1).fold(0u64, |acc, &b| acc << 8 | u64::from(b))
    } else {
        let mask = (0xff_u16 >> len) as u8;
        body.iter().skip(1).fold(u64::from(first & mask), |acc, &b| acc << 8 | u64::from(b))
    };
    let min = if len == 1 { 0 } else { 1u64 << (7 * (len - 1)).min(63) };
    if value < min || (len == 9 && value < 1 << 56) {
        return Err(ParsePositionError("non-canonical ordered varint"));
    }
    Ok((value, len))
}

impl fmt::Display for RecordPosition {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}", self.chunk_begin, self.record_index)
    }
}

impl FromStr for RecordPosition {
    type Err = ParsePositionError;

    /// Parses `chunk_begin/record_index`.
    fn from_str(text: &str) -> Result<Self, ParsePositionError> {
        let (begin, index) = text.split_once('/').ok_or(ParsePositionError("expected chunk_begin/record_index"))?;
        let begin = begin.parse().map_err(|_| ParsePositionError("chunk_begin is not a u64"))?;
        let index = index.parse().map_err(|_| ParsePositionError("record_index is not a u64"))?;
        Self::new(begin, index).ok_or(ParsePositionError("chunk_begin + record_index overflows"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The 16-byte big-endian binary form (C++'s older `ToBytes` format),
    /// which [`RecordPosition::from_bytes`] reads.
    fn to_bytes_be16(pos: RecordPosition) -> [u8; 16] {
        let mut out = [0u8; 16];
        out[..8].copy_from_slice(&pos.chunk_begin().to_be_bytes());
        out[8..].copy_from_slice(&pos.record_index().to_be_bytes());
        out
    }

    #[test]
    fn forms() {
        let pos = RecordPosition::new(65536, 3).unwrap();
        assert_eq!(pos.numeric(), 65539);
        assert_eq!(pos.to_string(), "65536/3");
        assert_eq!("65536/3".parse::<RecordPosition>(), Ok(pos));
        assert_eq!(to_bytes_be16(pos), [0, 0, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 3]);
        assert_eq!(RecordPosition::from_bytes(&to_bytes_be16(pos)), Ok(pos));
        // Ordered varints: 65536 needs 17 bits -> 3 bytes with prefix 0b110.
        assert_eq!(pos.to_bytes(), vec![0xc1, 0x00, 0x00, 0x03]);
        assert_eq!(RecordPosition::from_bytes(&pos.to_bytes()), Ok(pos));
        assert!(RecordPosition::new(u64::MAX, 1).is_none());
        assert!("1".parse::<RecordPosition>().is_err());
        assert!("18446744073709551615/1".parse::<RecordPosition>().is_err());
    }

    #[test]
    fn ordered_varints_sort_like_values() {
        let values = [0u64, 1, 127, 128, 16383, 16384, 1 << 21, (1 << 49) - 1, 1 << 56, u64::MAX - 1];
        let mut last = Vec::new();
        for v in values {
            let mut bytes = Vec::new();
            write_ordered_varint(v, &mut bytes);
            assert_eq!(read_ordered_varint(&bytes), Ok((v, bytes.len())), "{v}");
            assert!(bytes > last, "{v}");
            last = bytes;
        }
        assert!(read_ordered_varint(&[0x80, 0x05]).is_err(), "5 in two bytes is not canonical");
    }
}
