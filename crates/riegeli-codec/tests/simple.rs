//! Simple chunks: known answers, round trips, bad inputs, and interop with the
//! C++ writer.

use bytes::Bytes;
use proptest::prelude::*;
use riegeli_codec::{
    CodecError, CodecErrorKind, CompressionType, CompressorOptions, DecodeLimits, DecodedRecords, SimpleChunkDecoder,
    SimpleChunkEncoder,
};

fn options_of_every_codec() -> Vec<CompressorOptions> {
    let mut options = vec![CompressorOptions::uncompressed()];
    if cfg!(feature = "brotli") {
        options.push(CompressorOptions::brotli());
    }
    if cfg!(feature = "zstd") {
        options.push(CompressorOptions::zstd());
    }
    if cfg!(feature = "snappy") {
        options.push(CompressorOptions::snappy());
    }
    options
}

/// Encodes `records` into chunk data; returns it with `num_records` and `decoded_data_size`.
fn encode(options: CompressorOptions, records: &[&[u8]]) -> (Vec<u8>, u64, u64) {
    let mut encoder = SimpleChunkEncoder::new(options);
    for record in records {
        encoder.add_record(record);
    }
    let (n, size) = (encoder.num_records(), encoder.decoded_data_size());
    let mut data = Vec::new();
    encoder.encode(&mut data).unwrap();
    (data, n, size)
}

fn decode(data: &[u8], num_records: u64, decoded_data_size: u64) -> Result<DecodedRecords, CodecError> {
    SimpleChunkDecoder::new().decode(
        Bytes::copy_from_slice(data),
        num_records,
        decoded_data_size,
        &DecodeLimits::default(),
    )
}

fn collect(records: &DecodedRecords) -> Vec<Vec<u8>> {
    records.iter().map(|r| r.to_vec()).collect()
}

/// From array-record.md §9: the C++ writer's first chunk for records `hello`, ``.
const HELLO_EMPTY: [u8; 9] = [0x00, 0x02, 0x05, 0x00, b'h', b'e', b'l', b'l', b'o'];

#[test]
fn known_answer_uncompressed() {
    let (data, n, size) = encode(CompressorOptions::uncompressed(), &[b"hello", b""]);
    assert_eq!(data, HELLO_EMPTY);
    assert_eq!((n, size), (2, 5));
    let records = decode(&HELLO_EMPTY, 2, 5).unwrap();
    assert_eq!(collect(&records), [b"hello".to_vec(), Vec::new()]);
    // The C++ postscript chunk of that file (array-record.md §9): one 13-byte record.
    let record: [u8; 13] = [0x08, 0xa3, 0x01, 0x10, 0xde, 0xc0, 0xeb, 0xfe, 0x84, 0xce, 0xc3, 0xc9, 0x71];
    let mut postscript = vec![0x00, 0x03, 0x0d, 0x0d, 0x0d];
    for _ in 0..3 {
        postscript.extend_from_slice(&record);
    }
    assert_eq!(postscript.len(), 44);
    let records = decode(&postscript, 3, 39).unwrap();
    assert_eq!(collect(&records), vec![record.to_vec(); 3]);
}

#[test]
fn uncompressed_records_are_slices_of_the_input() {
    let data = Bytes::from_static(&HELLO_EMPTY);
    let records = SimpleChunkDecoder::new().decode(data.clone(), 2, 5, &DecodeLimits::default()).unwrap();
    let record = records.get(0).unwrap();
    assert_eq!(record.as_ptr(), data[4..].as_ptr(), "no copy");
}

#[test]
fn uncompressed_chunks_after_the_first_hand_their_records_over_without_copying() {
    let mut encoder = SimpleChunkEncoder::new(CompressorOptions::uncompressed());
    let mut buffer = Vec::new();
    let mut record_addresses = Vec::new();
    for chunk in 0..4 {
        encoder.add_record(b"hello");
        encoder.add_record(b"");
        let offset = encoder.encode_reusing(&mut buffer).unwrap();
        assert_eq!(&buffer[offset..], &HELLO_EMPTY, "chunk {chunk}");
        record_addresses.push((offset, buffer[offset..].as_ptr() as usize));
    }
    // The first chunk is copied (no room was kept yet); the others are the
    // encoder's buffers, handed over with room before the prefix.
    assert_eq!(record_addresses[0].0, 0);
    assert!(record_addresses[1..].iter().all(|&(offset, _)| offset > 0), "{record_addresses:?}");
    // Two buffers alternate between the encoder and the caller.
    assert_eq!(record_addresses[1].1, record_addresses[3].1);
}

