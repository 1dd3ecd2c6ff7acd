//! `delta` against every shared DELTA_BINARY_PACKED vector written by pyarrow
//! (`tests/vectors/delta/`), against a bit-at-a-time reference encoder written from
//! the spec for configurations Arrow never writes, and under proptest.

use std::path::{Path, PathBuf};

use proptest::prelude::*;
use riegeli_codec::{CodecErrorKind, delta};
use serde_json::Value;

fn testdata() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/vectors/delta")
}

fn unhex(s: &str) -> Vec<u8> {
    assert!(s.len().is_multiple_of(2), "odd hex length");
    (0..s.len()).step_by(2).map(|i| u8::from_str_radix(&s[i..i + 2], 16).expect("hex digit")).collect()
}

/// The `.json` files of `dir`, sorted by name.
fn json_files(dir: &Path) -> Vec<PathBuf> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|entry| entry.unwrap().path())
        .filter(|path| path.extension().is_some_and(|ext| ext == "json"))
        .collect();
    files.sort();
    files
}

/// The first column of `index.tsv` (without its header line).
fn index_names(dir: &Path) -> Vec<String> {
    let index = std::fs::read_to_string(dir.join("index.tsv")).unwrap();
    let mut names: Vec<String> = index.lines().skip(1).map(|l| l.split('\t').next().unwrap().to_owned()).collect();
    names.sort();
    names
}

fn stem(path: &Path) -> String {
    path.file_stem().unwrap().to_str().unwrap().to_owned()
}

struct Vector {
    name: String,
    int64: bool,
    encoded: Vec<u8>,
    values: Option<Vec<i64>>,
    expect_ok: bool,
}

fn load(path: &Path) -> Vector {
    let text = std::fs::read_to_string(path).unwrap();
    let json: Value = serde_json::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let int64 = match json["type"].as_str() {
        Some("int32") => false,
        Some("int64") => true,
        other => panic!("{}: type {other:?}", path.display()),
    };
    let values = json.get("values").map(|values| {
        values
            .as_array()
            .unwrap()
            .iter()
            .map(|v| match v {
                Value::Number(n) => n.as_i64().unwrap(),
                Value::String(s) => s.parse().unwrap(),
                other => panic!("{}: value {other}", path.display()),
            })
            .collect()
    });
    let expect_ok = match json.get("expect").map(|e| e.as_str().unwrap()) {
        None | Some("ok") => true,
        Some("error") => false,
        Some(other) => panic!("{}: expect {other}", path.display()),
    };
    Vector { name: stem(path), int64, encoded: unhex(json["encoded_hex"].as_str().unwrap()), values, expect_ok }
}

/// Decodes with the vector's column type, widening i32 to i64.
fn decode(v: &Vector, bytes: &[u8]) -> Result<(Vec<i64>, usize), riegeli_codec::CodecError> {
    if v.int64 {
        delta::decode_i64(bytes)
    } else {
        delta::decode_i32(bytes).map(|(values, n)| (values.into_iter().map(i64::from).collect(), n))
    }
}

fn encode(v: &Vector, values: &[i64]) -> Vec<u8> {
    let mut out = Vec::new();
    if v.int64 {
        delta::encode_i64(values, &mut out);
    } else {
        let values: Vec<i32> = values.iter().map(|&x| i32::try_from(x).unwrap()).collect();
        delta::encode_i32(&values, &mut out);
    }
    out
}

#[test]
fn pyarrow_vectors_both_ways() {
    let dir = testdata();
    let files = json_files(&dir);
    // README: 74 vectors, all listed in index.tsv.
    assert_eq!(files.len(), 74);
    assert_eq!(files.iter().map(|p| stem(p)).collect::<Vec<_>>(), index_names(&dir));
    let mut values_seen = 0;
    for path in &files {
        let v = load(path);
        let values = v.values.as_deref().unwrap_or_else(|| panic!("{}: no values", v.name));
        let (decoded, consumed) = decode(&v, &v.encoded).unwrap_or_else(|e| panic!("{}: {e}", v.name));
        assert_eq!(decoded, values, "{}: decoded values", v.name);
        assert_eq!(consumed, v.encoded.len(), "{}: bytes consumed", v.name);
        assert_eq!(encode(&v, values), v.encoded, "{}: encoded bytes", v.name);
        // The same stream followed by other data: same values, same length.
        let mut longer = v.encoded.clone();
        longer.extend_from_slice(&[0xff; 20]);
        assert_eq!(decode(&v, &longer).unwrap(), (decoded, consumed), "{}: with trailing bytes", v.name);
        values_seen += values.len();
    }
    assert!(values_seen > 30_000, "{values_seen} values");
}

