//! Property tests of `varint`: round trips, lengths, canonical decoding, and
//! agreement with a plain byte-at-a-time reference decoder written from the
//! spec (`spec/delta-binary-packed.md`, section 1).

use proptest::prelude::*;
use riegeli_codec::{
    CodecErrorKind,
    varint::{self, MAX_VARINT32_LEN, MAX_VARINT64_LEN},
};

/// The spec's decoding loop, with its last-byte rule: `Some((value, len))`,
/// or `None` for truncated, too long or overflowing input.
fn reference_decode(input: &[u8], max_len: usize, last_byte_max: u8) -> Option<(u64, usize)> {
    let mut value = 0u64;
    for i in 0..max_len {
        let byte = *input.get(i)?;
        if i == max_len - 1 && byte > last_byte_max {
            return None;
        }
        value |= u64::from(byte & 0x7f) << (7 * i);
        if byte & 0x80 == 0 {
            return Some((value, i + 1));
        }
    }
    None
}

/// `x` encoded with `extra` redundant `0x80` groups before a final `0x00`.
fn padded(x: u64, extra: usize) -> Vec<u8> {
    let mut bytes = Vec::new();
    varint::encode_u64(x, &mut bytes);
    if extra > 0 {
        *bytes.last_mut().unwrap() |= 0x80;
        bytes.extend(std::iter::repeat_n(0x80, extra - 1));
        bytes.push(0x00);
    }
    bytes
}

/// Values of every bit length, not just the (mostly 64-bit) uniform ones.
fn any_bit_length_u64() -> impl Strategy<Value = u64> {
    (0u32..=64, any::<u64>()).prop_map(|(bits, x)| if bits == 0 { 0 } else { x >> (64 - bits) })
}

proptest! {
    #[test]
    fn u64_round_trip(x in any_bit_length_u64(), tail in proptest::collection::vec(any::<u8>(), 0..12)) {
        let mut bytes = Vec::new();
        varint::encode_u64(x, &mut bytes);
        let len = bytes.len();
        prop_assert_eq!(len, varint::encoded_len_u64(x));
        let mut array = [0u8; MAX_VARINT64_LEN];
        prop_assert_eq!(varint::encode_u64_to_array(x, &mut array), len);
        prop_assert_eq!(&array[..len], &bytes[..]);
        // Exactly the varint (slow path) and with bytes after it (fast path).
        prop_assert_eq!(varint::decode_u64(&bytes), Ok((x, len)));
        prop_assert_eq!(varint::decode_u64_canonical(&bytes), Ok((x, len)));
        bytes.extend_from_slice(&tail);
        prop_assert_eq!(varint::decode_u64(&bytes), Ok((x, len)));
        prop_assert_eq!(varint::decode_u64_canonical(&bytes), Ok((x, len)));
    }

    #[test]
    fn u32_round_trip(x: u32, tail in proptest::collection::vec(any::<u8>(), 0..6)) {
        let mut bytes = Vec::new();
        varint::encode_u32(x, &mut bytes);
        let len = bytes.len();
        prop_assert_eq!(len, varint::encoded_len_u32(x));
        prop_assert_eq!(varint::decode_u32(&bytes), Ok((x, len)));
        prop_assert_eq!(varint::decode_u32_canonical(&bytes), Ok((x, len)));
        prop_assert_eq!(varint::decode_u64(&bytes), Ok((u64::from(x), len)));
        bytes.extend_from_slice(&tail);
        prop_assert_eq!(varint::decode_u32(&bytes), Ok((x, len)));
    }

    #[test]
    fn canonical_rejects_padded(x in any_bit_length_u64(), extra in 1usize..10, tail in proptest::collection::vec(any::<u8>(), 0..12)) {
        let mut bytes = padded(x, extra);
        let len = bytes.len();
        bytes.extend_from_slice(&tail);
        if len <= MAX_VARINT64_LEN {
            // Lenient decoding accepts redundant groups up to 10 bytes...
            prop_assert_eq!(varint::decode_u64(&bytes), Ok((x, len)));
            // ...canonical decoding does not.
            let err = varint::decode_u64_canonical(&bytes).unwrap_err();
            prop_assert_eq!(err.kind(), &CodecErrorKind::NonCanonicalVarint);
        } else {
            prop_assert!(varint::decode_u64(&bytes).is_err());
            prop_assert!(varint::decode_u64_canonical(&bytes).is_err());
        }
    }

    #[test]
    fn canonical_rejects_padded_u32(x: u32, extra in 1usize..5) {
        let bytes = padded(u64::from(x), extra);
        if bytes.len() <= MAX_VARINT32_LEN {
            prop_assert_eq!(varint::decode_u32(&bytes), Ok((x, bytes.len())));
            prop_assert!(varint::decode_u32_canonical(&bytes).is_err());
        } else {
            prop_assert!(varint::decode_u32(&bytes).is_err());
        }
    }

    #[test]
    fn agrees_with_reference(bytes in proptest::collection::vec(any::<u8>(), 0..14), high in 0u8..4) {
        // Bias towards long varints: continuation bits on most bytes.
        let bytes: Vec<u8> = bytes.iter().enumerate()
            .map(|(i, &b)| if i < usize::from(high) * 3 { b | 0x80 } else { b })
            .collect();
        let ours = varint::decode_u64(&bytes).ok();
        prop_assert_eq!(ours, reference_decode(&bytes, MAX_VARINT64_LEN, 0x01));
        let ours32 = varint::decode_u32(&bytes).ok().map(|(v, n)| (u64::from(v), n));
        prop_assert_eq!(ours32, reference_decode(&bytes, MAX_VARINT32_LEN, 0x0f));
    }
}

#[test]
fn last_byte_rule_on_both_paths() {
    // Section 1: the 10th byte of a varint64 must be 00 or 01; of a varint32, the 5th at most 0f.
    for last in 0u8..=0xff {
        let mut bytes = vec![0xff; 9];
        bytes.push(last);
        let expected = if last <= 1 { Some((u64::MAX >> (1 - last), 10)) } else { None };
        assert_eq!(varint::decode_u64(&bytes).ok(), expected, "10th byte {last:#x}, exact");
        bytes.extend_from_slice(&[0; 8]);
        assert_eq!(varint::decode_u64(&bytes).ok(), expected, "10th byte {last:#x}, with tail");

        let mut bytes = vec![0xff; 4];
        bytes.push(last);
        let expected = if last <= 0x0f { Some(((u32::from(last) << 28) | 0x0fff_ffff, 5)) } else { None };
        assert_eq!(varint::decode_u32(&bytes).ok(), expected, "5th byte {last:#x}, exact");
        bytes.extend_from_slice(&[0; 8]);
        assert_eq!(varint::decode_u32(&bytes).ok(), expected, "5th byte {last:#x}, with tail");
    }
}

#[test]
fn errors_name_kind_and_offset() {
    let err = varint::decode_u64(&[0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x02, 0x00]).unwrap_err();
    assert_eq!(err.kind(), &CodecErrorKind::VarintOverflow { bits: 64 });
    assert_eq!(err.offset(), 9);
    let err = varint::decode_u64(&[0x80; 11]).unwrap_err();
    assert_eq!(err.kind(), &CodecErrorKind::VarintOverflow { bits: 64 });
    let err = varint::decode_u64(&[0x80, 0x80, 0x80]).unwrap_err();
    assert_eq!(err.kind(), &CodecErrorKind::Truncated { needed: 1 });
    assert_eq!(err.offset(), 3);
    assert_eq!(err.to_string(), "truncated: needed 1 more bytes at offset 3 of varint64");
}