#[test]
fn empty_chunk() {
    for options in options_of_every_codec() {
        let (data, n, size) = encode(options, &[]);
        assert_eq!((n, size), (0, 0));
        assert_eq!(data[0], options.compression_type.to_byte());
        let records = decode(&data, 0, 0).unwrap();
        assert!(records.is_empty());
    }
    assert_eq!(encode(CompressorOptions::uncompressed(), &[]).0, [0, 0]);
}

#[test]
fn round_trip_every_codec_with_reused_encoder_and_decoder() {
    let big = vec![7u8; 200_000];
    let chunks: [&[&[u8]]; 3] = [&[b"a", b"", b"bcd"], &[&big, b"x"], &[b"", b"", b""]];
    for options in options_of_every_codec() {
        let mut encoder = SimpleChunkEncoder::new(options);
        let mut decoder = SimpleChunkDecoder::new();
        for records in chunks {
            for record in records {
                encoder.add_record(record);
            }
            let (n, size) = (encoder.num_records(), encoder.decoded_data_size());
            assert_eq!(n, records.len() as u64);
            assert_eq!(size, records.iter().map(|r| r.len() as u64).sum::<u64>());
            let mut data = Vec::new();
            encoder.encode(&mut data).unwrap();
            assert!(encoder.is_empty());
            assert_eq!(encoder.decoded_data_size(), 0);
            assert_eq!(data[0], options.compression_type.to_byte());
            let decoded = decoder.decode(Bytes::from(data), n, size, &DecodeLimits::default()).unwrap();
            assert_eq!(collect(&decoded), records.iter().map(|r| r.to_vec()).collect::<Vec<_>>(), "{options:?}");
        }
    }
}

#[test]
fn the_buffers_of_dropped_records_are_decoded_into_again() {
    for options in options_of_every_codec().into_iter().filter(|o| o.compression_type != CompressionType::None) {
        let (data, n, size) = encode(options, &[&[1u8; 5000], &[2u8; 3000]]);
        let data = Bytes::from(data);
        let mut decoder = SimpleChunkDecoder::new();
        let first = decoder.decode(data.clone(), n, size, &DecodeLimits::default()).unwrap();
        let pointer = first.values().as_ptr();
        let ends = first.ends().as_ptr();
        // Dropped on another thread, the buffers still go back to the decoder.
        std::thread::spawn(move || drop(first)).join().unwrap();
        let second = decoder.decode(data.clone(), n, size, &DecodeLimits::default()).unwrap();
        assert_eq!(second.values().as_ptr(), pointer, "{options:?}");
        assert_eq!(second.ends().as_ptr(), ends, "{options:?}");
        assert_eq!(second.get_slice(1).unwrap(), &[2u8; 3000][..]);
        // A buffer still shared is not taken back.
        let kept = second.get(0).unwrap();
        drop(second);
        let third = decoder.decode(data, n, size, &DecodeLimits::default()).unwrap();
        assert_ne!(third.values().as_ptr(), pointer);
        assert_eq!(kept, vec![1u8; 5000]);
    }
}

fn assert_invalid(result: Result<DecodedRecords, CodecError>, offset: u64) -> CodecError {
    let e = result.unwrap_err();
    assert!(matches!(e.kind(), CodecErrorKind::Invalid { .. }), "{e}");
    assert_eq!(e.offset(), offset, "{e}");
    e
}

#[test]
fn header_fields_over_the_limits() {
    let limits = DecodeLimits { max_decoded_size: 4, max_num_records: 1 };
    let data = Bytes::from_static(&HELLO_EMPTY);
    let e = SimpleChunkDecoder::new().decode(data.clone(), 2, 5, &limits).unwrap_err();
    assert!(matches!(e.kind(), CodecErrorKind::LimitExceeded { requested: 2, max: 1, .. }), "{e}");
    let limits = DecodeLimits { max_decoded_size: 4, max_num_records: 2 };
    let e = SimpleChunkDecoder::new().decode(data, 2, 5, &limits).unwrap_err();
    assert!(matches!(e.kind(), CodecErrorKind::LimitExceeded { requested: 5, max: 4, .. }), "{e}");
    assert_eq!(DecodeLimits::default().max_decoded_size, 1 << 30);
    assert_eq!(DecodeLimits::default().max_num_records, 1 << 28);
}

