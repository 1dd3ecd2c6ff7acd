//! Compressed blocks: round trips per codec, known answers, and every class of
//! bad input.

use proptest::prelude::*;
use riegeli_codec::{CodecErrorKind, CompressionType, Compressor, CompressorOptions, Decompressor};

/// The options of every codec compiled in, with small and large levels/windows.
fn all_options() -> Vec<CompressorOptions> {
    let mut options = vec![CompressorOptions::uncompressed()];
    if cfg!(feature = "brotli") {
        options.push(CompressorOptions::brotli());
        options.push(CompressorOptions::brotli().with_level(0).with_window_log(Some(10)));
        // Above 24: "large window brotli", which C++ Riegeli reads and writes.
        options.push(CompressorOptions::brotli().with_level(2).with_window_log(Some(30)));
    }
    if cfg!(feature = "zstd") {
        options.push(CompressorOptions::zstd());
        options.push(CompressorOptions::zstd().with_level(-5).with_window_log(Some(10)));
        options.push(CompressorOptions::zstd().with_level(19).with_window_log(Some(31)));
    }
    if cfg!(feature = "snappy") {
        options.push(CompressorOptions::snappy());
        options.push(CompressorOptions::snappy().with_level(2));
    }
    options
}

fn compress(options: CompressorOptions, data: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    Compressor::new(options).compress(data, &mut out).unwrap();
    out
}

fn decompress(compression_type: CompressionType, block: &[u8], max: u64) -> Result<Vec<u8>, riegeli_codec::CodecError> {
    let mut out = Vec::new();
    Decompressor::new().decompress(compression_type, block, max, &mut out).map(|()| out)
}

/// Some compressible text.
fn text(len: usize) -> Vec<u8> {
    b"the quick brown fox jumps over the lazy dog; ".iter().copied().cycle().take(len).collect()
}

#[test]
fn round_trip_every_codec_and_reuse() {
    let inputs = [Vec::new(), b"x".to_vec(), text(1000), text(300_000), (0..=255u8).cycle().take(70_000).collect()];
    for options in all_options() {
        let mut compressor = Compressor::new(options);
        let mut decompressor = Decompressor::new();
        // The same compressor and decompressor serve several blocks in a row.
        for data in &inputs {
            let mut block = vec![0xee];
            compressor.compress(data, &mut block).unwrap();
            assert_eq!(block[0], 0xee, "compress appends");
            let block = &block[1..];
            if options.compression_type == CompressionType::None {
                assert_eq!(block, &data[..]);
            } else {
                // The declared size prefix.
                let (declared, _) = riegeli_codec::varint::decode_u64(block).unwrap();
                assert_eq!(declared, data.len() as u64, "{options:?}");
            }
            let mut out = b"prefix".to_vec();
            decompressor.decompress(options.compression_type, block, data.len() as u64, &mut out).unwrap();
            assert_eq!(&out[..6], b"prefix");
            assert!(out[6..] == data[..], "{options:?} len {}", data.len());
        }
    }
}

#[test]
fn compression_shrinks_text() {
    for options in all_options().into_iter().filter(|o| o.compression_type != CompressionType::None) {
        let block = compress(options, &text(100_000));
        assert!(block.len() < 20_000, "{options:?}: {}", block.len());
    }
}

#[cfg(feature = "snappy")]
#[test]
fn snappy_known_answer() {
    // Riegeli prefix varint(5), then the raw snappy block: varint(5) length,
    // one literal tag ((5 - 1) << 2 = 0x10) and the bytes (snappy format_description.txt).
    let block = [0x05, 0x05, 0x10, b'h', b'e', b'l', b'l', b'o'];
    assert_eq!(decompress(CompressionType::Snappy, &block, 100).unwrap(), b"hello");
    assert_eq!(compress(CompressorOptions::snappy(), b"hello"), block);
    // Not the framing format: a stream identifier chunk is rejected.
    let framed = [0x05, 0xff, 0x06, 0x00, 0x00, b's', b'N', b'a', b'P', b'p', b'Y'];
    assert!(decompress(CompressionType::Snappy, &framed, 100).is_err());
}

