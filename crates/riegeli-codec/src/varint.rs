//! Varints (LEB128): protobuf's base-128 encoding of unsigned integers.
//!
//! Decoding is lenient by default, as Riegeli's C++ reads most varints: a
//! value may carry redundant `0x80` continuation bytes as long as the whole
//! varint fits in 5 (u32) or 10 (u64) bytes and does not overflow (the 5th
//! byte of a varint32 must be `<= 0x0f`, the 10th byte of a varint64 `<= 0x01`).
//! The `_canonical` variants also reject encodings that are not the shortest.

use crate::error::{CodecError, CodecErrorKind};

/// The longest varint64: 10 bytes.
pub const MAX_VARINT64_LEN: usize = 10;
/// The longest varint32: 5 bytes.
pub const MAX_VARINT32_LEN: usize = 5;

/// The number of bytes [`encode_u64`] writes for `value`.
#[inline]
pub const fn encoded_len_u64(value: u64) -> usize {
    // 1 + floor(bits / 7), with 0 taking one byte.
    let bits = 64 - (value | 1).leading_zeros() as usize;
    (bits * 9 + 64) / 64
}

/// The number of bytes [`encode_u32`] writes for `value`.
#[inline]
pub const fn encoded_len_u32(value: u32) -> usize {
    encoded_len_u64(value as u64)
}

/// Appends the varint encoding of `value` to `out`.
#[inline]
pub fn encode_u64(mut value: u64, out: &mut Vec<u8>) {
    while value >= 0x80 {
        out.push((value as u8) | 0x80);
        value >>= 7;
    }
    out.push(value as u8);
}

/// Appends the varint encoding of `value` to `out`.
#[inline]
pub fn encode_u32(value: u32, out: &mut Vec<u8>) {
    encode_u64(u64::from(value), out);
}

/// Writes the varint encoding of `value` into `buf`, returning its length.
#[inline]
pub fn encode_u64_to_array(mut value: u64, buf: &mut [u8; MAX_VARINT64_LEN]) -> usize {
    let mut len = 0;
    for slot in buf.iter_mut() {
        len += 1;
        if value < 0x80 {
            *slot = value as u8;
            break;
        }
        *slot = (value as u8) | 0x80;
        value >>= 7;
    }
    len
}

/// Decodes a varint64 from the front of `input`: the value and the bytes consumed.
///
/// Errors if the input ends inside the varint, or if it is longer than 10
/// bytes or overflows 64 bits. Redundant continuation bytes are accepted.
#[inline]
pub fn decode_u64(input: &[u8]) -> Result<(u64, usize), CodecError> {
    // Fast path: one byte.
    if let Some(&b) = input.first()
        && b < 0x80
    {
        return Ok((u64::from(b), 1));
    }
    decode_u64_slow(input)
}

#[cold]
#[inline(never)]
fn decode_u64_slow(input: &[u8]) -> Result<(u64, usize), CodecError> {
    let mut value = 0u64;
    for (i, &byte) in input.iter().take(MAX_VARINT64_LEN).enumerate() {
        if i == MAX_VARINT64_LEN - 1 && byte > 1 {
            return Err(CodecError::new("varint64", i as u64, CodecErrorKind::VarintOverflow { bits: 64 }));
        }
        value |= u64::from(byte & 0x7f) << (7 * i);
        if byte < 0x80 {
            return Ok((value, i + 1));
        }
    }
    if input.len() >= MAX_VARINT64_LEN {
        return Err(CodecError::new("varint64", 9, CodecErrorKind::VarintOverflow { bits: 64 }));
    }
    Err(CodecError::truncated("varint64", input.len() as u64, 1))
}

/// Decodes a varint32 from the front of `input`: the value and the bytes consumed.
///
/// Errors if the input ends inside the varint, or if it is longer than 5
/// bytes or overflows 32 bits.
#[inline]
pub fn decode_u32(input: &[u8]) -> Result<(u32, usize), CodecError> {
    if let Some(&b) = input.first()
        && b < 0x80
    {
        return Ok((u32::from(b), 1));
    }
    decode_u32_slow(input)
}