#[test]
fn absurd_header_fields_fail_before_allocating() {
    // With no limits, the data itself bounds what is allocated: these would
    // abort the test if the decoder reserved memory for them first.
    let data = Bytes::from_static(&HELLO_EMPTY);
    let e = SimpleChunkDecoder::new().decode(data.clone(), u64::MAX >> 8, 5, &DecodeLimits::UNLIMITED).unwrap_err();
    assert!(matches!(e.kind(), CodecErrorKind::Invalid { .. }), "{e}");
    assert_eq!(e.offset(), 2, "at the sizes");
    let e = SimpleChunkDecoder::new().decode(data, 2, u64::MAX >> 1, &DecodeLimits::UNLIMITED).unwrap_err();
    assert!(!matches!(e.kind(), CodecErrorKind::LimitExceeded { limit: "max_decoded_size", .. }), "{e}");
    for options in options_of_every_codec().into_iter().filter(|o| o.compression_type != CompressionType::None) {
        let (data, _, _) = encode(options, &[b"hello", b""]);
        assert!(decode(&data, u64::MAX >> 8, 5).is_err());
        let e = SimpleChunkDecoder::new().decode(Bytes::from(data), 2, 1 << 40, &DecodeLimits::UNLIMITED).unwrap_err();
        assert!(matches!(e.kind(), CodecErrorKind::Invalid { .. }), "{e}");
    }
}

#[test]
fn truncated_chunks() {
    let e = decode(&[], 0, 0).unwrap_err();
    assert!(matches!(e.kind(), CodecErrorKind::Truncated { .. }), "{e}");
    // The sizes' length varint is cut.
    let e = decode(&[0x00, 0x80], 0, 0).unwrap_err();
    assert!(matches!(e.kind(), CodecErrorKind::Truncated { .. }), "{e}");
    assert_eq!(e.offset(), 1 + 1);
    // Sizes longer than the data.
    let e = decode(&[0x00, 0x09, 0x05], 1, 5).unwrap_err();
    assert!(matches!(e.kind(), CodecErrorKind::Truncated { needed: 8 }), "{e}");
    // Values shorter than decoded_data_size.
    let e = decode(&HELLO_EMPTY[..8], 2, 5).unwrap_err();
    assert!(matches!(e.kind(), CodecErrorKind::Truncated { needed: 1 }), "{e}");
    assert_eq!(e.what(), "simple chunk");
    // Every proper prefix of every codec's chunk fails.
    for options in options_of_every_codec() {
        let (data, n, size) = encode(options, &[b"hello", b"", b"world!!"]);
        for len in 0..data.len() {
            assert!(decode(&data[..len], n, size).is_err(), "{options:?} prefix {len}");
        }
    }
}

#[test]
fn sizes_not_adding_up() {
    // Sizes 5 + 0 = 5, but the header says 6 (and the values hold 5).
    let e = assert_invalid(decode(&HELLO_EMPTY, 2, 6), 4);
    assert!(e.to_string().contains("less than decoded_data_size"), "{e}");
    // Sizes 5 + 0 against a header saying 4.
    let e = assert_invalid(decode(&HELLO_EMPTY, 2, 4), 2);
    assert!(e.to_string().contains("more than decoded_data_size"), "{e}");
    for options in options_of_every_codec().into_iter().filter(|o| o.compression_type != CompressionType::None) {
        let (data, n, size) = encode(options, &[b"hello", b"", b"world!!"]);
        assert!(decode(&data, n, size + 1).is_err(), "{options:?}");
        assert!(decode(&data, n, size - 1).is_err(), "{options:?}");
        assert!(decode(&data, n, size).is_ok(), "{options:?}");
    }
}

