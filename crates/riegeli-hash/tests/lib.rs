//! Known-answer and property tests of the Riegeli HighwayHash.

use proptest::prelude::*;
use riegeli_hash::{Hasher, hash};

/// The fixed first 64 bytes of every Riegeli/records file, from the format specification.
const FILE_START: [u8; 64] = [
    0x83, 0xaf, 0x70, 0xd1, 0x0d, 0x88, 0x4a, 0x3f, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x40, 0x00, 0x00,
    0x00, 0x00, 0x00, 0x00, 0x00, 0x91, 0xba, 0xc2, 0x3c, 0x92, 0x87, 0xe1, 0xa9, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
    0x00, 0x00, 0xe1, 0x9f, 0x13, 0xc0, 0xe9, 0xb1, 0xc3, 0x72, 0x73, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
    0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
];

#[test]
fn empty_string() {
    assert_eq!(hash(b""), 0x72c3_b1e9_c013_9fe1);
    assert_eq!(Hasher::new().finish(), 0x72c3_b1e9_c013_9fe1);
}

#[test]
fn block_header_of_file_start() {
    // The block header hash covers previous_chunk and next_chunk (bytes 8..24).
    assert_eq!(hash(&FILE_START[8..24]), 0x3f4a_880d_d170_af83);
    assert_eq!(u64::from_le_bytes(FILE_START[0..8].try_into().unwrap()), 0x3f4a_880d_d170_af83);
}

#[test]
fn chunk_header_of_file_start() {
    // The chunk header hash covers data_size..decoded_data_size (bytes 32..64).
    assert_eq!(hash(&FILE_START[32..64]), 0xa9e1_8792_3cc2_ba91);
    assert_eq!(u64::from_le_bytes(FILE_START[24..32].try_into().unwrap()), 0xa9e1_8792_3cc2_ba91);
}

#[test]
fn key_matters() {
    // The unkeyed (all-zero key) HighwayHash of the empty string differs.
    use highway::{HighwayHash, HighwayHasher, Key};
    assert_ne!(HighwayHasher::new(Key([0; 4])).hash64(b""), hash(b""));
}

proptest! {
    #[test]
    fn streaming_matches_one_shot(data in proptest::collection::vec(any::<u8>(), 0..2000),
                                  cuts in proptest::collection::vec(any::<usize>(), 0..8)) {
        let mut cuts: Vec<usize> = cuts.into_iter().map(|c| c % (data.len() + 1)).collect();
        cuts.sort_unstable();
        let mut hasher = Hasher::new();
        let mut start = 0;
        for cut in cuts {
            hasher.update(&data[start..cut]);
            start = cut;
        }
        hasher.update(&data[start..]);
        prop_assert_eq!(hasher.finish(), hash(&data));
    }
}