#[cfg(feature = "zstd")]
#[test]
fn zstd_frames_without_content_size_and_with_checksum() {
    use std::io::Write;
    let data = text(200_000);
    // A streamed frame, as C++ writes for values: no content size, large window.
    let mut encoder = zstd::stream::write::Encoder::new(Vec::new(), 3).unwrap();
    encoder.include_contentsize(false).unwrap();
    encoder.include_checksum(true).unwrap();
    encoder.window_log(27).unwrap();
    encoder.write_all(&data).unwrap();
    let frame = encoder.finish().unwrap();
    // Frame header descriptor: no content size flag (bits 6-7 = 0), checksum bit 2 set.
    assert_eq!(frame[4] & 0xc4, 0x04);
    let mut block = Vec::new();
    riegeli_codec::varint::encode_u64(data.len() as u64, &mut block);
    block.extend_from_slice(&frame);
    assert_eq!(decompress(CompressionType::Zstd, &block, 1 << 20).unwrap(), data);

    // The declared size is what counts: one byte fewer or more is an error.
    for declared in [data.len() as u64 - 1, data.len() as u64 + 1] {
        let mut block = Vec::new();
        riegeli_codec::varint::encode_u64(declared, &mut block);
        block.extend_from_slice(&frame);
        let e = decompress(CompressionType::Zstd, &block, 1 << 20).unwrap_err();
        assert!(matches!(e.kind(), CodecErrorKind::Invalid { .. }), "{declared}: {e}");
    }
    // Two frames back to back are not one block.
    let mut two = block.clone();
    two.extend_from_slice(&frame);
    let e = decompress(CompressionType::Zstd, &two, 1 << 20).unwrap_err();
    assert!(matches!(e.kind(), CodecErrorKind::Invalid { .. }), "{e}");
}

#[cfg(feature = "zstd")]
#[test]
fn zstd_our_frames_carry_content_size_and_no_checksum() {
    let block = compress(CompressorOptions::zstd(), &text(5000));
    // varint(5000) takes 2 bytes, then the magic number 0xFD2FB528.
    assert_eq!(&block[2..6], &[0x28, 0xb5, 0x2f, 0xfd]);
    let descriptor = block[6];
    assert_ne!(descriptor & 0xc0, 0, "content size present (or single segment)");
    assert_eq!(descriptor & 0x04, 0, "no checksum");
}

/// A block of `options` for `data` whose declared size is replaced by `declared`.
fn with_declared(options: CompressorOptions, data: &[u8], declared: u64) -> Vec<u8> {
    let block = compress(options, data);
    let (_, len) = riegeli_codec::varint::decode_u64(&block).unwrap();
    let mut out = Vec::new();
    riegeli_codec::varint::encode_u64(declared, &mut out);
    out.extend_from_slice(&block[len..]);
    out
}

#[test]
fn declared_size_over_the_limit_is_refused_before_allocating() {
    for options in all_options() {
        let t = options.compression_type;
        if t == CompressionType::None {
            let e = decompress(t, &text(101), 100).unwrap_err();
            assert!(matches!(e.kind(), CodecErrorKind::LimitExceeded { requested: 101, max: 100, .. }), "{e}");
            continue;
        }
        // An absurd size: an attempt to allocate it would abort the test.
        let block = with_declared(options, b"hello", u64::MAX / 2);
        let e = decompress(t, &block, 1 << 30).unwrap_err();
        assert!(
            matches!(e.kind(), CodecErrorKind::LimitExceeded { requested, max: 1073741824, .. } if *requested == u64::MAX / 2),
            "{options:?}: {e}"
        );
        assert_eq!(e.offset(), 0);
        let block = compress(options, &text(1000));
        assert!(decompress(t, &block, 999).is_err());
        assert!(decompress(t, &block, 1000).is_ok());
    }
}

#[test]
fn declared_size_differs_from_the_stream() {
    let data = text(10_000);
    for options in all_options().into_iter().filter(|o| o.compression_type != CompressionType::None) {
        for declared in [0, 9_999, 10_001, 20_000] {
            let block = with_declared(options, &data, declared);
            let mut out = b"keep".to_vec();
            let result = Decompressor::new().decompress(options.compression_type, &block, 1 << 20, &mut out);
            assert!(result.is_err(), "{options:?} declared {declared}");
            assert_eq!(out, b"keep", "output restored on error");
        }
    }
}