#[test]
fn every_strict_prefix_of_a_vector_is_an_error() {
    // A decoder consumes each vector to its last byte, so any shorter input
    // lacks bytes it needs. Large vectors: every prefix up to 300 bytes, then a stride.
    for path in json_files(&testdata()) {
        let v = load(&path);
        let len = v.encoded.len();
        let cuts = (0..len).filter(|&cut| cut < 300 || cut.is_multiple_of(97) || cut + 20 > len);
        for cut in cuts {
            let err = decode(&v, &v.encoded[..cut]).expect_err(&format!("{}: prefix of {cut} bytes", v.name));
            assert!(matches!(err.kind(), CodecErrorKind::Truncated { .. }), "{}: prefix {cut}: {err}", v.name);
        }
    }
}

#[test]
fn edge_vectors() {
    let dir = testdata().join("edge");
    let files = json_files(&dir);
    assert_eq!(files.len(), 21);
    assert_eq!(files.iter().map(|p| stem(p)).collect::<Vec<_>>(), index_names(&dir));
    let (mut oks, mut errors) = (0, 0);
    for path in &files {
        let v = load(path);
        let result = decode(&v, &v.encoded);
        if v.expect_ok {
            let (values, consumed) = result.unwrap_or_else(|e| panic!("{}: {e}", v.name));
            assert_eq!(Some(values), v.values, "{}", v.name);
            assert_eq!(consumed, v.encoded.len(), "{}", v.name);
            oks += 1;
        } else {
            let err = result.expect_err(&v.name);
            // The message names the stream, kind and offset.
            assert!(err.to_string().contains("delta binary packed"), "{}: {err}", v.name);
            errors += 1;
        }
    }
    // README: 4 streams that must decode, 17 that must be rejected.
    assert_eq!((oks, errors), (4, 17));
}

#[test]
fn edge_error_kinds_and_offsets() {
    let dir = testdata().join("edge");
    let err = |name: &str| {
        let v = load(&dir.join(format!("{name}.json")));
        decode(&v, &v.encoded).expect_err(name)
    };
    let invalid = |reason| CodecErrorKind::Invalid { reason };
    let e = err("used_miniblock_width_33_int32");
    assert_eq!(e.kind(), &invalid("bit width exceeds the column width"));
    let e = err("used_miniblock_width_65_int64");
    assert_eq!(e.kind(), &invalid("bit width exceeds the column width"));
    for name in ["block_size_0_int32", "block_size_100_int32", "spec_example1_toy_bs8", "spec_example2_toy_bs8"] {
        let e = err(name);
        assert_eq!(e.kind(), &invalid("block size is not a positive multiple of 128"), "{name}");
        assert_eq!(e.offset(), 0, "{name}");
    }
    let e = err("miniblock_count_0_int32");
    assert_eq!((e.kind(), e.offset()), (&invalid("zero miniblocks per block"), 2));
    let e = err("miniblock_count_3_int32");
    assert_eq!((e.kind(), e.offset()), (&invalid("miniblock count does not divide the block size"), 2));
    let e = err("miniblock_16_values_int32");
    assert_eq!((e.kind(), e.offset()), (&invalid("values per miniblock is not a multiple of 32"), 2));
    for name in [
        "truncated_body_int32",
        "truncated_widths_int32",
        "truncated_header_int32",
        "empty_input",
        "missing_block_int32",
    ] {
        assert!(matches!(err(name).kind(), CodecErrorKind::Truncated { .. }), "{name}");
    }
    // The first value starts at offset 4 (after 80 01 04 01 / 80 02 04 01).
    let e = err("first_value_overflow_int32");
    assert_eq!((e.kind(), e.offset()), (&CodecErrorKind::VarintOverflow { bits: 32 }, 8));
    let e = err("first_value_10th_byte_2_int64");
    assert_eq!((e.kind(), e.offset()), (&CodecErrorKind::VarintOverflow { bits: 64 }, 13));
    let e = err("first_value_11_bytes_int64");
    assert_eq!(e.kind(), &CodecErrorKind::VarintOverflow { bits: 64 });
}