#[test]
fn too_few_or_too_many_varints() {
    // Two varints where the header says three.
    let e = assert_invalid(decode(&HELLO_EMPTY, 3, 5), 2);
    assert!(e.to_string().contains("too short"), "{e}");
    // Three size bytes holding only two varints (the first takes two bytes).
    let data = [0x00, 0x03, 0x85, 0x00, 0x00, b'h', b'e', b'l', b'l', b'o'];
    let e = assert_invalid(decode(&data, 3, 5), 5);
    assert!(e.to_string().contains("fewer than num_records"), "{e}");
    assert!(decode(&data, 2, 5).is_ok(), "a redundant continuation byte is accepted, as in C++");
    // Two varints where the header says one.
    let e = assert_invalid(decode(&HELLO_EMPTY, 1, 5), 3);
    assert!(e.to_string().contains("more than num_records"), "{e}");
    // A varint cut at the end of the sizes.
    let data = [0x00, 0x02, 0x05, 0x80, b'h', b'e', b'l', b'l', b'o'];
    let e = decode(&data, 2, 5).unwrap_err();
    assert!(matches!(e.kind(), CodecErrorKind::Truncated { .. }), "{e}");
    for options in options_of_every_codec().into_iter().filter(|o| o.compression_type != CompressionType::None) {
        let (data, n, size) = encode(options, &[b"hello", b"", b"world!!"]);
        for wrong in [0, n - 1, n + 1, 10 * n + 1] {
            let e = decode(&data, wrong, size).unwrap_err();
            assert!(matches!(e.kind(), CodecErrorKind::Invalid { .. }), "{options:?} {wrong}: {e}");
        }
    }
}

#[test]
fn trailing_bytes() {
    let mut data = HELLO_EMPTY.to_vec();
    data.push(b'!');
    let e = assert_invalid(decode(&data, 2, 5), 9);
    assert!(e.to_string().contains("after"), "{e}");
    for options in options_of_every_codec().into_iter().filter(|o| o.compression_type != CompressionType::None) {
        let (mut data, n, size) = encode(options, &[b"hello", b"", b"world!!"]);
        data.push(0);
        assert!(decode(&data, n, size).is_err(), "{options:?}");
    }
}

#[test]
fn unknown_compression_byte() {
    let mut data = HELLO_EMPTY;
    data[0] = b'x';
    let e = assert_invalid(decode(&data, 2, 5), 0);
    assert_eq!(e.what(), "simple chunk");
}

#[test]
fn codec_without_its_feature_is_unsupported() {
    for (byte, on) in
        [(b'b', cfg!(feature = "brotli")), (b'z', cfg!(feature = "zstd")), (b's', cfg!(feature = "snappy"))]
    {
        if on {
            continue;
        }
        // Sizes: varint(1) then some stream; the codec is never reached.
        let data = [byte, 0x02, 0x01, 0x00, 0x05, 0x00];
        let e = decode(&data, 1, 5).unwrap_err();
        assert!(matches!(e.kind(), CodecErrorKind::Unsupported { .. }), "{e}");
        let mut encoder = SimpleChunkEncoder::new(match byte {
            b'b' => CompressorOptions::brotli(),
            b'z' => CompressorOptions::zstd(),
            _ => CompressorOptions::snappy(),
        });
        encoder.add_record(b"abc");
        let mut out = Vec::new();
        let e = encoder.encode(&mut out).unwrap_err();
        assert!(matches!(e.kind(), CodecErrorKind::Unsupported { .. }), "{e}");
        assert!(out.is_empty());
    }
}

#[test]
fn values_declared_size_must_match_the_header() {
    for options in options_of_every_codec().into_iter().filter(|o| o.compression_type != CompressionType::None) {
        let mut encoder = SimpleChunkEncoder::new(options);
        encoder.add_record(b"hello");
        let mut data = Vec::new();
        encoder.encode(&mut data).unwrap();
        // Locate the values block: type, varint(sizes len), sizes.
        let sizes_len = usize::from(data[1]);
        let values_at = 2 + sizes_len;
        assert_eq!(data[values_at], 5, "values declare 5 bytes");
        data[values_at] = 6;
        let e = assert_invalid(decode(&data, 1, 5), values_at as u64);
        assert!(e.to_string().contains("values"), "{e}");
    }
}