#[cold]
#[inline(never)]
fn decode_u32_slow(input: &[u8]) -> Result<(u32, usize), CodecError> {
    let mut value = 0u32;
    for (i, &byte) in input.iter().take(MAX_VARINT32_LEN).enumerate() {
        if i == MAX_VARINT32_LEN - 1 && byte > 0x0f {
            return Err(CodecError::new("varint32", i as u64, CodecErrorKind::VarintOverflow { bits: 32 }));
        }
        value |= u32::from(byte & 0x7f) << (7 * i);
        if byte < 0x80 {
            return Ok((value, i + 1));
        }
    }
    if input.len() >= MAX_VARINT32_LEN {
        return Err(CodecError::new("varint32", 4, CodecErrorKind::VarintOverflow { bits: 32 }));
    }
    Err(CodecError::truncated("varint32", input.len() as u64, 1))
}

/// Like [`decode_u64`], but also rejects encodings that are not the shortest.
pub fn decode_u64_canonical(input: &[u8]) -> Result<(u64, usize), CodecError> {
    let (value, len) = decode_u64(input)?;
    if len != encoded_len_u64(value) {
        return Err(CodecError::new("varint64", 0, CodecErrorKind::NonCanonicalVarint));
    }
    Ok((value, len))
}

/// Like [`decode_u32`], but also rejects encodings that are not the shortest.
pub fn decode_u32_canonical(input: &[u8]) -> Result<(u32, usize), CodecError> {
    let (value, len) = decode_u32(input)?;
    if len != encoded_len_u32(value) {
        return Err(CodecError::new("varint32", 0, CodecErrorKind::NonCanonicalVarint));
    }
    Ok((value, len))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn check(value: u64, bytes: &[u8]) {
        let mut out = Vec::new();
        encode_u64(value, &mut out);
        assert_eq!(out, bytes, "encode {value}");
        assert_eq!(encoded_len_u64(value), bytes.len());
        assert_eq!(decode_u64(bytes), Ok((value, bytes.len())));
        assert_eq!(decode_u64_canonical(bytes), Ok((value, bytes.len())));
    }

    #[test]
    fn known_encodings() {
        check(0, &[0x00]);
        check(1, &[0x01]);
        check(127, &[0x7f]);
        check(128, &[0x80, 0x01]);
        check(300, &[0xac, 0x02]);
        check(u64::from(u32::MAX), &[0xff, 0xff, 0xff, 0xff, 0x0f]);
        check(u64::MAX, &[0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01]);
    }

    #[test]
    fn overflow_and_truncation() {
        let tenth_too_big = [0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x02];
        assert!(matches!(decode_u64(&tenth_too_big).unwrap_err().kind(), CodecErrorKind::VarintOverflow { bits: 64 }));
        let eleven = [0x80; 11];
        assert!(matches!(decode_u64(&eleven).unwrap_err().kind(), CodecErrorKind::VarintOverflow { .. }));
        assert!(matches!(decode_u64(&[0x80, 0x80]).unwrap_err().kind(), CodecErrorKind::Truncated { .. }));
        assert!(decode_u64(&[]).is_err());
        assert!(matches!(
            decode_u32(&[0xff, 0xff, 0xff, 0xff, 0x10]).unwrap_err().kind(),
            CodecErrorKind::VarintOverflow { bits: 32 }
        ));
        assert_eq!(decode_u32(&[0xff, 0xff, 0xff, 0xff, 0x0f]), Ok((u32::MAX, 5)));
    }

    #[test]
    fn lenient_and_canonical() {
        // 1 with a redundant continuation byte.
        assert_eq!(decode_u64(&[0x81, 0x00]), Ok((1, 2)));
        assert!(matches!(decode_u64_canonical(&[0x81, 0x00]).unwrap_err().kind(), CodecErrorKind::NonCanonicalVarint));
        assert_eq!(decode_u32(&[0x80, 0x80, 0x80, 0x80, 0x00]), Ok((0, 5)));
        assert!(decode_u32_canonical(&[0x80, 0x00]).is_err());
    }
}
