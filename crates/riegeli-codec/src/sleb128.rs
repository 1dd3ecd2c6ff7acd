//! Signed LEB128 (SLEB128), as in DWARF and WebAssembly.
//!
//! The two's-complement value is cut into 7-bit groups, least significant
//! first, with an arithmetic shift; bit 7 of each byte is the continuation bit.
//! Encoding stops once the remaining value is all sign bits and bit 6 of the
//! byte just produced equals the sign, so decoding sign-extends from that bit
//! (see `spec/delta-binary-packed.md`, section 2).
//!
//! This is not how Parquet or Riegeli store signed integers (both use
//! [ZigZag](crate::zigzag) followed by an unsigned [varint](crate::varint)).
//!
//! Decoding is lenient about redundant groups (`80 00` is 0, `ff 7f` is -1), as
//! [`varint`](crate::varint) is, but rejects anything longer than 10 (i64) or
//! 5 (i32) bytes, and a last byte whose unused bits are not a copy of the sign
//! bit: the 10th byte of an i64 must be `00` or `7f`, the 5th byte of an i32
//! must be `00`..=`07` or `78`..=`7f`.

use crate::error::{CodecError, CodecErrorKind};

/// The longest SLEB128 encoding of an `i64`: 10 bytes.
pub const MAX_SLEB128_64_LEN: usize = 10;
/// The longest SLEB128 encoding of an `i32`: 5 bytes.
pub const MAX_SLEB128_32_LEN: usize = 5;

/// The number of bytes [`encode_i64`] writes for `value`.
#[inline]
pub const fn encoded_len_i64(value: i64) -> usize {
    // Significant bits plus one sign bit, in groups of 7; 0 and -1 take one byte.
    let magnitude = if value < 0 { !value } else { value };
    let bits = 65 - magnitude.leading_zeros() as usize;
    bits.div_ceil(7)
}

/// The number of bytes [`encode_i32`] writes for `value`.
#[inline]
pub const fn encoded_len_i32(value: i32) -> usize {
    encoded_len_i64(value as i64)
}

/// Appends the SLEB128 encoding of `value` to `out`.
pub fn encode_i64(mut value: i64, out: &mut Vec<u8>) {
    loop {
        let byte = value.to_le_bytes()[0] & 0x7f;
        value >>= 7;
        let sign_bit_set = byte & 0x40 != 0;
        if (value == 0 && !sign_bit_set) || (value == -1 && sign_bit_set) {
            out.push(byte);
            return;
        }
        out.push(byte | 0x80);
    }
}

/// Appends the SLEB128 encoding of `value` to `out`.
pub fn encode_i32(value: i32, out: &mut Vec<u8>) {
    encode_i64(i64::from(value), out);
}

/// Decodes an SLEB128 `i64` from the front of `input`: the value and the
/// bytes consumed.
///
/// Errors if the input ends inside the number, if it is longer than 10 bytes,
/// or if the 10th byte is not `00` or `7f` (bits beyond bit 63 that are not a
/// sign extension).
pub fn decode_i64(input: &[u8]) -> Result<(i64, usize), CodecError> {
    let mut result = 0u64;
    for i in 0..MAX_SLEB128_64_LEN {
        let Some(&byte) = input.get(i) else {
            return Err(CodecError::truncated("sleb128", i as u64, 1));
        };
        if i == MAX_SLEB128_64_LEN - 1 {
            // Bit 0 is bit 63 (the sign); bits 1 to 6 must copy it; no continuation.
            if byte != 0x00 && byte != 0x7f {
                return Err(CodecError::new("sleb128", i as u64, CodecErrorKind::VarintOverflow { bits: 64 }));
            }
            result |= u64::from(byte & 1) << 63;
            return Ok((result as i64, MAX_SLEB128_64_LEN));
        }
        result |= u64::from(byte & 0x7f) << (7 * i);
        if byte < 0x80 {
            let shift = 7 * (i + 1);
            if byte & 0x40 != 0 {
                result |= u64::MAX << shift;
            }
            return Ok((result as i64, i + 1));
        }
    }
    // The loop returns on its last iteration.
    Err(CodecError::new("sleb128", 9, CodecErrorKind::VarintOverflow { bits: 64 }))
}