fn decode_prefix(
    decoder: &mut SimpleChunkDecoder,
    data: &[u8],
    num_records: u64,
    decoded_data_size: u64,
    wanted: u64,
) -> Result<DecodedRecords, CodecError> {
    let data = Bytes::copy_from_slice(data);
    decoder.decode_prefix(data, num_records, decoded_data_size, &DecodeLimits::default(), wanted)
}

/// Records of 0 to ~60 KB, compressible, so that compressed values span
/// several zstd blocks (128 KiB) and brotli meta-blocks.
fn varied_records() -> Vec<Vec<u8>> {
    (0..24u32)
        .map(|i| {
            let len = (i * 7919 % 61) as usize * 1000 + (i as usize % 3);
            (0..len).map(|j| b"abcdefgh"[(j * (i as usize + 1) / 7) % 8] ^ (j / 4096) as u8).collect()
        })
        .collect()
}

#[test]
fn prefixes_of_every_codec_are_the_first_records() {
    let records = varied_records();
    let refs: Vec<&[u8]> = records.iter().map(Vec::as_slice).collect();
    for options in options_of_every_codec() {
        let (data, n, size) = encode(options, &refs);
        // One decoder for every prefix: its contexts are reused and reset.
        let mut decoder = SimpleChunkDecoder::new();
        for wanted in (0..=n + 1).chain([u64::MAX]) {
            let prefix = decode_prefix(&mut decoder, &data, n, size, wanted).unwrap();
            let expected = &records[..wanted.min(n) as usize];
            assert_eq!(collect(&prefix), expected, "{options:?}, {wanted} records");
        }
    }
}

#[test]
fn a_prefix_is_not_decompressed_past_its_records() {
    let records = varied_records();
    let refs: Vec<&[u8]> = records.iter().map(Vec::as_slice).collect();
    // Zstd blocks are at most 128 KiB of output, so the first block does not
    // reach the damage. (A brotli meta-block can hold the whole chunk, with the
    // damage in its header's tables.)
    if cfg!(feature = "zstd") {
        let options = CompressorOptions::zstd();
        let (mut data, n, size) = encode(options, &refs);
        // Damage the last bytes of the values stream: the whole chunk fails, the first
        // records, which end long before, still decode.
        let len = data.len();
        for byte in &mut data[len - 40..len - 4] {
            *byte ^= 0x5a;
        }
        assert!(decode(&data, n, size).is_err(), "{options:?}: the damage is seen by a whole decode");
        let prefix = decode_prefix(&mut SimpleChunkDecoder::new(), &data, n, size, 3).unwrap();
        assert_eq!(collect(&prefix), &records[..3], "{options:?}");
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 48, ..ProptestConfig::default() })]

    #[test]
    fn prop_round_trip(records in prop::collection::vec(prop::collection::vec(any::<u8>(), 0..300), 0..40),
                       which in 0usize..4) {
        let options = options_of_every_codec();
        let options = options[which % options.len()];
        let refs: Vec<&[u8]> = records.iter().map(Vec::as_slice).collect();
        let (data, n, size) = encode(options, &refs);
        prop_assert_eq!(n, records.len() as u64);
        let decoded = decode(&data, n, size).unwrap();
        prop_assert_eq!(collect(&decoded), records);
    }

    /// `encode_reusing` over a run of chunks gives `encode`'s bytes, whether
    /// the prefix fits the room kept (later chunks) or not (the first, and
    /// chunks with many more records than before).
    #[test]
    fn prop_encode_reusing_matches_encode(chunks in prop::collection::vec(
                                              prop::collection::vec(prop::collection::vec(any::<u8>(), 0..200), 0..60), 1..6),
                                          which in 0usize..4) {
        let options = options_of_every_codec();
        let options = options[which % options.len()];
        let mut reusing = SimpleChunkEncoder::new(options);
        let mut buffer = b"stale bytes of an earlier chunk".to_vec();
        let mut zero_copy = 0;
        for records in &chunks {
            let refs: Vec<&[u8]> = records.iter().map(Vec::as_slice).collect();
            let (expected, n, size) = encode(options, &refs);
            for record in &refs {
                reusing.add_record(record);
            }
            prop_assert_eq!((reusing.num_records(), reusing.decoded_data_size()), (n, size));
            let offset = reusing.encode_reusing(&mut buffer).unwrap();
            zero_copy += usize::from(offset > 0);
            prop_assert_eq!(&buffer[offset..], &expected[..]);
            prop_assert!(reusing.is_empty());
        }
        if options.compression_type != CompressionType::None {
            prop_assert_eq!(zero_copy, 0);
        }
    }

    /// Every prefix of a valid chunk is its first records; a prefix of a
    /// damaged one is an error or records of the lengths asked for.
    #[test]
    fn prop_prefixes(records in prop::collection::vec(prop::collection::vec(any::<u8>(), 0..3000), 0..12),
                     which in 0usize..4, wanted in 0u64..14,
                     flip in prop::option::of((any::<prop::sample::Index>(), 1u8..))) {
        let options = options_of_every_codec();
        let options = options[which % options.len()];
        let refs: Vec<&[u8]> = records.iter().map(Vec::as_slice).collect();
        let (mut data, n, size) = encode(options, &refs);
        let mut decoder = SimpleChunkDecoder::new();
        match flip {
            None => {
                let prefix = decode_prefix(&mut decoder, &data, n, size, wanted).unwrap();
                prop_assert_eq!(collect(&prefix), &records[..wanted.min(n) as usize]);
            }
            Some((index, xor)) => {
                let i = index.index(data.len());
                data[i] ^= xor;
                if let Ok(prefix) = decode_prefix(&mut decoder, &data, n, size, wanted) {
                    prop_assert_eq!(prefix.len() as u64, wanted.min(n));
                }
            }
        }
    }

    #[test]
    fn prop_corrupt_chunks_never_panic(records in prop::collection::vec(prop::collection::vec(any::<u8>(), 0..100), 0..10),
                                       which in 0usize..4,
                                       flips in prop::collection::vec((any::<prop::sample::Index>(), any::<u8>()), 1..4),
                                       delta_n in -2i64..3, delta_size in -2i64..3) {
        let options = options_of_every_codec();
        let options = options[which % options.len()];
        let refs: Vec<&[u8]> = records.iter().map(Vec::as_slice).collect();
        let (mut data, n, size) = encode(options, &refs);
        for (index, xor) in flips {
            let i = index.index(data.len());
            data[i] ^= xor;
        }
        let n = n.saturating_add_signed(delta_n);
        let size = size.saturating_add_signed(delta_size);
        if let Ok(decoded) = decode(&data, n, size) {
            prop_assert_eq!(decoded.len() as u64, n);
            prop_assert_eq!(decoded.decoded_data_size() as u64, size);
        }
    }
}