/// Options of the reference encoder below.
#[derive(Debug, Clone, Copy)]
struct RefConfig {
    block_size: usize,
    miniblocks: usize,
    /// Padding fields get all ones instead of zeros.
    ones_padding: bool,
    /// Width byte of unused miniblocks (readers must ignore it).
    unused_width: u8,
    /// Write every varint with one redundant group (still at most the maximum length).
    overlong: bool,
}

fn ref_varint(mut x: u64, overlong: bool, max_len: usize, out: &mut Vec<u8>) {
    let mut bytes = Vec::new();
    loop {
        bytes.push((x & 0x7f) as u8);
        x >>= 7;
        if x == 0 {
            break;
        }
    }
    if overlong && bytes.len() < max_len {
        bytes.push(0);
    }
    let last = bytes.len() - 1;
    for (i, b) in bytes.iter().enumerate() {
        out.push(if i < last { b | 0x80 } else { *b });
    }
}

/// A bit-at-a-time encoder written from spec section 4 for any configuration,
/// with the minimum delta taken as the *unsigned* minimum (any min_delta is valid
/// for a decoder, section 4.5). Works in `u64` masked to `bits`.
fn ref_encode(values: &[i64], bits: u32, cfg: RefConfig) -> Vec<u8> {
    let mask = if bits == 64 { u64::MAX } else { (1u64 << bits) - 1 };
    let max_len = if bits == 64 { 10 } else { 5 };
    let zigzag = |v: u64| -> u64 {
        // v holds a `bits`-bit two's-complement number.
        let signed = if bits == 64 { v as i64 } else { i64::from(v as u32 as i32) };
        (((signed as u64) << 1) ^ ((signed >> 63) as u64)) & mask
    };
    let mut out = Vec::new();
    ref_varint(cfg.block_size as u64, cfg.overlong, 5, &mut out);
    ref_varint(cfg.miniblocks as u64, cfg.overlong, 5, &mut out);
    ref_varint(values.len() as u64, cfg.overlong, 5, &mut out);
    let first = values.first().map_or(0, |&v| v as u64 & mask);
    ref_varint(zigzag(first), cfg.overlong, max_len, &mut out);
    let deltas: Vec<u64> = values.windows(2).map(|w| (w[1] as u64).wrapping_sub(w[0] as u64) & mask).collect();
    let per_mb = cfg.block_size / cfg.miniblocks;
    for block in deltas.chunks(cfg.block_size) {
        let min = *block.iter().min().unwrap();
        ref_varint(zigzag(min), cfg.overlong, max_len, &mut out);
        let rels: Vec<u64> = block.iter().map(|d| d.wrapping_sub(min) & mask).collect();
        let used = rels.len().div_ceil(per_mb);
        let widths: Vec<u32> = (0..cfg.miniblocks)
            .map(|m| {
                if m < used {
                    rels[m * per_mb..rels.len().min((m + 1) * per_mb)]
                        .iter()
                        .map(|r| 64 - r.leading_zeros())
                        .max()
                        .unwrap()
                } else {
                    u32::from(cfg.unused_width)
                }
            })
            .collect();
        out.extend(widths.iter().map(|&w| w as u8));
        for (m, &width) in widths.iter().enumerate().take(used) {
            let mut bitstream: Vec<bool> = Vec::new();
            for j in 0..per_mb {
                let field = match rels.get(m * per_mb + j) {
                    Some(&r) => r,
                    None if cfg.ones_padding => u64::MAX,
                    None => 0,
                };
                for k in 0..width {
                    bitstream.push(field >> k & 1 == 1);
                }
            }
            assert_eq!(bitstream.len() % 8, 0);
            for byte_bits in bitstream.chunks(8) {
                out.push(byte_bits.iter().enumerate().map(|(k, &b)| u8::from(b) << k).sum());
            }
        }
    }
    out
}

const ARROW32: RefConfig =
    RefConfig { block_size: 128, miniblocks: 4, ones_padding: false, unused_width: 0, overlong: false };

#[test]
fn reference_encoder_matches_a_pyarrow_vector() {
    // Sanity check of the test's own encoder: with Arrow's configuration and
    // non-negative deltas (where signed and unsigned minimum agree), it must
    // give pyarrow's bytes.
    let v = load(&testdata().join("increasing_by_one_int32.json"));
    assert_eq!(ref_encode(v.values.as_ref().unwrap(), 32, ARROW32), v.encoded);
    let v = load(&testdata().join("spec_example1_int64.json"));
    let cfg = RefConfig { block_size: 256, ..ARROW32 };
    assert_eq!(ref_encode(v.values.as_ref().unwrap(), 64, cfg), v.encoded);
}

