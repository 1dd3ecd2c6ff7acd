//! The position formulas and chunk framing compared with the naive model.

use proptest::prelude::*;
use riegeli_framing as fr;

use crate::naive;

/// Positions over the whole `u64` range with the interesting edges weighted in.
fn position() -> impl Strategy<Value = u64> {
    prop_oneof![
        prop::sample::select(vec![0u64, 1, 23, 24, 25, 26, 64, 65511, 65512, 65535, 65536, 65537, 65560, 65561]),
        (0u64..1 << 40),
        any::<u64>(),
        (0u64..1 << 20).prop_map(|d| u64::MAX - d),
        (0u64..1 << 30, 0u64..50).prop_map(|(block, off)| (block << 16).wrapping_sub(25).wrapping_add(off)),
    ]
}

/// Sizes small enough for the naive walk, with edges.
fn size() -> impl Strategy<Value = u64> {
    prop_oneof![
        prop::sample::select(vec![0u64, 1, 24, 25, 40, 65511, 65512, 65513, 65535, 65536, 131_024]),
        0u64..300_000,
        0u64..1 << 31,
    ]
}

fn possible_boundary() -> impl Strategy<Value = u64> {
    position().prop_map(|p| {
        // Move to the next possible boundary, staying in range.
        let mut p = p;
        while !naive::is_possible_chunk_boundary(p) {
            p = p.wrapping_add(1);
        }
        p
    })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2000))]

    #[test]
    fn remaining_in_block(pos in position()) {
        prop_assert_eq!(fr::remaining_in_block(pos), naive::remaining_in_block(pos));
        prop_assert_eq!(fr::is_possible_chunk_boundary(pos), naive::is_possible_chunk_boundary(pos));
    }

    #[test]
    fn add_with_overhead(pos in possible_boundary(), size in size()) {
        prop_assert_eq!(fr::add_with_overhead(pos, size).ok(), naive::add_with_overhead(pos, size));
    }

    #[test]
    fn add_with_overhead_never_wraps(pos in possible_boundary(), size in any::<u64>()) {
        if let Ok(end) = fr::add_with_overhead(pos, size) {
            let plain = pos.checked_add(size);
            prop_assert!(plain.is_some_and(|p| end >= p && (end - p) % 24 == 0));
        }
    }

    #[test]
    fn round_up(pos in position()) {
        prop_assert_eq!(fr::round_up_to_possible_chunk_boundary(pos).ok(), naive::round_up_to_possible_chunk_boundary(pos));
    }

    #[test]
    fn chunk_end(begin in possible_boundary(), data_size in size(), num_records in size()) {
        prop_assert_eq!(fr::chunk_end(begin, data_size, num_records).ok(), naive::chunk_end(begin, data_size, num_records));
    }

    #[test]
    fn distance_is_inverse_of_add(pos in possible_boundary(), size in size()) {
        if let Some(end) = naive::add_with_overhead(pos, size) {
            prop_assert_eq!(fr::distance_without_overhead(pos, end), Ok(size));
        }
    }

    #[test]
    fn distance(a in position(), len in size()) {
        let b = a.saturating_add(len);
        prop_assert_eq!(fr::distance_without_overhead(a, b).ok(), naive::distance_without_overhead(a, b));
        if len > 0 && b > a {
            prop_assert!(fr::distance_without_overhead(b, a).is_err());
        }
    }

    #[test]
    fn block_header_fields(chunk_begin in 0u64..1 << 40, a in 0u64..1 << 30, b in 1u64..1 << 30) {
        let block = chunk_begin + a;
        let end = block + b;
        prop_assert_eq!(fr::block_header_fields(block, chunk_begin, end), Ok((a, b)));
        prop_assert!(fr::block_header_fields(end, chunk_begin, end).is_err());
    }

    #[test]
    fn parsers_never_panic(bytes in prop::collection::vec(any::<u8>(), 0..200), pos in position()) {
        let _ = fr::BlockHeader::parse(&bytes, pos);
        let _ = fr::ChunkHeader::parse(&bytes, pos);
        let _ = fr::parse_chunk(&bytes, pos);
        let _ = fr::find_block_header(&bytes, pos);
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(200))]

    #[test]
    fn frame_then_parse(
        block in 0u64..4,
        offset in prop_oneof![0u64..100, 65400u64..65536],
        data in prop::collection::vec(any::<u8>(), 0..140_000),
        num_records in prop_oneof![0u64..10, 0u64..200_000],
    ) {
        let begin = block * 65536 + offset;
        prop_assume!(naive::is_possible_chunk_boundary(begin));
        let header = fr::ChunkHeader::for_data(b'r', &data, num_records, 5).unwrap();
        let mut out = Vec::new();
        let end = fr::frame_chunk(begin, &header, &data, &mut out).unwrap();
        prop_assert_eq!(Some(end), naive::chunk_end(begin, data.len() as u64, num_records));
        prop_assert_eq!(out.len() as u64, end - begin);
        // Every block header inside points at this chunk.
        let mut b = fr::next_block_boundary(begin).unwrap();
        while b < end {
            let (bh, _) = fr::BlockHeader::parse(&out[(b - begin) as usize..], b).unwrap();
            prop_assert_eq!(bh.chunk_begin(b), begin);
            prop_assert_eq!(bh.chunk_end(b), end);
            b += 65536;
        }
        let view = fr::parse_chunk(&out, begin).unwrap();
        prop_assert_eq!(view.header(), &header);
        let mut gathered = Vec::new();
        view.copy_data_into(&mut gathered);
        prop_assert_eq!(gathered, data);
        prop_assert!(view.verify_data_hash().is_ok());
    }
}
