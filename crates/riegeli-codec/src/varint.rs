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

/// The low 8 bits of `value`.
#[inline(always)]
const fn low_byte(value: u64) -> u8 {
    value.to_le_bytes()[0]
}

/// Appends the varint encoding of `value` to `out`.
///
/// A plain byte loop: in `benches/varint.rs` it was as fast as or faster than
/// branch-free variants (a fixed 10-byte copy plus truncation, bit spreading)
/// on small and mixed-length values.
#[inline]
pub fn encode_u64(mut value: u64, out: &mut Vec<u8>) {
    while value >= 0x80 {
        out.push(low_byte(value) | 0x80);
        value >>= 7;
    }
    out.push(low_byte(value));
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
            *slot = low_byte(value);
            break;
        }
        *slot = low_byte(value) | 0x80;
        value >>= 7;
    }
    len
}

/// Decodes a varint64 from the front of `input`: the value and the bytes consumed.
///
/// Errors if the input ends inside the varint, or if it is longer than 10
/// bytes or overflows 64 bits (a 10th byte above `0x01`). Redundant
/// continuation bytes are accepted.
///
/// With at least 10 bytes of input the varint is decoded a word at a time,
/// without per-byte bounds checks or per-byte branches; shorter inputs (the
/// end of a buffer) take a cold byte-by-byte path.
#[inline]
pub fn decode_u64(input: &[u8]) -> Result<(u64, usize), CodecError> {
    if let Some(&b) = input.first()
        && b < 0x80
    {
        return Ok((u64::from(b), 1));
    }
    match input.first_chunk::<MAX_VARINT64_LEN>() {
        Some(bytes) => decode_u64_word(bytes),
        None => decode_u64_slow(input),
    }
}

/// Gathers the 7-bit groups of the 8 bytes of `word` into 56 bits.
#[inline(always)]
const fn compact_groups(word: u64) -> u64 {
    let x = word & 0x7f7f_7f7f_7f7f_7f7f;
    let x = (x & 0x007f_007f_007f_007f) | ((x & 0x7f00_7f00_7f00_7f00) >> 1);
    let x = (x & 0x0000_3fff_0000_3fff) | ((x & 0x3fff_0000_3fff_0000) >> 2);
    (x & 0x0000_0000_0fff_ffff) | ((x & 0x0fff_ffff_0000_0000) >> 4)
}

/// Decodes a varint64 from 10 available bytes: the first 8 are one
/// little-endian word, the first byte without a continuation bit is found with
/// `trailing_zeros`, and the groups are gathered with three mask-and-shift
/// steps. Only varints of 9 or 10 bytes look at the last two bytes. In
/// `benches/varint.rs` this decoded 10-byte varints about twice as fast as
/// the unrolled byte-at-a-time scheme of protobuf's `ReadVarint64FromArray`
/// (prost's `decode_varint_slice`), and matched it on short ones.
#[inline]
fn decode_u64_word(bytes: &[u8; MAX_VARINT64_LEN]) -> Result<(u64, usize), CodecError> {
    let [b0, b1, b2, b3, b4, b5, b6, b7, b8, b9] = *bytes;
    let word = u64::from_le_bytes([b0, b1, b2, b3, b4, b5, b6, b7]);
    let stops = !word & 0x8080_8080_8080_8080;
    if stops != 0 {
        let len = (stops.trailing_zeros() / 8 + 1) as usize;
        // Keep the bytes up to and including the first without a continuation bit.
        let keep = stops ^ (stops - 1);
        return Ok((compact_groups(word & keep), len));
    }
    let value = compact_groups(word);
    if b8 < 0x80 {
        return Ok((value | (u64::from(b8) << 56), 9));
    }
    if b9 > 0x01 {
        return Err(overflow64());
    }
    Ok((value | (u64::from(b8 & 0x7f) << 56) | (u64::from(b9) << 63), 10))
}

#[cold]
fn overflow64() -> CodecError {
    CodecError::new("varint64", (MAX_VARINT64_LEN - 1) as u64, CodecErrorKind::VarintOverflow { bits: 64 })
}

#[cold]
fn overflow32() -> CodecError {
    CodecError::new("varint32", (MAX_VARINT32_LEN - 1) as u64, CodecErrorKind::VarintOverflow { bits: 32 })
}

/// Byte-by-byte decoding for inputs shorter than 10 bytes (the end of a buffer).
#[cold]
#[inline(never)]
fn decode_u64_slow(input: &[u8]) -> Result<(u64, usize), CodecError> {
    let mut value = 0u64;
    for (i, &byte) in input.iter().take(MAX_VARINT64_LEN).enumerate() {
        if i == MAX_VARINT64_LEN - 1 && byte > 1 {
            return Err(overflow64());
        }
        value |= u64::from(byte & 0x7f) << (7 * i);
        if byte < 0x80 {
            return Ok((value, i + 1));
        }
    }
    Err(CodecError::truncated("varint64", input.len() as u64, 1))
}

/// Decodes a varint32 from the front of `input`: the value and the bytes consumed.
///
/// Errors if the input ends inside the varint, or if it is longer than 5
/// bytes or overflows 32 bits (a 5th byte above `0x0f`).
#[inline]
pub fn decode_u32(input: &[u8]) -> Result<(u32, usize), CodecError> {
    if let Some(&b) = input.first()
        && b < 0x80
    {
        return Ok((u32::from(b), 1));
    }
    match input.first_chunk::<MAX_VARINT32_LEN>() {
        Some(bytes) => decode_u32_array(bytes),
        None => decode_u32_slow(input),
    }
}

/// Decodes a varint32 from 5 available bytes, unrolled.
#[inline]
fn decode_u32_array(bytes: &[u8; MAX_VARINT32_LEN]) -> Result<(u32, usize), CodecError> {
    let mut b = bytes[0];
    let mut value = u32::from(b);
    if b < 0x80 {
        return Ok((value, 1));
    }
    value -= 0x80;
    b = bytes[1];
    value += u32::from(b) << 7;
    if b < 0x80 {
        return Ok((value, 2));
    }
    value -= 0x80 << 7;
    b = bytes[2];
    value += u32::from(b) << 14;
    if b < 0x80 {
        return Ok((value, 3));
    }
    value -= 0x80 << 14;
    b = bytes[3];
    value += u32::from(b) << 21;
    if b < 0x80 {
        return Ok((value, 4));
    }
    value -= 0x80 << 21;
    b = bytes[4];
    // The 5th byte supplies bits 28 to 31 only: it must be at most 0x0f.
    if b > 0x0f {
        return Err(overflow32());
    }
    Ok((value + (u32::from(b) << 28), 5))
}

/// Byte-by-byte decoding for inputs shorter than 5 bytes.
#[cold]
#[inline(never)]
fn decode_u32_slow(input: &[u8]) -> Result<(u32, usize), CodecError> {
    let mut value = 0u32;
    for (i, &byte) in input.iter().take(MAX_VARINT32_LEN).enumerate() {
        if i == MAX_VARINT32_LEN - 1 && byte > 0x0f {
            return Err(overflow32());
        }
        value |= u32::from(byte & 0x7f) << (7 * i);
        if byte < 0x80 {
            return Ok((value, i + 1));
        }
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