fn config() -> impl Strategy<Value = RefConfig> {
    let shapes = prop_oneof![
        Just((128, 1)),
        Just((128, 2)),
        Just((128, 4)),
        Just((256, 4)),
        Just((256, 8)),
        Just((384, 3)),
        Just((512, 16)),
        Just((1024, 4)),
    ];
    (shapes, any::<bool>(), any::<u8>(), any::<bool>()).prop_map(
        |((block_size, miniblocks), ones_padding, unused_width, overlong)| RefConfig {
            block_size,
            miniblocks,
            ones_padding,
            unused_width,
            overlong,
        },
    )
}

/// Random walks with steps of a random magnitude (so every width shows up),
/// or values from the whole range.
fn values64(max_len: usize) -> impl Strategy<Value = Vec<i64>> {
    prop_oneof![
        (0u32..64, proptest::collection::vec(any::<i64>(), 0..max_len)).prop_map(|(shift, steps)| {
            let mut last = 0i64;
            steps
                .iter()
                .map(|s| {
                    last = last.wrapping_add(s >> shift);
                    last
                })
                .collect()
        }),
        proptest::collection::vec(any::<i64>(), 0..max_len),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 128, ..ProptestConfig::default() })]

    #[test]
    fn round_trip_i64(values in values64(1200)) {
        let mut bytes = Vec::new();
        delta::encode_i64(&values, &mut bytes);
        prop_assert_eq!(delta::decode_i64(&bytes), Ok((values, bytes.len())));
    }

    #[test]
    fn round_trip_i32(values in values64(1200)) {
        let values: Vec<i32> = values.iter().map(|&v| (v >> 32) as i32).collect();
        let mut bytes = Vec::new();
        delta::encode_i32(&values, &mut bytes);
        prop_assert_eq!(delta::decode_i32(&bytes), Ok((values, bytes.len())));
    }

    #[test]
    fn decodes_any_valid_configuration_i64(values in values64(2500), cfg in config()) {
        let bytes = ref_encode(&values, 64, cfg);
        prop_assert_eq!(delta::decode_i64(&bytes), Ok((values, bytes.len())));
    }

    #[test]
    fn decodes_any_valid_configuration_i32(values in values64(2500), cfg in config()) {
        let values: Vec<i32> = values.iter().map(|&v| v as i32).collect();
        let wide: Vec<i64> = values.iter().map(|&v| i64::from(v)).collect();
        let bytes = ref_encode(&wide, 32, cfg);
        prop_assert_eq!(delta::decode_i32(&bytes), Ok((values, bytes.len())));
    }

    #[test]
    fn arbitrary_bytes_never_panic(bytes in proptest::collection::vec(any::<u8>(), 0..400), header in 0usize..4) {
        // Mostly plausible headers, so the fuzzing reaches the blocks.
        let prefixes: [&[u8]; 4] = [&[], &[0x80, 0x01, 0x04], &[0x80, 0x02, 0x04], &[0x80, 0x01, 0x01]];
        let mut input = prefixes[header].to_vec();
        input.extend_from_slice(&bytes);
        let limit = 1 << 16;
        if let Ok((values, consumed)) = delta::decode_i32_with_limit(&input, limit) {
            prop_assert!(consumed <= input.len() && values.len() <= limit);
        }
        if let Ok((values, consumed)) = delta::decode_i64_with_limit(&input, limit) {
            prop_assert!(consumed <= input.len() && values.len() <= limit);
        }
    }

    #[test]
    fn corrupted_stream_never_panics(values in values64(600), flips in proptest::collection::vec((any::<usize>(), any::<u8>()), 1..4)) {
        let mut bytes = Vec::new();
        delta::encode_i64(&values, &mut bytes);
        for (at, xor) in flips {
            let i = at % bytes.len();
            bytes[i] ^= xor;
        }
        let limit = 1 << 16;
        if let Ok((decoded, consumed)) = delta::decode_i64_with_limit(&bytes, limit) {
            prop_assert!(consumed <= bytes.len() && decoded.len() <= limit);
        }
        if let Ok((decoded, consumed)) = delta::decode_i32_with_limit(&bytes, limit) {
            prop_assert!(consumed <= bytes.len() && decoded.len() <= limit);
        }
    }
}