#[test]
fn truncated_and_trailing_bytes() {
    let data = text(10_000);
    for options in all_options().into_iter().filter(|o| o.compression_type != CompressionType::None) {
        let t = options.compression_type;
        let block = compress(options, &data);
        // Every proper prefix fails (including an empty block and a cut varint).
        for len in [0, 1, 2, 3, block.len() / 2, block.len() - 1] {
            assert!(decompress(t, &block[..len], 1 << 20).is_err(), "{options:?} prefix {len}");
        }
        // Any byte after the stream fails.
        for extra in [0u8, 1, 0xff] {
            let mut longer = block.clone();
            longer.push(extra);
            assert!(decompress(t, &longer, 1 << 20).is_err(), "{options:?} trailing {extra}");
        }
    }
}

#[test]
fn varint_prefix_errors_have_offsets() {
    for t in [CompressionType::Brotli, CompressionType::Zstd, CompressionType::Snappy] {
        if !t.is_supported() {
            continue;
        }
        let e = decompress(t, &[0x80, 0x80], 100).unwrap_err();
        assert!(matches!(e.kind(), CodecErrorKind::Truncated { .. }), "{e}");
        assert_eq!(e.what(), "compressed block");
        let e = decompress(t, &[0xff; 11], 100).unwrap_err();
        assert!(matches!(e.kind(), CodecErrorKind::VarintOverflow { bits: 64 }), "{e}");
    }
}

#[test]
fn unsupported_without_the_feature() {
    for (t, on) in [
        (CompressionType::Brotli, cfg!(feature = "brotli")),
        (CompressionType::Zstd, cfg!(feature = "zstd")),
        (CompressionType::Snappy, cfg!(feature = "snappy")),
    ] {
        assert_eq!(t.is_supported(), on);
        let options = match t {
            CompressionType::Brotli => CompressorOptions::brotli(),
            CompressionType::Zstd => CompressorOptions::zstd(),
            _ => CompressorOptions::snappy(),
        };
        let mut out = Vec::new();
        let compressed = Compressor::new(options).compress(b"abc", &mut out);
        let decompressed = Decompressor::new().decompress(t, &[3, 1, 2, 3], 100, &mut Vec::new());
        if on {
            assert!(compressed.is_ok());
        } else {
            for e in [compressed.unwrap_err(), decompressed.unwrap_err()] {
                assert!(matches!(e.kind(), CodecErrorKind::Unsupported { .. }), "{e}");
            }
            assert!(out.is_empty());
        }
    }
}

#[test]
fn unknown_compression_byte() {
    let e = CompressionType::from_byte(b'x').unwrap_err();
    assert!(matches!(e.kind(), CodecErrorKind::Invalid { .. }));
    assert_eq!(CompressionType::from_byte(0).unwrap(), CompressionType::None);
    assert_eq!(CompressionType::from_byte(b'z').unwrap(), CompressionType::Zstd);
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 64, ..ProptestConfig::default() })]

    #[test]
    fn prop_round_trip(data in prop::collection::vec(prop_oneof![Just(b'a'), Just(b'b'), any::<u8>()], 0..3000),
                       which in 0usize..16) {
        let options = all_options();
        let options = options[which % options.len()];
        let block = compress(options, &data);
        let out = decompress(options.compression_type, &block, data.len() as u64).unwrap();
        prop_assert_eq!(out, data);
    }

    /// Corrupt blocks fail or decode to something, but never panic, and never
    /// produce other than the declared size.
    #[test]
    fn prop_corruption_never_panics(data in prop::collection::vec(any::<u8>(), 0..2000),
                                    which in 0usize..16,
                                    flips in prop::collection::vec((any::<prop::sample::Index>(), any::<u8>()), 1..4)) {
        let options = all_options();
        let options = options[which % options.len()];
        let mut block = compress(options, &data);
        if block.is_empty() {
            return Ok(());
        }
        for (index, xor) in flips {
            let i = index.index(block.len());
            block[i] ^= xor;
        }
        let t = options.compression_type;
        if let Ok(out) = decompress(t, &block, 1 << 20) {
            let (declared, _) = Decompressor::declared_size(t, &block).unwrap();
            prop_assert_eq!(out.len() as u64, declared);
        }
    }
}