/// Decodes an SLEB128 `i32` from the front of `input`: the value and the
/// bytes consumed.
///
/// Errors if the input ends inside the number, if it is longer than 5 bytes,
/// or if the 5th byte is not in `00..=07` or `78..=7f` (bits 4 to 6 must copy
/// bit 3, which is bit 31 of the value).
pub fn decode_i32(input: &[u8]) -> Result<(i32, usize), CodecError> {
    let mut result = 0u32;
    for i in 0..MAX_SLEB128_32_LEN {
        let Some(&byte) = input.get(i) else {
            return Err(CodecError::truncated("sleb128", i as u64, 1));
        };
        if i == MAX_SLEB128_32_LEN - 1 {
            let high = byte & 0xf8;
            if high != 0x00 && high != 0x78 {
                return Err(CodecError::new("sleb128", i as u64, CodecErrorKind::VarintOverflow { bits: 32 }));
            }
            result |= u32::from(byte & 0x0f) << 28;
            return Ok((result as i32, MAX_SLEB128_32_LEN));
        }
        result |= u32::from(byte & 0x7f) << (7 * i);
        if byte < 0x80 {
            let shift = 7 * (i + 1);
            if byte & 0x40 != 0 {
                result |= u32::MAX << shift;
            }
            return Ok((result as i32, i + 1));
        }
    }
    Err(CodecError::new("sleb128", 4, CodecErrorKind::VarintOverflow { bits: 32 }))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn check64(value: i64, bytes: &[u8]) {
        let mut out = Vec::new();
        encode_i64(value, &mut out);
        assert_eq!(out, bytes, "encode {value}");
        assert_eq!(encoded_len_i64(value), bytes.len(), "len {value}");
        assert_eq!(decode_i64(bytes), Ok((value, bytes.len())), "decode {value}");
    }

    fn check32(value: i32, bytes: &[u8]) {
        let mut out = Vec::new();
        encode_i32(value, &mut out);
        assert_eq!(out, bytes, "encode {value}");
        assert_eq!(encoded_len_i32(value), bytes.len(), "len {value}");
        assert_eq!(decode_i32(bytes), Ok((value, bytes.len())), "decode {value}");
    }

    #[test]
    fn known_answers() {
        // Wikipedia "LEB128" and the DWARF 5 standard (figure C.2), and spec section 2.
        check64(-123456, &[0xc0, 0xbb, 0x78]);
        check64(2, &[0x02]);
        check64(-2, &[0x7e]);
        check64(127, &[0xff, 0x00]);
        check64(-127, &[0x81, 0x7f]);
        check64(128, &[0x80, 0x01]);
        check64(-128, &[0x80, 0x7f]);
        check64(129, &[0x81, 0x01]);
        check64(-129, &[0xff, 0x7e]);
        check64(0, &[0x00]);
        check64(1, &[0x01]);
        check64(-1, &[0x7f]);
        check64(63, &[0x3f]);
        check64(64, &[0xc0, 0x00]);
        check64(-64, &[0x40]);
        check64(-65, &[0xbf, 0x7f]);
        check64(i64::MAX, &[0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x00]);
        check64(i64::MIN, &[0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x7f]);
        check64(i64::from(i32::MAX), &[0xff, 0xff, 0xff, 0xff, 0x07]);
        check64(i64::from(i32::MIN), &[0x80, 0x80, 0x80, 0x80, 0x78]);
    }

    #[test]
    fn known_answers_32() {
        check32(-123456, &[0xc0, 0xbb, 0x78]);
        check32(0, &[0x00]);
        check32(-1, &[0x7f]);
        check32(64, &[0xc0, 0x00]);
        check32(-65, &[0xbf, 0x7f]);
        check32(i32::MAX, &[0xff, 0xff, 0xff, 0xff, 0x07]);
        check32(i32::MIN, &[0x80, 0x80, 0x80, 0x80, 0x78]);
    }

    #[test]
    fn overlong_is_accepted_within_the_maximum_length() {
        assert_eq!(decode_i64(&[0x80, 0x00]), Ok((0, 2)));
        assert_eq!(decode_i64(&[0xff, 0x7f]), Ok((-1, 2)));
        assert_eq!(decode_i32(&[0xff, 0xff, 0xff, 0xff, 0x7f]), Ok((-1, 5)));
        assert_eq!(decode_i64(&[0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x00]), Ok((0, 10)));
    }

    #[test]
    fn rejects_overflow_and_too_long() {
        let mut bad = [0x80u8; 10];
        for last in [0x01, 0x02, 0x3f, 0x40, 0x7e, 0x80, 0xff] {
            bad[9] = last;
            let err = decode_i64(&bad).unwrap_err();
            assert_eq!(err.kind(), &CodecErrorKind::VarintOverflow { bits: 64 }, "10th byte {last:#x}");
            assert_eq!(err.offset(), 9);
        }
        assert!(decode_i64(&[0x80; 11]).is_err());
        for last in [0x08, 0x10, 0x40, 0x77, 0x80, 0x8f] {
            let bytes = [0xff, 0xff, 0xff, 0xff, last];
            let err = decode_i32(&bytes).unwrap_err();
            assert_eq!(err.kind(), &CodecErrorKind::VarintOverflow { bits: 32 }, "5th byte {last:#x}");
        }
        // Every legal 5th byte decodes (sign copies in bits 4 to 6).
        for last in (0x00..=0x07).chain(0x78..=0x7f) {
            assert!(decode_i32(&[0x80, 0x80, 0x80, 0x80, last]).is_ok(), "5th byte {last:#x}");
        }
    }

    #[test]
    fn rejects_truncation() {
        assert!(matches!(decode_i64(&[]).unwrap_err().kind(), CodecErrorKind::Truncated { .. }));
        assert!(matches!(decode_i64(&[0xc0, 0xbb]).unwrap_err().kind(), CodecErrorKind::Truncated { .. }));
        assert!(matches!(decode_i32(&[0x80, 0x80, 0x80, 0x80]).unwrap_err().kind(), CodecErrorKind::Truncated { .. }));
    }

    proptest::proptest! {
        #[test]
        fn round_trip_64(value: i64, tail: Vec<u8>) {
            let mut bytes = Vec::new();
            encode_i64(value, &mut bytes);
            let len = bytes.len();
            proptest::prop_assert_eq!(len, encoded_len_i64(value));
            bytes.extend_from_slice(&tail);
            proptest::prop_assert_eq!(decode_i64(&bytes), Ok((value, len)));
        }

        #[test]
        fn round_trip_32(value: i32) {
            let mut bytes = Vec::new();
            encode_i32(value, &mut bytes);
            proptest::prop_assert_eq!(bytes.len(), encoded_len_i32(value));
            proptest::prop_assert_eq!(decode_i32(&bytes), Ok((value, bytes.len())));
            proptest::prop_assert_eq!(decode_i64(&bytes), Ok((i64::from(value), bytes.len())));
        }

        #[test]
        fn decode_stays_in_bounds(bytes: Vec<u8>) {
            if let Ok((value, len)) = decode_i64(&bytes) {
                proptest::prop_assert!(len <= bytes.len().min(MAX_SLEB128_64_LEN));
                proptest::prop_assert!(encoded_len_i64(value) <= len);
            }
            if let Ok((value, len)) = decode_i32(&bytes) {
                proptest::prop_assert!(len <= bytes.len().min(MAX_SLEB128_32_LEN));
                proptest::prop_assert!(encoded_len_i32(value) <= len);
            }
        }
    }
}