/// Records for the interop test: varied sizes, some empty, some compressible.
fn interop_records() -> Vec<Vec<u8>> {
    let mut state = 0x2545_f491_4f6c_dd1d_u64;
    let mut next = move || {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        state
    };
    (0..237)
        .map(|i| {
            let len = match i % 7 {
                0 => 0,
                1 => (next() % 10) as usize,
                2 => 70_000 + (next() % 1000) as usize,
                _ => (next() % 3000) as usize,
            };
            (0..len).map(|j| if i % 2 == 0 { b"abcdefgh"[j % 8] } else { next() as u8 }).collect()
        })
        .collect()
}

/// Writes `records` with the C++ `ArrayRecordWriter` through the Python oracle.
fn write_with_cpp(python: &str, dir: &std::path::Path, options: &str, records: &[Vec<u8>]) -> Vec<u8> {
    let records_path = dir.join("records.bin");
    let mut framed = Vec::new();
    for record in records {
        framed.extend_from_slice(&u32::try_from(record.len()).unwrap().to_le_bytes());
        framed.extend_from_slice(record);
    }
    std::fs::write(&records_path, framed).unwrap();
    let file_path = dir.join("out.riegeli");
    let script = r#"
import struct, sys
from array_record.python import array_record_module as m
records_path, file_path, options = sys.argv[1:4]
data = open(records_path, "rb").read()
writer = m.ArrayRecordWriter(file_path, options)
i = 0
while i < len(data):
    (n,) = struct.unpack_from("<I", data, i)
    writer.write(data[i + 4:i + 4 + n])
    i += 4 + n
writer.close()
"#;
    let status = std::process::Command::new(python)
        .args(["-c", script])
        .arg(&records_path)
        .arg(&file_path)
        .arg(options)
        .status()
        .unwrap();
    assert!(status.success(), "the C++ writer failed for {options}");
    std::fs::read(file_path).unwrap()
}

