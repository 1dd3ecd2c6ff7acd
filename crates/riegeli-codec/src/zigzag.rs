//! ZigZag: a bijection from signed to unsigned integers that gives values of
//! small magnitude small codes (0 → 0, -1 → 1, 1 → 2, -2 → 3, …).
//!
//! Protobuf's `sint32`/`sint64`, Riegeli's signed varints and Parquet's
//! `DELTA_BINARY_PACKED` all store a signed integer as ULEB128 of its ZigZag
//! code (see `spec/delta-binary-packed.md`, section 3). The extremes map to the
//! extremes: `i64::MIN` ↔ `u64::MAX` and `i64::MAX` ↔ `u64::MAX - 1`.
//!
//! All functions are total, `const`, and never overflow: the shifts are done
//! in the unsigned domain.

/// The ZigZag code of `n`: `(n << 1) ^ (n >> 31)` with an arithmetic right shift.
#[inline]
pub const fn encode_i32(n: i32) -> u32 {
    ((n as u32) << 1) ^ ((n >> 31) as u32)
}

/// The ZigZag code of `n`: `(n << 1) ^ (n >> 63)` with an arithmetic right shift.
#[inline]
pub const fn encode_i64(n: i64) -> u64 {
    ((n as u64) << 1) ^ ((n >> 63) as u64)
}

/// The signed integer whose ZigZag code is `u`: `(u >> 1) ^ -(u & 1)`.
#[inline]
pub const fn decode_i32(u: u32) -> i32 {
    ((u >> 1) ^ (u & 1).wrapping_neg()) as i32
}

/// The signed integer whose ZigZag code is `u`: `(u >> 1) ^ -(u & 1)`.
#[inline]
pub const fn decode_i64(u: u64) -> i64 {
    ((u >> 1) ^ (u & 1).wrapping_neg()) as i64
}

#[cfg(test)]
mod tests {
    use super::*;

    // The table of spec section 3 (and protobuf's encoding guide).
    const TABLE64: [(i64, u64); 10] = [
        (0, 0),
        (-1, 1),
        (1, 2),
        (-2, 3),
        (2, 4),
        (2147483647, 4294967294),
        (-2147483648, 4294967295),
        (i64::MAX, 0xFFFF_FFFF_FFFF_FFFE),
        (i64::MIN, u64::MAX),
        (-64, 127),
    ];

    #[test]
    fn known_values_64() {
        for (n, z) in TABLE64 {
            assert_eq!(encode_i64(n), z, "encode {n}");
            assert_eq!(decode_i64(z), n, "decode {z}");
        }
    }

    #[test]
    fn known_values_32() {
        let table: [(i32, u32); 8] =
            [(0, 0), (-1, 1), (1, 2), (-2, 3), (i32::MAX, 0xFFFF_FFFE), (i32::MIN, 0xFFFF_FFFF), (63, 126), (-64, 127)];
        for (n, z) in table {
            assert_eq!(encode_i32(n), z, "encode {n}");
            assert_eq!(decode_i32(z), n, "decode {z}");
        }
    }

    #[test]
    fn usable_in_const_context() {
        const Z: u64 = encode_i64(i64::MIN);
        const N: i32 = decode_i32(u32::MAX);
        assert_eq!(Z, u64::MAX);
        assert_eq!(N, i32::MIN);
    }

    proptest::proptest! {
        #[test]
        fn round_trip_64(n: i64) {
            proptest::prop_assert_eq!(decode_i64(encode_i64(n)), n);
        }

        #[test]
        fn round_trip_32(n: i32) {
            proptest::prop_assert_eq!(decode_i32(encode_i32(n)), n);
            // In the i32 range both widths give the same code (spec section 3).
            proptest::prop_assert_eq!(encode_i64(i64::from(n)), u64::from(encode_i32(n)));
        }

        #[test]
        fn small_magnitude_small_code(n in -1000i64..1000) {
            // |n| maps to 2|n| - (n < 0): an independent formula.
            let expected = if n >= 0 { 2 * n.unsigned_abs() } else { 2 * n.unsigned_abs() - 1 };
            proptest::prop_assert_eq!(encode_i64(n), expected);
        }
    }
}