#[test]
#[ignore = "needs the C++ oracle: cargo xtask interop"]
fn interop_cpp_simple_chunks_decode_exactly() {
    let Ok(python) = std::env::var("RIEGELI_ORACLE_PYTHON") else {
        // Run through `cargo xtask interop`, which sets the variable.
        return;
    };
    let dir = TempDir::new();
    let dir = dir.0.as_path();
    let records = interop_records();
    let mut codecs = vec!["uncompressed"];
    if cfg!(feature = "brotli") {
        codecs.extend(["brotli:6", "brotli:0,window_log:10", "brotli:5,window_log:30"]);
    }
    if cfg!(feature = "zstd") {
        codecs.extend(["zstd:3", "zstd:1,window_log:10", "zstd:19,window_log:27", "zstd:-5"]);
    }
    if cfg!(feature = "snappy") {
        codecs.push("snappy");
    }
    for codec in codecs {
        let options = format!("group_size:50,{codec}");
        let file = write_with_cpp(&python, dir, &options, &records);
        let mut decoder = SimpleChunkDecoder::new();
        let mut decoded = Vec::new();
        let mut simple_chunks = 0;
        let mut pos = 64;
        while (pos as usize) < file.len() {
            let chunk = riegeli_framing::parse_chunk(&file[pos as usize..], pos).unwrap();
            chunk.verify_data_hash().unwrap();
            let header = chunk.header();
            if header.chunk_type() == b'r' {
                let mut data = Vec::new();
                chunk.copy_data_into(&mut data);
                let is_data_chunk = decoded.len() < records.len();
                if is_data_chunk && codec != "uncompressed" {
                    assert_eq!(data[0], codec.as_bytes()[0], "{options}: compression byte");
                }
                let result = decoder
                    .decode(
                        Bytes::from(data.clone()),
                        header.num_records(),
                        header.decoded_data_size(),
                        &DecodeLimits::default(),
                    )
                    .unwrap_or_else(|e| panic!("{options}: chunk at {pos}: {e}"));
                if is_data_chunk {
                    decoded.extend(result.iter().map(|r| r.to_vec()));
                    simple_chunks += 1;
                    if codec == "uncompressed" {
                        // Our encoder writes the same bytes as C++.
                        let mut encoder = SimpleChunkEncoder::new(CompressorOptions::uncompressed());
                        for record in result.iter() {
                            encoder.add_record(&record);
                        }
                        let mut ours = Vec::new();
                        encoder.encode(&mut ours).unwrap();
                        assert_eq!(ours, data, "{options}: chunk at {pos}");
                    }
                }
            }
            pos = chunk.chunk_end();
        }
        assert_eq!(simple_chunks, records.len().div_ceil(50), "{options}");
        assert!(decoded == records, "{options}: records differ");
    }
}

/// A temporary directory, removed when dropped (also when a test fails).
struct TempDir(std::path::PathBuf);

impl TempDir {
    fn new() -> Self {
        let path = std::env::temp_dir().join(format!("riegeli-codec-interop-{}", std::process::id()));
        std::fs::create_dir_all(&path).unwrap();
        Self(path)
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

#[test]
fn a_single_record_encodes_to_the_bytes_of_add_record_and_encode() {
    let big: Vec<u8> = (0..300_000u32).map(|i| (i % 97) as u8).collect();
    for options in options_of_every_codec() {
        for record in [&b""[..], b"one record", &big] {
            let (want, _, _) = encode(options, &[record]);
            let mut encoder = SimpleChunkEncoder::new(options);
            // Records held are neither encoded nor disturbed.
            encoder.add_record(b"held");
            let mut got = b"before".to_vec();
            encoder.encode_single(record, &mut got).unwrap();
            assert!(got[..6] == *b"before" && got[6..] == want, "{options:?}, {} bytes", record.len());
            let mut rest = Vec::new();
            encoder.encode(&mut rest).unwrap();
            assert_eq!(rest, encode(options, &[b"held"]).0, "{options:?}");
        }
    }
}
